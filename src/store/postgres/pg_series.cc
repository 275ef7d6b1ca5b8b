// PostgresStore: ingesting batches (metric chunks, system metrics, console lines) and reading them
// back (series list, history, console).
//
// One Ingest is one READ COMMITTED transaction of four statements:
//   1. lock the writer row and record (writer, seq) with INSERT ... ON CONFLICT DO NOTHING: a
//      duplicate stops here; a concurrent copy of the same batch on another server waits for
//      the lock and then finds the seq taken;
//   2. lock the batch's series rows (FOR UPDATE) and read their head chunks;
//   3. create the series that are new (rare);
//   4. one statement with data-modifying CTEs: upsert the chunks, advance the series counts,
//      the writer and the run (whose row lock orders console ids), insert the console lines.
// Arrays travel as binary parameters, so a batch costs the same few round trips at any size.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "series/append.h"
#include "series/query.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

constexpr std::string_view kSystemPrefix = "system/";
constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();
// Raw history reads fetch this many chunks per round trip.
constexpr size_t kRawPrefetchChunks = 16;

// The points of one batch, grouped by series key.
struct SeriesPoints {
  bool is_system = false;
  std::vector<Point> points;
};

// The same checks as the SQLite store (sqlite_series.cc).
Status ValidateBatch(const IngestBatch& batch) {
  if (batch.seq < 0 || (batch.seq == 0 && batch.positions.empty())) {
    return Status::InvalidArgument("batch: seq must be > 0");
  }
  for (size_t i = 0; i < batch.positions.size(); ++i) {
    const StreamPosition& p = batch.positions[i];
    if (p.stream.empty()) return Status::InvalidArgument("batch: empty stream name");
    if (p.expect < 0 || p.next < 0) {
      return Status::InvalidArgument("batch: stream '" + p.stream + "': negative offset");
    }
    for (size_t j = 0; j < i; ++j) {
      if (batch.positions[j].stream == p.stream) {
        return Status::InvalidArgument("batch: stream '" + p.stream + "' named twice");
      }
    }
  }
  for (const HistoryRow& row : batch.rows) {
    for (const auto& [key, value] : row.values) {
      if (key.empty()) return Status::InvalidArgument("batch: empty metric key");
      if (key.starts_with(kSystemPrefix)) {
        return Status::InvalidArgument("batch: key '" + key +
                                       "': the system/ prefix is reserved for system metrics");
      }
    }
  }
  for (const SystemRow& row : batch.system) {
    for (const auto& [key, value] : row.values) {
      if (key.empty()) return Status::InvalidArgument("batch: empty system metric key");
    }
  }
  for (const ConsoleLine& line : batch.console) {
    if (line.stream != "stdout" && line.stream != "stderr") {
      return Status::InvalidArgument("batch: console stream '" + line.stream +
                                     "' is not stdout or stderr");
    }
  }
  return Status::Ok();
}

constexpr const char* kLockWriterAndRecordBatch =
    "WITH w AS (SELECT w.pk, w.run_pk, w.next_step FROM writers w JOIN runs r ON r.pk = w.run_pk "
    "WHERE r.entity = $1 AND r.project = $2 AND r.run_id = $3 AND w.label = $4 FOR UPDATE OF w), "
    "b AS (INSERT INTO batches (writer_pk, seq, stored_ms) SELECT pk, $5, $6 FROM w "
    "WHERE $5 > 0 ON CONFLICT DO NOTHING RETURNING 1) "
    "SELECT w.pk, w.run_pk, w.next_step, (SELECT count(*) FROM b) FROM w";

constexpr const char* kLockSeriesAndHeads =
    "SELECT s.key, s.pk, h.idx, h.data FROM series s LEFT JOIN LATERAL (SELECT idx, data FROM "
    "chunks WHERE series_pk = s.pk ORDER BY idx DESC LIMIT 1) h ON true "
    "WHERE s.run_pk = $1 AND s.writer_pk = $2 AND s.key = ANY($3) FOR UPDATE OF s";

