#include "server/api/ingest_fast_decode.h"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace cohort::api {
namespace {

namespace bj = boost::json;
using boost::system::error_code;

// A boost::json SAX handler that fills an IngestBatch as the parser goes. Any callback that meets
// something outside the common shape returns false (the parse stops; the caller falls back).
class FastHandler {
 public:
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);

  explicit FastHandler(const ApiLimits* limits) : limits_(limits) {}

  store::IngestBatchBuilder builder;
  bool seq_seen = false;
  size_t distinct_keys() const { return keys_.size(); }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return state_ == State::kDone; }

  bool on_object_begin(error_code&) {
    switch (state_) {
      case State::kStart:
        state_ = State::kRoot;
        return true;
      case State::kRowsArray:
        if (++rows_ > limits_->max_rows_per_batch) return false;
        row_fields_ = 0;
        state_ = State::kRow;
        row_step_ = store::kAssignStep;
        row_time_ = 0;
        row_values_.clear();
        if (section_ == Section::kConsole) builder.batch().console.emplace_back();
        return true;
      case State::kRowValuesNext:
        state_ = State::kValues;
        values_ = &row_values_;
        values_->reserve(previous_keys_.size());
        return true;
      default:
        return false;
    }
  }

  bool on_object_end(std::size_t, error_code&) {
    switch (state_) {
      case State::kRoot:
        state_ = State::kDone;
        return true;
      case State::kRow: {
        // Required fields: time, and values (history, system) or text (console).
        const unsigned need = section_ == Section::kConsole ? (kTime | kText) : (kTime | kValues);
        if ((row_fields_ & need) != need) return false;
        if (section_ != Section::kConsole) AddRow();
        state_ = State::kRowsArray;
        return true;
      }
      case State::kValues:
        if (!CheckRowKeys()) return false;
        state_ = State::kRow;
        return true;
      default:
        return false;
    }
  }

  bool on_array_begin(error_code&) {
    if (state_ != State::kRootArrayNext) return false;
    state_ = State::kRowsArray;
    return true;
  }

  bool on_array_end(std::size_t, error_code&) {
    if (state_ != State::kRowsArray) return false;
    state_ = State::kRoot;
    return true;
  }

  bool on_key_part(bj::string_view s, std::size_t, error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }

  bool on_key(bj::string_view s, std::size_t, error_code&) {
    key_.append(s.data(), s.size());
    bool ok = OnKey();
    key_.clear();
    return ok;
  }

  bool on_string_part(bj::string_view s, std::size_t, error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }

  bool on_string(bj::string_view s, std::size_t, error_code&) {
    text_.append(s.data(), s.size());
    bool ok = OnString();
    text_.clear();
    return ok;
  }

  bool on_number_part(bj::string_view s, error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }

  bool on_int64(int64_t i, bj::string_view, error_code&) {
    number_.clear();
    return OnInt(i);
  }

  bool on_uint64(uint64_t u, bj::string_view, error_code&) {
    number_.clear();
    return state_ == State::kValueNext && PutValue(double(u));
  }

  bool on_double(double d, bj::string_view s, error_code&) {
    // As json::Parse: the literal read with from_chars (exact), not Boost's approximation.
    number_.append(s.data(), s.size());
    double precise = d;
    const char* first = number_.data();
    const char* last = first + number_.size();
    auto [p, ec] = std::from_chars(first, last, precise);
    if (ec != std::errc() || p != last) precise = d;
    number_.clear();
    if (!std::isfinite(precise)) return false;  // json::Parse rejects it with its own message
    return state_ == State::kValueNext && PutValue(precise);
  }

  bool on_bool(bool b, error_code&) {
    return state_ == State::kValueNext && PutValue(b ? 1.0 : 0.0);
  }
  bool on_null(error_code&) { return false; }
  bool on_comment_part(bj::string_view, error_code&) { return false; }
  bool on_comment(bj::string_view, error_code&) { return false; }

 private:
  enum class State {
    kStart,          // before the root object
    kRoot,           // in the root object, expecting a key
    kSeqNext,        // after "seq"
    kRootArrayNext,  // after "history" / "system" / "console"
    kRowsArray,      // in one of those arrays, expecting a row object
    kRow,            // in a row, expecting a key
    kRowIntNext,     // after "step" or "time"
    kRowValuesNext,  // after "values"
    kRowStringNext,  // after "stream" or "text"
    kValues,         // in a values object, expecting a key
    kValueNext,      // after a metric key
    kDone,
  };
  enum class Section { kNone, kHistory, kSystem, kConsole };
  enum RowField : unsigned { kStep = 1, kTime = 2, kValues = 4, kStream = 8, kText = 16 };

  bool OnKey() {
    switch (state_) {
      case State::kRoot: {
        unsigned bit;
        if (key_ == "seq") {
          bit = 1;
          state_ = State::kSeqNext;
        } else if (key_ == "history") {
          bit = 2;
          section_ = Section::kHistory;
          state_ = State::kRootArrayNext;
        } else if (key_ == "system") {
          bit = 4;
          section_ = Section::kSystem;
          state_ = State::kRootArrayNext;
        } else if (key_ == "console") {
          bit = 8;
          section_ = Section::kConsole;
          state_ = State::kRootArrayNext;
        } else {
          return false;
        }
        if (root_fields_ & bit) return false;  // a repeated field
        root_fields_ |= bit;
        return true;
      }
      case State::kRow: {
        unsigned bit;
        const bool console = section_ == Section::kConsole;
        if (key_ == "time") {
          bit = kTime;
          state_ = State::kRowIntNext;
        } else if (key_ == "step" && section_ == Section::kHistory) {
          bit = kStep;
          state_ = State::kRowIntNext;
        } else if (key_ == "values" && !console) {
          bit = kValues;
          state_ = State::kRowValuesNext;
        } else if (key_ == "stream" && console) {
          bit = kStream;
          state_ = State::kRowStringNext;
        } else if (key_ == "text" && console) {
          bit = kText;
          state_ = State::kRowStringNext;
        } else {
          return false;
        }
        if (row_fields_ & bit) return false;
        row_fields_ |= bit;
        row_field_ = RowField(bit);
        return true;
      }
      case State::kValues:
        if (key_.empty() || key_.size() > limits_->max_key_bytes) return false;
        values_->emplace_back(key_, 0.0);
        state_ = State::kValueNext;
        return true;
      default:
        return false;
    }
  }

  bool OnInt(int64_t i) {
    switch (state_) {
      case State::kSeqNext:
        builder.batch().seq = i;
        seq_seen = true;
        state_ = State::kRoot;
        return true;
      case State::kRowIntNext:
        if (row_field_ == kStep) {
          if (i < 0) return false;
          row_step_ = i;
        } else if (section_ == Section::kConsole) {
          builder.batch().console.back().time_ms = i;
        } else {
          row_time_ = i;
        }
        state_ = State::kRow;
        return true;
      case State::kValueNext:
        return PutValue(double(i));
      default:
        return false;
    }
  }

  bool OnString() {
    if (state_ == State::kValueNext) {
      if (text_ == "NaN" || text_ == "nan")
        return PutValue(std::numeric_limits<double>::quiet_NaN());
      if (text_ == "Infinity" || text_ == "inf") {
        return PutValue(std::numeric_limits<double>::infinity());
      }
      if (text_ == "-Infinity" || text_ == "-inf") {
        return PutValue(-std::numeric_limits<double>::infinity());
      }
      return false;
    }
    if (state_ != State::kRowStringNext) return false;
    store::ConsoleLine& line = builder.batch().console.back();
    if (row_field_ == kStream) {
      if (text_ != "stdout" && text_ != "stderr") return false;
      line.stream = text_;
    } else {
      if (text_.size() > limits_->max_console_line_bytes) return false;
      line.text = text_;
    }
    state_ = State::kRow;
    return true;
  }

  // Hands the history or system row read to the builder.
  void AddRow() {
    cells_.clear();
    for (const auto& [key, value] : row_values_) cells_.emplace_back(key, value);
    if (section_ == Section::kHistory) {
      builder.AddHistoryRow(row_step_, row_time_, cells_);
    } else {
      builder.AddSystemRow(row_time_, cells_);
    }
  }

  bool PutValue(double v) {
    if (state_ != State::kValueNext) return false;
    values_->back().second = v;
    state_ = State::kValues;
    return true;
  }

  // At the end of a values object: its keys must be distinct (json::Parse would keep the last of
  // repeated ones), and the batch's distinct keys within the limit. Rows usually repeat the
  // previous row's keys in the same order, which costs one comparison per key.
  bool CheckRowKeys() {
    const auto& values = *values_;
    bool same = values.size() == previous_keys_.size() && previous_section_ == section_;
    for (size_t i = 0; same && i < values.size(); ++i) same = values[i].first == previous_keys_[i];
    if (same) return true;
    previous_keys_.clear();
    for (const auto& kv : values) previous_keys_.push_back(kv.first);
    previous_section_ = section_;
    std::vector<std::string_view> sorted(previous_keys_.begin(), previous_keys_.end());
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
    for (const auto& kv : values) {
      keys_.insert(kv.first);
      if (keys_.size() > limits_->max_keys_per_batch) return false;
    }
    return true;
  }

  const ApiLimits* limits_;
  State state_ = State::kStart;
  Section section_ = Section::kNone;
  unsigned root_fields_ = 0;
  unsigned row_fields_ = 0;
  RowField row_field_ = kTime;
  size_t rows_ = 0;
  std::vector<std::pair<std::string, double>>* values_ = nullptr;
  // The history or system row being read (its fields come in any order).
  int64_t row_step_ = store::kAssignStep;
  int64_t row_time_ = 0;
  std::vector<std::pair<std::string, double>> row_values_;
  std::vector<store::IngestBatchBuilder::Cell> cells_;
  std::vector<std::string> previous_keys_;
  Section previous_section_ = Section::kNone;
  std::unordered_set<std::string> keys_;  // distinct keys of the batch
  std::string key_, text_, number_;
};

}  // namespace

std::optional<store::IngestBatch> FastDecodeIngestBatch(std::string_view body,
                                                        const ApiLimits& limits) {
  bj::parse_options opts;
  opts.allow_invalid_utf8 = false;
  bj::basic_parser<FastHandler> parser(opts, &limits);
  error_code ec;
  const size_t n = parser.write_some(false, body.data(), body.size(), ec);
  if (ec || n != body.size()) return std::nullopt;
  FastHandler& h = parser.handler();
  if (!h.seq_seen || h.builder.batch().seq <= 0) return std::nullopt;
  return h.builder.Finish();
}

}  // namespace cohort::api
