#include "server/api/ingest_checks.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/batch_format.h"
#include "core/histogram.h"

namespace cohort::api {

Status CheckHistogramRow(std::string_view where, const store::HistogramPoint& h) {
  if (h.step < 0) return Status::InvalidArgument(std::string(where) + ".step: must be >= 0");
  if (std::string why = histogram::InvalidReason(h.value); !why.empty()) {
    return Status::InvalidArgument(std::string(where) + " (key '" + h.key + "'): " + why);
  }
  return Status::Ok();
}

Status CheckMediaRow(std::string_view where, const store::MediaPoint& m) {
  const std::string at(where);
  std::optional<batch::MediaType> type = batch::ParseMediaType(m.type);
  if (!type) {
    return Status::InvalidArgument(at + ".type: '" + m.type +
                                   "' is not image, audio, video, html or table");
  }
  if (m.index < 0 || m.index > int64_t(UINT32_MAX)) {
    return Status::InvalidArgument(at + ".index: must be 0 to 2^32-1");
  }
  batch::MediaRow row;
  row.step = m.step;
  row.time_ms = m.time_ms;
  row.index = uint32_t(m.index);
  row.type = *type;
  row.sha256 = m.sha256;
  row.size = m.size;
  row.mime = m.mime;
  row.width = m.width;
  row.height = m.height;
  row.duration_ms = m.duration_ms;
  row.caption = m.caption;
  if (std::string why = batch::InvalidMediaReason(row); !why.empty()) {
    return Status::InvalidArgument(at + " (key '" + m.key + "'): " + why);
  }
  return Status::Ok();
}

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
