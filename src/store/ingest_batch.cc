#include "store/ingest_batch.h"

#include <algorithm>

namespace cohort::store {
namespace {

constexpr uint32_t kNoColumn = UINT32_MAX;

}  // namespace

std::vector<std::string> IngestBatch::histogram_keys() const {
  std::vector<std::string> keys;
  keys.reserve(histograms.size());
  for (const HistogramPoint& h : histograms) keys.push_back(h.key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<std::string> IngestBatch::media_keys() const {
  std::vector<std::string> keys;
  keys.reserve(media.size());
  for (const MediaPoint& m : media) keys.push_back(m.key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

int64_t IngestBatch::points() const {
  int64_t n = 0;
  for (const KeyColumn& c : columns) n += int64_t(c.rows.size());
  return n;
}

uint32_t IngestBatchBuilder::Column(Section* section, std::string_view key, size_t position) {
  if (position < section->previous.size() && section->previous[position] != kNoColumn) {
    const uint32_t c = section->previous[position];
    const std::string& stored = batch_.columns[c].key;
    const std::string_view plain =
        section->system ? std::string_view(stored).substr(kSystemKeyPrefix.size()) : stored;
    if (plain == key) return c;
  }
  scratch_.assign(key);
  auto [it, fresh] = section->index.try_emplace(scratch_, uint32_t(batch_.columns.size()));
  if (fresh) {
    KeyColumn column;
    column.system = section->system;
    column.key = section->system ? std::string(kSystemKeyPrefix) + scratch_ : scratch_;
    batch_.columns.push_back(std::move(column));
  }
  return it->second;
}

void IngestBatchBuilder::AddRow(Section* section, uint32_t row, std::span<const Cell> cells) {
  if (section->previous.size() < cells.size()) section->previous.resize(cells.size(), kNoColumn);
  for (size_t i = 0; i < cells.size(); ++i) {
    const uint32_t c = Column(section, cells[i].first, i);
    section->previous[i] = c;
    KeyColumn& column = batch_.columns[c];
    if (!column.rows.empty() && column.rows.back() == row) {
      column.values.back() = cells[i].second;  // the key again in this row: the last value wins
      continue;
    }
    column.rows.push_back(row);
    column.values.push_back(cells[i].second);
  }
}

void IngestBatchBuilder::AddHistoryRow(int64_t step, int64_t time_ms, std::span<const Cell> cells) {
  const uint32_t row = uint32_t(batch_.history_step.size());
  batch_.history_step.push_back(step);
  batch_.history_time_ms.push_back(time_ms);
  AddRow(&history_, row, cells);
}

void IngestBatchBuilder::AddSystemRow(int64_t time_ms, std::span<const Cell> cells) {
  const uint32_t row = uint32_t(batch_.system_time_ms.size());
  batch_.system_time_ms.push_back(time_ms);
  AddRow(&system_, row, cells);
}

}  // namespace cohort::store
