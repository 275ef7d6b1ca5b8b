// Routes: series of a run — keys, history (raw or bucketed), system metrics per label.
#include "core/clock.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

constexpr std::string_view kSystemPrefix = "system/";

bj::value SeriesToJson(const store::SeriesData& s, bool strip_system_prefix, bool bucketed) {
  std::string key = s.key;
  if (strip_system_prefix && key.rfind(kSystemPrefix, 0) == 0) key = key.substr(kSystemPrefix.size());
  bj::object o{{"key", key}, {"writer", s.writer}};
  if (bucketed) {
    bj::array buckets;
    buckets.reserve(s.buckets.size());
    for (const auto& b : s.buckets) {
      buckets.push_back(bj::object{{"step_min", b.step_min},
                                   {"step_max", b.step_max},
                                   {"time_min", b.time_min},
                                   {"time_max", b.time_max},
                                   {"count", b.count},
                                   {"min", json::FromDouble(b.min)},
                                   {"max", json::FromDouble(b.max)},
                                   {"mean", json::FromDouble(b.count ? b.sum / double(b.count) : 0)},
                                   {"first", json::FromDouble(b.first)},
                                   {"last", json::FromDouble(b.last)}});
    }
    o["buckets"] = std::move(buckets);
  } else {
    bj::array points;
    points.reserve(s.points.size());
    for (const auto& p : s.points) {
      points.push_back(bj::array{p.step, p.time_ms, json::FromDouble(p.value)});
    }
    o["points"] = std::move(points);
    o["more"] = s.more;
  }
  return o;
}

// Fills the range/bucket/paging fields shared by history and system queries.
Status ReadRangeParams(const http::HttpRequest& req, const ApiLimits& limits,
                       store::HistoryQuery* q) {
  COHORT_ASSIGN_OR_RETURN(q->min_step, IntParam(req, "min_step"));
  COHORT_ASSIGN_OR_RETURN(q->max_step, IntParam(req, "max_step"));
  COHORT_ASSIGN_OR_RETURN(q->min_time_ms, IntParam(req, "min_time"));
  COHORT_ASSIGN_OR_RETURN(q->max_time_ms, IntParam(req, "max_time"));
  COHORT_ASSIGN_OR_RETURN(auto buckets, IntParam(req, "buckets"));
  COHORT_ASSIGN_OR_RETURN(auto limit, IntParam(req, "limit"));
  COHORT_ASSIGN_OR_RETURN(auto after, IntParam(req, "after_step"));
  if (buckets) {
    if (*buckets < 1 || *buckets > limits.max_buckets) {
      return Status::InvalidArgument("buckets: expected 1.." + std::to_string(limits.max_buckets));
    }
    q->buckets = int(*buckets);
  }
  if (limit) {
    if (*limit < 1 || *limit > limits.max_raw_points) {
      return Status::InvalidArgument("limit: expected 1.." +
                                     std::to_string(limits.max_raw_points));
    }
    q->limit = *limit;
  }
  if (after) q->after_step = *after;
  if (q->min_step && q->max_step && *q->min_step > *q->max_step) {
    return Status::InvalidArgument("min_step: greater than max_step");
  }
  return Status::Ok();
}

http::HttpResponse Query(ApiContext* ctx, store::HistoryQuery& q, bool system) {
  int64_t t0 = MonoNanos();
  auto res = ctx->store->QueryHistory(q);
  ctx->metrics->ObserveStore(system ? "query_system" : "query_history", MonoNanos() - t0);
  if (!res.ok()) return ErrorResponse(res.status());
  bj::array series;
  for (const auto& s : *res) series.push_back(SeriesToJson(s, system, q.buckets > 0));
  return JsonResponse(200, bj::object{{"series", std::move(series)}});
}

}  // namespace

void RegisterHistoryRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/runs/{entity}/{project}/{run}";
  r.Add("GET", base + "/keys", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto series = ctx->store->ListSeries(*ref);
          if (!series.ok()) return ErrorResponse(series.status());
          bj::array out;
          for (const auto& s : *series) {
            out.push_back(bj::object{{"key", s.key},
                                     {"writer", s.writer},
                                     {"count", s.count},
                                     {"min_step", s.min_step},
                                     {"max_step", s.max_step}});
          }
          return JsonResponse(200, bj::object{{"keys", std::move(out)}});
        }));
  r.Add("GET", base + "/history",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::HistoryQuery q;
          q.run = *ref;
          q.keys = SplitCsv(req.QueryParam("keys"));
          q.writers = SplitCsv(req.QueryParam("writers"));
          if (Status s = ReadRangeParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
          return Query(ctx, q, false);
        }));
  r.Add("GET", base + "/system",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::HistoryQuery q;
          q.run = *ref;
          q.writers = SplitCsv(req.QueryParam("labels"));
          std::vector<std::string> keys = SplitCsv(req.QueryParam("keys"));
          if (keys.empty()) {
            // Every system series of the selected labels.
            auto series = ctx->store->ListSeries(*ref);
            if (!series.ok()) return ErrorResponse(series.status());
            for (const auto& s : *series) {
              if (s.key.rfind(kSystemPrefix, 0) == 0 &&
                  std::find(q.keys.begin(), q.keys.end(), s.key) == q.keys.end()) {
                q.keys.push_back(s.key);
              }
            }
            if (q.keys.empty()) return JsonResponse(200, bj::object{{"series", bj::array{}}});
          } else {
            for (const auto& k : keys) q.keys.push_back(std::string(kSystemPrefix) + k);
          }
          if (Status s = ReadRangeParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
          return Query(ctx, q, true);
        }));
}

}  // namespace cohort::api
