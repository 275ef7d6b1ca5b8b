// SqlStore: media values (images, audio, video, html, tables), for both engines (one SQL
// layer): the write of a batch's media rows inside each engine's ingest transaction with the
// media limits, and the reads (keys, rows, one row by blob). The one-type-per-key check is in
// sql_store_key_types.cc.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

std::vector<std::string> DistinctMediaKeys(const std::vector<const MediaPoint*>& rows) {
  std::set<std::string> keys;
  for (const MediaPoint* m : rows) keys.insert(m->key);
  return {keys.begin(), keys.end()};
}

MediaRecord ReadRecord(const Row& row) {
  MediaRecord r;
  r.key = row.Text(0);
  r.writer = row.Text(1);
  r.step = row.Int(2);
  r.index = row.Int(3);
  r.time_ms = row.Int(4);
  r.type = row.Text(5);
  r.mime = row.Text(6);
  r.sha256 = row.Text(7);
  r.size = row.Int(8);
  r.width = row.Int(9);
  r.height = row.Int(10);
  r.duration_ms = row.Int(11);
  r.caption = row.Text(12);
  r.artifact_ref = row.Text(13);
  r.cell_bytes = row.Int(14);
  return r;
}

// The bytes of the media rows the batch's replace (a (key, step, index) is one row per writer):
// the writer's rows stored at a (key, step, index) of the batch, and the batch's own rows that a
// later one of the same (key, step, index) replaces. One index range per batch: the writer's
// rows of the batch's keys in its steps (none, when the batch logs new steps).
Result<int64_t> ReplacedMediaBytes(Conn& conn, int64_t run_pk, int64_t writer_pk,
                                   const std::vector<const MediaPoint*>& rows_of_batch,
                                   const std::function<int64_t(const MediaPoint&)>& size_of) {
  using Place = std::tuple<std::string, int64_t, int64_t>;
  int64_t replaced = 0, lo = rows_of_batch.front()->step, hi = lo;
  std::map<Place, int64_t> last;  // the size of the row that stays
  for (const MediaPoint* row : rows_of_batch) {
    const MediaPoint& m = *row;
    auto [it, fresh] = last.try_emplace(Place(m.key, m.step, m.index), size_of(m) + m.cell_bytes);
    if (!fresh) {
      replaced += it->second;
      it->second = size_of(m) + m.cell_bytes;
    }
    lo = std::min(lo, m.step);
    hi = std::max(hi, m.step);
  }
  using Stored = std::pair<Place, int64_t>;
  COHORT_ASSIGN_OR_RETURN(
      std::vector<Stored> rows,
      sql::QueryAll<Stored>(
          conn,
          "SELECT key, step, idx, size + cell_bytes FROM media WHERE run_pk = $1 AND "
          "key = ANY($2) AND "
          "writer_pk = $3 AND step >= $4 AND step <= $5",
          Params()
              .Add(run_pk)
              .AddTextArray(DistinctMediaKeys(rows_of_batch))
              .Add(writer_pk)
              .Add(lo)
              .Add(hi),
          [](const Row& row) {
            return Stored(Place(row.Text(0), row.Int(1), row.Int(2)), row.Int(3));
          }));
  for (const auto& [place, size] : rows) {
    if (last.contains(place)) replaced += size;
  }
  return replaced;
}

Status MediaBudgetExceeded(int64_t total, int64_t budget) {
  return Status::PayloadTooLarge("media: the run would hold " + std::to_string(total) +
                                 " bytes of media, more than its budget of " +
                                 std::to_string(budget) + " (--max-run-media-bytes)");
}

// The run's media bytes (runs.media_bytes: its media rows' size and cell_bytes), the run row
// locked until the transaction ends (PostgreSQL: one transaction at a time moves a run's total,
// from whichever server). NO KEY UPDATE: the lock an UPDATE of the row takes, which does not
// conflict with the KEY SHARE locks that inserts of rows naming the run (series, histograms,
// media, console) take; FOR UPDATE would, and two writers' batches would deadlock.
Result<int64_t> LockedMediaBytes(Conn& conn, int64_t run_pk) {
  return sql::QueryOne<int64_t>(conn,
                                "SELECT media_bytes FROM runs WHERE pk = $1 FOR NO KEY UPDATE",
                                Params().Add(run_pk), [](const Row& row) { return row.Int(0); },
                                Status::NotFound("media: the run is gone"));
}

Status SetMediaBytes(Conn& conn, int64_t run_pk, int64_t bytes) {
  return conn.Exec("UPDATE runs SET media_bytes = $2 WHERE pk = $1",
                   Params().Add(run_pk).Add(bytes))
      .status();
}

// The media rows awaiting an upload that the run's files already hold, and those files.
constexpr const char* kAwaitingUploaded =
    "media.run_pk = $1 AND media.sha256 = '' AND media.path <> '' AND f.run_pk = media.run_pk "
    "AND f.name = media.path AND f.sha256 <> ''";

