// SqliteStore: the series write path (Ingest: group commit, chunks and summary pages) and the
// history query (summary pages, then the chunks' covering summary index).
#include <algorithm>
#include <iterator>
#include <limits>
#include <set>

#include "series/chunk.h"
#include "series/query.h"
#include "series/tail.h"
#include "store/ingest_plan.h"
#include "store/run_ref.h"
#include "store/sql/sql_tail_seal.h"
#include "store/sqlite/sqlite_chunk_rows.h"
#include "store/sqlite/sqlite_sql_conn.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

// The writer a batch is for, read in the write transaction.
struct WriterRow {
  int64_t pk = 0, run_pk = 0, next_step = 0, pruned_seq = 0;
};

Result<WriterRow> FindWriter(Db* db, const RunRef& ref, const std::string& label) {
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("SELECT w.pk, w.run_pk, w.next_step, w.pruned_seq FROM writers w "
                            "JOIN runs r ON r.pk = w.run_pk WHERE r.entity = ? AND "
                            "r.project = ? AND r.run_id = ? AND w.label = ?"));
    st.Bind(ref.entity).Bind(ref.project).Bind(ref.run_id).Bind(label);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) return WriterRow{st.Int(0), st.Int(1), st.Int(2), st.Int(3)};
  }
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT 1 FROM runs WHERE entity = ? AND project = ? AND run_id = ?"));
  st.Bind(ref.entity).Bind(ref.project).Bind(ref.run_id);
  COHORT_ASSIGN_OR_RETURN(bool run, st.Step());
  return run ? WriterNotFound(ref, label) : RunNotFound(ref);
}

// The stored state of one series of a batch, read in the write transaction (or found in the
// series cache); pk 0: the series does not exist yet.
using SeriesRow = sqlite::SeriesCache::Entry;

Status ReadSeriesRow(Db* db, int64_t run_pk, int64_t writer_pk, const std::string& key,
                     SeriesRow* out) {
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks, paged_upto "
                          "FROM series WHERE run_pk = ? AND key = ? AND writer_pk = ?"));
  st.Bind(run_pk).Bind(key).Bind(writer_pk);
  COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
  *out = SeriesRow{};
  if (row) {
    out->pk = st.Int(0);
    out->state = series::TailState{st.Int(1), st.Int(2), st.Int(3), st.Int(4)};
    out->paged_upto = st.Int(5);
  }
  return Status::Ok();
}

