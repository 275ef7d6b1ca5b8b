#include "server/api/alerts_json.h"

#include "server/api/context.h"

namespace cohort::api {
namespace {

bj::value OptInt(const std::optional<int64_t>& v) { return v ? bj::value(*v) : bj::value(nullptr); }

bool IsFieldPath(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '[' || c == ']' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bj::value AlertToJson(const store::AlertRecord& a) {
  return bj::object{
      {"id", a.id},
      {"entity", a.entity},
      {"project", a.project},
      {"run", a.run_id},
      {"writer", a.writer_label},
      {"rule_id", OptInt(a.rule_id)},
      {"source", a.source},
      {"condition", a.condition_key},
      {"level", a.level},
      {"title", a.title},
      {"text", a.text},
      {"evidence", ParseStoredJson(a.evidence_json)},
      {"state", a.state},
      {"opened_ms", a.opened_ms},
      {"resolved_ms", OptInt(a.resolved_ms)},
      {"acked_ms", OptInt(a.acked_ms)},
      {"acked_by", a.acked_by ? bj::value(*a.acked_by) : bj::value(nullptr)},
      {"last_seen_ms", a.last_seen_ms},
      {"count", a.count},
  };
}

bj::value AlertRuleToJson(const store::AlertRule& r) {
  return bj::object{{"id", r.id},
                    {"name", r.name},
                    {"kind", r.kind},
                    {"spec", ParseStoredJson(r.spec_json)},
                    {"level", r.level},
                    {"enabled", r.enabled},
                    {"builtin", r.builtin},
                    {"created_ms", r.created_ms},
                    {"updated_ms", r.updated_ms}};
}

bool IsAlertLevel(const std::string& level) {
  return level == "INFO" || level == "WARN" || level == "ERROR";
}

http::HttpResponse FieldErrorResponse(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) return ErrorResponse(s);
  const std::string& m = s.message();
  const size_t colon = m.find(": ");
  if (colon == std::string::npos || !IsFieldPath(std::string_view(m).substr(0, colon))) {
    return ErrorResponse(s);
  }
  bj::object root{{"error", bj::object{{"code", StatusCodeName(s.code())}, {"message", m}}},
                  {"field", m.substr(0, colon)}};
  return JsonResponse(HttpStatusFor(s.code()), root);
}

}  // namespace cohort::api
