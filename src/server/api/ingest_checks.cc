#include "server/api/ingest_checks.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace cohort::api {

Status CheckKeyTypes(const store::IngestBatch& batch) {
  if (batch.histograms.empty() && batch.media.empty()) return Status::Ok();
  std::unordered_set<std::string_view> scalars, histograms;
  for (const store::KeyColumn& c : batch.columns) {
    if (!c.system) scalars.insert(c.key);
  }
  for (size_t i = 0; i < batch.histograms.size(); ++i) {
    const std::string& key = batch.histograms[i].key;
    if (scalars.contains(key)) {
      return Status::InvalidArgument("histograms[" + std::to_string(i) + "]: key '" + key +
                                     "' is logged as a scalar and as a histogram in the same "
                                     "batch (a key has one type)");
    }
    histograms.insert(key);
  }
  std::unordered_map<std::string_view, std::string_view> media_type;
  for (size_t i = 0; i < batch.media.size(); ++i) {
    const store::MediaPoint& m = batch.media[i];
    const std::string where = "media[" + std::to_string(i) + "]: key '" + m.key + "' is logged as ";
    const bool scalar = scalars.contains(m.key);
    if (scalar || histograms.contains(m.key)) {
      return Status::InvalidArgument(where + (scalar ? "a scalar" : "a histogram") + " and as " +
                                     m.type + " in the same batch (a key has one type)");
    }
    auto [it, added] = media_type.emplace(m.key, m.type);
    if (!added && it->second != m.type) {
      return Status::InvalidArgument(where + std::string(it->second) + " and as " + m.type +
                                     " in the same batch (a key has one type)");
    }
  }
  return Status::Ok();
}

}  // namespace cohort::api