// Appends `points` to the series (run, key, writer) in `*sr`, creating it when new: the points
// become a chunk of the series' tail, or the tail and the points are compacted into full chunks
// (series/tail.h). Runs inside the caller's write transaction; what it leaves in the series row
// goes into `cache`. Chunks it does not need the rowids of go to `deferred`, for the caller to
// insert (InsertChunkRows) before the transaction ends.
Status AppendSeries(Db* db, sqlite::SeriesCache* cache, int64_t run_pk, int64_t writer_pk,
                    const KeyColumn& column, SeriesRow* sr,
                    const std::vector<series::Point>& points, int64_t lo, int64_t hi,
                    std::vector<sqlite::ChunkRow>* deferred) {
  const std::string& key = column.key;
  if (sr->pk == 0) {
    sqlite::SeriesCache::OwnWrite own(cache);
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO series (run_pk, writer_pk, key, "
                                                "is_system) VALUES (?, ?, ?, ?)"));
    st.Bind(run_pk).Bind(writer_pk).Bind(key).Bind(column.system);
    COHORT_RETURN_IF_ERROR(st.Run());
    sr->pk = db->LastInsertRowid();
  }
  const int64_t series_pk = sr->pk;
  series::TailState& state = sr->state;
  int64_t& paged_upto = sr->paged_upto;
  state.chunk_limit = series::TailChunkLimit(series_pk);

  std::vector<series::Point> tail;
  bool compact = series::TailNeedsCompaction(state, points.size());
  if (compact) {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("SELECT data FROM chunks WHERE series_pk = ? AND idx >= ? ORDER BY idx"));
    st.Bind(series_pk).Bind(state.tail_idx);
    tail.reserve(size_t(state.tail_count) + points.size());
    std::string damage;
    while (damage.empty()) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      Result<std::vector<series::Point>> decoded = series::DecodeChunk(st.BlobView(0));
      if (!decoded.ok()) {
        damage = decoded.status().message();
        break;
      }
      tail.insert(tail.end(), decoded->begin(), decoded->end());
    }
    st.Reset();
    if (damage.empty() && int64_t(tail.size()) != state.tail_count) {
      damage = "its tail holds " + std::to_string(tail.size()) + " points, the series row says " +
               std::to_string(state.tail_count);
    }
    if (!damage.empty()) {  // the batch is stored, the damaged tail kept as sealed chunks
      const int64_t tail_idx_before = state.tail_idx;
      sql::AbandonDamagedTail(key, series_pk, damage, &state);
      tail.clear();
      compact = false;
      if (paged_upto == tail_idx_before) {  // paged as they are: later chunks can be paged too
        COHORT_RETURN_IF_ERROR(sqlite::PageChunks(db, series_pk, tail_idx_before, state.tail_idx));
        paged_upto = state.tail_idx;
      }
    }
  }
  // The paged prefix can grow only when no unpaged chunk lies before this plan's chunks: every
  // sealed chunk is paged and the tail is empty or compacted away now.
  const bool pageable =
      paged_upto == state.tail_idx && (state.tail_idx == state.next_idx || compact);
  COHORT_ASSIGN_OR_RETURN(series::TailAppend plan,
                          series::PlanTailAppend(&state, points, compact ? &tail : nullptr));
  if (plan.delete_hi > plan.delete_lo) {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("DELETE FROM chunks WHERE series_pk = ? AND idx >= ? AND idx < ?"));
    st.Bind(series_pk).Bind(plan.delete_lo).Bind(plan.delete_hi);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  // The chunks this plan seals come first (series/tail.h); only they are paged, and need their
  // rowids for it: they are inserted now, the others with the batch's other series' chunks.
  size_t sealed_count = 0;
  while (pageable && sealed_count < plan.chunks.size() &&
         plan.chunks[sealed_count].index < state.tail_idx) {
    ++sealed_count;
  }
  if (pageable) {
    if (sealed_count > 0) {
      const std::vector<series::ChunkWrite> sealed(
          std::make_move_iterator(plan.chunks.begin()),
          std::make_move_iterator(plan.chunks.begin() + long(sealed_count)));
      std::vector<int64_t> pks;  // rowids of the chunks written, in order
      COHORT_RETURN_IF_ERROR(sqlite::InsertChunks(db, series_pk, sealed, &pks));
      COHORT_RETURN_IF_ERROR(sqlite::AddToPages(db, series_pk, sealed, pks));
    }
    paged_upto = state.tail_idx;
  }
  for (size_t i = sealed_count; i < plan.chunks.size(); ++i) {
    deferred->push_back(sqlite::ChunkRow{series_pk, std::move(plan.chunks[i])});
  }

  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("UPDATE series SET count = count + ?, min_step = min(coalesce(min_step, "
                          "?), ?), max_step = max(coalesce(max_step, ?), ?), next_idx = ?, "
                          "tail_idx = ?, tail_count = ?, tail_chunks = ?, paged_upto = ? "
                          "WHERE pk = ?"));
  st.Bind(int64_t(points.size())).Bind(lo).Bind(lo).Bind(hi).Bind(hi);
  st.Bind(state.next_idx).Bind(state.tail_idx).Bind(state.tail_count).Bind(state.tail_chunks);
  st.Bind(paged_upto).Bind(series_pk);
  {
    sqlite::SeriesCache::OwnWrite own(cache);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  if (db->Changes() != 1) {  // the cache was behind the table: never expected
    cache->Clear();
    return Status::Internal("series '" + key + "': its row #" + std::to_string(series_pk) +
                            " vanished during the write");
  }
  cache->Put(writer_pk, key, *sr);
  return Status::Ok();
}

}  // namespace

Result<IngestResult> SqliteStore::Ingest(const RunRef& ref, const std::string& label,
                                         const IngestBatch& batch, int64_t now_ms) {
  // Validated before it joins a group: a bad batch never costs the others anything.
  COHORT_ASSIGN_OR_RETURN(IngestPlan plan, IngestPlan::Make(batch));
  IngestResult result;
  RunIngestCache::Note note;
  Status st = group_.Run([&](Db* db) -> Result<bool> {
    result = IngestResult{};
    return IngestInTxn(db, ref, label, &plan, now_ms, &result, &note);
  });
  run_cache_.Settle(&note, st.ok());
  COHORT_RETURN_IF_ERROR(st);
  return result;
}

