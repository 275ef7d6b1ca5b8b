#include "store/sql/sql_tail_seal.h"

#include <memory>
#include <string>

#include "series/chunk.h"

namespace cohort::store::sql {
namespace {

// The most new chunks one INSERT statement writes (14 parameters each). Statements of 32, 16, 8,
// 4, 2 and 1 rows, each prepared once per connection: few round trips on PostgreSQL, and on
// SQLite no statement compiled per seal (a statement of hundreds of rows compiled once per use
// cost more than the inserts).
constexpr size_t kMaxChunksPerInsert = 32;

// "INSERT INTO chunks (...) VALUES ($1, ..., $14), ..." for `rows` rows.
std::string InsertSql(size_t rows) {
  std::string sql =
      "INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, max_time, vmin, "
      "vmax, vsum, vfirst, vlast, nan_count, data) VALUES ";
  for (size_t r = 0, n = 0; r < rows; ++r) {
    sql += r == 0 ? "(" : ", (";
    for (int c = 0; c < 14; ++c) sql += (c == 0 ? "$" : ", $") + std::to_string(++n);
    sql += ")";
  }
  return sql;
}

Status InsertChunks(Conn& conn,
                    const std::vector<std::pair<int64_t, const series::ChunkWrite*>>& chunks) {
  static const std::vector<std::string>* const kSql = [] {
    auto* v = new std::vector<std::string>(kMaxChunksPerInsert + 1);
    for (size_t n = 1; n <= kMaxChunksPerInsert; n *= 2) (*v)[n] = InsertSql(n);
    return v;
  }();
  for (size_t at = 0; at < chunks.size();) {
    size_t n = kMaxChunksPerInsert;
    while (n > chunks.size() - at) n /= 2;
    Params p;
    for (size_t i = at; i < at + n; ++i) {
      const auto& [series_pk, w] = chunks[i];
      const series::ChunkSummary& s = w->summary;
      p.Add(series_pk).Add(w->index).Add(s.count).Add(s.min_step).Add(s.max_step);
      p.Add(s.min_time).Add(s.max_time).AddStored(s.min).AddStored(s.max).AddStored(s.sum);
      p.AddStored(s.first).AddStored(s.last).Add(s.nan_count).AddBlob(w->data);
    }
    COHORT_RETURN_IF_ERROR(conn.Exec((*kSql)[n], p).status());
    at += n;
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> SealWriterTails(Conn& conn, int64_t writer_pk, const AfterTailSealed& after) {
  struct Tail {
    int64_t series_pk;
    series::TailState state;
    std::vector<series::Point> points;
    int64_t tail_idx_before = 0;
    series::TailAppend plan;
  };
  std::vector<Tail> tails;
  Params writer;
  writer.Add(writer_pk);
  {
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        conn.Query("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks FROM series "
                   "WHERE writer_pk = $1 AND tail_chunks > 0 ORDER BY pk",
                   writer));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      tails.push_back(
          {rows->Int(0), {rows->Int(1), rows->Int(2), rows->Int(3), rows->Int(4)}, {}, 0, {}});
    }
  }
  if (tails.empty()) return 0;
  // Every tail chunk of the writer in one read (a round trip per statement on PostgreSQL: a
  // writer of thousands of keys finishes in a few, not in four per key).
  {
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        // CROSS JOIN: SQLite keeps this order (the writer's series, then each one's chunks by
        // its key index), instead of scanning every chunk of the store; PostgreSQL plans it as
        // any join.
        conn.Query("SELECT c.series_pk, c.data FROM series s CROSS JOIN chunks c "
                   "WHERE c.series_pk = s.pk AND s.writer_pk = $1 AND s.tail_chunks > 0 AND "
                   "c.idx >= s.tail_idx ORDER BY c.series_pk, c.idx",
                   writer));
    size_t t = 0;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      const int64_t pk = rows->Int(0);
      while (t < tails.size() && tails[t].series_pk < pk) ++t;
      if (t == tails.size() || tails[t].series_pk != pk) {
        return Status::Internal("sealing tails: a tail chunk of series " + std::to_string(pk) +
                                " that the writer's series rows do not name");
      }
      COHORT_ASSIGN_OR_RETURN(std::vector<series::Point> chunk,
                              series::DecodeChunk(rows->Bytes(1)));
      tails[t].points.insert(tails[t].points.end(), chunk.begin(), chunk.end());
    }
  }
  std::vector<std::pair<int64_t, const series::ChunkWrite*>> sealed;
  for (Tail& t : tails) {
    t.tail_idx_before = t.state.tail_idx;
    COHORT_ASSIGN_OR_RETURN(t.plan, series::PlanTailSeal(&t.state, t.points));
    for (const series::ChunkWrite& w : t.plan.chunks) sealed.emplace_back(t.series_pk, &w);
  }
  // The tail chunks go (each series' from its tail_idx on: PlanTailSeal's [tail_idx, next_idx)),
  // before the series rows move; then the sealed chunks come, at indexes from next_idx on.
  COHORT_ASSIGN_OR_RETURN(
      const int64_t deleted,
      conn.Exec("DELETE FROM chunks WHERE series_pk IN (SELECT pk FROM series WHERE writer_pk = "
                "$1 AND tail_chunks > 0) AND idx >= (SELECT s.tail_idx FROM series s WHERE s.pk = "
                "chunks.series_pk)",
                writer));
  COHORT_RETURN_IF_ERROR(InsertChunks(conn, sealed));
  // Each series row as PlanTailSeal left its state: next_idx past its sealed chunks (the only
  // chunks at or past the old next_idx), no tail.
  COHORT_ASSIGN_OR_RETURN(
      const int64_t updated,
      conn.Exec("UPDATE series SET next_idx = next_idx + (SELECT count(*) FROM chunks c WHERE "
                "c.series_pk = series.pk AND c.idx >= series.next_idx), tail_idx = next_idx + "
                "(SELECT count(*) FROM chunks c WHERE c.series_pk = series.pk AND c.idx >= "
                "series.next_idx), tail_count = 0, tail_chunks = 0 WHERE writer_pk = $1 AND "
                "tail_chunks > 0",
                writer));
  if (updated != int64_t(tails.size())) {
    return Status::Internal("sealing tails: " + std::to_string(updated) + " series rows updated, " +
                            std::to_string(tails.size()) + " tails sealed");
  }
  if (after) {
    for (const Tail& t : tails) {
      COHORT_RETURN_IF_ERROR(after(conn, t.series_pk, t.tail_idx_before, t.state, t.plan.chunks));
    }
  }
  return deleted;
}

}  // namespace cohort::store::sql
