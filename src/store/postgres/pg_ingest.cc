// PostgresStore::Ingest: one batch of one writer (metric chunks, system metrics, console lines,
// stream positions) in one READ COMMITTED transaction of four statements:
//   1. lock the writer row and record (writer, seq) with INSERT ... ON CONFLICT DO NOTHING: a
//      duplicate stops here; a concurrent copy of the same batch on another server waits for the
//      lock, then finds the seq taken;
//   2. lock the batch's series rows (FOR UPDATE), which hold each series' tail state;
//   3. (rare) create the series that are new, and read the tails that this batch compacts;
//   4. one statement of data-modifying CTEs: delete compacted tail chunks, insert the new chunks,
//      advance the series, the writer, the stream positions and the run (whose row lock orders
//      console ids), and insert the console lines.
// Arrays travel as binary parameters, so a batch costs the same few round trips at any size.
//
// Chunk layout (docs/operations.md): a series is full chunks of kMaxChunkPoints points followed
// by a tail of smaller chunks, one per batch. A batch appends a chunk of its own points to the
// tail instead of rewriting a head chunk, so each point is encoded about twice (in its batch's
// chunk and once more when the tail is compacted into a full chunk) instead of once per batch
// that follows it. The tail is compacted when it would reach kMaxChunkPoints points or
// kMaxTailChunks chunks. Chunk indexes only grow (compacted chunks get new ones), so index order
// stays arrival order, as series/query.h expects.
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "series/append.h"
#include "series/chunk.h"
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
// A tail of this many chunks is compacted even when it holds few points (tiny batches).
constexpr int64_t kMaxTailChunks = 32;

// The points of one batch for one series key.
struct SeriesPoints {
  bool is_system = false;
  std::vector<Point> points;
};

// The stored state of one series, read under its row lock.
struct SeriesState {
  int64_t pk = 0;
  int64_t next_idx = 0;     // index of the next chunk written
  int64_t tail_idx = 0;     // first chunk of the tail (next_idx when the tail is empty)
  int64_t tail_count = 0;   // points in the tail
  int64_t tail_chunks = 0;  // chunks in the tail
};

bool NeedsCompaction(const SeriesState& s, size_t new_points) {
  return s.tail_count + int64_t(new_points) >= series::kMaxChunkPoints ||
         s.tail_chunks + 1 > kMaxTailChunks;
}

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

constexpr const char* kReadPositions =
    "SELECT stream, next_offset FROM stream_positions WHERE writer_pk = $1 AND stream = ANY($2)";

constexpr const char* kLockSeries =
    "SELECT key, pk, next_idx, tail_idx, tail_count, tail_chunks FROM series "
    "WHERE run_pk = $1 AND writer_pk = $2 AND key = ANY($3) FOR UPDATE";

constexpr const char* kCreateSeries =
    "INSERT INTO series (run_pk, writer_pk, key, is_system) SELECT $1, $2, t.k, t.sys "
    "FROM unnest($3::text[], $4::bool[]) AS t(k, sys) ON CONFLICT DO NOTHING RETURNING key, pk";

constexpr const char* kReadTails =
    "SELECT c.series_pk, c.data FROM chunks c JOIN unnest($1::int8[], $2::int8[]) AS t(pk, lo) "
    "ON c.series_pk = t.pk AND c.idx >= t.lo ORDER BY c.series_pk, c.idx";

constexpr const char* kWriteBatch =
    "WITH del AS (DELETE FROM chunks c USING unnest($29::int8[], $30::int8[], $31::int8[]) "
    "AS d(pk, lo, hi) WHERE c.series_pk = d.pk AND c.idx >= d.lo AND c.idx < d.hi), "
    "ch AS (INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, max_time, "
    "vmin, vmax, vsum, vfirst, vlast, nan_count, data) "
    "SELECT * FROM unnest($7::int8[], $8::int8[], $9::int8[], $10::int8[], $11::int8[], "
    "$12::int8[], $13::int8[], $14::float8[], $15::float8[], $16::float8[], $17::float8[], "
    "$18::float8[], $19::int8[], $20::bytea[])), "
    "se AS (UPDATE series s SET count = s.count + v.n, min_step = least(s.min_step, v.lo), "
    "max_step = greatest(s.max_step, v.hi), next_idx = v.ni, tail_idx = v.ti, "
    "tail_count = v.tc, tail_chunks = v.tk FROM unnest($21::int8[], $22::int8[], $23::int8[], "
    "$24::int8[], $25::int8[], $26::int8[], $27::int8[], $28::int8[]) "
    "AS v(pk, n, lo, hi, ni, ti, tc, tk) WHERE s.pk = v.pk), "
    "wr AS (UPDATE writers SET heartbeat_ms = greatest(heartbeat_ms, $3), next_step = $4, "
    "last_seq = greatest(last_seq, $5) WHERE pk = $2), "
    "sp AS (INSERT INTO stream_positions (writer_pk, stream, next_offset) SELECT $2, t.s, t.n "
    "FROM unnest($36::text[], $37::int8[]) AS t(s, n) ON CONFLICT (writer_pk, stream) DO UPDATE "
    "SET next_offset = excluded.next_offset), "
    "ru AS (UPDATE runs SET updated_ms = greatest(updated_ms, $3), "
    "heartbeat_ms = greatest(heartbeat_ms, $3), console_next = console_next + $6 "
    "WHERE pk = $1 RETURNING console_next - $6 AS base) "
    "INSERT INTO console (run_pk, id, writer_pk, time_ms, stream, text, line_no) "
    "SELECT $1, ru.base + t.ord, $2, t.time_ms, t.stream, t.text, nullif(t.line_no, -1) "
    "FROM ru, unnest($32::int8[], $33::text[], $34::text[], $35::int8[]) WITH ORDINALITY "
    "AS t(time_ms, stream, text, line_no, ord) "
    "ON CONFLICT (writer_pk, line_no) WHERE line_no IS NOT NULL DO UPDATE SET "
    "time_ms = excluded.time_ms, stream = excluded.stream, text = excluded.text";