constexpr const char* kCreateSeries =
    "INSERT INTO series (run_pk, writer_pk, key, is_system) SELECT $1, $2, t.k, t.sys "
    "FROM unnest($3::text[], $4::bool[]) AS t(k, sys) ON CONFLICT DO NOTHING RETURNING key, pk";

constexpr const char* kWriteBatch =
    "WITH ch AS (INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, "
    "max_time, vmin, vmax, vsum, vfirst, vlast, nan_count, data) "
    "SELECT * FROM unnest($6::int8[], $7::int8[], $8::int8[], $9::int8[], $10::int8[], "
    "$11::int8[], $12::int8[], $13::float8[], $14::float8[], $15::float8[], $16::float8[], "
    "$17::float8[], $18::int8[], $19::bytea[]) "
    "ON CONFLICT (series_pk, idx) DO UPDATE SET count = excluded.count, "
    "min_step = excluded.min_step, max_step = excluded.max_step, min_time = excluded.min_time, "
    "max_time = excluded.max_time, vmin = excluded.vmin, vmax = excluded.vmax, "
    "vsum = excluded.vsum, vfirst = excluded.vfirst, vlast = excluded.vlast, "
    "nan_count = excluded.nan_count, data = excluded.data), "
    "se AS (UPDATE series s SET count = s.count + v.n, min_step = least(s.min_step, v.lo), "
    "max_step = greatest(s.max_step, v.hi) FROM unnest($20::int8[], $21::int8[], $22::int8[], "
    "$23::int8[]) AS v(pk, n, lo, hi) WHERE s.pk = v.pk), "
    "wr AS (UPDATE writers SET heartbeat_ms = greatest(heartbeat_ms, $3), next_step = $4, "
    "last_seq = greatest(last_seq, $5) WHERE pk = $2), "
    "ru AS (UPDATE runs SET updated_ms = greatest(updated_ms, $3), "
    "heartbeat_ms = greatest(heartbeat_ms, $3), console_next = console_next + $27 "
    "WHERE pk = $1 RETURNING console_next - $27 AS base), "
    "sp AS (INSERT INTO stream_positions (writer_pk, stream, next_offset) SELECT $2, t.s, t.n "
    "FROM unnest($28::text[], $29::int8[]) AS t(s, n) ON CONFLICT (writer_pk, stream) DO UPDATE "
    "SET next_offset = excluded.next_offset) "
    "INSERT INTO console (run_pk, id, writer_pk, time_ms, stream, text, line_no) "
    "SELECT $1, ru.base + t.ord, $2, t.time_ms, t.stream, t.text, nullif(t.line_no, -1) "
    "FROM ru, unnest($24::int8[], $25::text[], $26::text[], $30::int8[]) WITH ORDINALITY "
    "AS t(time_ms, stream, text, line_no, ord) "
    "ON CONFLICT (writer_pk, line_no) WHERE line_no IS NOT NULL DO UPDATE SET "
    "time_ms = excluded.time_ms, stream = excluded.stream, text = excluded.text";

// Column arrays of the chunk writes and series updates of one batch.
struct BatchArrays {
  std::vector<int64_t> series_pk, idx, count, min_step, max_step, min_time, max_time, nan_count;
  std::vector<double> vmin, vmax, vsum, vfirst, vlast;
  std::vector<std::string> data;
  std::vector<int64_t> s_pk, s_n, s_lo, s_hi;

  void AddChunk(int64_t series, const series::ChunkWrite& w) {
    const series::ChunkSummary& s = w.summary;
    series_pk.push_back(series);
    idx.push_back(w.index);
    count.push_back(s.count);
    min_step.push_back(s.min_step);
    max_step.push_back(s.max_step);
    min_time.push_back(s.min_time);
    max_time.push_back(s.max_time);
    vmin.push_back(s.min);
    vmax.push_back(s.max);
    vsum.push_back(s.sum);
    vfirst.push_back(s.first);
    vlast.push_back(s.last);
    nan_count.push_back(s.nan_count);
    data.push_back(w.data);
  }
};