Result<bool> SqliteStore::IngestInTxn(Db* db, const RunRef& ref, const std::string& label,
                                      IngestPlan* plan, int64_t now_ms, IngestResult* out,
                                      RunIngestCache::Note* note) {
  const IngestBatch& batch = plan->batch();
  COHORT_ASSIGN_OR_RETURN(const WriterRow w, FindWriter(db, ref, label));
  IngestResult& result = *out;
  // Stream positions: compare, then advance (the whole call fails when one does not match).
  if (!batch.positions.empty()) {
    sqlite::SqlConn conn(db);
    COHORT_RETURN_IF_ERROR(CheckStreamPositions(conn, w.pk, label, batch.positions));
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO stream_positions (writer_pk, stream, next_offset) "
                            "VALUES (?, ?, ?) ON CONFLICT (writer_pk, stream) DO UPDATE SET "
                            "next_offset = excluded.next_offset"));
    for (const StreamPosition& p : batch.positions) {
      st.Reset();
      st.Bind(w.pk).Bind(p.stream).Bind(p.next);
      COHORT_RETURN_IF_ERROR(st.Run());
    }
  }
  if (batch.seq > 0) {
    // A seq at or below the writer's pruned_seq was stored before its record was pruned; above
    // it, a record names a stored batch, and so does, for an ordered batch, a seq at or below
    // its stream's highest (ordered_streams, raised below once the batch is stored).
    bool stored_before = batch.seq <= w.pruned_seq;
    if (!stored_before && !batch.ordered_stream.empty()) {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st, db->Cached("SELECT 1 FROM batches WHERE writer_pk = ? AND seq = ? UNION ALL "
                              "SELECT 1 FROM ordered_streams WHERE writer_pk = ? AND stream = ? "
                              "AND seq >= ?"));
      st.Bind(w.pk).Bind(batch.seq).Bind(w.pk).Bind(batch.ordered_stream).Bind(batch.seq);
      COHORT_ASSIGN_OR_RETURN(stored_before, st.Step());
    } else if (!stored_before) {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st, db->Cached("INSERT INTO batches (writer_pk, seq, stored_ms) VALUES (?, ?, ?) "
                              "ON CONFLICT DO NOTHING"));
      st.Bind(w.pk).Bind(batch.seq).Bind(now_ms);
      COHORT_RETURN_IF_ERROR(st.Run());
      stored_before = db->Changes() == 0;
    }
    if (stored_before) {  // acknowledge, change nothing
      result.duplicate = true;
      result.next_step = w.next_step;
      return false;  // also undoes the stream positions advanced above
    }
  }

  COHORT_ASSIGN_OR_RETURN(const int64_t next_step, plan->AssignSteps(w.next_step));
  result.points = batch.points();
  // The batch's series, in key order: those the writer has not had yet are charged against the
  // run's key budget before any is created.
  std::vector<SeriesRow> rows(batch.columns.size());
  std::vector<std::string> missing;
  write_mu_.AssertHeld();  // IngestInTxn runs as the group commit's work
  for (uint32_t c : plan->by_key()) {
    const std::string& key = batch.columns[c].key;
    if (const SeriesRow* cached = series_cache_.Find(w.pk, key)) {
      rows[c] = *cached;
    } else {
      COHORT_RETURN_IF_ERROR(ReadSeriesRow(db, w.run_pk, w.pk, key, &rows[c]));
    }
    if (rows[c].pk == 0) missing.push_back(key);
  }
  if (!missing.empty() || !batch.histograms.empty() || !batch.media.empty()) {
    sqlite::SqlConn conn(db);
    COHORT_RETURN_IF_ERROR(CheckKeyTypes(conn, w.run_pk, batch, missing));
    COHORT_RETURN_IF_ERROR(CheckRunKeys(conn, ref, w.run_pk, missing, batch, note));
  }
  std::vector<series::Point> points;
  std::vector<sqlite::ChunkRow> chunks;  // the batch's tail chunks, inserted together
  chunks.reserve(batch.columns.size());
  for (uint32_t c : plan->by_key()) {
    plan->Points(c, &points);
    const auto [lo, hi] = plan->StepRange(c);
    COHORT_RETURN_IF_ERROR(AppendSeries(db, &series_cache_, w.run_pk, w.pk, batch.columns[c],
                                        &rows[c], points, lo, hi, &chunks));
  }
  COHORT_RETURN_IF_ERROR(sqlite::InsertChunkRows(db, chunks));

  if (!batch.histograms.empty() || !batch.media.empty()) {
    sqlite::SqlConn conn(db);
    COHORT_RETURN_IF_ERROR(WriteHistograms(conn, w.run_pk, w.pk, batch));
    COHORT_RETURN_IF_ERROR(WriteMedia(conn, ref.entity, w.run_pk, w.pk, batch, &result));
    if (result.media_refused > 0) note->DropMediaKeys();
  }
  if (!batch.console.empty()) {
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO console (run_pk, writer_pk, time_ms, "
                                                "stream, text) VALUES (?, ?, ?, ?, ?)"));
    for (const ConsoleLine& line : batch.console) {
      if (line.line >= 0) {  // numbered: replaces the line stored at that position
        COHORT_ASSIGN_OR_RETURN(
            Stmt up,
            db->Cached("INSERT INTO console (run_pk, writer_pk, time_ms, stream, text, "
                       "line_no) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (writer_pk, "
                       "line_no) WHERE line_no IS NOT NULL DO UPDATE SET time_ms = "
                       "excluded.time_ms, stream = excluded.stream, text = excluded.text"));
        up.Bind(w.run_pk).Bind(w.pk).Bind(line.time_ms).Bind(line.stream).Bind(line.text);
        up.Bind(line.line);
        COHORT_RETURN_IF_ERROR(up.Run());
        continue;
      }
      st.Bind(w.run_pk).Bind(w.pk).Bind(line.time_ms).Bind(line.stream).Bind(line.text);
      COHORT_RETURN_IF_ERROR(st.Run());
      st.Reset();
    }
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("UPDATE writers SET heartbeat_ms = max(heartbeat_ms, ?), "
                                       "next_step = ?, last_seq = max(last_seq, ?) WHERE pk = ?"));
    st.Bind(now_ms).Bind(next_step).Bind(batch.seq).Bind(w.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  if (!batch.ordered_stream.empty()) {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO ordered_streams (writer_pk, stream, seq) VALUES (?, ?, ?) "
                            "ON CONFLICT (writer_pk, stream) DO UPDATE SET seq = "
                            "max(seq, excluded.seq)"));
    st.Bind(w.pk).Bind(batch.ordered_stream).Bind(batch.seq);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("UPDATE runs SET updated_ms = max(updated_ms, ?), "
                                       "heartbeat_ms = max(heartbeat_ms, ?) WHERE pk = ?"));
    st.Bind(now_ms).Bind(now_ms).Bind(w.run_pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  result.next_step = next_step;
  return true;
}

