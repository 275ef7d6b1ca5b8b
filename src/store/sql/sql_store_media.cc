// SqlStore: media values (images, audio, video, html, tables), for both engines (one SQL
// layer): the one-type-per-key check of media keys, the write of a batch's media rows inside each
// engine's ingest transaction with the media limits, and the reads (keys, rows, one row by blob).
#include <algorithm>
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

std::vector<std::string> DistinctMediaKeys(const IngestBatch& batch) {
  std::set<std::string> keys;
  for (const MediaPoint& m : batch.media) keys.insert(m.key);
  return {keys.begin(), keys.end()};
}

Status Mixed(const std::string& key, const std::string& logged, const std::string& stored) {
  return Status::InvalidArgument("key '" + key + "' is " + stored +
                                 " in this run and cannot be logged as " + logged +
                                 " (a key has one type per run; log it under another key)");
}

// "an image", "a video", "a table", "audio", "html".
std::string Article(const std::string& type) {
  if (type == "audio" || type == "html") return type;
  return (type == "image" ? "an " : "a ") + type;
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
  return r;
}

// The bytes of the media rows the batch's replace (a (key, step, index) is one row per writer):
// the writer's rows stored at a (key, step, index) of the batch, and the batch's own rows that a
// later one of the same (key, step, index) replaces. One index range per batch: the writer's
// rows of the batch's keys in its steps (none, when the batch logs new steps).
Result<int64_t> ReplacedMediaBytes(Conn& conn, int64_t run_pk, int64_t writer_pk,
                                   const IngestBatch& batch) {
  using Place = std::tuple<std::string, int64_t, int64_t>;
  int64_t replaced = 0, lo = batch.media.front().step, hi = lo;
  std::map<Place, int64_t> last;  // the size of the row that stays
  for (const MediaPoint& m : batch.media) {
    auto [it, fresh] = last.try_emplace(Place(m.key, m.step, m.index), m.size);
    if (!fresh) {
      replaced += it->second;
      it->second = m.size;
    }
    lo = std::min(lo, m.step);
    hi = std::max(hi, m.step);
  }
  using Stored = std::pair<Place, int64_t>;
  COHORT_ASSIGN_OR_RETURN(
      std::vector<Stored> rows,
      sql::QueryAll<Stored>(
          conn,
          "SELECT key, step, idx, size FROM media WHERE run_pk = $1 AND key = ANY($2) AND "
          "writer_pk = $3 AND step >= $4 AND step <= $5",
          Params()
              .Add(run_pk)
              .AddTextArray(DistinctMediaKeys(batch))
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

constexpr const char* kRecordColumns =
    "SELECT m.key, w.label, m.step, m.idx, m.time_ms, m.type, m.mime, m.sha256, m.size, m.width, "
    "m.height, m.duration_ms, m.caption FROM media m JOIN writers w ON w.pk = m.writer_pk ";

}  // namespace

Status SqlStore::CheckMediaKeyTypes(Conn& conn, int64_t run_pk, const IngestBatch& batch,
                                    const std::vector<std::string>& new_scalar_keys) {
  if (!batch.media.empty()) {
    const std::vector<std::string> keys = DistinctMediaKeys(batch);
    std::map<std::string, std::string> logged;
    for (const MediaPoint& m : batch.media) logged.emplace(m.key, m.type);
    COHORT_ASSIGN_OR_RETURN(
        std::vector<std::string> scalars,
        sql::QueryAll<std::string>(
            conn, "SELECT key FROM series WHERE run_pk = $1 AND key = ANY($2) LIMIT 1",
            Params().Add(run_pk).AddTextArray(keys), [](const Row& row) { return row.Text(0); }));
    if (!scalars.empty()) return Mixed(scalars[0], Article(logged[scalars[0]]), "a scalar");
    COHORT_ASSIGN_OR_RETURN(
        std::vector<std::string> hists,
        sql::QueryAll<std::string>(
            conn, "SELECT key FROM histograms WHERE run_pk = $1 AND key = ANY($2) LIMIT 1",
            Params().Add(run_pk).AddTextArray(keys), [](const Row& row) { return row.Text(0); }));
    if (!hists.empty()) return Mixed(hists[0], Article(logged[hists[0]]), "a histogram");
    using KeyType = std::pair<std::string, std::string>;
    COHORT_ASSIGN_OR_RETURN(
        std::vector<KeyType> stored,
        sql::QueryAll<KeyType>(
            conn, "SELECT DISTINCT key, type FROM media WHERE run_pk = $1 AND key = ANY($2)",
            Params().Add(run_pk).AddTextArray(keys),
            [](const Row& row) { return KeyType(row.Text(0), row.Text(1)); }));
    for (const auto& [key, type] : stored) {
      if (logged[key] != type) return Mixed(key, Article(logged[key]), Article(type));
    }
  }
  std::vector<std::string> typed;  // keys the batch gives another type than media
  for (const std::string& k : new_scalar_keys) {
    if (!k.starts_with(kSystemKeyPrefix)) typed.push_back(k);
  }
  const size_t scalars = typed.size();
  for (const HistogramPoint& h : batch.histograms) typed.push_back(h.key);
  if (!typed.empty()) {
    using KeyType = std::pair<std::string, std::string>;
    COHORT_ASSIGN_OR_RETURN(
        std::vector<KeyType> media,
        sql::QueryAll<KeyType>(
            conn, "SELECT key, type FROM media WHERE run_pk = $1 AND key = ANY($2) LIMIT 1",
            Params().Add(run_pk).AddTextArray(typed),
            [](const Row& row) { return KeyType(row.Text(0), row.Text(1)); }));
    if (!media.empty()) {
      bool scalar = false;
      for (size_t i = 0; i < scalars; ++i) scalar = scalar || typed[i] == media[0].first;
      return Mixed(media[0].first, scalar ? "a scalar" : "a histogram", Article(media[0].second));
    }
  }
  return Status::Ok();
}

Status SqlStore::WriteMedia(Conn& conn, int64_t run_pk, int64_t writer_pk, const IngestBatch& batch,
                            RunIngestCache::Note* note) {
  if (batch.media.empty()) return Status::Ok();
  int64_t bytes = 0;
  for (const MediaPoint& m : batch.media) {
    if (batch.max_media_per_step > 0 && m.index >= batch.max_media_per_step) {
      return Status::PayloadTooLarge("media (key '" + m.key + "', step " +
                                     std::to_string(m.step) + "): more than " +
                                     std::to_string(batch.max_media_per_step) +
                                     " media in one step (--max-media-per-step)");
    }
    bytes += m.size;
  }
  // The run's media bytes: summed from the table once, then kept moving by each batch.
  std::optional<int64_t> stored = run_cache_.MediaBytes(run_pk);
  if (batch.max_run_media_bytes > 0 && !stored) {
    COHORT_ASSIGN_OR_RETURN(int64_t sum,
                            sql::QueryOne<int64_t>(
                                conn,
                                "SELECT CAST(coalesce(sum(size), 0) AS BIGINT) FROM media "
                                "WHERE run_pk = $1",
                                Params().Add(run_pk), [](const Row& row) { return row.Int(0); },
                                Status::Internal("media: no aggregate row")));
    stored = run_cache_.LoadMediaBytes(run_pk, sum);
  }
  if (batch.max_run_media_bytes > 0 && *stored + bytes > batch.max_run_media_bytes) {
    return Status::PayloadTooLarge("media: the run would hold " + std::to_string(*stored + bytes) +
                                   " bytes of media, more than its budget of " +
                                   std::to_string(batch.max_run_media_bytes) +
                                   " (--max-run-media-bytes)");
  }
  int64_t replaced = 0;
  if (stored) {
    COHORT_ASSIGN_OR_RETURN(replaced, ReplacedMediaBytes(conn, run_pk, writer_pk, batch));
  }
  for (const MediaPoint& m : batch.media) {
    Params p;
    p.Add(run_pk).Add(m.key).Add(writer_pk).Add(m.step).Add(m.index).Add(m.time_ms).Add(m.type);
    p.Add(m.mime).Add(m.sha256).Add(m.size).Add(m.width).Add(m.height).Add(m.duration_ms);
    p.Add(m.caption);
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO media (run_pk, key, writer_pk, step, idx, time_ms, type, mime, "
                  "sha256, size, width, height, duration_ms, caption) VALUES ($1, $2, $3, $4, "
                  "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (run_pk, key, "
                  "writer_pk, step, idx) DO UPDATE SET time_ms = excluded.time_ms, type = "
                  "excluded.type, mime = excluded.mime, sha256 = excluded.sha256, size = "
                  "excluded.size, width = excluded.width, height = excluded.height, "
                  "duration_ms = excluded.duration_ms, caption = excluded.caption",
                  p)
            .status());
  }
  if (stored) {
    note->run_pk = run_pk;
    run_cache_.AddMediaBytes(run_pk, bytes - replaced, note);
  }
  return Status::Ok();
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

}  // namespace cohort::store