// Everything statement 4 writes, as column arrays.
class BatchWrite {
 public:
  // Plans appending `points` to `s` (updating it). `tail` holds the points of the tail, read
  // because NeedsCompaction(s, points.size()); null otherwise.
  Status Append(SeriesState* s, const std::vector<Point>& points, const std::vector<Point>* tail) {
    std::vector<Point> merged;
    if (tail != nullptr) {
      merged.reserve(tail->size() + points.size());
      merged = *tail;
      merged.insert(merged.end(), points.begin(), points.end());
      del_pk_.push_back(s->pk);
      del_lo_.push_back(s->tail_idx);
      del_hi_.push_back(s->next_idx);
      s->tail_idx = s->next_idx;
      s->tail_count = s->tail_chunks = 0;
    }
    COHORT_ASSIGN_OR_RETURN(
        std::vector<series::ChunkWrite> writes,
        series::AppendToSeries(std::nullopt, tail != nullptr ? merged : points));
    for (const series::ChunkWrite& w : writes) {
      const int64_t idx = s->next_idx++;
      AddChunk(s->pk, idx, w);
      if (w.summary.count >= series::kMaxChunkPoints) {  // full: sealed, never touched again
        s->tail_idx = s->next_idx;
      } else {  // the last, partial chunk joins the tail
        s->tail_count += w.summary.count;
        s->tail_chunks += 1;
      }
    }
    int64_t lo = kMaxStep, hi = kMinStep;
    for (const Point& p : points) {
      lo = std::min(lo, p.step);
      hi = std::max(hi, p.step);
    }
    s_pk_.push_back(s->pk);
    s_n_.push_back(int64_t(points.size()));
    s_lo_.push_back(lo);
    s_hi_.push_back(hi);
    s_next_.push_back(s->next_idx);
    s_tail_idx_.push_back(s->tail_idx);
    s_tail_count_.push_back(s->tail_count);
    s_tail_chunks_.push_back(s->tail_chunks);
    return Status::Ok();
  }

  // Parameters $7..$31 of kWriteBatch.
  void AddParams(Params* p) const {
    std::vector<std::string_view> blobs(data_.begin(), data_.end());
    p->AddArray(series_pk_).AddArray(idx_).AddArray(count_).AddArray(min_step_);
    p->AddArray(max_step_).AddArray(min_time_).AddArray(max_time_).AddArray(vmin_);
    p->AddArray(vmax_).AddArray(vsum_).AddArray(vfirst_).AddArray(vlast_).AddArray(nan_count_);
    p->AddByteaArray(blobs);
    p->AddArray(s_pk_).AddArray(s_n_).AddArray(s_lo_).AddArray(s_hi_).AddArray(s_next_);
    p->AddArray(s_tail_idx_).AddArray(s_tail_count_).AddArray(s_tail_chunks_);
    p->AddArray(del_pk_).AddArray(del_lo_).AddArray(del_hi_);
  }

 private:
  void AddChunk(int64_t series_pk, int64_t idx, const series::ChunkWrite& w) {
    const series::ChunkSummary& s = w.summary;
    series_pk_.push_back(series_pk);
    idx_.push_back(idx);
    count_.push_back(s.count);
    min_step_.push_back(s.min_step);
    max_step_.push_back(s.max_step);
    min_time_.push_back(s.min_time);
    max_time_.push_back(s.max_time);
    vmin_.push_back(s.min);
    vmax_.push_back(s.max);
    vsum_.push_back(s.sum);
    vfirst_.push_back(s.first);
    vlast_.push_back(s.last);
    nan_count_.push_back(s.nan_count);
    data_.push_back(w.data);
  }

  std::vector<int64_t> series_pk_, idx_, count_, min_step_, max_step_, min_time_, max_time_;
  std::vector<int64_t> nan_count_;
  std::vector<double> vmin_, vmax_, vsum_, vfirst_, vlast_;
  std::vector<std::string> data_;
  std::vector<int64_t> s_pk_, s_n_, s_lo_, s_hi_, s_next_, s_tail_idx_, s_tail_count_;
  std::vector<int64_t> s_tail_chunks_;
  std::vector<int64_t> del_pk_, del_lo_, del_hi_;
};

