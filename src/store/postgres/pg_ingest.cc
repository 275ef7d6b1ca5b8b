// PostgresStore::Ingest: one batch of one writer (metric chunks, system metrics, console lines,
// stream positions) in one READ COMMITTED transaction of two statements in the common case:
//   1. lock the writer row, record (writer, seq) with INSERT ... ON CONFLICT DO NOTHING, and lock
//      the batch's series rows (FOR UPDATE), which hold each series' tail state. A duplicate
//      stops here; a concurrent copy of the same batch on another server waits for the writer's
//      lock, then finds the seq taken. An ordered batch (IngestBatch::ordered_stream) leaves no
//      record: a statement of its own, under the lock, looks for a record of its seq and for
//      its stream's highest seq (ordered_streams, raised in 3.);
//   2. (rare) create the series that are new; read the tails that this batch compacts;
//   3. one statement of data-modifying CTEs: delete compacted tail chunks, insert the new chunks,
//      advance the series, the writer, the stream positions and the run (whose row lock orders
//      console ids), and insert the console lines.
// Arrays travel as binary parameters, so a batch costs the same few round trips at any size.
//
// The fast path: when this server wrote the writer's last batch (pg_ingest_cache.h), the batch
// is planned from that state before the transaction, and BEGIN, a statement that locks and reads
// the writer and its series rows, the final statement (3.) guarded by a check of that state and
// of the seq, and COMMIT go in one pipeline (one round trip). No statement fails on a stale plan
// or a duplicate: the guarded statement then changes nothing, and the rows read under the locks
// tell a duplicate (acknowledged at once) from a stale plan (another server wrote for the
// writer: the batch is planned again from those rows and sent once more, then takes the path
// above). Compactions, new series and stream positions take that path too. With group commit
// (PostgresOptions::group_commit, pg_group_commit.h) fast-path batches of different writers that
// arrive together share one pipeline and one COMMIT; each keeps its own lock and guarded write,
// so a stale or duplicate batch writes nothing and the others commit.
//
// Chunk layout: sealed chunks followed by a tail of per-batch chunks that is compacted now and
// then (series/tail.h, shared with the SQLite store).
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "series/chunk.h"
#include "series/tail.h"
#include "store/ingest_plan.h"
#include "store/postgres/pg_sql_conn.h"
#include "store/postgres/pg_store.h"
#include "store/run_ref.h"
#include "store/sql/sql_tail_seal.h"

