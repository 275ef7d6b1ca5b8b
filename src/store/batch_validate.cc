#include "store/batch_validate.h"

#include <limits>
#include <string>
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

Result<int64_t> AssignSteps(const std::vector<HistoryRow>& rows, int64_t next_step,
                            std::vector<int64_t>* steps) {
  constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();
  steps->resize(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t step = rows[r].step;
    if (step < 0) {
      if (next_step == kMaxStep) {
        return Status::InvalidArgument(
            "history[" + std::to_string(r) +
            "].step: missing, and the writer's step counter is at its largest value (" +
            std::to_string(kMaxStep) + "): send explicit steps");
      }
      step = next_step++;
    } else if (step >= next_step) {
      next_step = step == kMaxStep ? step : step + 1;
    }
    (*steps)[r] = step;
  }
  return next_step;
}

}  // namespace cohort::store