// Console lines as arrays, in order; a numbered line sent twice in one batch is one row (the
// later text at the earlier place), as replacing it twice in a row would leave it.
struct ConsoleArrays {
  std::vector<int64_t> times, numbers;
  std::vector<std::string> streams, texts;

  explicit ConsoleArrays(const std::vector<ConsoleLine>& lines) {
    std::map<int64_t, size_t> numbered;  // line number -> index
    for (const ConsoleLine& line : lines) {
      if (line.line >= 0) {
        auto [it, fresh] = numbered.try_emplace(line.line, times.size());
        if (!fresh) {
          times[it->second] = line.time_ms;
          streams[it->second] = line.stream;
          texts[it->second] = line.text;
          continue;
        }
      }
      times.push_back(line.time_ms);
      streams.push_back(line.stream);
      texts.push_back(line.text);
      numbers.push_back(line.line >= 0 ? line.line : -1);
    }
  }
};

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
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kReadPositions, p));
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

    // Lock the series (creating the missing ones) and read the tails to compact.
    std::unordered_map<std::string, SeriesState> states;
    std::unordered_map<int64_t, std::vector<Point>> tails;  // series pk -> tail points
    if (!by_key.empty()) {
      std::vector<std::string> keys;
      keys.reserve(by_key.size());
      for (const auto& [key, sp] : by_key) keys.push_back(key);
      Params p;
      p.Add(run_pk).Add(writer_pk).AddTextArray(keys);
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kLockSeries, p));
      for (int i = 0; i < res.rows(); ++i) {
        states[res.Text(i, 0)] =
            SeriesState{res.Int(i, 1), res.Int(i, 2), res.Int(i, 3), res.Int(i, 4), res.Int(i, 5)};
      }
      std::vector<std::string> missing;
      std::vector<bool> missing_system;
      std::vector<int64_t> compact_pk, compact_from;
      for (const auto& [key, sp] : by_key) {
        auto it = states.find(key);
        if (it == states.end()) {
          missing.push_back(key);
          missing_system.push_back(sp.is_system);
        } else if (NeedsCompaction(it->second, sp.points.size()) && it->second.tail_count > 0) {
          compact_pk.push_back(it->second.pk);
          compact_from.push_back(it->second.tail_idx);
          tails[it->second.pk];
        }
      }
      if (!missing.empty()) {
        Params q;
        q.Add(run_pk).Add(writer_pk).AddTextArray(missing).AddArray(missing_system);
        COHORT_ASSIGN_OR_RETURN(PgResult made, c->Exec(kCreateSeries, q));
        for (int i = 0; i < made.rows(); ++i) states[made.Text(i, 0)].pk = made.Int(i, 1);
        if (size_t(made.rows()) != missing.size()) {  // only if the writer lock were bypassed
          return Status::Unavailable("series of writer '" + label + "' created concurrently");
        }
      }
      if (!compact_pk.empty()) {
        Params q;
        q.AddArray(compact_pk).AddArray(compact_from);
        COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kReadTails, q));
        for (int i = 0; i < res.rows(); ++i) {
          COHORT_ASSIGN_OR_RETURN(std::vector<Point> points,
                                  series::DecodeChunk(res.BytesView(i, 1)));
          std::vector<Point>& tail = tails[res.Int(i, 0)];
          tail.insert(tail.end(), points.begin(), points.end());
        }
      }
    }

    BatchWrite write;
    for (const auto& [key, sp] : by_key) {
      auto it = states.find(key);
      if (it == states.end()) {
        // Text the database had to sanitize (NUL bytes) comes back under another key.
        return Status::InvalidArgument("batch: metric key '" + key +
                                       "' cannot be stored (contains a NUL character)");
      }
      SeriesState& s = it->second;
      auto tail = tails.find(s.pk);
      const bool compact = NeedsCompaction(s, sp.points.size());
      if (compact && s.tail_count > 0 && tail == tails.end()) {
        return Status::Internal("series '" + key + "': tail to compact was not read");
      }
      COHORT_RETURN_IF_ERROR(write.Append(&s, sp.points, compact ? &tails[s.pk] : nullptr));
    }

    const ConsoleArrays console(batch.console);
    std::vector<std::string> position_streams;
    std::vector<int64_t> position_next;
    for (const StreamPosition& sp : batch.positions) {
      position_streams.push_back(sp.stream);
      position_next.push_back(sp.next);
    }
    Params p;
    p.Add(run_pk).Add(writer_pk).Add(now_ms).Add(next_step).Add(batch.seq);
    p.Add(int64_t(console.times.size()));
    write.AddParams(&p);
    p.AddArray(console.times).AddTextArray(console.streams).AddTextArray(console.texts);
    p.AddArray(console.numbers);
    p.AddTextArray(position_streams).AddArray(position_next);
    COHORT_RETURN_IF_ERROR(c->Exec(kWriteBatch, p).status());
    result.next_step = next_step;
    return result;
  });
}

}  // namespace cohort::store
