#include "client/log_buffer.h"

#include <time.h>

#include <algorithm>

#include "core/histogram.h"
#include "core/metric_key.h"

namespace cohort::client {
namespace {

// Wall clock in ms from the coarse clock: a few ns instead of tens, and ms resolution is
// all the data model keeps anyway (coarse ticks are 1-4 ms).
int64_t CoarseNowMillis() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

namespace {
// "a scalar", "a histogram", "an image", ... for a key type of LogBuffer (media: 16 + type).
std::string TypePhrase(uint8_t t) {
  if (t == 1) return "a scalar";
  if (t == 2) return "a histogram";
  const std::string_view name = batch::MediaTypeName(batch::MediaType(t >= 16 ? t - 16 : 0));
  if (name.empty()) return "another type";
  if (name == "audio" || name == "html") return std::string(name);
  return (name == "image" ? "an " : "a ") + std::string(name);
}
}  // namespace

LogBuffer::LogBuffer(Limits limits) : limits_(limits) {}

uint32_t LogBuffer::InternLocked(std::string_view key) {
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  if (!InvalidKeyReason(key).empty()) return kInvalidKey;
  uint32_t id = uint32_t(keys_.size());
  keys_.emplace_back(key);
  ids_.emplace(std::string(key), id);
  key_mark_.push_back(0);
  key_type_.push_back(kUntyped);
  return id;
}

uint32_t LogBuffer::Intern(std::string_view key) {
  MutexLock lock(&mu_);
  return InternLocked(key);
}

void LogBuffer::MarkKeyLocked(uint32_t id) {
  if (key_mark_[id] != batch_generation_) {
    key_mark_[id] = batch_generation_;
    batch_keys_.push_back(id);
  }
}

void LogBuffer::RecountKeysLocked() {
  ++batch_generation_;
  batch_keys_.clear();
  for (const auto& c : cells_) MarkKeyLocked(c.key);
}

bool LogBuffer::BeginCallLocked(std::optional<int64_t> step, size_t count) {
  if (step) {
    if (*step < step_ || *step < 0) {
      dropped_ += int64_t(count);
      return false;
    }
    if (*step > step_) {
      row_open_ = false;
      step_ = *step;
    }
  }
  if (count == 0) return true;
  if (cells_.size() + count > limits_.max_pending_cells) {
    dropped_ += int64_t(count);
    full_ = true;  // the call still ends (its step advances); its values are not kept
    return false;
  }
  if (!row_open_) {
    rows_.push_back({.step = step_,
                     .time_ms = CoarseNowMillis(),
                     .begin = uint32_t(cells_.size()),
                     .count = 0});
    row_open_ = true;
  }
  return true;
}

bool LogBuffer::EndCallLocked(bool commit) {
  if (commit) {
    row_open_ = false;
    ++step_;
  }
  return cells_.size() >= limits_.flush_cells || batch_keys_.size() >= limits_.flush_keys ||
         hist_words_ >= limits::kClientMaxBatchHistogramWords / 2;
}

bool LogBuffer::Log(const Values& values, std::optional<int64_t> step, bool commit) {
  MutexLock lock(&mu_);
  return LogValuesLocked(values, step, commit);
}

Status LogBuffer::CheckTypesLocked(const Values& values,
                                   std::span<const std::pair<std::string, Histogram>> histograms) {
  for (const auto& [key, h] : histograms) {
    if (std::string_view why = InvalidKeyReason(key); !why.empty()) {
      return Status::InvalidArgument("key '" + key + "': " + std::string(why));
    }
    if (std::string why = histogram::InvalidReason(h); !why.empty()) {
      return Status::InvalidArgument("histogram '" + key + "': " + why);
    }
    auto it = ids_.find(key);
    if (it != ids_.end() && key_type_[it->second] != kUntyped &&
        key_type_[it->second] != kHistogram) {
      return Status::InvalidArgument("key '" + key + "' was logged as " +
                                     TypePhrase(key_type_[it->second]) +
                                     " and cannot be logged as a histogram (a key has one type "
                                     "per run)");
    }
    for (const auto& v : values) {
      if (v.first == key) {
        return Status::InvalidArgument("key '" + key +
                                       "' is logged as a scalar and as a histogram in one call");
      }
    }
  }
  for (const auto& v : values) {
    auto it = ids_.find(v.first);
    if (it != ids_.end() && key_type_[it->second] >= kHistogram) {
      return Status::InvalidArgument("key '" + v.first + "' was logged as " +
                                     TypePhrase(key_type_[it->second]) +
                                     " and cannot be logged as a scalar (a key has one type per "
                                     "run)");
    }
  }
  return Status::Ok();
}

Status LogBuffer::Log(const Values& values,
                      std::span<const std::pair<std::string, Histogram>> histograms,
                      std::optional<int64_t> step, bool commit, bool* flush) {
  MutexLock lock(&mu_);
  if (histograms.empty()) {
    // The common case: scalars only. Keys new to the run are checked against histogram keys
    // (a key repeated from the previous call was checked then); nothing to check while the run
    // has no histogram key.
    bool same = !has_histogram_keys_ || values.size() == last_call_size_;
    for (size_t i = 0; same && has_histogram_keys_ && i < values.size(); ++i) {
      same = keys_[last_call_ids_[i]] == values[i].first;
    }
    if (!same) COHORT_RETURN_IF_ERROR(CheckTypesLocked(values, histograms));
    *flush = LogValuesLocked(values, step, commit);
    return Status::Ok();
  }
  COHORT_RETURN_IF_ERROR(CheckTypesLocked(values, histograms));
  size_t words = 0;
  for (const auto& h : histograms) words += limits::HistogramWords(h.second.bins());
  if (hist_words_ + words > 2 * limits::kClientMaxBatchHistogramWords ||
      (step && (*step < step_ || *step < 0))) {
    dropped_ += int64_t(histograms.size());
    *flush = LogValuesLocked(values, step, commit);
    return Status::Ok();
  }
  // The values first (they settle the step), then the histograms at that step.
  LogValuesLocked(values, step, /*commit=*/false);
  const int64_t now = CoarseNowMillis();
  for (const auto& [key, h] : histograms) {
    const uint32_t id = InternLocked(key);  // valid: checked above
    key_type_[id] = kHistogram;
    has_histogram_keys_ = true;
    hists_.push_back({.step = step_, .time_ms = now, .key = id, .value = h});
  }
  hist_words_ += words;
  *flush = EndCallLocked(commit);
  return Status::Ok();
}

bool LogBuffer::DroppedCallLocked(bool commit) {
  // A call dropped because the buffer was full still ends: a commit moves the step on, or the
  // next call's values would take the dropped one's step. One past its step (or bad) does not.
  if (full_) {
    full_ = false;
    EndCallLocked(commit);
  }
  return cells_.size() >= limits_.flush_cells;
}

bool LogBuffer::LogValuesLocked(const Values& values, std::optional<int64_t> step, bool commit) {
  if (!BeginCallLocked(step, values.size())) return DroppedCallLocked(commit);
  if (!values.empty()) {
    const size_t n = values.size();
    uint32_t added = 0;
    // Fast path: the same keys in the same order as the previous call, all already counted in
    // this batch: one string compare per key, then plain stores.
    bool same = n == last_call_size_ && last_call_generation_ == batch_generation_;
    for (size_t i = 0; same && i < n; ++i) same = keys_[last_call_ids_[i]] == values[i].first;
    if (same) {
      for (size_t i = 0; i < n; ++i) cells_.push_back({last_call_ids_[i], values[i].second});
      added = uint32_t(n);
    } else {
      if (last_call_ids_.size() < n) last_call_ids_.resize(n, kInvalidKey);
      bool all_valid = true;
      for (size_t i = 0; i < n; ++i) {
        const std::string& key = values[i].first;
        uint32_t id = last_call_ids_[i];
        if (id == kInvalidKey || keys_[id] != key) {
          id = InternLocked(key);
          if (id == kInvalidKey || key_type_[id] >= kHistogram) {
            ++dropped_;
            all_valid = false;
            continue;
          }
          key_type_[id] = kScalar;
          last_call_ids_[i] = id;
        }
        MarkKeyLocked(id);
        cells_.push_back({id, values[i].second});
        ++added;
      }
      last_call_size_ = all_valid ? n : SIZE_MAX;
      last_call_generation_ = batch_generation_;
    }
    rows_.back().count += added;
  }
  return EndCallLocked(commit);
}

bool LogBuffer::Log(std::span<const Point> points, std::optional<int64_t> step, bool commit) {
  MutexLock lock(&mu_);
  if (!BeginCallLocked(step, points.size())) return DroppedCallLocked(commit);
  if (!points.empty()) {
    const size_t n = points.size();
    const uint32_t nkeys = uint32_t(keys_.size());
    uint32_t added = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t id = points[i].key.index;
      if (id >= nkeys || key_type_[id] >= kHistogram) continue;  // invalid, never interned
      key_type_[id] = kScalar;                                   // here, or a typed key
      if (key_mark_[id] != batch_generation_) {
        key_mark_[id] = batch_generation_;
        batch_keys_.push_back(id);
      }
      cells_.push_back({id, points[i].value});
      ++added;
    }
    dropped_ += int64_t(n - added);
    rows_.back().count += added;
  }
  return EndCallLocked(commit);
}

bool LogBuffer::AddConsole(int64_t time_ms, bool is_stderr, std::string text) {
  MutexLock lock(&mu_);
  console_bytes_ += text.size();
  console_.push_back({time_ms, is_stderr, std::move(text)});
  return console_bytes_ >= limits_.flush_console_bytes;
}

void LogBuffer::TakeConsoleLocked(batch::Batch* out) {
  size_t n = 0, bytes = 0;
  while (n < console_.size() &&
         (n == 0 || bytes + console_[n].text.size() <= limits_.max_frame_console_bytes)) {
    bytes += console_[n++].text.size();
  }
  if (n == console_.size()) {
    out->console.swap(console_);
    console_bytes_ = 0;
    return;
  }
  out->console.assign(std::make_move_iterator(console_.begin()),
                      std::make_move_iterator(console_.begin() + long(n)));
  console_.erase(console_.begin(), console_.begin() + long(n));
  console_bytes_ -= bytes;
}

Status LogBuffer::ClaimMediaLocked(std::string_view key, batch::MediaType type, uint32_t* id) {
  return ClaimTypeLocked(key, uint8_t(kMediaBase + uint8_t(type)), id);
}

Status LogBuffer::ClaimTypeLocked(std::string_view key, uint8_t want, uint32_t* id) {
  if (std::string_view why = InvalidKeyReason(key); !why.empty()) {
    return Status::InvalidArgument("key '" + std::string(key) + "': " + std::string(why));
  }
  *id = InternLocked(key);
  uint8_t& have = key_type_[*id];
  if (have != kUntyped && have != want) {
    return Status::InvalidArgument("key '" + std::string(key) + "' was logged as " +
                                   TypePhrase(have) + " and cannot be logged as " +
                                   TypePhrase(want) + " (a key has one type per run)");
  }
  have = want;
  has_histogram_keys_ = true;
  return Status::Ok();
}

Status LogBuffer::ClaimMedia(std::string_view key, batch::MediaType type) {
  MutexLock lock(&mu_);
  uint32_t id = 0;
  return ClaimMediaLocked(key, type, &id);
}

Status LogBuffer::ClaimHistogram(std::string_view key) {
  MutexLock lock(&mu_);
  uint32_t id = 0;
  return ClaimTypeLocked(key, kHistogram, &id);
}

Status LogBuffer::LogHistogramAt(std::string_view key, int64_t step, const Histogram& histogram,
                                 bool* flush) {
  *flush = false;
  if (step < 0) return Status::InvalidArgument("histogram '" + std::string(key) + "': step < 0");
  if (std::string why = histogram::InvalidReason(histogram); !why.empty()) {
    return Status::InvalidArgument("histogram '" + std::string(key) + "': " + why);
  }
  const size_t words = limits::HistogramWords(histogram.bins());
  MutexLock lock(&mu_);
  uint32_t id = 0;
  COHORT_RETURN_IF_ERROR(ClaimTypeLocked(key, kHistogram, &id));
  if (hist_words_ + words > 2 * limits::kClientMaxBatchHistogramWords) {
    ++dropped_;  // the flusher is stuck: counted, never silent
    return Status::ResourceExhausted("histogram '" + std::string(key) +
                                     "': too many histograms waiting for the agent");
  }
  hists_.push_back({.step = step, .time_ms = CoarseNowMillis(), .key = id, .value = histogram});
  hist_words_ += words;
  *flush = hist_words_ >= limits::kClientMaxBatchHistogramWords / 2;
  return Status::Ok();
}

Status LogBuffer::LogMedia(std::string_view key, batch::MediaType type, int64_t step,
                           std::vector<batch::MediaRow> rows, bool* flush) {
  *flush = false;
  if (step < 0) return Status::InvalidArgument("media '" + std::string(key) + "': step < 0");
  for (size_t i = 0; i < rows.size(); ++i) {
    batch::MediaRow& m = rows[i];
    m.type = type;
    m.step = step;
    m.index = uint32_t(i);
    if (std::string why = batch::InvalidMediaReason(m); !why.empty()) {
      return Status::InvalidArgument("media '" + std::string(key) + "'[" + std::to_string(i) +
                                     "]: " + why);
    }
  }
  MutexLock lock(&mu_);
  uint32_t id = 0;
  COHORT_RETURN_IF_ERROR(ClaimMediaLocked(key, type, &id));
  if (media_.size() + rows.size() > 4 * limits::kClientMaxBatchMedia) {
    dropped_ += int64_t(rows.size());  // the flusher is stuck: counted, never silent
    return Status::ResourceExhausted("media '" + std::string(key) +
                                     "': too many media waiting for the agent");
  }
  const int64_t now = CoarseNowMillis();
  for (batch::MediaRow& m : rows) {
    m.key = id;
    m.time_ms = now;
    media_.push_back(std::move(m));
  }
  *flush = media_.size() >= limits::kClientMaxBatchMedia / 4;
  return Status::Ok();
}

bool LogBuffer::AddBatchKeyLocked(uint32_t id, batch::Batch* out) {
  uint32_t& local = local_of_[id];
  if (local != 0) return true;
  if (out->keys.size() >= limits_.max_frame_keys) return false;
  out->keys.push_back(keys_[id]);
  local = uint32_t(out->keys.size());
  return true;
}

void LogBuffer::TakeMediaLocked(batch::Batch* out) {
  size_t n = 0;
  while (n < media_.size() && n < limits::kClientMaxBatchMedia &&
         AddBatchKeyLocked(media_[n].key, out)) {
    ++n;
  }
  out->media.assign(std::make_move_iterator(media_.begin()),
                    std::make_move_iterator(media_.begin() + long(n)));
  media_.erase(media_.begin(), media_.begin() + long(n));
}

void LogBuffer::TakeHistogramsLocked(batch::Batch* out) {
  size_t n = 0, words = 0;
  while (n < hists_.size()) {
    const size_t w = limits::HistogramWords(hists_[n].value.bins());
    if (n > 0 && words + w > limits::kClientMaxBatchHistogramWords) break;
    if (!AddBatchKeyLocked(hists_[n].key, out)) break;
    words += w;
    ++n;
  }
  out->histograms.assign(std::make_move_iterator(hists_.begin()),
                         std::make_move_iterator(hists_.begin() + long(n)));
  hists_.erase(hists_.begin(), hists_.begin() + long(n));
  hist_words_ -= words;
}

size_t LogBuffer::TakeFirstCellsLocked(size_t* distinct_keys) {
  // The first row's cells from its start while the batch stays within max_frame_cells cells and
  // max_frame_keys distinct keys (keys are marked with batch_generation_ as they are taken).
  const batch::Batch::Row& r = rows_.front();
  size_t n = 0, distinct = 0;
  while (n < r.count && n < limits_.max_frame_cells) {
    const uint32_t key = cells_[r.begin + n].key;
    if (key_mark_[key] != batch_generation_) {
      if (distinct == limits_.max_frame_keys) break;
      key_mark_[key] = batch_generation_;
      ++distinct;
    }
    ++n;
  }
  *distinct_keys = distinct;
  return n;
}

bool LogBuffer::Take(batch::Batch* out) {
  MutexLock take_lock(&take_mu_);
  out->clear();
  {
    MutexLock lock(&mu_);
    if (rows_.empty() && console_.empty() && hists_.empty() && media_.empty()) return false;
    const bool whole =
        cells_.size() <= limits_.max_frame_cells && batch_keys_.size() <= limits_.max_frame_keys;
    if (whole) {
      out->cells.swap(cells_);
      out->history.swap(rows_);
      TakeConsoleLocked(out);
      row_open_ = false;
    } else {
      // Take whole rows until a limit is reached (at least one row, or part of one).
      size_t nrows = 0, ncells = 0, split = 0;
      ++batch_generation_;
      size_t distinct = 0;
      while (nrows < rows_.size()) {
        const auto& r = rows_[nrows];
        size_t new_keys = 0;
        for (uint32_t i = r.begin; i < r.begin + r.count; ++i) {
          new_keys += key_mark_[cells_[i].key] != batch_generation_;
        }
        if (nrows > 0 && (ncells + r.count > limits_.max_frame_cells ||
                          distinct + new_keys > limits_.max_frame_keys)) {
          break;
        }
        if (nrows == 0 &&
            (r.count > limits_.max_frame_cells || new_keys > limits_.max_frame_keys)) {
          // One row over a frame's limits (a step of more keys than a batch may have): its
          // first cells now, the rest of it, at the same step, in the next batches. (new_keys
          // counts a key logged twice in the row twice: a row that fits is taken whole.)
          size_t first_keys = 0;
          const size_t n = TakeFirstCellsLocked(&first_keys);
          if (n < r.count) {
            split = n;
            break;
          }
          distinct = first_keys;  // its keys are marked: the whole row, counted here
          ncells = r.count;
          ++nrows;
          continue;
        }
        for (uint32_t i = r.begin; i < r.begin + r.count; ++i) {
          if (key_mark_[cells_[i].key] != batch_generation_) {
            key_mark_[cells_[i].key] = batch_generation_;
            ++distinct;
          }
        }
        ncells += r.count;
        ++nrows;
      }
      if (split > 0) {  // the first `split` cells of the first row
        batch::Batch::Row part = rows_.front();
        part.count = uint32_t(split);
        out->history.push_back(part);
        rows_.front().count -= uint32_t(split);
        ncells = split;
      } else {
        out->history.assign(rows_.begin(), rows_.begin() + long(nrows));
        rows_.erase(rows_.begin(), rows_.begin() + long(nrows));
      }
      out->cells.assign(cells_.begin(), cells_.begin() + long(ncells));
      cells_.erase(cells_.begin(), cells_.begin() + long(ncells));
      for (auto& r : rows_)
        r.begin = split > 0 && &r == &rows_.front() ? 0 : r.begin - uint32_t(ncells);
      if (rows_.empty()) row_open_ = false;
      TakeConsoleLocked(out);
    }
    // The batch's key table, copied under the lock (keys_ may grow meanwhile).
    if (local_of_.size() < keys_.size()) local_of_.resize(keys_.size(), 0);
    if (whole) {
      // batch_keys_ lists exactly the distinct keys of the taken cells.
      for (uint32_t id : batch_keys_) {
        out->keys.push_back(keys_[id]);
        local_of_[id] = uint32_t(out->keys.size());
      }
    } else {
      for (const auto& c : out->cells) {
        uint32_t& local = local_of_[c.key];
        if (local == 0) {
          out->keys.push_back(keys_[c.key]);
          local = uint32_t(out->keys.size());
        }
      }
    }
    TakeHistogramsLocked(out);
    TakeMediaLocked(out);
    RecountKeysLocked();
  }
  for (auto& h : out->histograms) h.key = local_of_[h.key] - 1;
  for (auto& m : out->media) m.key = local_of_[m.key] - 1;
  // Remap to local ids, then reset the scratch for the next call.
  for (auto& c : out->cells) c.key = local_of_[c.key] - 1;
  std::fill(local_of_.begin(), local_of_.end(), 0);
  // Rows start at the first taken cell.
  if (!out->history.empty()) {
    uint32_t base = out->history.front().begin;
    for (auto& r : out->history) r.begin -= base;
  }
  return true;
}

void LogBuffer::AdvanceStepTo(int64_t step) {
  MutexLock lock(&mu_);
  if (step > step_) {
    step_ = step;
    row_open_ = false;
  }
}

int64_t LogBuffer::step() const {
  MutexLock lock(&mu_);
  return step_;
}

int64_t LogBuffer::dropped() const {
  MutexLock lock(&mu_);
  return dropped_;
}

bool LogBuffer::empty() const {
  MutexLock lock(&mu_);
  return rows_.empty() && console_.empty() && hists_.empty() && media_.empty();
}

size_t LogBuffer::pending_cells() const {
  MutexLock lock(&mu_);
  return cells_.size();
}

void LogBuffer::LockForFork() {
  take_mu_.Lock();
  mu_.Lock();
}

void LogBuffer::UnlockAfterFork() {
  mu_.Unlock();
  take_mu_.Unlock();
}

void LogBuffer::ResetInChild() {
  cells_.clear();
  rows_.clear();
  console_.clear();
  console_bytes_ = 0;
  hists_.clear();
  hist_words_ = 0;
  media_.clear();
  RecountKeysLocked();
  step_ = 0;
  row_open_ = false;
  dropped_ = 0;
}

}  // namespace cohort::client
