// SqliteStore: ingesting batches (metric chunks, system metrics, console lines) and reading them
// back (series list, history, console).
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>

#include "series/chunk.h"
#include "series/query.h"
#include "series/tail.h"
#include "store/batch_validate.h"
#include "store/sqlite/sqlite_chunk_rows.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort::store {

using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

constexpr std::string_view kSystemPrefix = "system/";
constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();

// The points of one batch, grouped by series key.
struct SeriesPoints {
  bool is_system = false;
  std::vector<series::Point> points;
};

// The distinct keys of one run against IngestBatch::max_run_keys, counted only when a batch
// brings a key the run has not had (steady-state batches cost nothing).
struct KeyBudget {
  const RunRef* ref = nullptr;
  int64_t max = 0;    // 0: no limit
  int64_t keys = -1;  // distinct keys of the run so far; -1: not counted yet
  int64_t added = 0;  // new keys of this batch
};

// The points of one batch grouped by series key, in the order of the batch. Rows nearly always
// carry the same keys in the same order (the agent's batches come from one key table), so a
// cell is first matched against the group of the same position in the previous row; only a
// miss looks the key up in a hash map. Assign() finds every cell's group once and counts the
// groups' points, so that each group's vector is allocated once and Add*Row only copy.
// Single-threaded; the batch must outlive the object and not change in between.
class KeyGroups {
 public:
  struct Group {
    std::string key;
    SeriesPoints points;
  };

  // Creates the groups of `batch`, notes each cell's and reserves their points.
  void Assign(const IngestBatch& batch) {
    std::vector<size_t> counts;
    auto note = [&](size_t g) {
      cells_.push_back(uint32_t(g));
      if (g >= counts.size()) counts.resize(g + 1, 0);
      ++counts[g];
    };
    size_t total = 0;
    for (const HistoryRow& row : batch.rows) total += row.values.size();
    for (const SystemRow& row : batch.system) total += row.values.size();
    cells_.reserve(total);
    for (const HistoryRow& row : batch.rows) {
      for (size_t j = 0; j < row.values.size(); ++j) note(Find(row.values[j].first, j));
    }
    for (const SystemRow& row : batch.system) {
      for (const auto& [key, value] : row.values) {
        size_t g = Find(std::string(kSystemPrefix) + key, kNoPosition);
        groups_[g]->points.is_system = true;
        note(g);
      }
    }
    for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->points.points.reserve(counts[g]);
  }

  // Call for the rows in the order Assign() saw them, history rows first.
  void AddRow(const HistoryRow& row, int64_t step) {
    for (const auto& [key, value] : row.values) {
      groups_[cells_[next_cell_++]]->points.points.push_back(
          series::Point{step, row.time_ms, value});
    }
  }
  // System samples are indexed by time: their step is their time in ms.
  void AddSystemRow(const SystemRow& row) {
    for (const auto& [key, value] : row.values) {
      groups_[cells_[next_cell_++]]->points.points.push_back(
          series::Point{row.time_ms, row.time_ms, value});
    }
  }

  // The groups in key order (the order series are created and charged against the key limit).
  std::vector<const Group*> SortedByKey() const {
    std::vector<const Group*> out;
    out.reserve(groups_.size());
    for (const auto& g : groups_) out.push_back(g.get());
    std::sort(out.begin(), out.end(),
              [](const Group* a, const Group* b) { return a->key < b->key; });
    return out;
  }

 private:
  static constexpr size_t kNoPosition = SIZE_MAX;

  // The group of `key`, the j-th cell of its row (kNoPosition: none), created when new.
  size_t Find(std::string_view key, size_t j) {
    if (j < last_.size()) {
      const std::string& k = groups_[last_[j]]->key;
      if (k.size() == key.size() && std::memcmp(k.data(), key.data(), k.size()) == 0) {
        return last_[j];
      }
    }
    size_t g;
    if (auto it = index_.find(key); it != index_.end()) {
      g = it->second;
    } else {
      g = groups_.size();
      groups_.push_back(std::make_unique<Group>());
      groups_.back()->key = std::string(key);
      index_.emplace(groups_.back()->key, g);
    }
    if (j != kNoPosition) {
      if (j >= last_.size()) last_.resize(j + 1, g);
      last_[j] = g;
    }
    return g;
  }

  std::vector<std::unique_ptr<Group>> groups_;  // stable: index_ views their keys
  std::unordered_map<std::string_view, size_t> index_;
  std::vector<size_t> last_;     // cell position -> group of the previous row's cell there
  std::vector<uint32_t> cells_;  // every cell's group, in batch order
  size_t next_cell_ = 0;
};

