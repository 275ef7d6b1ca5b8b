#include "cli/history_fetch.h"

#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cohort::cli {
namespace bj = boost::json;

namespace {
constexpr std::string_view kMagic = "CHCL";
constexpr uint32_t kVersion = 1;
constexpr size_t kPreamble = 16;
}  // namespace

Result<std::vector<HistorySeries>> DecodeHistoryColumns(std::string_view body) {
  if (body.size() < kPreamble || body.substr(0, 4) != kMagic) {
    return Status::Corruption("history columns: no magic");
  }
  if (coding::DecodeFixed32(body.data() + 4) != kVersion) {
    return Status::Corruption("history columns: version " +
                              std::to_string(coding::DecodeFixed32(body.data() + 4)));
  }
  const size_t header_len = coding::DecodeFixed32(body.data() + 8);
  if (crc32c::Value(body.data() + kPreamble, body.size() - kPreamble) !=
      coding::DecodeFixed32(body.data() + 12)) {
    return Status::Corruption("history columns: checksum mismatch");
  }
  const size_t padded = (header_len + 7) / 8 * 8;
  if (body.size() - kPreamble < padded) return Status::Corruption("history columns: header cut short");
  auto header = json::Parse(body.substr(kPreamble, header_len));
  const bj::value* list =
      header.ok() && header->is_object() ? header->as_object().if_contains("series") : nullptr;
  if (!list || !list->is_array()) return Status::Corruption("history columns: bad header");
  std::vector<HistorySeries> out;
  size_t at = kPreamble + padded;
  for (const bj::value& v : list->as_array()) {
    const bj::value* more = v.is_object() ? v.as_object().if_contains("more") : nullptr;
    const int64_t n = IntField(v, "points", -1);
    if (!more || !more->is_bool() || n < 0) {
      return Status::Corruption("history columns: bad series in the header");
    }
    if ((body.size() - at) / 24 < size_t(n)) {
      return Status::Corruption("history columns: columns cut short");
    }
    HistorySeries s;
    s.key = StrField(v, "key");
    s.writer = StrField(v, "writer");
    s.more = more->get_bool();
    const char* cols = body.data() + at;
    s.steps.resize(size_t(n));
    s.times.resize(size_t(n));
    s.values.resize(size_t(n));
    for (size_t i = 0; i < size_t(n); ++i) {
      s.steps[i] = int64_t(coding::DecodeFixed64(cols + 8 * i));
      s.times[i] = int64_t(coding::DecodeFixed64(cols + 8 * (size_t(n) + i)));
      s.values[i] = coding::BitsDouble(coding::DecodeFixed64(cols + 8 * (2 * size_t(n) + i)));
    }
    at += 24 * size_t(n);
    out.push_back(std::move(s));
  }
  if (at != body.size()) return Status::Corruption("history columns: bytes after the columns");
  return out;
}

Result<std::vector<HistorySeries>> ParseHistoryJson(const bj::value& answer) {
  const bj::value* list =
      answer.is_object() ? answer.as_object().if_contains("series") : nullptr;
  if (!list || !list->is_array()) return Status::Internal("history: no series in the answer");
  std::vector<HistorySeries> out;
  for (const bj::value& v : list->as_array()) {
    HistorySeries s;
    s.key = StrField(v, "key");
    s.writer = StrField(v, "writer");
    const bj::value* more = v.is_object() ? v.as_object().if_contains("more") : nullptr;
    s.more = more && more->is_bool() && more->get_bool();
    const bj::value* pts = v.is_object() ? v.as_object().if_contains("points") : nullptr;
    if (!pts || !pts->is_array()) return Status::Internal("history: a series without points");
    for (const bj::value& p : pts->as_array()) {
      const bj::array* a = p.if_array();
      if (!a || a->size() < 3) return Status::Internal("history: a point is not [step, time, value]");
      auto value = json::ToDouble((*a)[2]);
      if (!value || !(*a)[0].is_number() || !(*a)[1].is_number()) {
        return Status::Internal("history: a point is not [step, time, value]");
      }
      s.steps.push_back((*a)[0].to_number<int64_t>());
      s.times.push_back((*a)[1].to_number<int64_t>());
      s.values.push_back(*value);
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<HistorySeries>> FetchHistory(ReadClient& client, std::string_view path,
                                                const Query& query) {
  COHORT_ASSIGN_OR_RETURN(
      agent::HttpResponse res,
      client.Send("GET", WithQuery(path, query), {}, "application/json",
                  "Accept: application/vnd.cohort.columns; version=1, application/json;q=0.5"));
  if (std::string_view(res.body).substr(0, 4) == kMagic) return DecodeHistoryColumns(res.body);
  auto parsed = json::Parse(res.body);
  if (!parsed.ok()) {
    return Status::Internal("GET " + std::string(path) + ": the answer is neither the history " +
                            "columns nor JSON: " + parsed.status().message());
  }
  return ParseHistoryJson(*parsed);
}

}  // namespace cohort::cli
