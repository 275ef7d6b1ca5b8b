// Routes: series of a run — keys, history (raw or bucketed), system metrics per label.
#include <fmt/compile.h>

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "core/clock.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

constexpr std::string_view kSystemPrefix = "system/";

// Writes a double as JSON at `p` (room for kMaxDoubleChars): shortest round-trip form,
// non-finite values as strings. Returns the end.
constexpr size_t kMaxDoubleChars = 32;
char* WriteDouble(char* p, double d) {
  auto put = [p](std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
  };
  if (!std::isfinite(d)) {
    return put(std::isnan(d) ? "\"NaN\"" : (d > 0 ? "\"Infinity\"" : "\"-Infinity\""));
  }
  if (d == 0 && std::signbit(d)) return put("-0.0");  // "-0" would read back as the integer 0
  return std::to_chars(p, p + kMaxDoubleChars, d).ptr;
}

void AppendDouble(std::string* out, double d) {
  char buf[kMaxDoubleChars];
  out->append(buf, size_t(WriteDouble(buf, d) - buf));
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, p);
}

// Appends points as [step,time,value],... : each point is written into a stack buffer with one
// bounds check (not one per character), and `out` grows by large appends into room reserved
// once (a raw read answers up to millions of points; see docs/benchmarks.md).
void AppendPoints(std::string* out, const std::vector<series::Point>& points) {
  constexpr size_t kMaxPointChars = 2 + 20 + 1 + 20 + 1 + kMaxDoubleChars + 1;
  constexpr size_t kTypicalPointChars = 48;  // 6-digit step, ms time, 17-digit value
  out->reserve(out->size() + points.size() * kTypicalPointChars + 16);
  char buf[16384];
  char* p = buf;
  for (size_t i = 0; i < points.size(); ++i) {
    if (p + kMaxPointChars > buf + sizeof buf) {
      out->append(buf, size_t(p - buf));
      p = buf;
    }
    if (i > 0) *p++ = ',';
    *p++ = '[';
    // fmt's integer writer: ~1.5x faster than std::to_chars here (two per point).
    p = fmt::format_to(p, FMT_COMPILE("{}"), points[i].step);
    *p++ = ',';
    p = fmt::format_to(p, FMT_COMPILE("{}"), points[i].time_ms);
    *p++ = ',';
    p = WriteDouble(p, points[i].value);
    *p++ = ']';
  }
  out->append(buf, size_t(p - buf));
}

// Serialises one series directly to text: raw reads of millions of points must not build a
// JSON value tree.
void AppendSeriesJson(std::string* out, const store::SeriesData& s, bool strip_system_prefix,
                      bool bucketed) {
  std::string key = s.key;
  if (strip_system_prefix && key.rfind(kSystemPrefix, 0) == 0)
    key = key.substr(kSystemPrefix.size());
  out->append("{\"key\":");
  out->append(bj::serialize(bj::value(key)));
  out->append(",\"writer\":");
  out->append(bj::serialize(bj::value(s.writer)));
  if (bucketed) {
    out->append(",\"buckets\":[");
    bool first = true;
    for (const auto& b : s.buckets) {
      if (!first) out->push_back(',');
      first = false;
      out->append("{\"step_min\":");
      AppendInt(out, b.step_min);
      out->append(",\"step_max\":");
      AppendInt(out, b.step_max);
      out->append(",\"time_min\":");
      AppendInt(out, b.time_min);
      out->append(",\"time_max\":");
      AppendInt(out, b.time_max);
      out->append(",\"count\":");
      AppendInt(out, b.count);
      out->append(",\"min\":");
      AppendDouble(out, b.min);
      out->append(",\"max\":");
      AppendDouble(out, b.max);
      out->append(",\"mean\":");
      AppendDouble(out, b.count ? b.sum / double(b.count) : 0);
      out->append(",\"first\":");
      AppendDouble(out, b.first);
      out->append(",\"last\":");
      AppendDouble(out, b.last);
      out->push_back('}');
    }
    out->append("]}");
    return;
  }
  out->append(",\"points\":[");
  AppendPoints(out, s.points);
  out->append("],\"more\":");
  out->append(s.more ? "true" : "false");
  out->push_back('}');
}