// Called before a series (run, key, writer) is created: refuses the key when it is new to the
// run and the run holds max keys already.
Status ChargeNewSeries(Db* db, int64_t run_pk, const std::string& key, KeyBudget* budget) {
  if (budget->max <= 0) return Status::Ok();
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("SELECT 1 FROM series WHERE run_pk = ? AND key = ? LIMIT 1"));
    st.Bind(run_pk).Bind(key);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) return Status::Ok();  // another writer's key: not new to the run
  }
  if (budget->keys < 0) {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("SELECT count(DISTINCT key) FROM series WHERE run_pk = ?"));
    st.Bind(run_pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    budget->keys = row ? st.Int(0) : 0;
  }
  if (budget->keys >= budget->max) {
    const RunRef& r = *budget->ref;
    return Status::PayloadTooLarge("run " + r.entity + "/" + r.project + "/" + r.run_id +
                                   " holds " + std::to_string(budget->keys - budget->added) +
                                   " distinct keys and this batch adds more (" + key +
                                   ", ...): the limit is " + std::to_string(budget->max) +
                                   " distinct keys per run (docs/operations.md, \"Limits\")");
  }
  ++budget->keys;
  ++budget->added;
  return Status::Ok();
}

// Appends `points` to the series (run, key, writer), creating it when new: the points become a
// chunk of the series' tail, or the tail and the points are compacted into full chunks
// (series/tail.h). Runs inside the caller's write transaction.
Status AppendSeries(Db* db, int64_t run_pk, int64_t writer_pk, const std::string& key,
                    const SeriesPoints& sp, KeyBudget* budget) {
  int64_t series_pk = 0;
  series::TailState state;
  int64_t paged_upto = 0;  // sqlite_summary_pages.h
  {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("SELECT pk, next_idx, tail_idx, tail_count, tail_chunks, paged_upto "
                            "FROM series WHERE run_pk = ? AND key = ? AND writer_pk = ?"));
    st.Bind(run_pk).Bind(key).Bind(writer_pk);
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      series_pk = st.Int(0);
      state = series::TailState{st.Int(1), st.Int(2), st.Int(3), st.Int(4)};
      paged_upto = st.Int(5);
    }
  }
  if (series_pk == 0) {
    COHORT_RETURN_IF_ERROR(ChargeNewSeries(db, run_pk, key, budget));
    COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("INSERT INTO series (run_pk, writer_pk, key, "
                                                "is_system) VALUES (?, ?, ?, ?)"));
    st.Bind(run_pk).Bind(writer_pk).Bind(key).Bind(sp.is_system);
    COHORT_RETURN_IF_ERROR(st.Run());
    series_pk = db->LastInsertRowid();
  }
  state.chunk_limit = series::TailChunkLimit(series_pk);

  std::vector<series::Point> tail;
  const bool compact = series::TailNeedsCompaction(state, sp.points.size());
  if (compact) {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st,
        db->Cached("SELECT data FROM chunks WHERE series_pk = ? AND idx >= ? ORDER BY idx"));
    st.Bind(series_pk).Bind(state.tail_idx);
    tail.reserve(size_t(state.tail_count) + sp.points.size());
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      COHORT_ASSIGN_OR_RETURN(std::vector<series::Point> points,
                              series::DecodeChunk(st.BlobView(0)));
      tail.insert(tail.end(), points.begin(), points.end());
    }
    if (int64_t(tail.size()) != state.tail_count) {
      return Status::Corruption("series '" + key + "': its tail holds " +
                                std::to_string(tail.size()) + " points, the series row says " +
                                std::to_string(state.tail_count));
    }
  }
  // The paged prefix can grow only when no unpaged chunk lies before this plan's chunks: every
  // sealed chunk is paged and the tail is empty or compacted away now.
  const bool pageable =
      paged_upto == state.tail_idx && (state.tail_idx == state.next_idx || compact);
  COHORT_ASSIGN_OR_RETURN(series::TailAppend plan,
                          series::PlanTailAppend(&state, sp.points, compact ? &tail : nullptr));
  if (plan.delete_hi > plan.delete_lo) {
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("DELETE FROM chunks WHERE series_pk = ? AND idx >= ? AND idx < ?"));
    st.Bind(series_pk).Bind(plan.delete_lo).Bind(plan.delete_hi);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  std::vector<int64_t> pks;  // rowids of the chunks written, in order
  COHORT_RETURN_IF_ERROR(sqlite::InsertChunks(db, series_pk, plan.chunks, &pks));
  // The chunks this plan seals come first (series/tail.h); only they are paged.
  size_t sealed_count = 0;
  while (pageable && sealed_count < plan.chunks.size() &&
         plan.chunks[sealed_count].index < state.tail_idx) {
    ++sealed_count;
  }
  pks.resize(sealed_count);
  if (pageable) {
    if (!pks.empty()) {
      const std::vector<series::ChunkWrite> sealed(plan.chunks.begin(),
                                                   plan.chunks.begin() + long(pks.size()));
      COHORT_RETURN_IF_ERROR(sqlite::AddToPages(db, series_pk, sealed, pks));
    }
    paged_upto = state.tail_idx;
  }

  int64_t lo = kMaxStep, hi = kMinStep;
  for (const series::Point& p : sp.points) {
    lo = std::min(lo, p.step);
    hi = std::max(hi, p.step);
  }
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("UPDATE series SET count = count + ?, min_step = min(coalesce(min_step, "
                          "?), ?), max_step = max(coalesce(max_step, ?), ?), next_idx = ?, "
                          "tail_idx = ?, tail_count = ?, tail_chunks = ?, paged_upto = ? "
                          "WHERE pk = ?"));
  st.Bind(int64_t(sp.points.size())).Bind(lo).Bind(lo).Bind(hi).Bind(hi);
  st.Bind(state.next_idx).Bind(state.tail_idx).Bind(state.tail_count).Bind(state.tail_chunks);
  st.Bind(paged_upto).Bind(series_pk);
  return st.Run();
}