series::ChunkSummary ReadSummary(const PgResult& res, int i, int c) {
  series::ChunkSummary s;
  s.count = res.Int(i, c);
  s.min_step = res.Int(i, c + 1);
  s.max_step = res.Int(i, c + 2);
  s.min_time = res.Int(i, c + 3);
  s.max_time = res.Int(i, c + 4);
  s.min = res.Double(i, c + 5);
  s.max = res.Double(i, c + 6);
  s.sum = res.Double(i, c + 7);
  s.first = res.Double(i, c + 8);
  s.last = res.Double(i, c + 9);
  s.nan_count = res.Int(i, c + 10);
  return s;
}

}  // namespace

Result<IngestResult> PostgresStore::Ingest(const RunRef& ref, const std::string& label,
                                           const IngestBatch& batch, int64_t now_ms) {
  COHORT_RETURN_IF_ERROR(ValidateBatch(batch));
  // Fails unless every named stream of the (locked) writer is at its expected offset.
  auto check_positions = [&](Conn* c, int64_t writer_pk) -> Status {
    std::vector<std::string> streams;
    for (const StreamPosition& sp : batch.positions) streams.push_back(sp.stream);
    Params p;
    p.Add(writer_pk).AddTextArray(streams);
    COHORT_ASSIGN_OR_RETURN(PgResult res,
                            c->Exec("SELECT stream, next_offset FROM stream_positions "
                                    "WHERE writer_pk = $1 AND stream = ANY($2)",
                                    p));
    std::map<std::string, int64_t> at;
    for (int i = 0; i < res.rows(); ++i) at[res.Text(i, 0)] = res.Int(i, 1);
    for (const StreamPosition& sp : batch.positions) {
      const int64_t current = at.contains(sp.stream) ? at[sp.stream] : 0;
      if (current != sp.expect) {
        return Status::FailedPrecondition("stream '" + sp.stream + "' of writer '" + label +
                                          "' is at " + std::to_string(current) + ", not " +
                                          std::to_string(sp.expect));
      }
    }
    return Status::Ok();
  };
  return Write([&](Conn* c) -> Result<IngestResult> {
    IngestResult result;
    int64_t writer_pk = 0, run_pk = 0, next_step = 0;
    {
      Params p;
      p.Add(ref.entity).Add(ref.project).Add(ref.run_id).Add(label).Add(batch.seq).Add(now_ms);
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kLockWriterAndRecordBatch, p));
      if (res.rows() == 0) {
        COHORT_RETURN_IF_ERROR(LoadRun(c, ref).status());
        return pg::WriterNotFound(ref, label);
      }
      writer_pk = res.Int(0, 0);
      run_pk = res.Int(0, 1);
      next_step = res.Int(0, 2);
      // Stream positions are compared before the seq, as on SQLite.
      if (!batch.positions.empty()) COHORT_RETURN_IF_ERROR(check_positions(c, writer_pk));
      if (batch.seq > 0 && res.Int(0, 3) == 0) {  // stored before: acknowledge, change nothing
        result.duplicate = true;
        result.next_step = next_step;
        return result;
      }
    }

    // Steps: rows without one take the writer's next step in order; explicit steps move the
    // next step past them. System samples are indexed by time: their step is their time in ms.
    std::map<std::string, SeriesPoints> by_key;
    for (const HistoryRow& row : batch.rows) {
      int64_t step = row.step;
      if (step < 0) {
        step = next_step++;
      } else if (step >= next_step) {
        next_step = step == kMaxStep ? step : step + 1;
      }
      for (const auto& [key, value] : row.values) {
        by_key[key].points.push_back(Point{step, row.time_ms, value});
      }
      result.points += int64_t(row.values.size());
    }
    for (const SystemRow& row : batch.system) {
      for (const auto& [key, value] : row.values) {
        SeriesPoints& sp = by_key[std::string(kSystemPrefix) + key];
        sp.is_system = true;
        sp.points.push_back(Point{row.time_ms, row.time_ms, value});
      }
      result.points += int64_t(row.values.size());
    }

    // Lock the series and read their heads; create the missing ones.
    struct Head {
      int64_t series_pk = 0;
      std::optional<series::StoredChunk> chunk;
    };
    std::unordered_map<std::string, Head> heads;
    if (!by_key.empty()) {
      std::vector<std::string> keys;
      keys.reserve(by_key.size());
      for (const auto& [key, sp] : by_key) keys.push_back(key);
      Params p;
      p.Add(run_pk).Add(writer_pk).AddTextArray(keys);
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kLockSeriesAndHeads, p));
      for (int i = 0; i < res.rows(); ++i) {
        Head& h = heads[res.Text(i, 0)];
        h.series_pk = res.Int(i, 1);
        if (!res.IsNull(i, 2)) h.chunk = series::StoredChunk{res.Int(i, 2), res.Bytes(i, 3)};
      }
      std::vector<std::string> missing;
      std::vector<bool> missing_system;
      for (const auto& [key, sp] : by_key) {
        if (!heads.contains(key)) {
          missing.push_back(key);
          missing_system.push_back(sp.is_system);
        }
      }
      if (!missing.empty()) {
        Params q;
        q.Add(run_pk).Add(writer_pk).AddTextArray(missing).AddArray(missing_system);
        COHORT_ASSIGN_OR_RETURN(PgResult made, c->Exec(kCreateSeries, q));
        for (int i = 0; i < made.rows(); ++i) heads[made.Text(i, 0)].series_pk = made.Int(i, 1);
        if (size_t(made.rows()) != missing.size()) {  // only if the writer lock were bypassed
          return Status::Unavailable("series of writer '" + label + "' created concurrently");
        }
      }
    }

    BatchArrays a;
    for (const auto& [key, sp] : by_key) {
      auto it = heads.find(key);
      if (it == heads.end()) {
        // Text the database had to sanitize (NUL bytes) comes back under another key.
        return Status::InvalidArgument("batch: metric key '" + key +
                                       "' cannot be stored (contains a NUL character)");
      }
      const Head& h = it->second;
      COHORT_ASSIGN_OR_RETURN(std::vector<series::ChunkWrite> writes,
                              series::AppendToSeries(h.chunk, sp.points));
      for (const series::ChunkWrite& w : writes) a.AddChunk(h.series_pk, w);
      int64_t lo = kMaxStep, hi = kMinStep;
      for (const Point& pt : sp.points) {
        lo = std::min(lo, pt.step);
        hi = std::max(hi, pt.step);
      }
      a.s_pk.push_back(h.series_pk);
      a.s_n.push_back(int64_t(sp.points.size()));
      a.s_lo.push_back(lo);
      a.s_hi.push_back(hi);
    }

    // Console lines in order; a numbered line sent twice in one batch is one row (the later
    // text at the earlier place), as sequential replacement would leave it.
    std::vector<int64_t> line_times, line_numbers;
    std::vector<std::string> line_streams, line_texts;
    std::map<int64_t, size_t> numbered;  // line number -> index in the arrays
    for (const ConsoleLine& line : batch.console) {
      size_t at = line_times.size();
      if (line.line >= 0) {
        auto [it, fresh] = numbered.try_emplace(line.line, at);
        if (!fresh) {
          at = it->second;
          line_times[at] = line.time_ms;
          line_streams[at] = line.stream;
          line_texts[at] = line.text;
          continue;
        }
      }
      line_times.push_back(line.time_ms);
      line_streams.push_back(line.stream);
      line_texts.push_back(line.text);
      line_numbers.push_back(line.line >= 0 ? line.line : -1);
    }
    std::vector<std::string> position_streams;
    std::vector<int64_t> position_next;
    for (const StreamPosition& sp : batch.positions) {
      position_streams.push_back(sp.stream);
      position_next.push_back(sp.next);
    }
    std::vector<std::string_view> blobs(a.data.begin(), a.data.end());

    Params p;
    p.Add(run_pk).Add(writer_pk).Add(now_ms).Add(next_step).Add(batch.seq);
    p.AddArray(a.series_pk).AddArray(a.idx).AddArray(a.count).AddArray(a.min_step);
    p.AddArray(a.max_step).AddArray(a.min_time).AddArray(a.max_time).AddArray(a.vmin);
    p.AddArray(a.vmax).AddArray(a.vsum).AddArray(a.vfirst).AddArray(a.vlast);
    p.AddArray(a.nan_count).AddByteaArray(blobs);
    p.AddArray(a.s_pk).AddArray(a.s_n).AddArray(a.s_lo).AddArray(a.s_hi);
    p.AddArray(line_times).AddTextArray(line_streams).AddTextArray(line_texts);
    p.Add(int64_t(line_times.size()));
    p.AddTextArray(position_streams).AddArray(position_next).AddArray(line_numbers);
    COHORT_RETURN_IF_ERROR(c->Exec(kWriteBatch, p).status());
    result.next_step = next_step;
    return result;
  });
}

