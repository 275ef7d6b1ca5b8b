#include "core/history_columns.h"

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cohort::history_columns {
namespace bj = boost::json;

Result<Decoded> Decode(std::string_view body) {
  if (body.size() < kPreamble || body.substr(0, 4) != kMagic) {
    return Status::Corruption("history columns: no magic");
  }
  const uint32_t version = coding::DecodeFixed32(body.data() + 4);
  if (version != kVersion) {
    return Status::Corruption("history columns: version " + std::to_string(version));
  }
  const size_t header_len = coding::DecodeFixed32(body.data() + 8);
  if (crc32c::Value(body.data() + kPreamble, body.size() - kPreamble) !=
      coding::DecodeFixed32(body.data() + 12)) {
    return Status::Corruption("history columns: checksum mismatch");
  }
  const size_t padded = (header_len + 7) / 8 * 8;
  if (body.size() - kPreamble < padded)
    return Status::Corruption("history columns: header cut short");
  Decoded out;
  out.header_json = std::string(body.substr(kPreamble, header_len));
  auto header = json::Parse(out.header_json);
  const bj::object* root = header.ok() ? header->if_object() : nullptr;
  const bj::value* list = root ? root->if_contains("series") : nullptr;
  if (!list || !list->is_array()) return Status::Corruption("history columns: bad header");
  size_t at = kPreamble + padded;
  for (const bj::value& v : list->as_array()) {
    const bj::object* o = v.if_object();
    const bj::value* key = o ? o->if_contains("key") : nullptr;
    const bj::value* writer = o ? o->if_contains("writer") : nullptr;
    const bj::value* more = o ? o->if_contains("more") : nullptr;
    const bj::value* points = o ? o->if_contains("points") : nullptr;
    if (!key || !key->is_string() || !writer || !writer->is_string() || !more || !more->is_bool() ||
        !points || !points->is_int64() || points->as_int64() < 0) {
      return Status::Corruption("history columns: bad series in the header");
    }
    const size_t n = size_t(points->as_int64());
    if ((body.size() - at) / 24 < n)
      return Status::Corruption("history columns: columns cut short");
    ColumnSeries s;
    s.key = std::string(key->as_string());
    s.writer = std::string(writer->as_string());
    s.more = more->as_bool();
    const char* cols = body.data() + at;
    s.steps.resize(n);
    s.times.resize(n);
    s.values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      s.steps[i] = int64_t(coding::DecodeFixed64(cols + 8 * i));
      s.times[i] = int64_t(coding::DecodeFixed64(cols + 8 * (n + i)));
      s.values[i] = coding::BitsDouble(coding::DecodeFixed64(cols + 8 * (2 * n + i)));
    }
    at += 24 * n;
    out.series.push_back(std::move(s));
  }
  if (at != body.size()) return Status::Corruption("history columns: bytes after the columns");
  return out;
}

}  // namespace cohort::history_columns