namespace cohort::store {

using pg::Conn;
using pg::Params;
using pg::PgResult;

namespace {

// The stored state of one series, read under its row lock.
using SeriesState = pg::IngestCache::Series;

// Locks the writer, records (writer, seq) (not when $8: an ordered batch, see kOrderedSeen) and
// locks the batch's existing series. The writer's lock alone serialises every change to its
// series; the series rows are locked as well because this statement's snapshot may predate a
// batch another server committed while we waited for the writer: FOR UPDATE returns the latest
// version of each row (EvalPlanQual), never a stale tail.
// A series another server created meanwhile is not in the snapshot at all: creating it conflicts
// and the caller then finds it with kLockSeries (a later statement, a fresh snapshot).
constexpr const char* kLockWriterAndSeries =
    "WITH w AS (SELECT w.pk, w.run_pk, w.next_step, w.pruned_seq FROM writers w JOIN runs r ON "
    "r.pk = w.run_pk WHERE r.entity = $1 AND r.project = $2 AND r.run_id = $3 AND w.label = $4 "
    "FOR UPDATE OF w), "
    "b AS (INSERT INTO batches (writer_pk, seq, stored_ms) SELECT pk, $5, $6 FROM w "
    "WHERE $5 > 0 AND $5 > w.pruned_seq AND NOT $8 ON CONFLICT DO NOTHING RETURNING 1), "
    "s AS (SELECT s.key, s.pk, s.next_idx, s.tail_idx, s.tail_count, s.tail_chunks "
    "FROM series s JOIN w ON s.run_pk = w.run_pk AND s.writer_pk = w.pk "
    "WHERE s.key = ANY($7) FOR UPDATE OF s) "
    "SELECT w.pk, w.run_pk, w.next_step, (SELECT count(*) FROM b), s.key, s.pk, s.next_idx, "
    "s.tail_idx, s.tail_count, s.tail_chunks FROM w LEFT JOIN s ON true";

// Whether an ordered batch was stored before: seq $2 of writer $1 at or below its pruned_seq,
// recorded, or at or below the highest of its stream $3. A statement of its own, after
// kLockWriterAndSeries took the writer's lock: its snapshot sees what another server committed
// while this one waited (kLockWriterAndSeries's own snapshot predates the wait).
constexpr const char* kOrderedSeen =
    "SELECT $2 <= (SELECT pruned_seq FROM writers WHERE pk = $1) OR EXISTS (SELECT 1 FROM "
    "batches WHERE writer_pk = $1 AND seq = $2) OR EXISTS (SELECT 1 FROM ordered_streams WHERE "
    "writer_pk = $1 AND stream = $3 AND seq >= $2)";

constexpr const char* kLockSeries =
    "SELECT key, pk, next_idx, tail_idx, tail_count, tail_chunks FROM series "
    "WHERE run_pk = $1 AND writer_pk = $2 AND key = ANY($3) FOR UPDATE";

constexpr const char* kCreateSeries =
    "INSERT INTO series (run_pk, writer_pk, key, is_system) SELECT $1, $2, t.k, t.sys "
    "FROM unnest($3::text[], $4::bool[]) AS t(k, sys) ON CONFLICT DO NOTHING RETURNING key, pk";

// LATERAL with OFFSET 0: one index range scan per series, never a scan of the chunks table.
constexpr const char* kReadTails =
    "SELECT t.pk, c.data FROM unnest($1::int8[], $2::int8[]) WITH ORDINALITY AS t(pk, lo, ord) "
    "CROSS JOIN LATERAL (SELECT idx, data FROM chunks WHERE series_pk = t.pk AND idx >= t.lo "
    "ORDER BY idx OFFSET 0) c ORDER BY t.ord, c.idx";

// The final statement, with the parts a batch needs (every part costs executor work even when
// empty): deleting compacted tail chunks, stream positions, console lines. Parameters are numbered
// the same in every variant (unused ones are sent empty).
//
// $39: 1 for an ordered batch of stream $40, whose seq raises the stream's highest
// (ordered_streams) instead of leaving a record; 0: a record.
//
// `guarded` (the one-round-trip path): the statement first checks, under the row locks that
// kFastLock took, that the writer ($41: next step; $47: still the batch's label, not renamed
// since it was cached) and the batch's series ($42..$46: pk, next_idx, tail_idx, tail_count,
// tail_chunks) are in the state the batch was planned from and
// that the seq is new (for an ordered batch: not recorded, above its stream's highest), records
// it only then, and makes every change depend on that: a stale plan or a duplicate changes
// nothing and no statement fails. It answers one row, the number of batches stored (1: stored,
// 0: nothing written).
constexpr const char* kRaiseOrderedStream =
    "INSERT INTO ordered_streams (writer_pk, stream, seq) SELECT $2, $40, $5";
constexpr const char* kRaiseOrderedStreamConflict =
    "ON CONFLICT (writer_pk, stream) DO UPDATE SET seq = greatest(ordered_streams.seq, "
    "excluded.seq)";

const std::string& WriteBatchSql(bool deletes, bool positions, bool console, bool guarded) {
  static const std::vector<std::string> kVariants = [] {
    std::vector<std::string> out;
    for (int mask = 0; mask < 16; ++mask) {
      const bool guard = mask & 8;
      const std::string g = guard ? " AND EXISTS (SELECT 1 FROM st)" : "";
      std::string sql = "WITH ";
      if (guard) {
        sql +=
            "ok AS (SELECT 1 FROM writers w WHERE w.pk = $2 AND w.label = $47 AND "
            "w.next_step = $41 AND "
            "$5 > w.pruned_seq AND (SELECT count(*) FROM series s JOIN unnest($42::int8[], "
            "$43::int8[], $44::int8[], $45::int8[], $46::int8[]) AS e(pk, ni, ti, tc, tk) "
            "ON s.pk = e.pk WHERE s.writer_pk = $2 AND s.next_idx = e.ni AND s.tail_idx = e.ti "
            "AND s.tail_count = e.tc AND s.tail_chunks = e.tk) = cardinality($42::int8[]) AND "
            "($39 = 0 OR NOT EXISTS (SELECT 1 FROM batches x WHERE x.writer_pk = $2 AND "
            "x.seq = $5) AND NOT EXISTS (SELECT 1 FROM ordered_streams o WHERE o.writer_pk = $2 "
            "AND o.stream = $40 AND o.seq >= $5))), "
            "b AS (INSERT INTO batches (writer_pk, seq, stored_ms) SELECT $2, $5, $3 FROM ok "
            "WHERE $39 = 0 ON CONFLICT DO NOTHING RETURNING 1), "
            "os AS (" +
            std::string(kRaiseOrderedStream) + " FROM ok WHERE $39 > 0 " +
            kRaiseOrderedStreamConflict +
            " RETURNING 1), "
            "st AS (SELECT 1 FROM b UNION ALL SELECT 1 FROM os), ";
      } else {
        sql += "os AS (" + std::string(kRaiseOrderedStream) + " WHERE $39 > 0 " +
               kRaiseOrderedStreamConflict + "), ";
      }
      if (mask & 1) {
        sql +=
            "del AS (DELETE FROM chunks c USING unnest($29::int8[], $30::int8[], $31::int8[]) "
            "AS d(pk, lo, hi) WHERE c.series_pk = d.pk AND c.idx >= d.lo AND c.idx < d.hi" +
            g + "), ";
      }
      sql +=
          "ch AS (INSERT INTO chunks (series_pk, idx, count, min_step, max_step, min_time, "
          "max_time, vmin, vmax, vsum, vfirst, vlast, nan_count, data, sealed) "
          "SELECT * FROM unnest($7::int8[], $8::int8[], $9::int8[], $10::int8[], $11::int8[], "
          "$12::int8[], $13::int8[], $14::float8[], $15::float8[], $16::float8[], $17::float8[], "
          "$18::float8[], $19::int8[], $20::bytea[], $38::bool[])" +
          (guard ? std::string(" WHERE EXISTS (SELECT 1 FROM st)") : std::string()) + "), " +
          "se AS (UPDATE series s SET count = s.count + v.n, min_step = least(s.min_step, v.lo), "
          "max_step = greatest(s.max_step, v.hi), next_idx = v.ni, tail_idx = v.ti, "
          "tail_count = v.tc, tail_chunks = v.tk FROM unnest($21::int8[], $22::int8[], "
          "$23::int8[], $24::int8[], $25::int8[], $26::int8[], $27::int8[], $28::int8[]) "
          "AS v(pk, n, lo, hi, ni, ti, tc, tk) WHERE s.pk = v.pk" +
          g + "), " +
          "wr AS (UPDATE writers SET heartbeat_ms = greatest(heartbeat_ms, $3), next_step = $4, "
          "last_seq = greatest(last_seq, $5) WHERE pk = $2" +
          g + ")";
      if (mask & 2) {
        sql +=
            ", sp AS (INSERT INTO stream_positions (writer_pk, stream, next_offset) "
            "SELECT $2, t.s, t.n FROM unnest($36::text[], $37::int8[]) AS t(s, n)" +
            (guard ? std::string(" WHERE EXISTS (SELECT 1 FROM st)") : std::string()) +
            " ON CONFLICT (writer_pk, stream) DO UPDATE SET next_offset = excluded.next_offset)";
      }
      const std::string run_update =
          "UPDATE runs SET updated_ms = greatest(updated_ms, $3), "
          "heartbeat_ms = greatest(heartbeat_ms, $3), console_next = console_next + $6 "
          "WHERE pk = $1" +
          g;
      const std::string console_insert =
          "INSERT INTO console (run_pk, id, writer_pk, time_ms, stream, text, line_no) "
          "SELECT $1, ru.base + t.ord, $2, t.time_ms, t.stream, t.text, "
          "nullif(t.line_no, -1) FROM ru, unnest($32::int8[], $33::text[], $34::text[], "
          "$35::int8[]) WITH ORDINALITY AS t(time_ms, stream, text, line_no, ord) "
          "ON CONFLICT (writer_pk, line_no) WHERE line_no IS NOT NULL DO UPDATE SET "
          "time_ms = excluded.time_ms, stream = excluded.stream, text = excluded.text";
      if (mask & 4) {  // console ids come from the run row, under its lock
        sql += ", ru AS (" + run_update + " RETURNING console_next - $6 AS base) ";
        sql += guard ? ", co AS (" + console_insert + ") SELECT count(*) FROM st" : console_insert;
      } else if (guard) {
        sql += ", ru AS (" + run_update + ") SELECT count(*) FROM st";
      } else {
        sql += " " + run_update;
      }
      out.push_back(std::move(sql));
    }
    return out;
  }();
  return kVariants[(deletes ? 1 : 0) | (positions ? 2 : 0) | (console ? 4 : 0) | (guarded ? 8 : 0)];
}

// The one-round-trip path's first statement: locks the writer row ($1, of run $2) and the
// batch's series rows ($3: their pks) and reads them. FOR UPDATE reads the latest version of each
// row, even when this statement waited for another server's transaction, so the guarded write
// that follows (WriteBatchSql) sees them as they are and nobody changes them until COMMIT. When
// the write stored nothing, these rows tell whether the batch was a duplicate (the rows are as
// planned) or the plan was stale (they are not; the batch is planned again from them). The writer
// is locked before its series (s reads w), the order of every other path. One row per series
// (series columns NULL when the writer has none of them); no row: no such writer.
constexpr const char* kFastLock =
    "WITH w AS (SELECT pk, next_step FROM writers WHERE pk = $1 AND run_pk = $2 AND label = $4 "
    "FOR UPDATE), "
    "s AS (SELECT s.key, s.pk, s.next_idx, s.tail_idx, s.tail_count, s.tail_chunks FROM series s "
    "JOIN w ON s.writer_pk = w.pk WHERE s.pk = ANY($3::int8[]) FOR UPDATE OF s) "
    "SELECT w.next_step, s.key, s.pk, s.next_idx, s.tail_idx, s.tail_count, s.tail_chunks "
    "FROM w LEFT JOIN s ON true";

// Everything the batch's final statement writes, as column arrays.
class BatchWrite {
 public:
  // Plans appending `points` to `s` (updating it), series/tail.h: `tail` holds the points of
  // the tail when TailNeedsCompaction, else nullptr.
  Status Append(SeriesState* s, const std::vector<series::Point>& points,
                const std::vector<series::Point>* tail) {
    s->tail.chunk_limit = series::TailChunkLimit(s->pk);
    COHORT_ASSIGN_OR_RETURN(series::TailAppend plan,
                            series::PlanTailAppend(&s->tail, points, tail));
    if (plan.delete_hi > plan.delete_lo) {
      del_pk_.push_back(s->pk);
      del_lo_.push_back(plan.delete_lo);
      del_hi_.push_back(plan.delete_hi);
    }
    // Chunks before the new tail are sealed (chunks_sealed), the others tail chunks.
    for (series::ChunkWrite& w : plan.chunks) {
      sealed_.push_back(w.index < s->tail.tail_idx);
      AddChunk(s->pk, w.index, std::move(w));
    }
    int64_t lo = series::kMaxStep, hi = series::kMinStep;
    for (const series::Point& p : points) {
      lo = std::min(lo, p.step);
      hi = std::max(hi, p.step);
    }
    s_pk_.push_back(s->pk);
    s_n_.push_back(int64_t(points.size()));
    s_lo_.push_back(lo);
    s_hi_.push_back(hi);
    s_next_.push_back(s->tail.next_idx);
    s_tail_idx_.push_back(s->tail.tail_idx);
    s_tail_count_.push_back(s->tail.tail_count);
    s_tail_chunks_.push_back(s->tail.tail_chunks);
    return Status::Ok();
  }

