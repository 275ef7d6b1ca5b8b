#include "server/api/ingest_decode.h"

#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/limits.h"
#include "core/metric_key.h"

namespace cohort::api {
namespace {

namespace bj = boost::json;
using boost::system::error_code;
using store::IngestBatch;
using store::KeyColumn;

constexpr uint32_t kNoColumn = UINT32_MAX;
constexpr size_t kMaxDepth = 64;  // as every JSON body (core/json.h)

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// A boost::json SAX handler that fills a columnar batch as the parser goes. A callback that
// meets something the batch may not hold records the error, naming the field, and returns false
// (the parse stops there).
class BatchHandler {
 public:
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);

  explicit BatchHandler(const ApiLimits* limits) : limits_(*limits) {}

  IngestBatch batch;
  Status error;
  bool seq_seen = false;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }

  bool on_object_begin(error_code&) {
    switch (state_) {
      case State::kStart:
        state_ = State::kRoot;
        return true;
      case State::kRows:
        return BeginRow();
      case State::kRowValues:
        state_ = State::kValues;
        position_ = 0;
        return true;
      default:
        return Unexpected();
    }
  }

  bool on_object_end(std::size_t, error_code&) {
    switch (state_) {
      case State::kRoot:
        state_ = State::kDone;
        return true;
      case State::kRow:
        return EndRow();
      case State::kValues:
        state_ = State::kRow;
        return true;
      default:
        return Unexpected();
    }
  }

  bool on_array_begin(error_code&) {
    if (state_ != State::kSection) return Unexpected();
    state_ = State::kRows;
    return true;
  }

