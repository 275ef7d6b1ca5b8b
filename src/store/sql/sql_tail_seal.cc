#include "store/sql/sql_tail_seal.h"

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "series/chunk.h"

namespace cohort::store::sql {
namespace {

// Statements over many series or chunks are cut into shapes of 32, 16, 8, 4, 2 and 1 items, each
// prepared once per connection: few round trips on PostgreSQL, and on SQLite no statement
// compiled per seal (a statement of hundreds of rows compiled once per use cost more than the
// rows: SQLite's finish went 3.5x slower with 256).
constexpr size_t kMaxItemsPerStatement = 32;

// `head` followed by `items` copies of `item` joined by `sep`, its placeholders $1.. numbered on
// (`item` holds `params` of them, written "$"): the statements of RunInShapes.
std::string ShapeSql(std::string_view head, std::string_view item, std::string_view sep, int params,
                     size_t items) {
  std::string sql(head);
  int n = 0;
  for (size_t i = 0; i < items; ++i) {
    if (i > 0) sql += sep;
    int seen = 0;
    for (char c : item) {
      sql += c;
      if (c == '$' && seen++ < params) sql += std::to_string(++n);
    }
  }
  return sql;
}

// Runs `add(i, &params)` for items [0, count) in statements of the shapes above (`shapes[n]`:
// the statement of n items), returning the rows they changed.
Result<int64_t> RunInShapes(Conn& conn, const std::vector<std::string>& shapes, size_t count,
                            const std::function<void(size_t, Params*)>& add) {
  int64_t changed = 0;
  for (size_t at = 0; at < count;) {
    size_t n = kMaxItemsPerStatement;
    while (n > count - at) n /= 2;
    Params p;
    for (size_t i = at; i < at + n; ++i) add(i, &p);
    COHORT_ASSIGN_OR_RETURN(const int64_t rows, conn.Exec(shapes[n], p));
    changed += rows;
    at += n;
  }
  return changed;
}

std::vector<std::string> Shapes(std::string_view head, std::string_view item, std::string_view sep,
                                int params) {
  std::vector<std::string> v(kMaxItemsPerStatement + 1);
  for (size_t n = 1; n <= kMaxItemsPerStatement; n *= 2)
    v[n] = ShapeSql(head, item, sep, params, n);
  return v;
}

const std::vector<std::string>& InsertShapes() {
  static const auto* const kShapes = new std::vector<std::string>(Shapes(
      "INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, max_time, vmin, "
      "vmax, vsum, vfirst, vlast, nan_count, data) VALUES ",
      "($, $, $, $, $, $, $, $, $, $, $, $, $, $)", ", ", 14));
  return *kShapes;
}

// Each series' tail by its bounds (the key index's ranges on both engines; a bound read from
// the series row inside the statement was checked against every chunk of the series).
const std::vector<std::string>& DeleteShapes() {
  static const auto* const kShapes = new std::vector<std::string>(
      Shapes("DELETE FROM chunks WHERE ", "(series_pk = $ AND idx >= $ AND idx < $)", " OR ", 3));
  return *kShapes;
}

struct Tail {
  int64_t series_pk;
  series::TailState state;
  int64_t tail_idx_before = 0;
  series::TailAppend plan;
};

}  // namespace

void AbandonDamagedTail(std::string_view key, int64_t series_pk, std::string_view why,
                        series::TailState* state) {
  std::fprintf(stderr,
               "cohort: store: series '%.*s' (#%lld): a damaged tail chunk (%.*s) is kept as it is "
               "(reads skip and name it); new points start a new tail\n",
               int(key.size()), key.data(), static_cast<long long>(series_pk), int(why.size()),
               why.data());
  series::AbandonTail(state);
}

Result<int64_t> SealWriterTails(Conn& conn, int64_t writer_pk, const AfterTailSealed& after) {
  // The writer's series by (run_pk, writer_pk): the series key index, not a scan of every series.
  Params writer;
  writer.Add(writer_pk);
  COHORT_ASSIGN_OR_RETURN(
      const int64_t run_pk,
      QueryOne<int64_t>(
          conn, "SELECT run_pk FROM writers WHERE pk = $1", writer,
          [](const Row& r) { return r.Int(0); },
          Status::NotFound("sealing tails: writer " + std::to_string(writer_pk) + " not found")));
  Params series_of;
  series_of.Add(run_pk).Add(writer_pk);
  std::vector<Tail> tails;
  {
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        conn.Query("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks FROM series "
                   "WHERE run_pk = $1 AND writer_pk = $2 AND tail_chunks > 0 ORDER BY pk",
                   series_of));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      tails.push_back({rows->Int(0), {rows->Int(1), rows->Int(2), rows->Int(3), rows->Int(4)}});
    }
  }
  if (tails.empty()) return 0;
  // Every tail chunk of the writer in one read (a round trip per statement on PostgreSQL: a
  // writer of thousands of keys finishes in a few, not in four per key); each series is planned
  // as soon as its rows end, so that only one tail's points are held at a time.
  {
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        // CROSS JOIN: SQLite keeps this order (the writer's series, then each one's tail by the
        // chunks' key index), instead of scanning every chunk of the store; PostgreSQL plans it
        // as any join.
        conn.Query("SELECT c.series_pk, c.data FROM series s CROSS JOIN chunks c "
                   "WHERE c.series_pk = s.pk AND s.run_pk = $1 AND s.writer_pk = $2 AND "
                   "s.tail_chunks > 0 AND c.idx >= s.tail_idx ORDER BY c.series_pk, c.idx",
                   series_of));
    std::vector<series::Point> points;
    std::string damage;  // why the current series' tail cannot be sealed
    size_t t = 0;
    auto plan = [&](Tail& tail) -> Status {
      tail.tail_idx_before = tail.state.tail_idx;
      if (damage.empty() && int64_t(points.size()) != tail.state.tail_count) {
        damage = "the tail holds " + std::to_string(points.size()) +
                 " points, the series row says " + std::to_string(tail.state.tail_count);
      }
      if (!damage.empty()) {  // kept as sealed chunks: the writer finishes
        AbandonDamagedTail("", tail.series_pk, damage, &tail.state);
        tail.plan = series::TailAppend{};
      } else {
        COHORT_ASSIGN_OR_RETURN(tail.plan, series::PlanTailSeal(&tail.state, points));
      }
      points.clear();
      damage.clear();
      return Status::Ok();
    };
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      const int64_t pk = rows->Int(0);
      for (; t < tails.size() && tails[t].series_pk < pk; ++t)
        COHORT_RETURN_IF_ERROR(plan(tails[t]));
      if (t == tails.size() || tails[t].series_pk != pk) {
        return Status::Internal("sealing tails: a tail chunk of series " + std::to_string(pk) +
                                " that the writer's series rows do not name");
      }
      if (!damage.empty()) continue;
      Result<std::vector<series::Point>> chunk = series::DecodeChunk(rows->Bytes(1));
      if (!chunk.ok()) {
        damage = chunk.status().message();
        continue;
      }
      points.insert(points.end(), chunk->begin(), chunk->end());
    }
    for (; t < tails.size(); ++t) COHORT_RETURN_IF_ERROR(plan(tails[t]));
  }
  std::vector<const Tail*> deleting;
  std::vector<std::pair<int64_t, const series::ChunkWrite*>> sealed;
  for (const Tail& t : tails) {
    if (t.plan.delete_hi > t.plan.delete_lo) deleting.push_back(&t);
    for (const series::ChunkWrite& w : t.plan.chunks) sealed.emplace_back(t.series_pk, &w);
  }
  // The tail chunks go (PlanTailSeal's [tail_idx, next_idx) of each series), then the sealed
  // chunks come, at indexes from next_idx on.
  COHORT_ASSIGN_OR_RETURN(
      const int64_t deleted,
      RunInShapes(conn, DeleteShapes(), deleting.size(), [&](size_t i, Params* p) {
        p->Add(deleting[i]->series_pk).Add(deleting[i]->plan.delete_lo);
        p->Add(deleting[i]->plan.delete_hi);
      }));
  COHORT_RETURN_IF_ERROR(
      RunInShapes(conn, InsertShapes(), sealed.size(), [&](size_t i, Params* p) {
        const auto& [series_pk, w] = sealed[i];
        const series::ChunkSummary& s = w->summary;
        p->Add(series_pk).Add(w->index).Add(s.count).Add(s.min_step).Add(s.max_step);
        p->Add(s.min_time).Add(s.max_time).AddStored(s.min).AddStored(s.max).AddStored(s.sum);
        p->AddStored(s.first).AddStored(s.last).Add(s.nan_count).AddBlob(w->data);
      }).status());
  // Each series row as PlanTailSeal left its state: next_idx past its sealed chunks (the only
  // chunks at or past the old next_idx), no tail; checked against the plans.
  {
    COHORT_ASSIGN_OR_RETURN(
        std::unique_ptr<Rows> rows,
        conn.Query("UPDATE series SET next_idx = next_idx + (SELECT count(*) FROM chunks c WHERE "
                   "c.series_pk = series.pk AND c.idx >= series.next_idx), tail_idx = next_idx + "
                   "(SELECT count(*) FROM chunks c WHERE c.series_pk = series.pk AND c.idx >= "
                   "series.next_idx), tail_count = 0, tail_chunks = 0 WHERE run_pk = $1 AND "
                   "writer_pk = $2 AND tail_chunks > 0 RETURNING pk, next_idx",
                   series_of));
    std::map<int64_t, int64_t> next_idx;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      next_idx[rows->Int(0)] = rows->Int(1);
    }
    for (const Tail& t : tails) {
      auto it = next_idx.find(t.series_pk);
      if (next_idx.size() != tails.size() || it == next_idx.end() ||
          it->second != t.state.next_idx) {
        return Status::Internal("sealing tails: series " + std::to_string(t.series_pk) +
                                " does not end where its sealed chunks do");
      }
    }
  }
  if (after) {
    for (const Tail& t : tails) {
      COHORT_RETURN_IF_ERROR(after(conn, t.series_pk, t.tail_idx_before, t.state, t.plan.chunks));
    }
  }
  return deleted;
}

}  // namespace cohort::store::sql