  bool has_deletes() const { return !del_pk_.empty(); }
  // Tail chunk rows the deletes remove.
  int64_t deleted_rows() const {
    int64_t n = 0;
    for (size_t i = 0; i < del_lo_.size(); ++i) n += del_hi_[i] - del_lo_[i];
    return n;
  }
  // Per chunk of $7..$20: sealed (else a tail chunk), parameter $38 of WriteBatchSql().
  const std::vector<bool>& sealed() const { return sealed_; }

  // Parameters $7..$31 of WriteBatchSql().
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
  void AddChunk(int64_t series_pk, int64_t idx, series::ChunkWrite&& w) {
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
    data_.push_back(std::move(w.data));
  }

  std::vector<int64_t> series_pk_, idx_, count_, min_step_, max_step_, min_time_, max_time_;
  std::vector<int64_t> nan_count_;
  std::vector<double> vmin_, vmax_, vsum_, vfirst_, vlast_;
  std::vector<std::string> data_;
  std::vector<bool> sealed_;
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

// Parameters $1..$40 of WriteBatchSql().
void AddWriteParams(Params* p, int64_t run_pk, int64_t writer_pk, int64_t now_ms, int64_t next_step,
                    const IngestBatch& batch, const BatchWrite& write,
                    const ConsoleArrays& console) {
  std::vector<std::string> position_streams;
  std::vector<int64_t> position_next;
  for (const StreamPosition& sp : batch.positions) {
    position_streams.push_back(sp.stream);
    position_next.push_back(sp.next);
  }
  p->Add(run_pk).Add(writer_pk).Add(now_ms).Add(next_step).Add(batch.seq);
  p->Add(int64_t(console.times.size()));
  write.AddParams(p);
  p->AddArray(console.times).AddTextArray(console.streams).AddTextArray(console.texts);
  p->AddArray(console.numbers);
  p->AddTextArray(position_streams).AddArray(position_next);
  p->AddArray(write.sealed());
  p->Add(int64_t{batch.ordered_stream.empty() ? 0 : 1}).Add(batch.ordered_stream);
}

// The cache entry after a batch was stored: `before` (may be null) with `states` over it.
std::shared_ptr<const pg::IngestCache::Writer> AfterBatch(
    const pg::IngestCache::Writer* before, int64_t writer_pk, int64_t run_pk, int64_t next_step,
    const std::unordered_map<std::string, SeriesState>& states) {
  auto w = std::make_shared<pg::IngestCache::Writer>();
  if (before != nullptr && before->writer_pk == writer_pk) w->series = before->series;
  w->writer_pk = writer_pk;
  w->run_pk = run_pk;
  w->next_step = next_step;
  for (const auto& [key, state] : states) w->series[key] = state;
  return w;
}

// What the one-round-trip path did with a batch.
struct FastOutcome {
  enum class Kind {
    kNotApplicable,  // not tried (a series it does not know, a compaction, stream positions)
    kStored,         // stored and committed
    kDuplicate,      // stored before: acknowledged, nothing written
    kStale,          // planned from a state the rows no longer have: nothing written
  };
  Kind kind = Kind::kNotApplicable;
  IngestResult result;  // kStored, kDuplicate
  // kStored: the writer as the batch left it. kStale: the writer as its locked rows were
  // (without the batch's series that it does not have), null when the writer is gone.
  std::shared_ptr<const pg::IngestCache::Writer> writer;
};

// Reads kFastLock's answer into the writer's state over `cached`; sets *as_planned when it
// matches what the batch was planned from (`e_*`).
std::shared_ptr<const pg::IngestCache::Writer> ReadLocked(
    const PgResult& res, const pg::IngestCache::Writer& cached, const std::vector<int64_t>& e_pk,
    const std::vector<int64_t>& e_ni, const std::vector<int64_t>& e_ti,
    const std::vector<int64_t>& e_tc, const std::vector<int64_t>& e_tk, const IngestBatch& batch,
    bool* as_planned) {
  *as_planned = false;
  if (res.rows() == 0) return nullptr;
  auto w = std::make_shared<pg::IngestCache::Writer>(cached);
  w->next_step = res.Int(0, 0);
  std::unordered_map<int64_t, size_t> planned;  // series pk -> index in e_*
  for (size_t i = 0; i < e_pk.size(); ++i) planned[e_pk[i]] = i;
  size_t matching = 0;
  for (const KeyColumn& column : batch.columns) w->series.erase(column.key);
  for (int r = 0; r < res.rows(); ++r) {
    if (res.IsNull(r, 1)) continue;
    const SeriesState state{res.Int(r, 2), series::TailState{res.Int(r, 3), res.Int(r, 4),
                                                             res.Int(r, 5), res.Int(r, 6)}};
    w->series[res.Text(r, 1)] = state;
    auto it = planned.find(state.pk);
    if (it != planned.end() && state.tail.next_idx == e_ni[it->second] &&
        state.tail.tail_idx == e_ti[it->second] && state.tail.tail_count == e_tc[it->second] &&
        state.tail.tail_chunks == e_tk[it->second]) {
      ++matching;
    }
  }
  *as_planned = w->next_step == cached.next_step && matching == e_pk.size();
  return w;
}

// The one-round-trip path, when `cached` holds the writer's state: the batch is planned from it
// and BEGIN, kFastLock, the guarded write (WriteBatchSql) and COMMIT go out in one pipeline on
// `pool`, or with `group` in a transaction shared with concurrent batches (pg_group_commit.h;
// `group_key` names the writer). No statement fails when the plan is stale or the batch a
// duplicate: the write then changes nothing and the locked rows tell which it was. An error:
// the transaction failed (nothing written unless the connection failed after COMMIT was sent).
Result<FastOutcome> IngestFast(pg::Pool* pool, pg::GroupCommit* group, const std::string& group_key,
                               const std::string& label, const pg::IngestCache::Writer& cached,
                               IngestPlan& plan, int64_t now_ms) {
  const IngestBatch& batch = plan.batch();
  FastOutcome out;
  if (!batch.positions.empty() || !batch.histograms.empty() || !batch.media.empty()) return out;
  for (const KeyColumn& column : batch.columns) {
    if (!cached.series.contains(column.key)) return out;
  }
  COHORT_ASSIGN_OR_RETURN(const int64_t next_step, plan.AssignSteps(cached.next_step));
  std::vector<int64_t> e_pk, e_ni, e_ti, e_tc, e_tk;  // the state planned from
  std::unordered_map<std::string, SeriesState> states;
  BatchWrite write;
  std::vector<series::Point> points;
  for (uint32_t c : plan.by_key()) {
    const KeyColumn& column = batch.columns[c];
    SeriesState& s = states[column.key] = cached.series.at(column.key);
    s.tail.chunk_limit = series::TailChunkLimit(s.pk);
    if (series::TailNeedsCompaction(s.tail, column.rows.size())) return out;
    e_pk.push_back(s.pk);
    e_ni.push_back(s.tail.next_idx);
    e_ti.push_back(s.tail.tail_idx);
    e_tc.push_back(s.tail.tail_count);
    e_tk.push_back(s.tail.tail_chunks);
    plan.Points(c, &points);
    COHORT_RETURN_IF_ERROR(write.Append(&s, points, nullptr));
  }
  const ConsoleArrays console(batch.console);
  Params lock;
  // The label too: a writer renamed since it was cached (by this server or another) is not the
  // label's any more; no row, and the batch takes the path that looks the label up.
  lock.Add(cached.writer_pk).Add(cached.run_pk).AddArray(e_pk).Add(label);
  Params p;
  AddWriteParams(&p, cached.run_pk, cached.writer_pk, now_ms, next_step, batch, write, console);
  p.Add(cached.next_step).AddArray(e_pk).AddArray(e_ni).AddArray(e_ti).AddArray(e_tc);
  p.AddArray(e_tk).Add(label);
  const std::string& sql = WriteBatchSql(false, false, !console.times.empty(), /*guarded=*/true);
  std::vector<PgResult> results;
  if (group != nullptr) {
    pg::GroupCommit::Member member;
    member.lock.push_back({kFastLock, &lock});
    member.write.push_back({sql, &p});
    member.lock_order = cached.writer_pk;
    member.write_order = cached.run_pk;
    member.key = group_key;
    pg::GroupCommit::Answer answer = group->Run(member);
    if (answer.outcome == pg::GroupCommit::Outcome::kRefused) return out;  // an SQL error
    COHORT_RETURN_IF_ERROR(answer.status);
    results = std::move(answer.results);
  } else {
    COHORT_RETURN_IF_ERROR(pg::RunTransaction(pool, pg::TxnMode::kWrite, [&](Conn* c) -> Status {
      COHORT_ASSIGN_OR_RETURN(results, c->ExecPipeline({{kFastLock, &lock}, {sql, &p}}, true));
      return Status::Ok();
    }));
  }
  if (results.size() != 2 || results[1].rows() != 1) {
    return Status::Internal("postgres: unexpected answer to a batch's pipeline");
  }
  if (results[1].Int(0, 0) == 1) {
    out.kind = FastOutcome::Kind::kStored;
    out.result.points = batch.points();
    out.result.next_step = next_step;
    out.writer = AfterBatch(&cached, cached.writer_pk, cached.run_pk, next_step, states);
    return out;
  }
  bool as_planned = false;
  out.writer = ReadLocked(results[0], cached, e_pk, e_ni, e_ti, e_tc, e_tk, batch, &as_planned);
  if (as_planned) {  // the rows are as planned, so the seq was stored before
    out.kind = FastOutcome::Kind::kDuplicate;
    out.result.duplicate = true;
    out.result.next_step = cached.next_step;
    out.writer = nullptr;  // the cached state stays right
    return out;
  }
  out.kind = FastOutcome::Kind::kStale;
  return out;
}

}  // namespace

Result<IngestResult> PostgresStore::Ingest(const RunRef& ref, const std::string& label,
                                           const IngestBatch& batch, int64_t now_ms) {
  COHORT_ASSIGN_OR_RETURN(IngestPlan plan, IngestPlan::Make(batch));
  std::vector<std::string> keys;
  keys.reserve(batch.columns.size());
  for (const KeyColumn& column : batch.columns) keys.push_back(column.key);
  const std::string cache_key = pg::IngestCache::Key(ref, label);
  std::shared_ptr<const pg::IngestCache::Writer> cached = ingest_cache_.Get(cache_key);
  // The one-round-trip path; when the plan was stale (another server wrote for the writer
  // meanwhile), once more planned from the rows as they were read under their locks.
  for (int attempt = 0; cached != nullptr && attempt < 2; ++attempt) {
    Result<FastOutcome> fast =
        IngestFast(primary_pool(), group_commit_.get(), cache_key, label, *cached, plan, now_ms);
    if (!fast.ok()) {
      ingest_cache_.Erase(cache_key);
      // A failed fast transaction may have committed before its connection failed; the path
      // below then finds (writer, seq) stored. Without a seq it cannot tell: report the failure.
      if (batch.seq <= 0) return fast.status();
      cached = nullptr;
      break;
    }
    if (fast->kind == FastOutcome::Kind::kStored) {
      fast_ingests_.fetch_add(1, std::memory_order_relaxed);
      ingest_cache_.Put(cache_key, std::move(fast->writer));
      return std::move(fast->result);
    }
    if (fast->kind == FastOutcome::Kind::kDuplicate) return std::move(fast->result);
    if (fast->kind == FastOutcome::Kind::kNotApplicable) break;
    stale_ingests_.fetch_add(1, std::memory_order_relaxed);
    cached = std::move(fast->writer);
    if (cached == nullptr) {
      ingest_cache_.Erase(cache_key);
    } else {
      ingest_cache_.Put(cache_key, cached);
    }
  }

  // The path that reads the writer's rows first: two round trips, more for new series,
  // compactions and stream positions.
  std::shared_ptr<const pg::IngestCache::Writer> fresh;  // the writer after the batch
  RunIngestCache::Note note;
  int64_t tails_deleted = 0;  // by the attempt that committed
  Result<IngestResult> stored = pg::RunTransaction(
      primary_pool(), pg::TxnMode::kWrite, [&](Conn* c) -> Result<IngestResult> {
    run_cache_.Settle(&note, false);  // a retry: the failed attempt's changes are gone
    tails_deleted = 0;
    pg::SqlConn conn(c);
    IngestResult result;
    int64_t writer_pk = 0, run_pk = 0, next_step = 0;
    std::unordered_map<std::string, SeriesState> states;
    {
      Params p;
      p.Add(ref.entity).Add(ref.project).Add(ref.run_id).Add(label).Add(batch.seq).Add(now_ms);
      p.AddTextArray(keys).Add(!batch.ordered_stream.empty());
      COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kLockWriterAndSeries, p));
      if (res.rows() == 0) {
        COHORT_RETURN_IF_ERROR(LoadRun(conn, ref).status());
        return WriterNotFound(ref, label);
      }
      writer_pk = res.Int(0, 0);
      run_pk = res.Int(0, 1);
      next_step = res.Int(0, 2);
      // Stream positions are compared before the seq, as on SQLite.
      COHORT_RETURN_IF_ERROR(CheckStreamPositions(conn, writer_pk, label, batch.positions));
      for (int i = 0; i < res.rows(); ++i) {
        if (res.IsNull(i, 4)) continue;
        states[res.Text(i, 4)] = SeriesState{
            res.Int(i, 5),
            series::TailState{res.Int(i, 6), res.Int(i, 7), res.Int(i, 8), res.Int(i, 9)}};
      }
      bool stored_before = batch.seq > 0 && res.Int(0, 3) == 0;
      if (batch.seq > 0 && !batch.ordered_stream.empty()) {
        Params q;
        q.Add(writer_pk).Add(batch.seq).Add(batch.ordered_stream);
        COHORT_ASSIGN_OR_RETURN(PgResult seen, c->Exec(kOrderedSeen, q));
        stored_before = seen.rows() == 1 && seen.Bool(0, 0);
      }
      if (stored_before) {  // acknowledge, change nothing
        result.duplicate = true;
        result.next_step = next_step;
        // The writer as it is (a retry is often followed by the writer's next batch).
        fresh = AfterBatch(cached.get(), writer_pk, run_pk, next_step, states);
        return result;
      }
    }

    COHORT_ASSIGN_OR_RETURN(next_step, plan.AssignSteps(next_step));
    result.points = batch.points();

    // Create the missing series. One that another server created meanwhile conflicts; a later
    // statement (a fresh snapshot) finds and locks it.
    std::vector<std::string> missing;
    std::vector<bool> missing_system;
    for (uint32_t col : plan.by_key()) {
      const KeyColumn& column = batch.columns[col];
      if (!states.contains(column.key)) {
        missing.push_back(column.key);
        missing_system.push_back(column.system);
      }
    }
    COHORT_RETURN_IF_ERROR(CheckKeyTypes(conn, run_pk, batch, missing));
    COHORT_RETURN_IF_ERROR(CheckRunKeys(conn, ref, run_pk, missing, batch, &note));
    if (!missing.empty()) {
      Params q;
      q.Add(run_pk).Add(writer_pk).AddTextArray(missing).AddArray(missing_system);
      COHORT_ASSIGN_OR_RETURN(PgResult made, c->Exec(kCreateSeries, q));
      for (int i = 0; i < made.rows(); ++i) states[made.Text(i, 0)].pk = made.Int(i, 1);
      if (size_t(made.rows()) != missing.size()) {
        Params r;
        r.Add(run_pk).Add(writer_pk).AddTextArray(missing);
        COHORT_ASSIGN_OR_RETURN(PgResult found, c->Exec(kLockSeries, r));
        for (int i = 0; i < found.rows(); ++i) {
          states[found.Text(i, 0)] =
              SeriesState{found.Int(i, 1), series::TailState{found.Int(i, 2), found.Int(i, 3),
                                                             found.Int(i, 4), found.Int(i, 5)}};
        }
      }
    }

    // Read the tails this batch compacts.
    std::unordered_map<int64_t, std::vector<series::Point>> tails;  // series pk -> tail points
    {
      std::vector<int64_t> compact_pk, compact_from;
      for (const KeyColumn& column : batch.columns) {
        auto it = states.find(column.key);
        if (it != states.end()) it->second.tail.chunk_limit = series::TailChunkLimit(it->second.pk);
        if (it != states.end() &&
            series::TailNeedsCompaction(it->second.tail, column.rows.size())) {
          compact_pk.push_back(it->second.pk);
          compact_from.push_back(it->second.tail.tail_idx);
        }
      }
      if (!compact_pk.empty()) {
        Params q;
        q.AddArray(compact_pk).AddArray(compact_from);
        COHORT_ASSIGN_OR_RETURN(PgResult res, c->Exec(kReadTails, q));
        std::map<int64_t, std::string> damaged;  // series pk -> why
        for (int i = 0; i < res.rows(); ++i) {
          const int64_t pk = res.Int(i, 0);
          if (damaged.contains(pk)) continue;
          Result<std::vector<series::Point>> points = series::DecodeChunk(res.BytesView(i, 1));
          if (!points.ok()) {
            damaged[pk] = points.status().message();
            continue;
          }
          std::vector<series::Point>& tail = tails[pk];
          tail.insert(tail.end(), points->begin(), points->end());
        }
        // A tail that does not decode (or hold its count) is kept as sealed chunks and a new one
        // starts (series/tail.h AbandonTail): the batch is stored.
        const std::set<int64_t> compacted(compact_pk.begin(), compact_pk.end());
        for (auto& [key, state] : states) {
          if (!compacted.contains(state.pk)) continue;
          auto tail = tails.find(state.pk);
          if (!damaged.contains(state.pk) &&
              (tail == tails.end() ? 0 : int64_t(tail->second.size())) != state.tail.tail_count) {
            damaged[state.pk] = "the tail does not hold the series row's point count";
          }
          if (!damaged.contains(state.pk)) continue;
          sql::AbandonDamagedTail(key, state.pk, damaged[state.pk], &state.tail);
          tails.erase(state.pk);
        }
      }
    }

    BatchWrite write;
    std::vector<series::Point> points;
    for (uint32_t col : plan.by_key()) {
      const KeyColumn& column = batch.columns[col];
      auto it = states.find(column.key);
      if (it == states.end()) {
        // Text the database had to sanitize (NUL bytes) comes back under another key.
        return Status::InvalidArgument("batch: metric key '" + column.key +
                                       "' cannot be stored (contains a NUL character)");
      }
      SeriesState& s = it->second;
      s.tail.chunk_limit = series::TailChunkLimit(s.pk);
      const bool compact = series::TailNeedsCompaction(s.tail, column.rows.size());
      auto tail = tails.find(s.pk);
      if (compact && tail == tails.end()) {
        return Status::Internal("series '" + column.key + "': the tail to compact was not read");
      }
      plan.Points(col, &points);
      COHORT_RETURN_IF_ERROR(write.Append(&s, points, compact ? &tail->second : nullptr));
    }

    COHORT_RETURN_IF_ERROR(WriteHistograms(conn, run_pk, writer_pk, batch));
    COHORT_RETURN_IF_ERROR(WriteMedia(conn, ref.entity, run_pk, writer_pk, batch, &result));
    if (result.media_refused > 0) note.DropMediaKeys();
    const ConsoleArrays console(batch.console);
    Params p;
    AddWriteParams(&p, run_pk, writer_pk, now_ms, next_step, batch, write, console);
    const std::string& sql = WriteBatchSql(write.has_deletes(), !batch.positions.empty(),
                                           !console.times.empty(), /*guarded=*/false);
    tails_deleted = write.deleted_rows();
    COHORT_RETURN_IF_ERROR(c->ExecAndCommit(sql, p).status());
    result.next_step = next_step;
    // Series the batch did not touch keep their cached state (checked when used).
    fresh = AfterBatch(cached.get(), writer_pk, run_pk, next_step, states);
    return result;
  });
  run_cache_.Settle(&note, stored.ok());
  if (stored.ok()) TailRowsDeleted(tails_deleted);
  if (stored.ok() && fresh != nullptr && ingest_cache_enabled_) {
    ingest_cache_.Put(cache_key, std::move(fresh));
  }
  return stored;
}

}  // namespace cohort::store