// Console text search: patterns of at least kMinFtsChars characters are looked up in the FTS5
// trigram index (console_fts, schema version 4) and rechecked with instr(); shorter ones, which
// a trigram index cannot answer, scan with instr() alone.
constexpr int kMinFtsChars = 3;

bool UsesFts(const std::string& text) {
  int chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return chars >= kMinFtsChars;
}

// `text` as one FTS5 string (a phrase): quoted, inner quotes doubled.
std::string FtsPhrase(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// The SQL condition on console alias `c` for a text filter (binds: TextBinds).
std::string TextCondition(const std::string& text) {
  if (!UsesFts(text)) return " AND instr(c.text, ?) > 0";
  return " AND c.pk IN (SELECT rowid FROM console_fts WHERE console_fts MATCH ?) AND "
         "instr(c.text, ?) > 0";
}

void BindText(Stmt& st, const std::string& text) {
  if (UsesFts(text)) st.Bind(FtsPhrase(text));
  st.Bind(text);
}

}  // namespace

Result<IngestResult> SqliteStore::Ingest(const RunRef& ref, const std::string& label,
                                         const IngestBatch& batch, int64_t now_ms) {
  // Validated before it joins a group: a bad batch never costs the others anything.
  COHORT_RETURN_IF_ERROR(ValidateBatch(batch));
  IngestResult result;
  COHORT_RETURN_IF_ERROR(group_.Run([&](Db* db) -> Result<bool> {
    result = IngestResult{};
    return IngestInTxn(db, ref, label, batch, now_ms, &result);
  }));
  return result;
}

