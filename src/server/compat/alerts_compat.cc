#include "server/compat/alerts_compat.h"

#include <atomic>

#include "core/json.h"
#include "core/limits.h"
#include "core/utf8.h"
#include "server/compat/client_writers.h"

namespace cohort::compat {
namespace {

Result<std::string> Text(const bj::object& in, std::string_view field, size_t min, size_t max) {
  const bj::value* v = in.if_contains(field);
  if (v == nullptr || !v->is_string()) {
    if (min == 0 && (v == nullptr || v->is_null())) return std::string();
    return Status::InvalidArgument("notifyScriptableRunAlert: " + std::string(field) +
                                   " must be a string");
  }
  std::string s(v->get_string());
  if (s.size() < min || s.size() > max || !utf8::IsValid(s)) {
    return Status::InvalidArgument("notifyScriptableRunAlert: " + std::string(field) + " must be " +
                                   std::to_string(min) + ".." + std::to_string(max) +
                                   " bytes of UTF-8");
  }
  return s;
}

// Whether an alert of the writer and key was seen within the last `wait_ms`.
Result<bool> SeenWithin(store::Store* store, const store::RunRef& ref, const std::string& label,
                        const std::string& key, int64_t wait_ms, int64_t now_ms) {
  store::AlertQuery q{.entity = ref.entity, .project = ref.project};
  q.run_id = ref.run_id;
  q.limit = 1000;
  COHORT_ASSIGN_OR_RETURN(std::vector<store::AlertRecord> alerts, store->ListAlerts(q));
  for (const store::AlertRecord& a : alerts) {
    if (a.writer_label == label && a.condition_key == key && now_ms - a.last_seen_ms < wait_ms) {
      return true;
    }
  }
  return false;
}

Result<gql::Resolved> NotifyScriptableRunAlert(GqlContext* c, const gql::FieldInfo& f) {
  const bj::value* arg = f.Arg("input");
  if (arg == nullptr || !arg->is_object()) {
    return Status::InvalidArgument(f.name() + ": argument \"input\" must be an object");
  }
  const bj::object& in = arg->get_object();
  auto str = [&](std::string_view k) {
    const bj::value* v = in.if_contains(k);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref, CompatRunRef(c->who, str("entityName"),
                                                          str("projectName"), str("runName")));
  if (ref.run_id.empty()) {
    return Status::InvalidArgument("notifyScriptableRunAlert: runName is required");
  }
  COHORT_ASSIGN_OR_RETURN(std::string title, Text(in, "title", 1, limits::kMaxAlertTitleBytes));
  COHORT_ASSIGN_OR_RETURN(std::string text, Text(in, "text", 0, limits::kMaxAlertTextBytes));
  std::string level = str("severity");
  if (level.empty()) level = "INFO";
  if (level != "INFO" && level != "WARN" && level != "ERROR") {
    return Status::InvalidArgument(
        "notifyScriptableRunAlert: severity must be INFO, WARN or ERROR, got '" +
        level.substr(0, 32) + "'");
  }
  int64_t wait_ms = 0;
  if (const bj::value* w = in.if_contains("waitDuration"); w != nullptr && !w->is_null()) {
    std::optional<double> d = json::ToDouble(*w);
    if (!d || !(*d >= 0) || *d > 1e15) {
      return Status::InvalidArgument(
          "notifyScriptableRunAlert: waitDuration must be milliseconds >= 0");
    }
    wait_ms = int64_t(*d);
  }
  store::Store* store = c->api->store;
  COHORT_ASSIGN_OR_RETURN(store::RunRecord run, EnsureRun(store, ref));
  ClientWriter cw(store, run, c->client);
  COHORT_RETURN_IF_ERROR(cw.Load());
  COHORT_RETURN_IF_ERROR(cw.Ensure(""));
  const std::string key = "code:" + title;
  if (wait_ms > 0) {
    COHORT_ASSIGN_OR_RETURN(bool seen, SeenWithin(store, ref, cw.label(), key, wait_ms, c->now_ms));
    if (seen) return gql::Resolved::Json(bj::object{{"success", true}});
  }
  const int64_t time_ms = AlertCallTimeMs(c->now_ms);
  store::AlertRaise raise{.entity = ref.entity,
                          .project = ref.project,
                          .run_id = ref.run_id,
                          .writer_label = cw.label(),
                          .rule_id = std::nullopt,
                          .source = "code",
                          .condition_key = key,
                          .level = level,
                          .title = title,
                          .text = text,
                          .evidence_json = bj::serialize(bj::object{{"time_ms", time_ms}}),
                          .now_ms = time_ms};
  COHORT_RETURN_IF_ERROR(store->RaiseAlert(raise).status());
  return gql::Resolved::Json(bj::object{{"success", true}});
}

}  // namespace

int64_t AlertCallTimeMs(int64_t now_ms) {
  static std::atomic<int64_t> last{0};
  int64_t prev = last.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    next = std::max(now_ms, prev + 1);
  } while (!last.compare_exchange_weak(prev, next, std::memory_order_relaxed));
  return next;
}

bool IsAlertMutation(const std::string& name) { return name == "notifyScriptableRunAlert"; }

Result<gql::Resolved> ResolveAlertMutation(GqlContext* c, const gql::FieldInfo& f) {
  return NotifyScriptableRunAlert(c, f);
}

}  // namespace cohort::compat
