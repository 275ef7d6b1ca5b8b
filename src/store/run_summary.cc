#include "store/run_summary.h"

#include <cmath>

#include "core/json.h"

namespace cohort::store {
namespace {

namespace bj = boost::json;

// The same number, NaN included (a logged NaN's summary is "NaN").
bool SameValue(const bj::value& v, double d) {
  std::optional<double> x = json::ToDouble(v);
  if (!x) return false;
  if (std::isnan(d)) return std::isnan(*x);
  return *x == d;
}

}  // namespace

void LastPoints::Add(const std::string& key, const LastPoint& p) {
  auto [it, fresh] = points_.try_emplace(key, p);
  if (fresh) return;
  const LastPoint& cur = it->second;
  if (p.step > cur.step || (p.step == cur.step && p.time_ms > cur.time_ms)) it->second = p;
}

std::set<std::string> ExplicitKeysFromJson(std::string_view text) {
  std::set<std::string> out;
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_array()) return out;
  for (const bj::value& k : v->get_array()) {
    if (k.is_string()) out.emplace(k.get_string());
  }
  return out;
}

std::string ExplicitKeysToJson(const std::set<std::string>& keys) {
  bj::array a;
  a.reserve(keys.size());
  for (const std::string& k : keys) a.emplace_back(k);
  return json::Serialize(a);
}

Result<std::set<std::string>> SummaryPatchKeys(std::string_view patch) {
  auto v = json::Parse(patch);
  if (!v.ok() || !v->is_object()) return Status::InvalidArgument("summary: expected a JSON object");
  std::set<std::string> out;
  for (const auto& kv : v->get_object()) out.emplace(kv.key());
  return out;
}

Status ClassifySummaryPatch(std::string_view patch, const LastPoints& last,
                            std::set<std::string>* explicit_keys) {
  auto v = json::Parse(patch);
  if (!v.ok() || !v->is_object()) return Status::InvalidArgument("summary: expected a JSON object");
  for (const auto& kv : v->get_object()) {
    std::string key(kv.key());
    auto it = last.points().find(key);
    if (!kv.value().is_null() && it != last.points().end() &&
        SameValue(kv.value(), it->second.value)) {
      explicit_keys->erase(key);
    } else {
      explicit_keys->insert(std::move(key));
    }
  }
  return Status::Ok();
}

std::optional<std::string> FollowLastPoints(std::string_view summary_json, const LastPoints& last,
                                            const std::set<std::string>& explicit_keys) {
  bj::object summary;
  if (auto v = json::Parse(summary_json); v.ok() && v->is_object()) {
    summary = std::move(v->get_object());
  }
  bool changed = false;
  for (const auto& [key, point] : last.points()) {
    if (explicit_keys.count(key) != 0) continue;
    if (const bj::value* cur = summary.if_contains(key); cur && SameValue(*cur, point.value)) {
      continue;
    }
    summary[key] = json::FromDouble(point.value);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return json::Serialize(summary);
}

}  // namespace cohort::store