Result<bool> SqliteStore::IngestInTxn(Db* db, const RunRef& ref, const std::string& label,
                                      const IngestBatch& batch, int64_t now_ms, IngestResult* out) {
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, ref));
  COHORT_ASSIGN_OR_RETURN(WriterRecord writer, LoadWriter(db, run.pk, ref, label));
  IngestResult& result = *out;
  // Stream positions: compare, then advance (the whole call fails when one does not match).
  for (const StreamPosition& p : batch.positions) {
    int64_t current = 0;
    {
      COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("SELECT next_offset FROM stream_positions "
                                                  "WHERE writer_pk = ? AND stream = ?"));
      st.Bind(writer.pk).Bind(p.stream);
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (row) current = st.Int(0);
    }
    if (current != p.expect) {
      return Status::FailedPrecondition("stream '" + p.stream + "' of writer '" + label +
                                        "' is at " + std::to_string(current) + ", not " +
                                        std::to_string(p.expect));
    }
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO stream_positions (writer_pk, stream, next_offset) "
                            "VALUES (?, ?, ?) ON CONFLICT (writer_pk, stream) DO UPDATE SET "
                            "next_offset = excluded.next_offset"));
    st.Bind(writer.pk).Bind(p.stream).Bind(p.next);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  if (batch.seq > 0) {
    // A seq at or below the writer's pruned_seq was stored before its record was pruned.
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO batches (writer_pk, seq, stored_ms) SELECT ?, ?, ? "
                            "WHERE ? > (SELECT pruned_seq FROM writers WHERE pk = ?) "
                            "ON CONFLICT DO NOTHING"));
    st.Bind(writer.pk).Bind(batch.seq).Bind(now_ms).Bind(batch.seq).Bind(writer.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
    if (db->Changes() == 0) {  // stored before: acknowledge, change nothing
      result.duplicate = true;
      result.next_step = writer.next_step;
      return false;  // also undoes the stream positions advanced above
    }
  }

  // Steps: rows without one take the writer's next step in order; explicit steps move the next
  // step past them.
  KeyGroups groups;
  std::vector<int64_t> steps;
  COHORT_ASSIGN_OR_RETURN(const int64_t next_step,
                          AssignSteps(batch.rows, writer.next_step, &steps));
  groups.Assign(batch);
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    groups.AddRow(batch.rows[r], steps[r]);
    result.points += int64_t(batch.rows[r].values.size());
  }
  // System samples are indexed by time: their step is their time in ms.
  for (const SystemRow& row : batch.system) {
    groups.AddSystemRow(row);
    result.points += int64_t(row.values.size());
  }
  KeyBudget budget{.ref = &ref, .max = batch.max_run_keys};
  for (const KeyGroups::Group* g : groups.SortedByKey()) {
    COHORT_RETURN_IF_ERROR(AppendSeries(db, run.pk, writer.pk, g->key, g->points, &budget));
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
        up.Bind(run.pk).Bind(writer.pk).Bind(line.time_ms).Bind(line.stream).Bind(line.text);
        up.Bind(line.line);
        COHORT_RETURN_IF_ERROR(up.Run());
        continue;
      }
      st.Bind(run.pk).Bind(writer.pk).Bind(line.time_ms).Bind(line.stream).Bind(line.text);
      COHORT_RETURN_IF_ERROR(st.Run());
      st.Reset();
    }
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("UPDATE writers SET heartbeat_ms = max(heartbeat_ms, ?), "
                                       "next_step = ?, last_seq = max(last_seq, ?) WHERE pk = ?"));
    st.Bind(now_ms).Bind(next_step).Bind(batch.seq).Bind(writer.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Cached("UPDATE runs SET updated_ms = max(updated_ms, ?), "
                                       "heartbeat_ms = max(heartbeat_ms, ?) WHERE pk = ?"));
    st.Bind(now_ms).Bind(now_ms).Bind(run.pk);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  result.next_step = next_step;
  return true;
}

Result<std::vector<SeriesInfo>> SqliteStore::ListSeries(const RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(ReadLease db, AcquireReader());
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db.get(), Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db.get(), ref));
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT s.key, w.label, s.count, coalesce(s.min_step, 0), "
                          "coalesce(s.max_step, 0) FROM series s JOIN writers w ON "
                          "w.pk = s.writer_pk WHERE s.run_pk = ? ORDER BY s.key, w.label"));
  st.Bind(run.pk);
  std::vector<SeriesInfo> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(SeriesInfo{st.Text(0), st.Text(1), st.Int(2), st.Int(3), st.Int(4)});
  }
  return out;
}

Result<std::vector<SeriesData>> SqliteStore::QueryHistory(const HistoryQuery& q) {
  if (q.series.buckets < 0) return Status::InvalidArgument("history: buckets must be >= 0");
  if (q.series.buckets == 0 && q.series.limit <= 0)
    return Status::InvalidArgument("history: limit must be > 0");
  const std::set<std::string> keys(q.keys.begin(), q.keys.end());
  const std::set<std::string> writers(q.writers.begin(), q.writers.end());

  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, q.run));

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

  // Chunks whose step and time ranges meet the query's.
  int64_t lo = q.series.min_step.value_or(kMinStep);
  if (q.series.buckets == 0 && q.series.after_step != kMinStep) {
    lo = std::max(lo, q.series.after_step == kMaxStep ? kMaxStep : q.series.after_step + 1);
  }
  const int64_t hi = q.series.max_step.value_or(kMaxStep);
  const int64_t tlo = q.series.min_time_ms.value_or(kMinStep),
                thi = q.series.max_time_ms.value_or(kMaxStep);

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
  for (const Match& m : matches) {
    // The paged prefix from its summary pages, the rest from the chunks' summary index.
    std::vector<series::ChunkMeta> chunks;
    COHORT_RETURN_IF_ERROR(sqlite::ReadPages(db, m.pk, m.paged_upto, lo, hi, tlo, thi, &chunks));
    {
      COHORT_ASSIGN_OR_RETURN(
          Stmt st,
          db->Cached("SELECT pk, count, min_step, max_step, min_time, max_time, vmin, "
                     "vmax, vsum, vfirst, vlast, nan_count FROM chunks INDEXED BY "
                     "chunks_summary WHERE series_pk = ? AND idx >= ? AND max_step >= ? AND "
                     "min_step <= ? AND max_time >= ? AND min_time <= ? ORDER BY idx"));
      st.Bind(m.pk).Bind(m.paged_upto).Bind(lo).Bind(hi).Bind(tlo).Bind(thi);
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
    out.push_back(std::move(data));
  }
  return out;
}

