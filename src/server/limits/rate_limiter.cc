#include "server/limits/rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "core/json.h"

namespace cohort::limits {
namespace {

namespace bj = boost::json;

double BurstOf(double burst, double rate) { return burst > 0 ? burst : std::max(1.0, rate); }

void Refill(double rate, double burst, double now_s, double* tokens, double* last_s) {
  if (*last_s < 0) {
    *tokens = burst;
  } else if (now_s > *last_s) {
    *tokens = std::min(burst, *tokens + (now_s - *last_s) * rate);
  }
  *last_s = std::max(*last_s, now_s);
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Result<TierLimits> ParseTier(const bj::object& obj, const std::string& path) {
  json::FieldReader rd(obj, path);
  rd.RejectUnknown(
      {"requests_per_second", "request_burst", "points_per_second", "point_burst", "keys_per_run"});
  TierLimits t;
  auto field = [&](std::string_view key, double* out) {
    auto v = rd.OptDouble(key);
    if (!v) return;
    if (!(*v >= 0) || *v > 1e15) {
      rd.Fail(key, "expected a number from 0 to 1e15");
      return;
    }
    *out = *v;
  };
  field("requests_per_second", &t.requests_per_second);
  field("request_burst", &t.request_burst);
  field("points_per_second", &t.points_per_second);
  field("point_burst", &t.point_burst);
  if (auto keys = rd.OptInt("keys_per_run")) {
    if (*keys < 0 || *keys > 1000000000) {
      rd.Fail("keys_per_run", "expected an integer from 0 (unlimited) to 1e9");
    } else {
      t.keys_per_run = *keys;
    }
  }
  if (!rd.ok()) return rd.status();
  return t;
}

}  // namespace

LimitsConfig DefaultLimitsConfig() {
  LimitsConfig c;
  c.tiers["free"] = TierLimits{20, 100, 20000, 200000, 10000};
  c.tiers["teams"] = TierLimits{200, 1000, 500000, 5000000, kDefaultKeysPerRun};
  c.tiers["enterprise"] = TierLimits{};  // unlimited rates, kDefaultKeysPerRun keys per run
  c.default_tier = "enterprise";
  return c;
}

Result<LimitsConfig> ParseLimitsConfig(std::string_view json_text) {
  COHORT_ASSIGN_OR_RETURN(bj::value root, json::Parse(json_text));
  if (!root.is_object()) return Status::InvalidArgument("limits: expected a JSON object");
  const bj::object& obj = root.get_object();
  LimitsConfig c = DefaultLimitsConfig();
  json::FieldReader rd(obj, "limits");
  rd.RejectUnknown({"default_tier", "tiers", "entities"});
  if (!rd.ok()) return rd.status();
  if (const bj::object* tiers = rd.OptObject("tiers")) {
    for (const auto& kv : *tiers) {
      std::string name(kv.key());
      std::string path = "limits.tiers." + name;
      if (name.empty() || name.size() > 64) {
        return Status::InvalidArgument("limits.tiers: tier names must be 1-64 bytes");
      }
      if (!kv.value().is_object()) return Status::InvalidArgument(path + ": expected an object");
      COHORT_ASSIGN_OR_RETURN(c.tiers[name], ParseTier(kv.value().get_object(), path));
    }
  }
  if (auto d = rd.OptString("default_tier", 64)) c.default_tier = *d;
  if (const bj::object* entities = rd.OptObject("entities")) {
    for (const auto& kv : *entities) {
      std::string path = "limits.entities." + std::string(kv.key());
      if (!kv.value().is_string()) return Status::InvalidArgument(path + ": expected a tier name");
      std::string tier(kv.value().get_string());
      if (!c.tiers.count(tier)) {
        return Status::InvalidArgument(path + ": unknown tier '" + tier + "'");
      }
      c.entity_tiers[std::string(kv.key())] = tier;
    }
  }
  if (!rd.ok()) return rd.status();
  if (!c.tiers.count(c.default_tier)) {
    return Status::InvalidArgument("limits.default_tier: unknown tier '" + c.default_tier + "'");
  }
  return c;
}

Result<LimitsConfig> LoadLimitsConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read limits file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = ParseLimitsConfig(ss.str());
  if (!c.ok()) return Status(c.status().code(), path + ": " + c.status().message());
  return c;
}

RateLimiter::RateLimiter(LimitsConfig config) : config_(std::move(config)) {}

std::string RateLimiter::TierOf(std::string_view entity) const {
  auto it = config_.entity_tiers.find(std::string(entity));
  return it != config_.entity_tiers.end() ? it->second : config_.default_tier;
}

int64_t RateLimiter::KeysPerRun(std::string_view entity) const {
  auto t = config_.tiers.find(TierOf(entity));
  return t != config_.tiers.end() ? t->second.keys_per_run : kDefaultKeysPerRun;
}

RateLimiter::State& RateLimiter::StateFor(std::string_view entity) {
  auto it = states_.find(std::string(entity));
  if (it != states_.end()) return it->second;
  State st;
  st.tier_name = TierOf(entity);
  auto t = config_.tiers.find(st.tier_name);
  static const TierLimits kUnlimited;
  st.tier = t != config_.tiers.end() ? &t->second : &kUnlimited;
  st.usage.entity = std::string(entity);
  st.usage.tier = st.tier_name;
  return states_.emplace(std::string(entity), std::move(st)).first->second;
}

Decision RateLimiter::AdmitRequest(std::string_view entity, double now_s) {
  return AdmitRequests(entity, 1, 0, now_s);
}

Decision RateLimiter::AdmitRequests(std::string_view entity, int64_t count, int64_t charged_before,
                                    double now_s) {
  MutexLock lock(&mu_);
  State& st = StateFor(entity);
  Decision d;
  d.tier = st.tier_name;
  double rate = st.tier->requests_per_second;
  d.limit = rate;
  const double cost = double(std::max<int64_t>(count, 1));
  if (rate <= 0) {
    st.usage.requests += uint64_t(cost);
    return d;
  }
  double burst = BurstOf(st.tier->request_burst, rate);
  Refill(rate, burst, now_s, &st.requests.tokens, &st.requests.last_s);
  // More than the burst at once needs a full bucket and then leaves it in debt.
  const double before = double(std::max<int64_t>(charged_before, 0));
  const double needed = std::max(0.0, std::min(cost + before, burst) - before);
  if (st.requests.tokens >= needed) {
    st.requests.tokens -= cost;
    d.remaining = std::max(0.0, st.requests.tokens);
    st.usage.requests += uint64_t(cost);
    return d;
  }
  d.allowed = false;
  d.retry_after_s = (needed - st.requests.tokens) / rate;
  ++st.usage.rejected_requests;
  return d;
}

Decision RateLimiter::AdmitPoints(std::string_view entity, int64_t points, double now_s) {
  MutexLock lock(&mu_);
  State& st = StateFor(entity);
  Decision d;
  d.tier = st.tier_name;
  double rate = st.tier->points_per_second;
  d.limit = rate;
  double cost = double(std::max<int64_t>(points, 0));
  if (rate <= 0) {
    st.usage.points += uint64_t(cost);
    return d;
  }
  double burst = BurstOf(st.tier->point_burst, rate);
  Refill(rate, burst, now_s, &st.points.tokens, &st.points.last_s);
  // A batch larger than the burst needs a full bucket and then leaves it in debt.
  double needed = std::min(cost, burst);
  if (st.points.tokens >= needed) {
    st.points.tokens -= cost;
    d.remaining = std::max(0.0, st.points.tokens);
    st.usage.points += uint64_t(cost);
    return d;
  }
  d.allowed = false;
  d.retry_after_s = (needed - st.points.tokens) / rate;
  ++st.usage.rejected_points;
  return d;
}

Decision RateLimiter::AdmitRequest(std::string_view entity) {
  return AdmitRequest(entity, SteadySeconds());
}

Decision RateLimiter::AdmitRequests(std::string_view entity, int64_t count,
                                    int64_t charged_before) {
  return AdmitRequests(entity, count, charged_before, SteadySeconds());
}

Decision RateLimiter::AdmitPoints(std::string_view entity, int64_t points) {
  return AdmitPoints(entity, points, SteadySeconds());
}

std::vector<EntityUsage> RateLimiter::Usage() const {
  MutexLock lock(&mu_);
  std::vector<EntityUsage> out;
  out.reserve(states_.size());
  for (const auto& [name, st] : states_) out.push_back(st.usage);
  std::sort(out.begin(), out.end(),
            [](const EntityUsage& a, const EntityUsage& b) { return a.entity < b.entity; });
  return out;
}

}  // namespace cohort::limits
