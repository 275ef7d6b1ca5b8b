// PostgresStore: reading series back (series list, history) and the console. Writing them is
// pg_ingest.cc.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "series/query.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();
// Raw history reads fetch this many chunks per round trip.
constexpr size_t kRawPrefetchChunks = 16;

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
  if (q.series.buckets < 0) return Status::InvalidArgument("history: buckets must be >= 0");
  if (q.series.buckets == 0 && q.series.limit <= 0)
    return Status::InvalidArgument("history: limit must be > 0");
  const std::set<std::string> keys(q.keys.begin(), q.keys.end());
  const std::set<std::string> writers(q.writers.begin(), q.writers.end());

  // Chunks whose step and time ranges meet the query's.
  int64_t lo = q.series.min_step.value_or(kMinStep);
  if (q.series.buckets == 0 && q.series.after_step != kMinStep) {
    lo = std::max(lo, q.series.after_step == kMaxStep ? kMaxStep : q.series.after_step + 1);
  }
  const int64_t hi = q.series.max_step.value_or(kMaxStep);
  const int64_t tlo = q.series.min_time_ms.value_or(kMinStep),
                thi = q.series.max_time_ms.value_or(kMaxStep);

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
          c->Exec("SELECT series_pk, idx, count, min_step, max_step, min_time, max_time, vmin, "
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
        if (q.series.buckets == 0 && position.contains(id)) {
          for (size_t i = position[id] + 1; i < m.chunks.size() && ids.size() < kRawPrefetchChunks;
               ++i) {
            ids.push_back(m.chunks[i].id);
          }
        }
        Params p;
        p.Add(m.pk).AddArray(ids);
        COHORT_ASSIGN_OR_RETURN(
            PgResult res,
            c->Exec("SELECT idx, data FROM chunks WHERE series_pk = $1 AND idx = ANY($2)", p));
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
      COHORT_RETURN_IF_ERROR(series::QuerySeries(m.chunks, load, q.series, &data));
      out.push_back(std::move(data));
    }
    return out;
  });
}

namespace {

// Console text search is a LIKE '%text%' (wildcards in the text escaped), which the trigram index
// console_text_trgm answers where pg_trgm is installed (schema version 4) and a scan otherwise.
std::string TextCondition(int param) {
  return " AND c.text LIKE $" + std::to_string(param) + " ESCAPE '\\'";
}

std::string LikePattern(const std::string& text) {
  std::string out = "%";
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') out += '\\';
    out += ch;
  }
  out += '%';
  return out;
}

}  // namespace

Result<std::vector<ConsoleLine>> PostgresStore::QueryConsole(const ConsoleQuery& q) {
  std::string sql =
      "SELECT c.id, c.time_ms, c.stream, c.text, w.label FROM console c JOIN writers w ON "
      "w.pk = c.writer_pk WHERE c.run_pk = $1 AND c.id > $2";
  int n = 2;  // placeholders used so far
  if (!q.labels.empty()) {
    sql += " AND c.writer_pk IN (SELECT pk FROM writers WHERE run_pk = $1 AND label = ANY($" +
           std::to_string(++n) + "))";
  }
  if (!q.stream.empty()) sql += " AND c.stream = $" + std::to_string(++n);
  if (!q.text.empty()) sql += TextCondition(++n);
  sql += " ORDER BY c.id LIMIT $" + std::to_string(++n);

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<std::vector<ConsoleLine>> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, q.run));
    Params params;
    params.Add(run.pk).Add(q.after_id);
    if (!q.labels.empty()) params.AddTextArray(q.labels);
    if (!q.stream.empty()) params.Add(q.stream);
    if (!q.text.empty()) params.Add(LikePattern(q.text));
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

Result<ConsoleIndex> PostgresStore::IndexConsole(const ConsoleQuery& q, int64_t stride) {
  if (stride < 1) return Status::InvalidArgument("console index: stride must be >= 1");
  // Numbered on the server: only every stride-th id and the last one (with the count) travel.
  std::string where = "c.run_pk = $1 AND c.id > $2";
  int n = 3;  // $3 is the stride
  if (!q.labels.empty()) {
    where += " AND c.writer_pk IN (SELECT pk FROM writers WHERE run_pk = $1 AND label = ANY($" +
             std::to_string(++n) + "))";
  }
  if (!q.stream.empty()) where += " AND c.stream = $" + std::to_string(++n);
  if (!q.text.empty()) where += TextCondition(++n);
  const std::string sql =
      "SELECT id, rn, total FROM (SELECT c.id, row_number() OVER (ORDER BY c.id) AS rn, "
      "count(*) OVER () AS total FROM console c WHERE " +
      where + ") s WHERE rn % $3 = 0 OR rn = total ORDER BY id";

  return ReadReplica(pg::TxnMode::kRead, [&](Conn* c) -> Result<ConsoleIndex> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(c, q.run));
    Params params;
    params.Add(run.pk).Add(q.after_id).Add(stride);
    if (!q.labels.empty()) params.AddTextArray(q.labels);
    if (!q.stream.empty()) params.Add(q.stream);
    if (!q.text.empty()) params.Add(LikePattern(q.text));
    COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(sql, params));
    ConsoleIndex out;
    out.last_id = q.after_id;
    for (int i = 0; i < res.rows(); ++i) {
      const int64_t id = res.Int(i, 0);
      const int64_t rn = res.Int(i, 1);
      out.total = res.Int(i, 2);
      if (rn % stride == 0) out.stride_ids.push_back(id);
      if (rn == out.total) out.last_id = id;
    }
    return out;
  });
}

}  // namespace cohort::store
