// SqlStore: one type per key and run (scalar, histogram, or one media type), for both engines,
// inside each engine's ingest transaction. Keys the run cache knows (committed batches) are
// answered from it; only the others are looked up, one query per table.
#include <map>

#include "core/limits.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

// "a scalar", "a histogram", "an image", "a video", "a table", "audio", "html".
std::string Article(const std::string& type) {
  if (type == "audio" || type == "html") return type;
  return (type == "image" ? "an " : "a ") + type;
}

Status KeyTypeClash(const std::string& key, const std::string& logged, const std::string& stored) {
  return Status::InvalidArgument("key '" + key + "' is " + Article(stored) +
                                 " in this run and cannot be logged as " + Article(logged) +
                                 " (a key has one type per run; log it under another key)");
}

}  // namespace

Status SqlStore::CheckKeyTypes(Conn& conn, int64_t run_pk, const IngestBatch& batch,
                               const std::vector<std::string>& new_scalar_keys) {
  // The type each key of the batch is logged as: its histogram and media keys, and the scalar
  // series it creates (system keys are never of another type).
  std::map<std::string, std::string> logged;
  for (const HistogramPoint& h : batch.histograms) logged.emplace(h.key, kHistogramKeyType);
  for (const MediaPoint& m : batch.media) {
    auto [it, added] = logged.emplace(m.key, m.type);
    if (!added && it->second != m.type) return KeyTypeClash(m.key, m.type, it->second);
  }
  for (const std::string& k : new_scalar_keys) {
    if (k.starts_with(kSystemKeyPrefix)) continue;
    auto [it, added] = logged.emplace(k, kScalarKeyType);
    if (!added && it->second != kScalarKeyType) return KeyTypeClash(k, kScalarKeyType, it->second);
  }
  if (logged.empty()) return Status::Ok();

  // Known from committed batches (histogram and media keys only: scalar keys are checked when
  // the writer creates their series): the same type needs no query, another is refused.
  std::vector<std::string> keys;
  for (const auto& [key, type] : logged) keys.push_back(key);
  for (const auto& [key, stored] : run_cache_.KnownTypes(run_pk, keys)) {
    if (logged[key] != stored) return KeyTypeClash(key, logged[key], stored);
    logged.erase(key);
  }
  if (logged.empty()) return Status::Ok();

  // The run's row locked first (as a media batch's budget does, after the writer's row): two
  // batches logging a new key under different types would otherwise each find none of the
  // other's uncommitted rows (read committed) and both be stored. The one that waits reads the
  // other's committed rows below (each statement a fresh snapshot). SQLite writes one
  // transaction at a time: the clause is dropped there (sql_dialect).
  COHORT_RETURN_IF_ERROR(
      sql::QueryAll<int64_t>(conn, "SELECT pk FROM runs WHERE pk = $1 FOR NO KEY UPDATE",
                             Params().Add(run_pk), [](const Row& row) { return row.Int(0); })
          .status());

  keys.clear();
  std::vector<std::string> not_scalar, not_histogram;
  for (const auto& [key, type] : logged) {
    keys.push_back(key);
    if (type != kScalarKeyType) not_scalar.push_back(key);
    if (type != kHistogramKeyType) not_histogram.push_back(key);
  }
  if (!not_scalar.empty()) {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<std::string> scalars,
        sql::QueryAll<std::string>(
            conn, "SELECT key FROM series WHERE run_pk = $1 AND key = ANY($2) LIMIT 1",
            Params().Add(run_pk).AddTextArray(not_scalar),
            [](const Row& row) { return row.Text(0); }));
    if (!scalars.empty()) return KeyTypeClash(scalars[0], logged[scalars[0]], kScalarKeyType);
  }
  if (!not_histogram.empty()) {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<std::string> histograms,
        sql::QueryAll<std::string>(
            conn, "SELECT key FROM histograms WHERE run_pk = $1 AND key = ANY($2) LIMIT 1",
            Params().Add(run_pk).AddTextArray(not_histogram),
            [](const Row& row) { return row.Text(0); }));
    if (!histograms.empty()) {
      return KeyTypeClash(histograms[0], logged[histograms[0]], kHistogramKeyType);
    }
  }
  using KeyType = std::pair<std::string, std::string>;
  COHORT_ASSIGN_OR_RETURN(
      std::vector<KeyType> media,
      sql::QueryAll<KeyType>(
          conn, "SELECT DISTINCT key, type FROM media WHERE run_pk = $1 AND key = ANY($2)",
          Params().Add(run_pk).AddTextArray(keys),
          [](const Row& row) { return KeyType(row.Text(0), row.Text(1)); }));
  for (const auto& [key, type] : media) {
    if (logged[key] != type) return KeyTypeClash(key, logged[key], type);
  }
  return Status::Ok();
}

}  // namespace cohort::store
