#include "agent/alert_body.h"

#include "core/json.h"
#include "core/utf8.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;

Status CheckText(std::string_view field, std::string_view value, size_t min, size_t max) {
  if (value.size() < min || value.size() > max) {
    return Status::InvalidArgument("alert " + std::string(field) + ": must be " +
                                   std::to_string(min) + ".." + std::to_string(max) +
                                   " bytes (got " + std::to_string(value.size()) + ")");
  }
  if (!utf8::IsValid(value)) {
    return Status::InvalidArgument("alert " + std::string(field) + ": not valid UTF-8");
  }
  return Status::Ok();
}

}  // namespace

Status CheckAlert(std::string_view title, std::string_view text, std::string_view level) {
  COHORT_RETURN_IF_ERROR(CheckText("title", title, 1, kMaxAlertTitleBytes));
  COHORT_RETURN_IF_ERROR(CheckText("text", text, 0, kMaxAlertTextBytes));
  if (level != "INFO" && level != "WARN" && level != "ERROR") {
    return Status::InvalidArgument("alert level: must be INFO, WARN or ERROR (got \"" +
                                   std::string(level.substr(0, 32)) + "\")");
  }
  return Status::Ok();
}

std::string AlertBody(std::string_view title, std::string_view text, std::string_view level,
                      int64_t time_ms) {
  bj::object o;
  o["title"] = title;
  o["text"] = text;
  o["level"] = level;
  o["time_ms"] = time_ms;
  return bj::serialize(o);
}

Status CheckAlertBody(std::string_view json_text) {
  auto v = json::Parse(json_text);
  if (!v.ok() || !v->is_object()) return Status::InvalidArgument("alert: expected an object");
  const bj::object& o = v->as_object();
  for (const auto& kv : o) {
    const std::string_view k = kv.key();
    if (k != "title" && k != "text" && k != "level" && k != "time_ms") {
      return Status::InvalidArgument("alert: unknown field \"" + std::string(k) + "\"");
    }
  }
  for (const char* f : {"title", "text", "level"}) {
    const bj::value* s = o.if_contains(f);
    if (s == nullptr || !s->is_string()) {
      return Status::InvalidArgument(std::string("alert ") + f + ": expected a string");
    }
  }
  const bj::value* t = o.if_contains("time_ms");
  if (t == nullptr || !t->is_int64() || t->as_int64() < 0) {
    return Status::InvalidArgument("alert time_ms: expected an integer >= 0");
  }
  return CheckAlert(o.at("title").as_string(), o.at("text").as_string(), o.at("level").as_string());
}

}  // namespace cohort::agent