Result<std::vector<SeriesInfo>> PostgresStore::ListSeries(const RunRef& ref) {
  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<SeriesInfo>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, ref));
    Params p;
    p.Add(run.pk);
    COHORT_ASSIGN_OR_RETURN(
        PgResult res, c->Exec("SELECT s.key, w.label, s.count, coalesce(s.min_step, 0), "
                              "coalesce(s.max_step, 0) FROM series s JOIN writers w ON "
                              "w.pk = s.writer_pk WHERE s.run_pk = $1 ORDER BY s.key, w.label",
                              p));
    std::vector<SeriesInfo> out;
    out.reserve(size_t(res.rows()));
    for (int i = 0; i < res.rows(); ++i) {
      out.push_back(
          SeriesInfo{res.Text(i, 0), res.Text(i, 1), res.Int(i, 2), res.Int(i, 3), res.Int(i, 4)});
    }
    return out;
  });
}

Result<std::vector<SeriesData>> PostgresStore::QueryHistory(const HistoryQuery& q) {
  if (q.buckets < 0) return Status::InvalidArgument("history: buckets must be >= 0");
  if (q.buckets == 0 && q.limit <= 0) return Status::InvalidArgument("history: limit must be > 0");
  const std::set<std::string> keys(q.keys.begin(), q.keys.end());
  const std::set<std::string> writers(q.writers.begin(), q.writers.end());

  // Chunks whose step and time ranges meet the query's.
  int64_t lo = q.min_step.value_or(kMinStep);
  if (q.buckets == 0 && q.after_step != kMinStep) {
    lo = std::max(lo, q.after_step == kMaxStep ? kMaxStep : q.after_step + 1);
  }
  const int64_t hi = q.max_step.value_or(kMaxStep);
  const int64_t tlo = q.min_time_ms.value_or(kMinStep), thi = q.max_time_ms.value_or(kMaxStep);

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<SeriesData>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, q.run));
    struct Match {
      int64_t pk;
      std::string key, writer;
      std::vector<series::ChunkMeta> chunks;
    };
    std::vector<Match> matches;
    {
      Params p;
      p.Add(run.pk);
      std::string sql =
          "SELECT s.pk, s.key, w.label, s.is_system FROM series s JOIN writers w ON "
          "w.pk = s.writer_pk WHERE s.run_pk = $1";
      if (!keys.empty()) {
        sql += " AND s.key = ANY($2)";
        p.AddTextArray(q.keys);
      }
      sql += " ORDER BY s.key, w.label";
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(sql, p));
      for (int i = 0; i < res.rows(); ++i) {
        std::string key = res.Text(i, 1), label = res.Text(i, 2);
        const bool is_system = res.Bool(i, 3);
        if (keys.empty() ? is_system : !keys.contains(key)) continue;
        if (!writers.empty() && !writers.contains(label)) continue;
        matches.push_back(Match{res.Int(i, 0), std::move(key), std::move(label), {}});
      }
    }
    if (matches.empty()) return std::vector<SeriesData>{};

    {
      std::vector<int64_t> pks;
      std::unordered_map<int64_t, size_t> index;
      for (size_t i = 0; i < matches.size(); ++i) {
        pks.push_back(matches[i].pk);
        index[matches[i].pk] = i;
      }
      Params p;
      p.AddArray(pks).Add(lo).Add(hi).Add(tlo).Add(thi);
      COHORT_ASSIGN_OR_RETURN(
          PgResult res,
          c->Exec("SELECT series_pk, pk, count, min_step, max_step, min_time, max_time, vmin, "
                  "vmax, vsum, vfirst, vlast, nan_count FROM chunks WHERE series_pk = ANY($1) "
                  "AND max_step >= $2 AND min_step <= $3 AND max_time >= $4 AND min_time <= $5 "
                  "ORDER BY series_pk, idx",
                  p));
      for (int i = 0; i < res.rows(); ++i) {
        matches[index[res.Int(i, 0)]].chunks.push_back(
            series::ChunkMeta{res.Int(i, 1), ReadSummary(res, i, 2)});
      }
    }

    std::vector<SeriesData> out;
    out.reserve(matches.size());
    for (const Match& m : matches) {
      // Loads a chunk on demand; in raw mode also the next few chunks of the series, which a
      // raw read goes on to decode.
      std::unordered_map<int64_t, std::string> cache;
      std::unordered_map<int64_t, size_t> position;
      for (size_t i = 0; i < m.chunks.size(); ++i) position[m.chunks[i].id] = i;
      series::ChunkLoader load = [&](int64_t id) -> Result<std::string> {
        if (auto it = cache.find(id); it != cache.end()) {
          std::string data = std::move(it->second);
          cache.erase(it);
          return data;
        }
        std::vector<int64_t> ids = {id};
        if (q.buckets == 0 && position.contains(id)) {
          for (size_t i = position[id] + 1; i < m.chunks.size() && ids.size() < kRawPrefetchChunks;
               ++i) {
            ids.push_back(m.chunks[i].id);
          }
        }
        Params p;
        p.AddArray(ids);
        COHORT_ASSIGN_OR_RETURN(PgResult res,
                                c->Exec("SELECT pk, data FROM chunks WHERE pk = ANY($1)", p));
        std::string found;
        bool got = false;
        for (int i = 0; i < res.rows(); ++i) {
          if (res.Int(i, 0) == id) {
            found = res.Bytes(i, 1);
            got = true;
          } else {
            cache[res.Int(i, 0)] = res.Bytes(i, 1);
          }
        }
        if (!got) return Status::Corruption("chunk #" + std::to_string(id) + " vanished");
        return found;
      };
      SeriesData data;
      data.key = m.key;
      data.writer = m.writer;
      COHORT_RETURN_IF_ERROR(series::QuerySeries(m.chunks, load, q, &data));
      out.push_back(std::move(data));
    }
    return out;
  });
}