// Logs a damaged chunk the first time this process meets it (queries meet it again and again).
void LogDamagedOnce(const store::RunRef& run, const store::SeriesData& s,
                    const series::DamagedChunk& d) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::string id = run.entity + "/" + run.project + "/" + run.run_id + " " + s.key + " " +
                   s.writer + " " + std::to_string(d.min_step) + ".." + std::to_string(d.max_step);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (seen.size() > 100000 || !seen.insert(id).second) return;
  }
  std::fprintf(stderr,
               "cohort: damaged chunk skipped: run %s steps %" PRId64 "..%" PRId64 " (%" PRId64
               " points): %s\n",
               id.c_str(), d.min_step, d.max_step, d.count, d.reason.c_str());
}

// Appends `,"warnings":[...]` naming each damaged chunk a query skipped (nothing when none):
// {"key", "writer", "min_step", "max_step", "points", "message"}.
void AppendWarnings(std::string* out, const store::RunRef& run,
                    const std::vector<store::SeriesData>& series) {
  bool first = true;
  for (const store::SeriesData& s : series) {
    for (const series::DamagedChunk& d : s.damaged) {
      LogDamagedOnce(run, s, d);
      out->append(first ? ",\"warnings\":[" : ",");
      first = false;
      out->append("{\"key\":");
      out->append(bj::serialize(bj::value(s.key)));
      out->append(",\"writer\":");
      out->append(bj::serialize(bj::value(s.writer)));
      out->append(",\"min_step\":");
      AppendInt(out, d.min_step);
      out->append(",\"max_step\":");
      AppendInt(out, d.max_step);
      out->append(",\"points\":");
      AppendInt(out, d.count);
      out->append(",\"message\":");
      out->append(
          bj::serialize(bj::value("damaged chunk skipped (steps " + std::to_string(d.min_step) +
                                  ".." + std::to_string(d.max_step) + "): " + d.reason)));
      out->push_back('}');
    }
  }
  if (!first) out->push_back(']');
}

// Fills the range/bucket/paging fields shared by history and system queries.
Status ReadRangeParams(const http::HttpRequest& req, const ApiLimits& limits,
                       store::HistoryQuery* q) {
  COHORT_ASSIGN_OR_RETURN(q->series.min_step, IntParam(req, "min_step"));
  COHORT_ASSIGN_OR_RETURN(q->series.max_step, IntParam(req, "max_step"));
  COHORT_ASSIGN_OR_RETURN(q->series.min_time_ms, IntParam(req, "min_time"));
  COHORT_ASSIGN_OR_RETURN(q->series.max_time_ms, IntParam(req, "max_time"));
  COHORT_ASSIGN_OR_RETURN(auto buckets, IntParam(req, "buckets"));
  COHORT_ASSIGN_OR_RETURN(auto limit, IntParam(req, "limit"));
  COHORT_ASSIGN_OR_RETURN(auto after, IntParam(req, "after_step"));
  if (buckets) {
    if (*buckets < 1 || *buckets > limits.max_buckets) {
      return Status::InvalidArgument("buckets: expected 1.." + std::to_string(limits.max_buckets));
    }
    q->series.buckets = int(*buckets);
  }
  if (limit) {
    if (*limit < 1 || *limit > limits.max_raw_points) {
      return Status::InvalidArgument("limit: expected 1.." + std::to_string(limits.max_raw_points));
    }
    q->series.limit = *limit;
  }
  if (after) q->series.after_step = *after;
  if (q->series.min_step && q->series.max_step && *q->series.min_step > *q->series.max_step) {
    return Status::InvalidArgument("min_step: greater than max_step");
  }
  return Status::Ok();
}

http::HttpResponse Query(ApiContext* ctx, store::HistoryQuery& q, bool system) {
  int64_t t0 = MonoNanos();
  auto res = ctx->store->QueryHistory(q);
  ctx->metrics->ObserveStore(system ? "query_system" : "query_history", MonoNanos() - t0);
  if (!res.ok()) return ErrorResponse(res.status());
  std::string body = "{\"series\":[";
  for (size_t i = 0; i < res->size(); ++i) {
    if (i) body.push_back(',');
    AppendSeriesJson(&body, (*res)[i], system, q.series.buckets > 0);
  }
  body.append("]");
  AppendWarnings(&body, q.run, *res);
  body.append("}");
  return http::HttpResponse::Json(200, std::move(body));
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
  r.Add("GET", base + "/system", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
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
