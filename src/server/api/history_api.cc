// Routes: series of a run — keys, history (raw or bucketed), system metrics per label.
#include <fmt/compile.h>

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/clock.h"
#include "core/ids.h"
#include "core/limits.h"
#include "core/mutex.h"
#include "server/api/context.h"
#include "server/api/history_columns.h"

namespace cohort::api {
namespace {

constexpr std::string_view kSystemPrefix = limits::kSystemKeyPrefix;
// Runs one project-level read (runs=) may name.
constexpr size_t kMaxRunsPerQuery = 200;

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

// A bucket statistic: the number, or null when the bucket has none.
void AppendStat(std::string* out, bool known, double d) {
  if (known) {
    AppendDouble(out, d);
  } else {
    out->append("null");
  }
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
// `run`: the run's id, written first when the answer spans several runs (empty: not written).
void AppendSeriesJson(std::string* out, const store::SeriesData& s, bool strip_system_prefix,
                      bool bucketed, std::string_view run = {}) {
  std::string key = s.key;
  if (strip_system_prefix && key.rfind(kSystemPrefix, 0) == 0)
    key = key.substr(kSystemPrefix.size());
  out->append("{");
  if (!run.empty()) {
    out->append("\"run\":");
    out->append(bj::serialize(bj::value(run)));
    out->push_back(',');
  }
  out->append("\"key\":");
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
      out->append(",\"nan_count\":");
      AppendInt(out, b.nan_count);
      // A bucket without a finite value (every point NaN, or infinities of one sign only) has no
      // statistics: null, never a number a chart would draw (docs/api.md, "History"). NaN points
      // are in neither min, max nor the sum. One from -Infinity to Infinity has those extremes
      // (whether numbers lie between is not known from them: it was taken for none, a gap).
      const int64_t valued = b.count - b.nan_count;
      const bool finite = valued > 0 && (std::isfinite(b.min) || std::isfinite(b.max) ||
                                         (b.min < 0 && b.max > 0));
      const double mean = valued > 0 ? b.sum / double(valued) : 0;
      out->append(",\"min\":");
      AppendStat(out, finite, b.min);
      out->append(",\"max\":");
      AppendStat(out, finite, b.max);
      out->append(",\"mean\":");
      AppendStat(out, finite && std::isfinite(mean), mean);
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
  static Mutex mu;
  static std::set<std::string> seen COHORT_GUARDED_BY(mu);
  std::string id = run.entity + "/" + run.project + "/" + run.run_id + " " + s.key + " " +
                   s.writer + " " + std::to_string(d.min_step) + ".." + std::to_string(d.max_step);
  {
    MutexLock lock(&mu);
    if (seen.size() > 100000 || !seen.insert(id).second) return;
  }
  std::fprintf(stderr,
               "cohort: damaged chunk skipped: run %s steps %" PRId64 "..%" PRId64 " (%" PRId64
               " points): %s\n",
               id.c_str(), d.min_step, d.max_step, d.count, d.reason.c_str());
}

// Appends to `out` (the comma-separated content of a "warnings" array) an object naming each
// damaged chunk a query skipped: {"key", "writer", "min_step", "max_step", "points",
// "message"}. `multi_run`: the answer spans several runs, so each warning names its run.
void AppendWarningItems(std::string* out, const store::RunRef& run,
                        const std::vector<store::SeriesData>& series, bool multi_run) {
  for (const store::SeriesData& s : series) {
    for (const series::DamagedChunk& d : s.damaged) {
      LogDamagedOnce(run, s, d);
      if (!out->empty()) out->push_back(',');
      out->push_back('{');
      if (multi_run) {
        out->append("\"run\":");
        out->append(bj::serialize(bj::value(run.run_id)));
        out->push_back(',');
      }
      out->append("\"key\":");
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
}

// `,"warnings":[items]`, nothing when there are none.
void AppendWarningsField(std::string* body, const std::string& items) {
  if (items.empty()) return;
  body->append(",\"warnings\":[");
  body->append(items);
  body->push_back(']');
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
  q->max_answer_points = limits.max_answer_points;
  return Status::Ok();
}

// `format`: kColumns only for raw reads (NegotiateHistoryFormat); a system read's columns name
// its keys without the "system/" prefix, as its JSON does.
http::HttpResponse Query(ApiContext* ctx, store::HistoryQuery& q, bool system,
                         HistoryFormat format = HistoryFormat::kJson) {
  int64_t t0 = MonoNanos();
  auto res = ctx->store->QueryHistory(q);
  ctx->metrics->ObserveStore(system ? "query_system" : "query_history", MonoNanos() - t0);
  if (!res.ok()) return ErrorResponse(res.status());
  if (format == HistoryFormat::kColumns) {
    std::string warnings;
    AppendWarningItems(&warnings, q.run, *res, /*multi_run=*/false);
    if (!warnings.empty()) warnings = "[" + warnings + "]";
    if (system) {  // the keys as the JSON answer names them: no "system/" prefix
      for (store::SeriesData& s : *res) {
        if (s.key.rfind(kSystemPrefix, 0) == 0) s.key.erase(0, kSystemPrefix.size());
      }
    }
    return ColumnsResponse(EncodeHistoryColumns(*res, warnings));
  }
  std::string body = "{\"series\":[";
  for (size_t i = 0; i < res->size(); ++i) {
    if (i) body.push_back(',');
    AppendSeriesJson(&body, (*res)[i], system, q.series.buckets > 0);
  }
  body.append("]");
  std::string warnings;
  AppendWarningItems(&warnings, q.run, *res, /*multi_run=*/false);
  AppendWarningsField(&body, warnings);
  body.append("}");
  return http::HttpResponse::Json(200, std::move(body));
}

// The keys (with their "system/" prefix) of every system series of the run.
Result<std::vector<std::string>> SystemKeys(ApiContext* ctx, const store::RunRef& ref) {
  COHORT_ASSIGN_OR_RETURN(std::vector<store::SeriesInfo> series, ctx->store->ListSeries(ref));
  std::vector<std::string> keys;
  for (const auto& s : series) {
    if (s.key.rfind(kSystemPrefix, 0) == 0 &&
        std::find(keys.begin(), keys.end(), s.key) == keys.end()) {
      keys.push_back(s.key);
    }
  }
  return keys;
}

// The runs named by `runs=` (comma-separated ids) of the project in the path: at least one, at
// most kMaxRunsPerQuery, each a valid id, each named once.
Result<std::vector<store::RunRef>> RunsParam(const http::HttpRequest& req, const AuthContext& who) {
  COHORT_ASSIGN_OR_RETURN(store::RunRef project, RunRefFromPath(req, who));
  std::vector<std::string> named = SplitListParam(req.QueryParam("runs"));
  if (named.empty()) return Status::InvalidArgument("runs: expected one or more run ids");
  if (named.size() > kMaxRunsPerQuery) {
    return Status::InvalidArgument("runs: at most " + std::to_string(kMaxRunsPerQuery) +
                                   " runs per request (got " + std::to_string(named.size()) + ")");
  }
  std::vector<store::RunRef> out;
  std::set<std::string> seen;
  for (std::string& id : named) {
    if (!ids::IsValidId(id)) return Status::InvalidArgument("runs: invalid run id '" + id + "'");
    if (!seen.insert(id).second) continue;
    out.push_back(store::RunRef{project.entity, project.project, std::move(id)});
  }
  return out;
}

// Appends `,"missing":[ids]` for runs that do not exist (deleted since the caller listed them).
void AppendMissing(std::string* body, const std::vector<std::string>& missing) {
  body->append(",\"missing\":[");
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i) body->push_back(',');
    body->append(bj::serialize(bj::value(missing[i])));
  }
  body->push_back(']');
}

// GET /api/v1/{history,system}/{entity}/{project}?runs=a,b&keys=...: the history (or system)
// query of each run, one answer whose series carry their run.
http::HttpResponse QueryRuns(ApiContext* ctx, const http::HttpRequest& req, const AuthContext& who,
                             bool system) {
  auto refs = RunsParam(req, who);
  if (!refs.ok()) return ErrorResponse(refs.status());
  store::HistoryQuery q;
  for (const std::string& k : SplitListParam(req.QueryParam("keys"))) {
    q.keys.push_back(system ? std::string(kSystemPrefix) + k : k);
  }
  q.writers = SplitListParam(req.QueryParam(system ? "labels" : "writers"));
  if (Status s = ReadRangeParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
  std::string body = "{\"series\":[";
  std::string warnings;
  bool first_series = true;
  std::vector<std::string> missing;
  const std::vector<std::string> named_keys = q.keys;
  int64_t held = 0;  // points and buckets of the runs read so far: one bound for the answer
  for (const store::RunRef& ref : *refs) {
    q.run = ref;
    q.answer_points_held = held;
    if (system && named_keys.empty()) {  // every system series of the run
      auto keys = SystemKeys(ctx, ref);
      if (!keys.ok() && keys.status().code() == StatusCode::kNotFound) {
        missing.push_back(ref.run_id);
        continue;
      }
      if (!keys.ok()) return ErrorResponse(keys.status());
      if (keys->empty()) continue;
      q.keys = std::move(keys).value();
    }
    int64_t t0 = MonoNanos();
    auto res = ctx->store->QueryHistory(q);
    ctx->metrics->ObserveStore(system ? "query_system" : "query_history", MonoNanos() - t0);
    if (!res.ok() && res.status().code() == StatusCode::kNotFound) {
      missing.push_back(ref.run_id);
      continue;
    }
    if (!res.ok()) return ErrorResponse(res.status());
    for (const store::SeriesData& s : *res) {
      held += int64_t(s.points.size() + s.buckets.size());
      if (!first_series) body.push_back(',');
      first_series = false;
      AppendSeriesJson(&body, s, system, q.series.buckets > 0, ref.run_id);
    }
    AppendWarningItems(&warnings, ref, *res, /*multi_run=*/true);
  }
  body.append("]");
  AppendMissing(&body, missing);
  AppendWarningsField(&body, warnings);
  body.append("}");
  return http::HttpResponse::Json(200, std::move(body));
}

bj::array SeriesJson(const std::vector<store::SeriesInfo>& series,
                     std::string_view type = "scalar") {
  bj::array out;
  for (const auto& s : series) {
    out.push_back(bj::object{{"key", s.key},
                             {"writer", s.writer},
                             {"type", type},
                             {"count", s.count},
                             {"min_step", s.min_step},
                             {"max_step", s.max_step}});
  }
  return out;
}

}  // namespace

void RegisterHistoryRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/runs/{entity}/{project}/{run}";
  r.Add("GET", base + "/keys", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto series = ctx->store->ListSeries(*ref);
          if (!series.ok()) return ErrorResponse(series.status());
          auto histograms = ctx->store->ListHistograms(*ref);
          if (!histograms.ok()) return ErrorResponse(histograms.status());
          bj::array keys = SeriesJson(*series);
          for (bj::value& h : SeriesJson(*histograms, "histogram")) keys.push_back(std::move(h));
          auto media = ctx->store->ListMedia(*ref);
          if (!media.ok()) return ErrorResponse(media.status());
          for (const store::MediaKeyInfo& m : *media) {
            keys.push_back(bj::object{{"key", m.key},
                                      {"writer", m.writer},
                                      {"type", m.type},
                                      {"count", m.count},
                                      {"min_step", m.min_step},
                                      {"max_step", m.max_step}});
          }
          return JsonResponse(200, bj::object{{"keys", std::move(keys)}});
        }));
  r.Add("GET", base + "/history",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::HistoryQuery q;
          q.run = *ref;
          q.keys = SplitListParam(req.QueryParam("keys"));
          q.writers = SplitListParam(req.QueryParam("writers"));
          if (Status s = ReadRangeParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
          auto format = NegotiateHistoryFormat(req.Header("accept"), q.series.buckets > 0);
          if (!format.ok()) {
            return http::HttpResponse::Error(406, "not_acceptable", format.status().message());
          }
          return Query(ctx, q, false, *format);
        }));
  r.Add("GET", base + "/system", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::HistoryQuery q;
          q.run = *ref;
          q.writers = SplitListParam(req.QueryParam("labels"));
          if (Status s = ReadRangeParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
          // The same negotiation and columnar answer as the history route (docs/formats.md).
          auto format = NegotiateHistoryFormat(req.Header("accept"), q.series.buckets > 0);
          if (!format.ok()) {
            return http::HttpResponse::Error(406, "not_acceptable", format.status().message());
          }
          std::vector<std::string> keys = SplitListParam(req.QueryParam("keys"));
          if (keys.empty()) {
            // Every system series of the selected labels.
            auto all = SystemKeys(ctx, *ref);
            if (!all.ok()) return ErrorResponse(all.status());
            q.keys = std::move(all).value();
            if (q.keys.empty() && *format == HistoryFormat::kColumns) {
              return ColumnsResponse(EncodeHistoryColumns({}, {}));
            }
            if (q.keys.empty()) return JsonResponse(200, bj::object{{"series", bj::array{}}});
          } else {
            for (const auto& k : keys) q.keys.push_back(std::string(kSystemPrefix) + k);
          }
          return Query(ctx, q, true, *format);
        }));

  // Several runs of a project at once (the web UI's workspace and group charts): one request
  // instead of one per run.
  r.Add("GET", "/api/v1/series/{entity}/{project}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto refs = RunsParam(req, who);
          if (!refs.ok()) return ErrorResponse(refs.status());
          bj::array runs;
          bj::array missing;
          for (const store::RunRef& ref : *refs) {
            auto series = ctx->store->ListSeries(ref);
            if (!series.ok() && series.status().code() == StatusCode::kNotFound) {
              missing.push_back(bj::value(ref.run_id));
              continue;
            }
            if (!series.ok()) return ErrorResponse(series.status());
            runs.push_back(bj::object{{"run", ref.run_id}, {"keys", SeriesJson(*series)}});
          }
          return JsonResponse(
              200, bj::object{{"runs", std::move(runs)}, {"missing", std::move(missing)}});
        }));
  r.Add("GET", "/api/v1/history/{entity}/{project}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return QueryRuns(ctx, req, who, /*system=*/false);
        }));
  r.Add("GET", "/api/v1/system/{entity}/{project}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return QueryRuns(ctx, req, who, /*system=*/true);
        }));
}

}  // namespace cohort::api