constexpr const char* kRecordColumns =
    "SELECT m.key, w.label, m.step, m.idx, m.time_ms, m.type, m.mime, m.sha256, m.size, m.width, "
    "m.height, m.duration_ms, m.caption, m.artifact_ref, m.cell_bytes FROM media m JOIN writers "
    "w ON w.pk = m.writer_pk ";

}  // namespace

Status SqlStore::WriteMedia(Conn& conn, const std::string& entity, int64_t run_pk,
                            int64_t writer_pk, const IngestBatch& batch, IngestResult* result) {
  if (batch.media.empty()) return Status::Ok();
  // Media past a limit are refused, not failed: the batch's scalars, console lines and
  // histograms are stored without them (a failed batch is dropped whole by the agent, which
  // would lose them); result->media_refused says how many and why (the first).
  auto refuse = [&](size_t rows, const std::string& why) {
    result->media_refused += int64_t(rows);
    if (result->media_refused_reason.empty()) result->media_refused_reason = why;
  };
  // The sizes of the blobs the entity holds already: a row naming one counts (and records) the
  // blob's size, not the size it says (the limits would take a lying row's word).
  std::vector<std::string> digests;
  for (const MediaPoint& m : batch.media) {
    if (!m.sha256.empty()) digests.push_back(m.sha256);
  }
  std::map<std::string, int64_t> held;
  if (!digests.empty()) {
    std::sort(digests.begin(), digests.end());
    digests.erase(std::unique(digests.begin(), digests.end()), digests.end());
    COHORT_ASSIGN_OR_RETURN(held, HeldBlobSizes(conn, entity, digests));
  }
  auto size_of = [&held](const MediaPoint& m) {
    auto it = m.sha256.empty() ? held.end() : held.find(m.sha256);
    return it == held.end() ? m.size : it->second;
  };
  std::vector<const MediaPoint*> rows;  // the rows within the per-row limits
  rows.reserve(batch.media.size());
  int64_t bytes = 0;
  auto too_many = [] {
    return Status::PayloadTooLarge("media: the sizes of the batch's media add up past 2^63 bytes");
  };
  for (const MediaPoint& m : batch.media) {
    auto where = [&m] {
      return "media (key '" + m.key + "', step " + std::to_string(m.step) + "): ";
    };
    const int64_t size = size_of(m);
    if (batch.max_media_file_bytes > 0 && size > batch.max_media_file_bytes) {
      refuse(1, where() + std::to_string(size) + " bytes, more than the limit of " +
                    std::to_string(batch.max_media_file_bytes) +
                    " bytes per media file (--max-media-file-bytes)");
      continue;
    }
    if (batch.max_media_per_step > 0 && m.index >= batch.max_media_per_step) {
      refuse(1, where() + "more than " + std::to_string(batch.max_media_per_step) +
                    " media in one step (--max-media-per-step)");
      continue;
    }
    if (__builtin_add_overflow(bytes, size, &bytes) ||
        __builtin_add_overflow(bytes, m.cell_bytes, &bytes)) {
      return too_many();
    }
    rows.push_back(&m);
  }
  if (rows.empty()) return Status::Ok();
  // The run's media bytes after the batch: what it holds, less the rows the batch replaces,
  // plus the batch's; kept in the run row, moved in this transaction.
  // The lock first: the rows it replaces cannot change size meanwhile (a vendor file attached).
  COHORT_ASSIGN_OR_RETURN(int64_t stored, LockedMediaBytes(conn, run_pk));
  COHORT_ASSIGN_OR_RETURN(int64_t replaced,
                          ReplacedMediaBytes(conn, run_pk, writer_pk, rows, size_of));
  int64_t total = 0;
  if (__builtin_add_overflow(stored - replaced, bytes, &total)) return too_many();
  if (batch.max_run_media_bytes > 0 && total > batch.max_run_media_bytes) {
    refuse(rows.size(), MediaBudgetExceeded(total, batch.max_run_media_bytes).message());
    return Status::Ok();
  }
  for (const MediaPoint* row : rows) {
    const MediaPoint& m = *row;
    Params p;
    p.Add(run_pk).Add(m.key).Add(writer_pk).Add(m.step).Add(m.index).Add(m.time_ms).Add(m.type);
    p.Add(m.mime).Add(m.sha256).Add(size_of(m)).Add(m.width).Add(m.height).Add(m.duration_ms);
    p.Add(m.caption).Add(m.path).Add(m.artifact_ref).Add(m.cell_bytes);
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO media (run_pk, key, writer_pk, step, idx, time_ms, type, mime, "
                  "sha256, size, width, height, duration_ms, caption, path, artifact_ref, "
                  "cell_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
                  "$14, $15, $16, $17) ON "
                  "CONFLICT (run_pk, "
                  "key, writer_pk, step, idx) DO UPDATE SET time_ms = excluded.time_ms, type = "
                  "excluded.type, mime = excluded.mime, sha256 = excluded.sha256, size = "
                  "excluded.size, width = excluded.width, height = excluded.height, "
                  "duration_ms = excluded.duration_ms, caption = excluded.caption, path = "
                  "excluded.path, artifact_ref = excluded.artifact_ref, cell_bytes = "
                  "excluded.cell_bytes",
                  p)
            .status());
  }
  return SetMediaBytes(conn, run_pk, total);
}

