#include "server/api/ingest_decode.h"

#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <initializer_list>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/histogram.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "server/api/ingest_checks.h"
#include "store/record_checks.h"

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
    if (state_ == State::kRowArray) {
      state_ = State::kArrayItems;
      return true;
    }
    if (state_ != State::kSection) return Unexpected();
    state_ = State::kRows;
    return true;
  }

  bool on_array_end(std::size_t, error_code&) {
    if (state_ == State::kArrayItems) {
      state_ = State::kRow;
      return true;
    }
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
    if (NumberState()) return PutNumber(double(i));
    return OnInteger(i);
  }

  bool on_uint64(uint64_t u, bj::string_view, error_code&) {
    number_.clear();
    if (state_ == State::kValue) return PutValue(double(u));
    if (NumberState()) return PutNumber(double(u));
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
    if (NumberState()) return PutNumber(precise);
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
      case State::kRowNumber:
      case State::kRowArray:
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
    kSection,     // after "history" / "system" / "console" / "histograms" / "media"
    kRows,        // in one of those arrays, expecting a row object
    kRow,         // in a row, expecting a key
    kRowInt,      // after an integer field ("step", "time", "index", "size", ...)
    kRowString,   // after a string field ("stream", "text", "key", "sha256", ...)
    kRowNumber,   // after "lo" or "hi"
    kRowArray,    // after "edges" or "counts"
    kArrayItems,  // in one of those arrays, expecting a number
    kRowValues,   // after "values"
    kValues,      // in a values object, expecting a key
    kValue,       // after a metric key
    kDone,
  };
  enum class Section { kHistory = 0, kSystem = 1, kConsole = 2, kHistograms = 3, kMedia = 4 };
  enum Field : unsigned {
    kStep = 1u << 0, kTime = 1u << 1, kValuesField = 1u << 2, kStream = 1u << 3,
    kText = 1u << 4, kKey = 1u << 5, kLo = 1u << 6, kHi = 1u << 7, kEdges = 1u << 8,
    kCounts = 1u << 9, kIndex = 1u << 10, kType = 1u << 11, kSha256 = 1u << 12,
    kSize = 1u << 13, kMime = 1u << 14, kWidth = 1u << 15, kHeight = 1u << 16,
    kDuration = 1u << 17, kCaption = 1u << 18, kCellBytes = 1u << 19,
  };
  // A row's fields: the name, the state its value is read in, the sections that have it.
  struct FieldSpec {
    std::string_view name;
    Field field;
    State state;
    unsigned sections;  // bit 1 << Section
  };
  static constexpr unsigned kHistoryBit = 1, kSystemBit = 2, kConsoleBit = 4, kHistogramsBit = 8,
                            kMediaBit = 16;
  static constexpr FieldSpec kFields[] = {
      {"time", kTime, State::kRowInt,
       kHistoryBit | kSystemBit | kConsoleBit | kHistogramsBit | kMediaBit},
      {"step", kStep, State::kRowInt, kHistoryBit | kHistogramsBit | kMediaBit},
      {"values", kValuesField, State::kRowValues, kHistoryBit | kSystemBit},
      {"stream", kStream, State::kRowString, kConsoleBit},
      {"text", kText, State::kRowString, kConsoleBit},
      {"key", kKey, State::kRowString, kHistogramsBit | kMediaBit},
      {"lo", kLo, State::kRowNumber, kHistogramsBit},
      {"hi", kHi, State::kRowNumber, kHistogramsBit},
      {"edges", kEdges, State::kRowArray, kHistogramsBit},
      {"counts", kCounts, State::kRowArray, kHistogramsBit},
      {"index", kIndex, State::kRowInt, kMediaBit},
      {"type", kType, State::kRowString, kMediaBit},
      {"sha256", kSha256, State::kRowString, kMediaBit},
      {"size", kSize, State::kRowInt, kMediaBit},
      {"mime", kMime, State::kRowString, kMediaBit},
      {"width", kWidth, State::kRowInt, kMediaBit},
      {"height", kHeight, State::kRowInt, kMediaBit},
      {"duration_ms", kDuration, State::kRowInt, kMediaBit},
      {"caption", kCaption, State::kRowString, kMediaBit},
      {"cell_bytes", kCellBytes, State::kRowInt, kMediaBit},
  };
  // The columns of one key (kNoColumn: none yet).
  struct KeyColumns {
    uint32_t history = kNoColumn;
    uint32_t system = kNoColumn;
  };

  static std::string_view SectionName(Section s) {
    switch (s) {
      case Section::kHistory: return "history";
      case Section::kSystem: return "system";
      case Section::kConsole: return "console";
      case Section::kHistograms: return "histograms";
      case Section::kMedia: return "media";
    }
    return "";
  }
  static std::string_view FieldName(Field f) {
    for (const FieldSpec& spec : kFields) {
      if (spec.field == f) return spec.name;
    }
    return "";
  }
  size_t RowsOf(Section s) const {
    switch (s) {
      case Section::kHistory: return batch.history_step.size();
      case Section::kSystem: return batch.system_time_ms.size();
      case Section::kConsole: return batch.console.size();
      case Section::kHistograms: return batch.histograms.size();
      case Section::kMedia: return batch.media.size();
    }
    return 0;
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
  bool Fail(Status s) {
    if (error.ok()) error = std::move(s);
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
      case State::kRowNumber:
        return Fail(RowPath() + "." + std::string(FieldName(field_)) + ": expected a number");
      case State::kRowArray:
        return Fail(RowPath() + "." + std::string(FieldName(field_)) +
                    ": expected an array of numbers");
      case State::kArrayItems:
        return Fail(RowPath() + "." + std::string(FieldName(field_)) + "[" +
                    std::to_string(ArrayOf().size()) + "]: expected a number");
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
      } else {
        bool found = false;
        for (Section s : {Section::kHistory, Section::kSystem, Section::kConsole,
                          Section::kHistograms, Section::kMedia}) {
          if (key_ == SectionName(s)) {
            section_ = s;
            found = true;
          }
        }
        if (!found) return Fail(key_ + ": unknown field");
        bit = 2u << int(section_);
        state_ = State::kSection;
      }
      if (root_fields_ & bit) return Fail(key_ + ": given more than once");
      root_fields_ |= bit;
      return true;
    }
    if (state_ != State::kRow) return Unexpected();
    const FieldSpec* spec = nullptr;
    for (const FieldSpec& s : kFields) {
      if (key_ == s.name && (s.sections & (1u << int(section_)))) {
        spec = &s;
        break;
      }
    }
    if (spec == nullptr) return Fail(RowPath() + "." + key_ + ": unknown field");
    if (row_fields_ & spec->field) {
      return Fail(RowPath() + "." + key_ + ": given more than once");
    }
    row_fields_ |= spec->field;
    field_ = spec->field;
    state_ = spec->state;
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
      auto it = FindOrAddKey(key_, ".values");
      if (it == keys_.end()) return false;
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

  using KeyMap = std::unordered_map<std::string, KeyColumns, StringHash, std::equal_to<>>;

  // The entry of a key of the batch, added at its first use after the key rule and the limits
  // are checked; end() (the error recorded) when it breaks them. `field`: ".values", ".key".
  KeyMap::iterator FindOrAddKey(const std::string& key, std::string_view field) {
    auto it = keys_.find(std::string_view(key));
    if (it != keys_.end()) return it;
    const std::string at = RowPath() + std::string(field);
    if (key.size() > limits_.max_key_bytes) {
      Fail(at + ": key longer than " + std::to_string(limits_.max_key_bytes) + " bytes");
      return keys_.end();
    }
    if (std::string_view why = InvalidKeyReason(key); !why.empty()) {
      const bool hidden = key.empty() || key.find('\0') != std::string::npos;
      if (hidden) {
        Fail(at + ": key " + std::string(why));
      } else if (field == ".values") {
        Fail(at + "." + key + ": key " + std::string(why));
      } else {
        Fail(at + ": key '" + key + "' " + std::string(why));
      }
      return keys_.end();
    }
    if (keys_.size() >= limits_.max_keys_per_batch) {
      TooLarge("batch has more than " + std::to_string(limits_.max_keys_per_batch) +
               " distinct keys (--max-keys-per-batch)");
      return keys_.end();
    }
    return keys_.emplace(key, KeyColumns{}).first;
  }

  bool NumberState() const {
    return state_ == State::kRowNumber || state_ == State::kArrayItems;
  }
  // The array being read (kArrayItems): the histogram's edges or counts.
  std::vector<double>& ArrayOf() {
    Histogram& h = batch.histograms.back().value;
    return field_ == kEdges ? h.edges : h.counts;
  }

  // A number of a histogram row: lo, hi, or the next of its edges or counts.
  bool PutNumber(double v) {
    Histogram& h = batch.histograms.back().value;
    if (state_ == State::kRowNumber) {
      (field_ == kLo ? h.lo : h.hi) = v;
      state_ = State::kRow;
      return true;
    }
    std::vector<double>& a = ArrayOf();
    // Checked as the array grows, so that a long one is refused before it is held.
    const size_t most = limits::kMaxHistogramBins + (field_ == kEdges ? 1 : 0);
    if (a.size() >= most) {
      return Fail(RowPath() + "." + std::string(FieldName(field_)) + ": more than " +
                  std::to_string(most) + " (a histogram has at most " +
                  std::to_string(limits::kMaxHistogramBins) + " bins)");
    }
    a.push_back(v);
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
        state_ = State::kRow;
        if (field_ == kStep && i < 0) return Fail(RowPath() + ".step: must be >= 0");
        switch (section_) {
          case Section::kHistory:
            (field_ == kStep ? batch.history_step : batch.history_time_ms).back() = i;
            return true;
          case Section::kSystem:
            batch.system_time_ms.back() = i;
            return true;
          case Section::kConsole:
            batch.console.back().time_ms = i;
            return true;
          case Section::kHistograms:
            (field_ == kStep ? batch.histograms.back().step : batch.histograms.back().time_ms) = i;
            return true;
          case Section::kMedia:
            *MediaInt() = i;
            return true;
        }
        return true;
      default:
        return Unexpected();
    }
  }

  int64_t* MediaInt() {
    store::MediaPoint& m = batch.media.back();
    switch (field_) {
      case kStep: return &m.step;
      case kIndex: return &m.index;
      case kSize: return &m.size;
      case kWidth: return &m.width;
      case kHeight: return &m.height;
      case kDuration: return &m.duration_ms;
      case kCellBytes: return &m.cell_bytes;
      default: return &m.time_ms;
    }
  }

  // "NaN", "Infinity", "-Infinity" (and "nan", "inf", "-inf"): a non-finite number.
  bool NonFinite(double* d) const {
    if (text_ == "NaN" || text_ == "nan") {
      *d = std::numeric_limits<double>::quiet_NaN();
    } else if (text_ == "Infinity" || text_ == "inf") {
      *d = std::numeric_limits<double>::infinity();
    } else if (text_ == "-Infinity" || text_ == "-inf") {
      *d = -std::numeric_limits<double>::infinity();
    } else {
      return false;
    }
    return true;
  }

  bool OnString() {
    double d = 0;
    if (state_ == State::kValue) return NonFinite(&d) ? PutValue(d) : Unexpected();
    // Refused by the histogram check, with the binary decoder's words.
    if (NumberState()) return NonFinite(&d) ? PutNumber(d) : Unexpected();
    if (state_ != State::kRowString) return Unexpected();
    state_ = State::kRow;
    if (section_ == Section::kHistograms || section_ == Section::kMedia) return PutRowString();
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
    return true;
  }

  // A string field of a histogram or media row.
  bool PutRowString() {
    if (field_ == kKey) {
      if (FindOrAddKey(text_, ".key") == keys_.end()) return false;
      (section_ == Section::kHistograms ? batch.histograms.back().key : batch.media.back().key) =
          text_;
      return true;
    }
    store::MediaPoint& m = batch.media.back();
    switch (field_) {
      case kType: m.type = text_; break;
      case kSha256: m.sha256 = text_; break;
      case kMime: m.mime = text_; break;
      default: m.caption = text_; break;
    }
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
      case Section::kHistograms:
        batch.histograms.emplace_back();
        break;
      case Section::kMedia:
        batch.media.emplace_back();
        break;
    }
    row_fields_ = 0;
    state_ = State::kRow;
    return true;
  }

  bool EndRow() {
    state_ = State::kRows;
    if (section_ == Section::kHistograms) return EndHistogram();
    if (section_ == Section::kMedia) return EndMedia();
    if (!(row_fields_ & kTime)) return Fail(RowPath() + ".time: required");
    if (section_ == Section::kConsole) {
      if (!(row_fields_ & kText)) return Fail(RowPath() + ".text: required");
    } else if (!(row_fields_ & kValuesField)) {
      return Fail(RowPath() + ".values: expected an object");
    }
    return true;
  }

  // The first of `fields` the row lacks, named as required; true when it has them all.
  bool Require(std::initializer_list<Field> fields, std::string_view why = "required") {
    for (Field f : fields) {
      if (!(row_fields_ & f)) {
        return Fail(RowPath() + "." + std::string(FieldName(f)) + ": " + std::string(why));
      }
    }
    return true;
  }

  bool EndHistogram() {
    // A histogram row carries its step, as in the binary batch (no step is assigned to it).
    if (!Require({kKey, kStep, kTime, kCounts})) return false;
    if (row_fields_ & kEdges) {
      if (row_fields_ & (kLo | kHi)) {
        return Fail(RowPath() + ".edges: given with lo/hi (explicit edges or a uniform range, "
                                "not both)");
      }
    } else if (!Require({kLo, kHi}, "required (or edges)")) {
      return false;
    }
    if (Status s = store::CheckHistogramPoint(RowPath(), batch.histograms.back()); !s.ok()) {
      return Fail(std::move(s));
    }
    return true;
  }

  bool EndMedia() {
    if (!Require({kKey, kStep, kTime, kType, kSha256, kSize, kMime})) return false;
    if (Status s = store::CheckMediaPoint(RowPath(), batch.media.back()); !s.ok()) {
      return Fail(std::move(s));
    }
    return true;
  }

  const ApiLimits& limits_;
  State state_ = State::kStart;
  Section section_ = Section::kHistory;
  Field field_ = kTime;
  unsigned root_fields_ = 0;
  unsigned row_fields_ = 0;
  size_t rows_ = 0;  // rows of every section so far
  KeyMap keys_;  // every key of the batch (its history and system columns)
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
  COHORT_RETURN_IF_ERROR(CheckKeyTypes(h.batch));
  return std::move(h.batch);
}

}  // namespace cohort::api