namespace {

// The WHERE clause of a console filter over `console c` (run, cursor, labels, stream, text),
// shared by QueryConsole and IndexConsole; BindConsoleFilter binds its parameters in order.
std::string ConsoleFilterSql(const ConsoleQuery& q) {
  std::string sql = " WHERE c.run_pk = ? AND c.pk > ?";
  if (!q.labels.empty()) {
    sql += " AND c.writer_pk IN (SELECT pk FROM writers WHERE run_pk = ? AND label IN (";
    for (size_t i = 0; i < q.labels.size(); ++i) sql += i == 0 ? "?" : ", ?";
    sql += "))";
  }
  if (!q.stream.empty()) sql += " AND c.stream = ?";
  if (!q.text.empty()) sql += TextCondition(q.text);
  return sql;
}

void BindConsoleFilter(Stmt* st, int64_t run_pk, const ConsoleQuery& q) {
  st->Bind(run_pk).Bind(q.after_id);
  if (!q.labels.empty()) {
    st->Bind(run_pk);
    for (const std::string& label : q.labels) st->Bind(label);
  }
  if (!q.stream.empty()) st->Bind(q.stream);
  if (!q.text.empty()) BindText(*st, q.text);
}

}  // namespace

Result<std::vector<ConsoleLine>> SqliteStore::QueryConsole(const ConsoleQuery& q) {
  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, q.run));

  std::string sql =
      "SELECT c.pk, c.time_ms, c.stream, c.text, w.label FROM console c JOIN writers w ON "
      "w.pk = c.writer_pk";
  sql += ConsoleFilterSql(q);
  sql += " ORDER BY c.pk LIMIT ?";

  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare(sql));
  BindConsoleFilter(&st, run.pk, q);
  st.Bind(int64_t{q.limit > 0 ? q.limit : 1000});
  std::vector<ConsoleLine> out;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ConsoleLine line;
    line.id = st.Int(0);
    line.time_ms = st.Int(1);
    line.stream = st.Text(2);
    line.text = st.Text(3);
    line.label = st.Text(4);
    out.push_back(std::move(line));
  }
  return out;
}

Result<ConsoleIndex> SqliteStore::IndexConsole(const ConsoleQuery& q, int64_t stride) {
  if (stride < 1) return Status::InvalidArgument("console index: stride must be >= 1");
  COHORT_ASSIGN_OR_RETURN(ReadLease lease, AcquireReader());
  Db* db = lease.get();
  COHORT_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(db, Txn::Mode::kRead));
  COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(db, q.run));

  // Only ids are read: without a text filter the row's text is never decoded. Without a filter
  // the scan stays in the (run_pk, pk) index; a label filter reads (run_pk, writer_pk, pk) (the
  // planner would walk the run's lines in id order and read every row for its writer), a stream
  // filter (run_pk, stream, pk); the ids of several writers are sorted. Labels resolve to writer
  // keys first (a handful of writers), so no join per line.
  std::string sql = "SELECT c.pk FROM console c";
  if (!q.labels.empty()) {
    sql += " INDEXED BY console_by_writer";
  } else if (!q.stream.empty()) {
    sql += " INDEXED BY console_by_stream";
  }
  sql += ConsoleFilterSql(q);
  sql += " ORDER BY c.pk";

  COHORT_ASSIGN_OR_RETURN(Stmt st, db->Prepare(sql));
  BindConsoleFilter(&st, run.pk, q);
  ConsoleIndex out;
  out.last_id = q.after_id;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.last_id = st.Int(0);
    if (++out.total % stride == 0) out.stride_ids.push_back(out.last_id);
  }
  return out;
}

}  // namespace cohort::store