  bool on_array_end(std::size_t, error_code&) {
    if (state_ != State::kRows) return Unexpected();
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

  bool on_int64(int64_t i, bj::string_view s, error_code&) {
    // "-0" is negative zero: a metric value keeps its sign bit.
    const bool negative_zero =
        i == 0 && state_ == State::kValue && ((number_.empty() && s.starts_with('-')) ||
                                               (!number_.empty() && number_[0] == '-'));
    number_.clear();
    if (negative_zero) return PutValue(-0.0);
    return OnInteger(i);
  }

  bool on_uint64(uint64_t u, bj::string_view, error_code&) {
    number_.clear();
    if (state_ == State::kValue) return PutValue(double(u));
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return Unexpected();
    return OnInteger(int64_t(u));
  }

  bool on_double(double d, bj::string_view s, error_code& ec) {
    // As json::Parse: the literal read with from_chars (correctly rounded), not Boost's
    // approximation; a literal beyond the range of a double is an error, never an infinity.
    number_.append(s.data(), s.size());
    double precise = d;
    auto [p, e] = std::from_chars(number_.data(), number_.data() + number_.size(), precise);
    if (e != std::errc() || p != number_.data() + number_.size()) precise = d;
    number_.clear();
    if (!std::isfinite(precise)) {
      ec = bj::error::exponent_overflow;
      return false;
    }
    if (state_ == State::kValue) return PutValue(precise);
    // An integer written as a double (1.0) is an integer, as FieldReader::OptInt takes it.
    if (precise == std::floor(precise) && std::fabs(precise) < 9.0e15) {
      return OnInteger(int64_t(precise));
    }
    return Unexpected();
  }

  bool on_bool(bool b, error_code&) {
    if (state_ == State::kValue) return PutValue(b ? 1.0 : 0.0);
    return Unexpected();
  }

  bool on_null(error_code&) {
    // An optional field given as null is absent, as in every other body.
    switch (state_) {
      case State::kSeq:
      case State::kSection:
        state_ = State::kRoot;
        return true;
      case State::kRowInt:
      case State::kRowString:
        row_fields_ &= ~unsigned(field_);  // absent: required ones are reported at the row's end
        state_ = State::kRow;
        return true;
      default:
        return Unexpected();
    }
  }

  bool on_comment_part(bj::string_view, error_code&) { return true; }
  bool on_comment(bj::string_view, error_code&) { return true; }

 private:
  enum class State {
    kStart,      // before the root object
    kRoot,       // in the root object, expecting a key
    kSeq,        // after "seq"
    kSection,    // after "history" / "system" / "console"
    kRows,       // in one of those arrays, expecting a row object
    kRow,        // in a row, expecting a key
    kRowInt,     // after "step" or "time"
    kRowString,  // after "stream" or "text"
    kRowValues,  // after "values"
    kValues,     // in a values object, expecting a key
    kValue,      // after a metric key
    kDone,
  };
  enum class Section { kHistory = 0, kSystem = 1, kConsole = 2 };
  enum Field : unsigned { kStep = 1, kTime = 2, kValuesField = 4, kStream = 8, kText = 16 };
  // The columns of one key (kNoColumn: none yet).
  struct KeyColumns {
    uint32_t history = kNoColumn;
    uint32_t system = kNoColumn;
  };

  static std::string_view SectionName(Section s) {
    return s == Section::kHistory ? "history" : s == Section::kSystem ? "system" : "console";
  }
  static std::string_view FieldName(Field f) {
    switch (f) {
      case kStep: return "step";
      case kTime: return "time";
      case kValuesField: return "values";
      case kStream: return "stream";
      case kText: return "text";
    }
    return "";
  }
  size_t RowsOf(Section s) const {
    return s == Section::kHistory ? batch.history_step.size()
           : s == Section::kSystem ? batch.system_time_ms.size()
                                   : batch.console.size();
  }
  // "history[3]": the row being read.
  std::string RowPath() const {
    return std::string(SectionName(section_)) + "[" + std::to_string(RowsOf(section_) - 1) + "]";
  }

  bool Fail(std::string message) {
    if (error.ok()) error = Status::InvalidArgument(std::move(message));
    return false;
  }
  bool TooLarge(std::string message) {
    if (error.ok()) error = Status::PayloadTooLarge(std::move(message));
    return false;
  }

  // A value of the wrong kind where the state expects another: the error names the field.
  bool Unexpected() {
    switch (state_) {
      case State::kStart:
        return Fail("body: expected a JSON object");
      case State::kSeq:
        return Fail("seq: expected an integer");
      case State::kSection:
        return Fail(std::string(SectionName(section_)) + ": expected an array");
      case State::kRows:
        return Fail(std::string(SectionName(section_)) + "[" + std::to_string(RowsOf(section_)) +
                    "]: expected an object");
      case State::kRowInt:
        return Fail(RowPath() + "." + std::string(FieldName(field_)) + ": expected an integer");
      case State::kRowString:
        return Fail(RowPath() + "." + std::string(FieldName(field_)) + ": expected a string");
      case State::kRowValues:
        return Fail(RowPath() + ".values: expected an object");
      case State::kValue:
        return Fail(RowPath() + ".values." + value_key_ +
                    ": expected a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
      default:
        return Fail("body: malformed ingest batch");
    }
  }

  bool OnKey() {
    if (state_ == State::kValues) return OnValueKey();
    if (state_ == State::kRoot) {
      unsigned bit;
      if (key_ == "seq") {
        bit = 1;
        state_ = State::kSeq;
      } else if (key_ == "history" || key_ == "system" || key_ == "console") {
        section_ = key_ == "history"  ? Section::kHistory
                   : key_ == "system" ? Section::kSystem
                                      : Section::kConsole;
        bit = 2u << int(section_);
        state_ = State::kSection;
      } else {
        return Fail(key_ + ": unknown field");
      }
      if (root_fields_ & bit) return Fail(key_ + ": given more than once");
      root_fields_ |= bit;
      return true;
    }
    if (state_ != State::kRow) return Unexpected();
    const bool console = section_ == Section::kConsole;
    Field f;
    State next;
    if (key_ == "time") {
      f = kTime;
      next = State::kRowInt;
    } else if (key_ == "step" && section_ == Section::kHistory) {
      f = kStep;
      next = State::kRowInt;
    } else if (key_ == "values" && !console) {
      f = kValuesField;
      next = State::kRowValues;
    } else if ((key_ == "stream" || key_ == "text") && console) {
      f = key_ == "stream" ? kStream : kText;
      next = State::kRowString;
    } else {
      return Fail(RowPath() + "." + key_ + ": unknown field");
    }
    if (row_fields_ & f) return Fail(RowPath() + "." + key_ + ": given more than once");
    row_fields_ |= f;
    field_ = f;
    state_ = next;
    return true;
  }

  // A metric key: the column it goes to, made at its first use in the batch. Rows usually
  // repeat the previous row's keys in the same order, which costs one comparison per key.
  bool OnValueKey() {
    const int s = int(section_);
    std::vector<std::string>& prev_keys = previous_keys_[s];
    std::vector<uint32_t>& prev_columns = previous_columns_[s];
    uint32_t column = 0;
    if (position_ < prev_keys.size() && prev_keys[position_] == key_) {
      column = prev_columns[position_];
    } else {
      auto it = keys_.find(std::string_view(key_));
      if (it == keys_.end()) {
        if (key_.size() > limits_.max_key_bytes) {
          return Fail(RowPath() + ".values: key longer than " +
                      std::to_string(limits_.max_key_bytes) + " bytes");
        }
        if (std::string_view why = InvalidKeyReason(key_); !why.empty()) {
          return Fail(key_.empty() || key_.find('\0') != std::string::npos
                          ? RowPath() + ".values: key " + std::string(why)
                          : RowPath() + ".values." + key_ + ": key " + std::string(why));
        }
        if (keys_.size() >= limits_.max_keys_per_batch) {
          return TooLarge("batch has more than " + std::to_string(limits_.max_keys_per_batch) +
                          " distinct keys (--max-keys-per-batch)");
        }
        it = keys_.emplace(key_, KeyColumns{}).first;
      }
      uint32_t& c = section_ == Section::kHistory ? it->second.history : it->second.system;
      if (c == kNoColumn) {
        c = uint32_t(batch.columns.size());
        KeyColumn& col = batch.columns.emplace_back();
        col.system = section_ == Section::kSystem;
        if (col.system) col.key.assign(limits::kSystemKeyPrefix);
        col.key.append(key_);
      }
      column = c;
      if (position_ >= prev_keys.size()) {
        prev_keys.resize(position_ + 1);
        prev_columns.resize(position_ + 1);
      }
      prev_keys[position_] = key_;
      prev_columns[position_] = column;
    }
    ++position_;
    column_ = column;
    value_key_ = key_;
    state_ = State::kValue;
    return true;
  }

  bool PutValue(double v) {
    if (state_ != State::kValue) return Unexpected();
    KeyColumn& c = batch.columns[column_];
    const uint32_t row = uint32_t(RowsOf(section_) - 1);
    if (!c.rows.empty() && c.rows.back() == row) {
      c.values.back() = v;  // a key given twice in one row: the last value, as any JSON reader
    } else {
      c.rows.push_back(row);
      c.values.push_back(v);
    }
    state_ = State::kValues;
    return true;
  }

  bool OnInteger(int64_t i) {
    switch (state_) {
      case State::kValue:
        return PutValue(double(i));
      case State::kSeq:
        if (i <= 0) return Fail("seq: must be > 0");
        batch.seq = i;
        seq_seen = true;
        state_ = State::kRoot;
        return true;
      case State::kRowInt:
        if (field_ == kStep) {
          if (i < 0) return Fail(RowPath() + ".step: must be >= 0");
          batch.history_step.back() = i;
        } else if (section_ == Section::kHistory) {
          batch.history_time_ms.back() = i;
        } else if (section_ == Section::kSystem) {
          batch.system_time_ms.back() = i;
        } else {
          batch.console.back().time_ms = i;
        }
        state_ = State::kRow;
        return true;
      default:
        return Unexpected();
    }
  }

  bool OnString() {
    if (state_ == State::kValue) {
      if (text_ == "NaN" || text_ == "nan") {
        return PutValue(std::numeric_limits<double>::quiet_NaN());
      }
      if (text_ == "Infinity" || text_ == "inf") {
        return PutValue(std::numeric_limits<double>::infinity());
      }
      if (text_ == "-Infinity" || text_ == "-inf") {
        return PutValue(-std::numeric_limits<double>::infinity());
      }
      return Unexpected();
    }
    if (state_ != State::kRowString) return Unexpected();
    store::ConsoleLine& line = batch.console.back();
    if (field_ == kStream) {
      if (text_ != "stdout" && text_ != "stderr") {
        return Fail(RowPath() + ".stream: expected stdout or stderr");
      }
      line.stream = text_;
    } else {
      if (text_.size() > limits_.max_console_line_bytes) {
        return Fail(RowPath() + ".text: longer than " +
                    std::to_string(limits_.max_console_line_bytes) + " bytes");
      }
      line.text = text_;
    }
    state_ = State::kRow;
    return true;
  }

  bool BeginRow() {
    if (++rows_ > limits_.max_rows_per_batch) {
      return TooLarge("batch has more than " + std::to_string(limits_.max_rows_per_batch) +
                      " rows");
    }
    switch (section_) {
      case Section::kHistory:
        batch.history_step.push_back(store::kAssignStep);
        batch.history_time_ms.push_back(0);
        break;
      case Section::kSystem:
        batch.system_time_ms.push_back(0);
        break;
      case Section::kConsole:
        batch.console.emplace_back();
        break;
    }
    row_fields_ = 0;
    state_ = State::kRow;
    return true;
  }

  bool EndRow() {
    if (!(row_fields_ & kTime)) return Fail(RowPath() + ".time: required");
    if (section_ == Section::kConsole) {
      if (!(row_fields_ & kText)) return Fail(RowPath() + ".text: required");
    } else if (!(row_fields_ & kValuesField)) {
      return Fail(RowPath() + ".values: expected an object");
    }
    state_ = State::kRows;
    return true;
  }

  const ApiLimits& limits_;
  State state_ = State::kStart;
  Section section_ = Section::kHistory;
  Field field_ = kTime;
  unsigned root_fields_ = 0;
  unsigned row_fields_ = 0;
  size_t rows_ = 0;  // rows of every section so far
  std::unordered_map<std::string, KeyColumns, StringHash, std::equal_to<>> keys_;
  // Per section (history, system): the keys of the previous rows by position, and their columns.
  std::vector<std::string> previous_keys_[2];
  std::vector<uint32_t> previous_columns_[2];
  size_t position_ = 0;  // of the current key in its values object
  uint32_t column_ = 0;  // of the current key
  std::string value_key_;
  std::string key_, text_, number_;
};

}  // namespace

Result<IngestBatch> DecodeIngestBatch(std::string_view body, const ApiLimits& limits) {
  bj::parse_options opts;
  opts.max_depth = kMaxDepth;
  opts.allow_invalid_utf8 = false;
  bj::basic_parser<BatchHandler> parser(opts, &limits);
  error_code ec;
  const size_t n = parser.write_some(false, body.data(), body.size(), ec);
  BatchHandler& h = parser.handler();
  if (!h.error.ok()) return h.error;
  if (!ec && n < body.size()) ec = bj::error::extra_data;
  if (ec) {
    if (ec == bj::error::too_deep) {
      return Status::InvalidArgument("body: JSON nesting deeper than " + std::to_string(kMaxDepth));
    }
    if (ec == bj::error::exponent_overflow) {
      return Status::InvalidArgument("body: a number is out of the range of a double (at byte " +
                                     std::to_string(n) + ")");
    }
    return Status::InvalidArgument("body: malformed JSON (" + ec.message() + ")");
  }
  if (!h.seq_seen) return Status::InvalidArgument("seq: required");
  return std::move(h.batch);
}

}  // namespace cohort::api
