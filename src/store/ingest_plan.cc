#include "store/ingest_plan.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "store/record_checks.h"

namespace cohort::store {
namespace {

Status CheckColumn(const IngestBatch& batch, const KeyColumn& c) {
  const std::string_view key = c.key;
  const char* what = c.system ? "system metric key" : "metric key";
  if (key.empty() || (c.system && key == kSystemKeyPrefix)) {
    return Status::InvalidArgument(std::string("batch: empty ") + what);
  }
  if (key.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("batch: " + std::string(what) + " '" + c.key +
                                   "' contains a NUL character");
  }
  if (c.system != key.starts_with(kSystemKeyPrefix)) {
    return Status::InvalidArgument(
        c.system ? "batch: system metric key '" + c.key + "' lacks the system/ prefix"
                 : "batch: key '" + c.key + "': the system/ prefix is reserved for system metrics");
  }
  if (c.rows.size() != c.values.size()) {
    return Status::InvalidArgument("batch: key '" + c.key + "' has " +
                                   std::to_string(c.values.size()) + " values for " +
                                   std::to_string(c.rows.size()) + " rows");
  }
  const size_t rows = c.system ? batch.system_rows() : batch.history_rows();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    if (c.rows[i] >= rows || (i > 0 && c.rows[i] <= c.rows[i - 1])) {
      return Status::InvalidArgument("batch: key '" + c.key + "': row " +
                                     std::to_string(c.rows[i]) + " out of order or range");
    }
  }
  return Status::Ok();
}

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
  if (batch.history_step.size() != batch.history_time_ms.size()) {
    return Status::InvalidArgument("batch: " + std::to_string(batch.history_step.size()) +
                                   " history steps for " +
                                   std::to_string(batch.history_time_ms.size()) + " rows");
  }
  for (size_t r = 0; r < batch.history_step.size(); ++r) {
    if (batch.history_step[r] < 0 && batch.history_step[r] != kAssignStep) {
      return Status::InvalidArgument("batch: history[" + std::to_string(r) +
                                     "].step: must be >= 0");
    }
  }
  std::unordered_set<std::string_view> keys;
  keys.reserve(batch.columns.size());
  for (const KeyColumn& c : batch.columns) {
    COHORT_RETURN_IF_ERROR(CheckColumn(batch, c));
    if (!keys.insert(c.key).second) {
      return Status::InvalidArgument("batch: key '" + c.key + "' has two columns");
    }
  }
  for (size_t i = 0; i < batch.histograms.size(); ++i) {
    const HistogramPoint& h = batch.histograms[i];
    const std::string where = "batch: histograms[" + std::to_string(i) + "]";
    if (h.key.empty() || h.key.find('\0') != std::string::npos ||
        h.key.starts_with(kSystemKeyPrefix)) {
      return Status::InvalidArgument(where + ": key '" + h.key +
                                     "' is empty, holds a NUL character or starts with system/");
    }
    COHORT_RETURN_IF_ERROR(CheckHistogramPoint(where, h));
    if (keys.contains(h.key)) {
      return Status::InvalidArgument("batch: key '" + h.key +
                                     "' is logged as a scalar and as a histogram (a key has one "
                                     "type)");
    }
  }
  std::unordered_set<std::string_view> histogram_keys;
  for (const HistogramPoint& h : batch.histograms) histogram_keys.insert(h.key);
  std::unordered_map<std::string_view, std::string_view> media_types;
  for (size_t i = 0; i < batch.media.size(); ++i) {
    const MediaPoint& m = batch.media[i];
    const std::string where = "batch: media[" + std::to_string(i) + "]";
    if (m.key.empty() || m.key.find('\0') != std::string::npos ||
        m.key.starts_with(kSystemKeyPrefix)) {
      return Status::InvalidArgument(where + ": key '" + m.key +
                                     "' is empty, holds a NUL character or starts with system/");
    }
    COHORT_RETURN_IF_ERROR(CheckMediaPoint(where, m));
    if (keys.contains(m.key) || histogram_keys.contains(m.key)) {
      return Status::InvalidArgument("batch: key '" + m.key + "' is logged as " +
                                     (keys.contains(m.key) ? "a scalar" : "a histogram") +
                                     " and as " + m.type + " (a key has one type)");
    }
    auto [it, added] = media_types.emplace(m.key, m.type);
    if (!added && it->second != m.type) {
      return Status::InvalidArgument("batch: key '" + m.key + "' is logged as " +
                                     std::string(it->second) + " and as " + m.type +
                                     " (a key has one type)");
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

Result<IngestPlan> IngestPlan::Make(const IngestBatch& batch) {
  COHORT_RETURN_IF_ERROR(ValidateBatch(batch));
  IngestPlan plan(batch);
  plan.by_key_.resize(batch.columns.size());
  for (uint32_t c = 0; c < batch.columns.size(); ++c) plan.by_key_[c] = c;
  std::sort(plan.by_key_.begin(), plan.by_key_.end(),
            [&](uint32_t a, uint32_t b) { return batch.columns[a].key < batch.columns[b].key; });
  return plan;
}

Result<int64_t> IngestPlan::AssignSteps(int64_t next_step) {
  const std::vector<int64_t>& given = batch_->history_step;
  steps_.resize(given.size());
  for (size_t r = 0; r < given.size(); ++r) {
    int64_t step = given[r];
    if (step == kAssignStep) {
      if (next_step == series::kMaxStep) {
        return Status::InvalidArgument(
            "history[" + std::to_string(r) +
            "].step: missing, and the writer's step counter is at its largest value (" +
            std::to_string(series::kMaxStep) + "): send explicit steps");
      }
      step = next_step++;
    } else if (step >= next_step) {
      next_step = step == series::kMaxStep ? step : step + 1;
    }
    steps_[r] = step;
  }
  for (const HistogramPoint& h : batch_->histograms) {
    if (h.step >= next_step) next_step = h.step == series::kMaxStep ? h.step : h.step + 1;
  }
  for (const MediaPoint& m : batch_->media) {
    if (m.step >= next_step) next_step = m.step == series::kMaxStep ? m.step : m.step + 1;
  }
  return next_step;
}

void IngestPlan::Points(uint32_t c, std::vector<series::Point>* out) const {
  const KeyColumn& column = batch_->columns[c];
  out->clear();
  out->reserve(column.rows.size());
  if (column.system) {
    for (size_t i = 0; i < column.rows.size(); ++i) {
      const int64_t t = batch_->system_time_ms[column.rows[i]];
      out->push_back(series::Point{t, t, column.values[i]});
    }
    return;
  }
  for (size_t i = 0; i < column.rows.size(); ++i) {
    const uint32_t r = column.rows[i];
    out->push_back(series::Point{steps_[r], batch_->history_time_ms[r], column.values[i]});
  }
}

std::pair<int64_t, int64_t> IngestPlan::StepRange(uint32_t c) const {
  const KeyColumn& column = batch_->columns[c];
  const std::vector<int64_t>& steps = column.system ? batch_->system_time_ms : steps_;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (uint32_t r : column.rows) {
    lo = std::min(lo, steps[r]);
    hi = std::max(hi, steps[r]);
  }
  return {lo, hi};
}

Status CheckKeyBudget(const RunRef& ref, int64_t run_keys, int64_t added,
                      const std::string& first_new, int64_t max) {
  if (max <= 0 || added == 0 || run_keys + added <= max) return Status::Ok();
  return Status::PayloadTooLarge(
      "run " + ref.entity + "/" + ref.project + "/" + ref.run_id + " holds " +
      std::to_string(run_keys) + " distinct keys and this batch adds " + std::to_string(added) +
      " more (" + first_new + ", ...): the limit is " + std::to_string(max) +
      " distinct keys per run (docs/operations.md, \"Limits\")");
}

}  // namespace cohort::store
