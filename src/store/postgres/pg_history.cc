// PostgresStore: the history query (the chunks of the matching series in one statement, their
// data loaded on demand). Writing series is pg_ingest.cc.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "series/query.h"
#include "store/postgres/pg_sql_conn.h"
#include "store/postgres/pg_store.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

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

Result<std::vector<SeriesData>> PostgresStore::QueryHistory(const HistoryQuery& q) {
  COHORT_ASSIGN_OR_RETURN(const series::ChunkRange range, series::ChunkRangeOf(q.series));
  const std::set<std::string> keys(q.keys.begin(), q.keys.end());
  const std::set<std::string> writers(q.writers.begin(), q.writers.end());

  return pg::RunTransaction(read_pool(), pg::TxnMode::kRead,
                            [&](Conn* c) -> Result<std::vector<SeriesData>> {
    pg::SqlConn conn(c);
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
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
      p.AddArray(pks)
          .Add(range.min_step)
          .Add(range.max_step)
          .Add(range.min_time)
          .Add(range.max_time);
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
    int64_t held = q.answer_points_held;
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
      COHORT_RETURN_IF_ERROR(ChargeHistoryAnswer(q, data, &held));
      out.push_back(std::move(data));
    }
    return out;
  });
}

}  // namespace cohort::store