Result<std::vector<MediaKeyInfo>> SqlStore::ListMedia(const RunRef& ref) {
  using Out = std::vector<MediaKeyInfo>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryAll<MediaKeyInfo>(
        conn,
        "SELECT m.key, min(m.type), w.label, count(*), min(m.step), max(m.step) FROM media m "
        "JOIN writers w ON w.pk = m.writer_pk WHERE m.run_pk = $1 GROUP BY m.key, w.label "
        "ORDER BY m.key, w.label",
        Params().Add(run.pk), [](const Row& row) {
          return MediaKeyInfo{row.Text(0), row.Text(1), row.Text(2), row.Int(3), row.Int(4),
                              row.Int(5)};
        });
  });
}

Result<std::vector<MediaRecord>> SqlStore::QueryMedia(const MediaQuery& q) {
  using Out = std::vector<MediaRecord>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
    Params params;
    params.Add(run.pk).Add(q.min_step).Add(q.max_step);
    std::string sql = std::string(kRecordColumns) +
                      "WHERE m.run_pk = $1 AND m.step >= $2 AND m.step <= $3";
    if (!q.keys.empty()) {
      params.AddTextArray(q.keys);
      sql += " AND m.key = ANY(" + params.Last() + ")";
    }
    if (!q.writers.empty()) {
      params.AddTextArray(q.writers);
      sql += " AND w.label = ANY(" + params.Last() + ")";
    }
    params.Add(q.limit);
    sql += " ORDER BY m.key, w.label, m.step, m.idx LIMIT " + params.Last();
    return sql::QueryAll<MediaRecord>(conn, sql, params, ReadRecord);
  });
}

Result<int64_t> SqlStore::AttachUploadedMedia(const RunRef& ref, const std::string& path,
                                              int64_t max_run_media_bytes) {
  return RunFor<int64_t>(Access::kWrite, [&](Conn& conn) -> Result<int64_t> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    Params params;
    params.Add(run.pk);
    std::string awaiting = kAwaitingUploaded;
    if (!path.empty()) {
      params.Add(path);
      awaiting += " AND media.path = " + params.Last();
    }
    // The run row locked first (two uploads of one run move its total one at a time).
    COHORT_ASSIGN_OR_RETURN(int64_t stored, LockedMediaBytes(conn, run.pk));
    COHORT_ASSIGN_OR_RETURN(
        int64_t adding,
        sql::QueryOne<int64_t>(
            conn, "SELECT CAST(coalesce(sum(f.size), 0) AS BIGINT) FROM media JOIN run_files f ON " +
                      awaiting,
            params, [](const Row& row) { return row.Int(0); },
            Status::Internal("media: no aggregate row")));
    if (max_run_media_bytes > 0 && stored + adding > max_run_media_bytes) {
      return MediaBudgetExceeded(stored + adding, max_run_media_bytes);
    }
    COHORT_ASSIGN_OR_RETURN(
        int64_t attached,
        conn.Exec("UPDATE media SET sha256 = f.sha256, size = f.size FROM run_files f WHERE " +
                      awaiting,
                  params));
    if (adding > 0) COHORT_RETURN_IF_ERROR(SetMediaBytes(conn, run.pk, stored + adding));
    return attached;
  });
}

Result<MediaRecord> SqlStore::FindMedia(const RunRef& ref, const std::string& sha256) {
  return RunFor<MediaRecord>(Access::kReadAny, [&](Conn& conn) -> Result<MediaRecord> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryOne<MediaRecord>(
        conn,
        std::string(kRecordColumns) +
            "WHERE m.run_pk = $1 AND m.sha256 = $2 ORDER BY m.key, m.step, m.idx LIMIT 1",
        Params().Add(run.pk).Add(sha256), ReadRecord,
        Status::NotFound("the run has no media with blob " + sha256));
  });
}

Result<std::optional<MisSizedMedia>> SqlStore::FindMediaOfOtherSize(const std::string& entity,
                                                                    const std::string& sha256,
                                                                    int64_t size) {
  using Out = std::optional<MisSizedMedia>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<MisSizedMedia> rows,
        sql::QueryAll<MisSizedMedia>(
            conn,
            "SELECT r.run_id, m.key, m.step, m.idx, m.size FROM media m JOIN runs r ON "
            "r.pk = m.run_pk WHERE m.sha256 = $1 AND r.entity = $2 AND m.size <> $3 LIMIT 1",
            Params().Add(sha256).Add(entity).Add(size), [](const Row& row) {
              return MisSizedMedia{row.Text(0), row.Text(1), row.Int(2), row.Int(3), row.Int(4)};
            }));
    if (rows.empty()) return Out{};
    return Out{std::move(rows.front())};
  });
}

}  // namespace cohort::store
