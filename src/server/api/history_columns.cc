#include "server/api/history_columns.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cohort::api {
namespace {

namespace bj = boost::json;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Appends `n` little-endian 8-byte words taken from `get(i)`.
template <typename Get>
void PutColumn(std::string* out, size_t n, Get get) {
  const size_t at = out->size();
  out->resize(at + n * 8);
  char* p = out->data() + at;
  for (size_t i = 0; i < n; ++i, p += 8) {
    uint64_t v = get(i);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    std::memcpy(p, &v, 8);
  }
}

}  // namespace

Result<HistoryFormat> NegotiateHistoryFormat(std::string_view accept, bool bucketed) {
  if (Trim(accept).empty()) return HistoryFormat::kJson;
  double q_json = 0, q_columns = 0;
  bool named_columns = false;
  std::string_view rest = accept;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    size_t semi = item.find(';');
    std::string type = Lower(Trim(item.substr(0, semi)));
    if (type.empty()) continue;
    double q = 1;
    std::string version;
    while (semi != std::string_view::npos) {
      std::string_view params = item.substr(semi + 1);
      semi = params.find(';');
      std::string_view param = Trim(params.substr(0, semi));
      item = params;
      size_t eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      std::string name = Lower(Trim(param.substr(0, eq)));
      std::string_view value = Trim(param.substr(eq + 1));
      if (name == "q") {
        double v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < 0 || v > 1) {
          return Status::InvalidArgument("Accept: bad quality value 'q=" + std::string(value) +
                                         "' (expected 0..1)");
        }
        q = v;
      } else if (name == "version") {
        version = std::string(value);
      }
    }
    if (type == kColumnsMediaType) {
      if (!version.empty() && version != std::to_string(kColumnsVersion)) {
        return Status::InvalidArgument("Accept: " + std::string(kColumnsMediaType) + " version " +
                                       version + " is not served (this server writes version " +
                                       std::to_string(kColumnsVersion) + ")");
      }
      named_columns = true;
      q_columns = std::max(q_columns, q);
    } else if (type == "application/json" || type == "application/*" || type == "*/*") {
      q_json = std::max(q_json, q);
    }
  }
  if (bucketed) {
    if (q_json > 0) return HistoryFormat::kJson;
    if (named_columns) {
      return Status::InvalidArgument(
          "Accept: " + std::string(kColumnsMediaType) +
          " answers raw reads only; a bucketed read (buckets=) answers application/json");
    }
  } else {
    if (q_columns > 0 && q_columns >= q_json) return HistoryFormat::kColumns;
    if (q_json > 0) return HistoryFormat::kJson;
  }
  return Status::InvalidArgument("Accept: '" + std::string(Trim(accept)) +
                                 "' names no type this route answers (application/json" +
                                 (bucketed ? "" : ", " + std::string(kColumnsMediaType)) + ")");
}

std::string EncodeHistoryColumns(const std::vector<store::SeriesData>& series,
                                 std::string_view warnings_json) {
  bj::array list;
  size_t total = 0;
  for (const store::SeriesData& s : series) {
    list.push_back(bj::object{
        {"key", s.key}, {"writer", s.writer}, {"points", s.points.size()}, {"more", s.more}});
    total += s.points.size();
  }
  std::string header = bj::serialize(bj::object{{"series", std::move(list)}});
  if (!warnings_json.empty()) {
    header.pop_back();  // '}'
    header.append(",\"warnings\":").append(warnings_json).push_back('}');
  }
  std::string out = BeginColumns(header, total * 24);
  for (const store::SeriesData& s : series) {
    const auto& pts = s.points;
    PutColumn(&out, pts.size(), [&](size_t i) { return uint64_t(pts[i].step); });
    PutColumn(&out, pts.size(), [&](size_t i) { return uint64_t(pts[i].time_ms); });
    PutColumn(&out, pts.size(), [&](size_t i) { return coding::DoubleBits(pts[i].value); });
  }
  SealColumns(&out);
  return out;
}

std::string BeginColumns(std::string_view header, size_t reserve_arrays) {
  const size_t padded = (header.size() + 7) / 8 * 8;
  std::string out;
  out.reserve(history_columns::kPreamble + padded + reserve_arrays);
  out.append(history_columns::kMagic);
  coding::PutFixed32(&out, kColumnsVersion);
  coding::PutFixed32(&out, uint32_t(header.size()));
  coding::PutFixed32(&out, 0);  // the checksum: SealColumns
  out.append(header);
  out.append(padded - header.size(), '\0');
  return out;
}

void SealColumns(std::string* out) {
  constexpr size_t kPreamble = history_columns::kPreamble;
  const uint32_t crc = crc32c::Value(out->data() + kPreamble, out->size() - kPreamble);
  std::string crc_bytes;
  coding::PutFixed32(&crc_bytes, crc);
  std::memcpy(out->data() + 12, crc_bytes.data(), 4);
}

http::HttpResponse ColumnsResponse(std::string body) {
  http::HttpResponse resp;
  resp.content_type =
      std::string(kColumnsMediaType) + "; version=" + std::to_string(kColumnsVersion);
  resp.body = std::move(body);
  resp.headers.emplace_back("Vary", "Accept");
  return resp;
}

}  // namespace cohort::api
