// SqlStore: what both engines share of series and console lines: listing series, console
// queries (each engine adds its text search), stream positions and the key budget of ingest.
#include <algorithm>
#include <map>

#include "store/ingest_plan.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

Result<std::vector<SeriesInfo>> SqlStore::ListSeries(const RunRef& ref) {
  using Out = std::vector<SeriesInfo>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryAll<SeriesInfo>(
        conn,
        "SELECT s.key, w.label, s.count, coalesce(s.min_step, 0), coalesce(s.max_step, 0) "
        "FROM series s JOIN writers w ON w.pk = s.writer_pk WHERE s.run_pk = $1 "
        "ORDER BY s.key, w.label",
        Params().Add(run.pk), [](const Row& row) {
          return SeriesInfo{row.Text(0), row.Text(1), row.Int(2), row.Int(3), row.Int(4)};
        });
  });
}

std::string SqlStore::ConsoleFilter(const ConsoleQuery& q, int64_t run_pk,
                                    sql::Params* params) const {
  params->Add(run_pk).Add(q.after_id);
  std::string sql = " WHERE c.run_pk = $1 AND c.id > $2";
  if (!q.labels.empty()) {
    params->AddTextArray(q.labels);
    sql += " AND c.writer_pk IN (SELECT pk FROM writers WHERE run_pk = $1 AND label = ANY(" +
           params->Last() + "))";
  }
  if (!q.stream.empty()) {
    params->Add(q.stream);
    sql += " AND c.stream = " + params->Last();
  }
  if (!q.text.empty()) sql += " AND " + ConsoleTextCondition(q.text, params);
  return sql;
}

Result<std::vector<ConsoleLine>> SqlStore::QueryConsole(const ConsoleQuery& q) {
  using Out = std::vector<ConsoleLine>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
    Params params;
    std::string sql =
        "SELECT c.id, c.time_ms, c.stream, c.text, w.label FROM console c JOIN writers w ON "
        "w.pk = c.writer_pk" +
        ConsoleFilter(q, run.pk, &params);
    params.Add(int64_t{q.limit > 0 ? q.limit : 1000});
    sql += " ORDER BY c.id LIMIT " + params.Last();
    return sql::QueryAll<ConsoleLine>(
        conn, sql, params,
        [](const Row& row) {
          ConsoleLine line;
          line.id = row.Int(0);
          line.time_ms = row.Int(1);
          line.stream = row.Text(2);
          line.text = row.Text(3);
          line.label = row.Text(4);
          return line;
        },
        sql::Prepare::kOnce);
  });
}

Result<std::map<std::string, std::map<std::string, int64_t>>> SqlStore::ListStreamPositions(
    const RunRef& ref) {
  using Out = std::map<std::string, std::map<std::string, int64_t>>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<sql::Rows> rows,
        conn.Query("SELECT w.label, p.stream, p.next_offset FROM stream_positions p "
                   "JOIN writers w ON w.pk = p.writer_pk WHERE w.run_pk = $1",
                   Params().Add(run.pk)));
    Out out;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) return out;
      out[rows->Text(0)][rows->Text(1)] = rows->Int(2);
    }
  });
}

Status SqlStore::CheckStreamPositions(Conn& conn, int64_t writer_pk, const std::string& label,
                                      const std::vector<StreamPosition>& positions) {
  for (const StreamPosition& p : positions) {
    COHORT_ASSIGN_OR_RETURN(int64_t current,
                            sql::QueryInt(conn,
                                          "SELECT next_offset FROM stream_positions "
                                          "WHERE writer_pk = $1 AND stream = $2",
                                          Params().Add(writer_pk).Add(p.stream)));
    if (current != p.expect) {
      return Status::FailedPrecondition("stream '" + p.stream + "' of writer '" + label +
                                        "' is at " + std::to_string(current) + ", not " +
                                        std::to_string(p.expect));
    }
  }
  return Status::Ok();
}

Status SqlStore::CheckRunKeys(Conn& conn, const RunRef& ref, int64_t run_pk,
                              const std::vector<std::string>& missing, const IngestBatch& batch,
                              RunIngestCache::Note* note) {
  const std::vector<std::string> hist_keys = batch.histogram_keys();
  const std::vector<std::string> media_keys = batch.media_keys();
  run_cache_.Begin(note, run_pk);
  note->keys.clear();
  for (const std::string& k : hist_keys) note->keys.emplace_back(k, kHistogramKeyType);
  std::map<std::string, std::string> media_types;
  for (const MediaPoint& m : batch.media) media_types.emplace(m.key, m.type);
  note->keys.insert(note->keys.end(), media_types.begin(), media_types.end());
  const int64_t max = batch.max_run_keys;
  if (max <= 0 || (missing.empty() && note->keys.empty())) return Status::Ok();
  // The keys of `missing` the run has under another writer are not new to it.
  std::vector<std::string> known;
  if (!missing.empty()) {
    COHORT_ASSIGN_OR_RETURN(
        known, sql::QueryAll<std::string>(
                   conn, "SELECT DISTINCT key FROM series WHERE run_pk = $1 AND key = ANY($2)",
                   Params().Add(run_pk).AddTextArray(missing),
                   [](const Row& row) { return row.Text(0); }));
  }
  std::vector<std::string> added;
  for (const std::string& key : missing) {
    if (std::find(known.begin(), known.end(), key) == known.end()) added.push_back(key);
  }
  // Histogram and media keys the run has not had: those not known stored in the run, one index
  // seek each (a key is looked up until a batch that carries it commits; both tables' keys start
  // with (run_pk, key)).
  for (const auto& [table, keys] :
       {std::pair{"histograms", run_cache_.UnknownKeys(run_pk, hist_keys)},
        std::pair{"media", run_cache_.UnknownKeys(run_pk, media_keys)}}) {
    for (const std::string& key : keys) {
      COHORT_ASSIGN_OR_RETURN(
          std::vector<int64_t> held,
          sql::QueryAll<int64_t>(conn,
                                 std::string("SELECT 1 FROM ") + table +
                                     " WHERE run_pk = $1 AND key = $2 LIMIT 1",
                                 Params().Add(run_pk).Add(key),
                                 [](const Row& row) { return row.Int(0); }));
      if (held.empty()) added.push_back(key);
    }
  }
  if (added.empty()) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(
      int64_t run_keys,
      sql::QueryInt(conn,
                    "SELECT (SELECT count(DISTINCT key) FROM series WHERE run_pk = $1) + "
                    "(SELECT count(DISTINCT key) FROM histograms WHERE run_pk = $1) + "
                    "(SELECT count(DISTINCT key) FROM media WHERE run_pk = $1)",
                    Params().Add(run_pk)));
  return CheckKeyBudget(ref, run_keys, int64_t(added.size()), added.front(), max);
}

}  // namespace cohort::store
