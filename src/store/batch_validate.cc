#include "store/batch_validate.h"

#include <string_view>

namespace cohort::store {
namespace {
constexpr std::string_view kSystemPrefix = "system/";
}  // namespace

Status ValidateBatch(const IngestBatch& batch) {
  if (batch.seq < 0 || (batch.seq == 0 && batch.positions.empty())) {
    return Status::InvalidArgument("batch: seq must be > 0");
  }
  for (size_t i = 0; i < batch.positions.size(); ++i) {
    const StreamPosition& p = batch.positions[i];
    if (p.stream.empty()) return Status::InvalidArgument("batch: empty stream name");
    if (p.expect < 0 || p.next < 0) {
      return Status::InvalidArgument("batch: stream '" + p.stream + "': negative offset");
    }
    for (size_t j = 0; j < i; ++j) {
      if (batch.positions[j].stream == p.stream) {
        return Status::InvalidArgument("batch: stream '" + p.stream + "' named twice");
      }
    }
  }
  for (const HistoryRow& row : batch.rows) {
    for (const auto& [key, value] : row.values) {
      if (key.empty()) return Status::InvalidArgument("batch: empty metric key");
      if (key.starts_with(kSystemPrefix)) {
        return Status::InvalidArgument("batch: key '" + key +
                                       "': the system/ prefix is reserved for system metrics");
      }
    }
  }
  for (const SystemRow& row : batch.system) {
    for (const auto& [key, value] : row.values) {
      if (key.empty()) return Status::InvalidArgument("batch: empty system metric key");
    }
  }
  for (const ConsoleLine& line : batch.console) {
    if (line.stream != "stdout" && line.stream != "stderr") {
      return Status::InvalidArgument("batch: console stream '" + line.stream +
                                     "' is not stdout or stderr");
    }
  }
  return Status::Ok();
}

}  // namespace cohort::store