Result<std::vector<SeriesData>> SqliteStore::QueryHistory(const HistoryQuery& q) {
  COHORT_ASSIGN_OR_RETURN(const series::ChunkRange range, series::ChunkRangeOf(q.series));
  const std::set<std::string> keys(q.keys.begin(), q.keys.end());
  const std::set<std::string> writers(q.writers.begin(), q.writers.end());

  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  sqlite::SqlConn conn(db);
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));

  struct Match {
    int64_t pk;
    std::string key, writer;
    int64_t paged_upto;
  };
  std::vector<Match> matches;
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("SELECT s.pk, s.key, w.label, s.is_system, s.paged_upto FROM series s JOIN "
                   "writers w ON w.pk = s.writer_pk WHERE s.run_pk = ? ORDER BY s.key, "
                   "w.label"));
    st.Bind(run.pk);
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::string key = st.Text(1), label = st.Text(2);
      const bool is_system = st.Int(3) != 0;
      if (keys.empty() ? is_system : !keys.contains(key)) continue;
      if (!writers.empty() && !writers.contains(label)) continue;
      matches.push_back(Match{st.Int(0), std::move(key), std::move(label), st.Int(4)});
    }
  }

  COHORT_ASSIGN_OR_RETURN(Stmt blob, db->Prepare("SELECT data FROM chunks WHERE pk = ?"));
  series::ChunkLoader load = [&blob](int64_t id) -> Result<std::string> {
    blob.Reset();
    blob.Bind(id);
    COHORT_ASSIGN_OR_RETURN(bool row, blob.Step());
    if (!row) return Status::Corruption("chunk #" + std::to_string(id) + " vanished");
    std::string data = blob.Blob(0);
    blob.Reset();
    return data;
  };

  std::vector<SeriesData> out;
  out.reserve(matches.size());
  int64_t held = q.answer_points_held;
  for (const Match& m : matches) {
    // The paged prefix from its summary pages, the rest from the chunks' summary index.
    std::vector<series::ChunkMeta> chunks;
    COHORT_RETURN_IF_ERROR(sqlite::ReadPages(db, m.pk, m.paged_upto, range.min_step, range.max_step,
                                             range.min_time, range.max_time, &chunks));
    {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st,
          db->Cached("SELECT pk, count, min_step, max_step, min_time, max_time, vmin, "
                     "vmax, vsum, vfirst, vlast, nan_count FROM chunks INDEXED BY "
                     "chunks_summary WHERE series_pk = ? AND idx >= ? AND max_step >= ? AND "
                     "min_step <= ? AND max_time >= ? AND min_time <= ? ORDER BY idx"));
      st.Bind(m.pk)
          .Bind(m.paged_upto)
          .Bind(range.min_step)
          .Bind(range.max_step)
          .Bind(range.min_time)
          .Bind(range.max_time);
      while (true) {
        COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
        if (!row) break;
        chunks.push_back(series::ChunkMeta{st.Int(0), sqlite::ReadChunkSummary(st, 1)});
      }
    }
    SeriesData data;
    data.key = m.key;
    data.writer = m.writer;
    COHORT_RETURN_IF_ERROR(series::QuerySeries(chunks, load, q.series, &data));
    COHORT_RETURN_IF_ERROR(ChargeHistoryAnswer(q, data, &held));
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace cohort::store