Result<std::vector<ConsoleLine>> PostgresStore::QueryConsole(const ConsoleQuery& q) {
  std::string sql =
      "SELECT c.id, c.time_ms, c.stream, c.text, w.label FROM console c JOIN writers w ON "
      "w.pk = c.writer_pk WHERE c.run_pk = $1 AND c.id > $2";
  int n = 2;  // placeholders used so far
  if (!q.labels.empty()) sql += " AND w.label = ANY($" + std::to_string(++n) + ")";
  if (!q.stream.empty()) sql += " AND c.stream = $" + std::to_string(++n);
  if (!q.text.empty()) sql += " AND strpos(c.text, $" + std::to_string(++n) + ") > 0";
  sql += " ORDER BY c.id LIMIT $" + std::to_string(++n);

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<ConsoleLine>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, q.run));
    Params params;
    params.Add(run.pk).Add(q.after_id);
    if (!q.labels.empty()) params.AddTextArray(q.labels);
    if (!q.stream.empty()) params.Add(q.stream);
    if (!q.text.empty()) params.Add(q.text);
    params.Add(int64_t{q.limit > 0 ? q.limit : 1000});
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(sql, params));
    std::vector<ConsoleLine> out;
    out.reserve(size_t(res.rows()));
    for (int i = 0; i < res.rows(); ++i) {
      ConsoleLine line;
      line.id = res.Int(i, 0);
      line.time_ms = res.Int(i, 1);
      line.stream = res.Text(i, 2);
      line.text = res.Text(i, 3);
      line.label = res.Text(i, 4);
      out.push_back(std::move(line));
    }
    return out;
  });
}

}  // namespace cohort::store
