// Route: histogram values of a run (GET /api/v1/runs/{entity}/{project}/{run}/histograms,
// docs/api.md "Histograms"): per key and writer, the steps in a range with their bins and
// counts, neighbouring steps merged into at most `buckets` buckets.
#include <charconv>
#include <cstring>

#include "core/clock.h"
#include "server/api/context.h"
#include "server/metrics.h"

namespace cohort::api {
namespace {

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  out->append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// Histogram numbers are finite (core/histogram.h): the shortest round-trip form.
void AppendNumber(std::string* out, double d) {
  char buf[32];
  out->append(buf, std::to_chars(buf, buf + sizeof buf, d).ptr);
}

// Counts are usually integers: written with the integer formatter (several times faster than
// the shortest double form, and the same text).
void AppendNumbers(std::string* out, const std::vector<double>& v) {
  out->push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out->push_back(',');
    const double d = v[i];
    if (d >= 0 && d < 9007199254740992.0 && d == double(int64_t(d))) {
      AppendInt(out, int64_t(d));
    } else {
      AppendNumber(out, d);
    }
  }
  out->push_back(']');
}

// The explicit edges every step of `s` shares (null when a step has uniform bins or others):
// sent once for the series, not once per step (10,000 steps of 65 edges are 650,000 numbers).
const std::vector<double>* SharedEdges(const store::HistogramSeries& s) {
  if (s.steps.size() < 2 || s.steps[0].value.uniform()) return nullptr;
  const std::vector<double>& first = s.steps[0].value.edges;
  for (const store::HistogramStep& step : s.steps) {
    if (step.value.uniform() || step.value.edges.size() != first.size() ||
        std::memcmp(step.value.edges.data(), first.data(), first.size() * sizeof(double)) != 0) {
      return nullptr;
    }
  }
  return &first;
}

void AppendStep(std::string* out, const store::HistogramStep& s, bool shared_edges) {
  out->append("{\"step\":");
  AppendInt(out, s.step);
  if (s.merged > 1) {
    out->append(",\"last_step\":");
    AppendInt(out, s.last_step);
    out->append(",\"merged\":");
    AppendInt(out, s.merged);
    out->append(s.exact ? ",\"exact\":true" : ",\"exact\":false");
  }
  out->append(",\"time_ms\":");
  AppendInt(out, s.time_ms);
  if (shared_edges) {
    // the series' "edges"
  } else if (s.value.uniform()) {
    out->append(",\"lo\":");
    AppendNumber(out, s.value.lo);
    out->append(",\"hi\":");
    AppendNumber(out, s.value.hi);
  } else {
    out->append(",\"edges\":");
    AppendNumbers(out, s.value.edges);
  }
  out->append(",\"counts\":");
  AppendNumbers(out, s.value.counts);
  out->push_back('}');
}

Status ReadParams(const http::HttpRequest& req, const ApiLimits& limits,
                  store::HistogramQuery* q) {
  q->keys = SplitListParam(req.QueryParam("keys"));
  q->writers = SplitListParam(req.QueryParam("writers"));
  COHORT_ASSIGN_OR_RETURN(auto min_step, IntParam(req, "min_step"));
  COHORT_ASSIGN_OR_RETURN(auto max_step, IntParam(req, "max_step"));
  COHORT_ASSIGN_OR_RETURN(auto buckets, IntParam(req, "buckets"));
  if (min_step) q->min_step = *min_step;
  if (max_step) q->max_step = *max_step;
  if (q->min_step > q->max_step) return Status::InvalidArgument("min_step: greater than max_step");
  if (buckets) {
    if (*buckets < 1 || *buckets > limits.max_buckets) {
      return Status::InvalidArgument("buckets: expected 1.." + std::to_string(limits.max_buckets));
    }
    q->buckets = int(*buckets);
  }
  return Status::Ok();
}

}  // namespace

void RegisterHistogramRoutes(http::Router& r, ApiContext* ctx) {
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/histograms",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::HistogramQuery q;
          q.run = *ref;
          q.max_values = ctx->limits.max_answer_points;
          if (Status s = ReadParams(req, ctx->limits, &q); !s.ok()) return ErrorResponse(s);
          const int64_t t0 = MonoNanos();
          auto res = ctx->store->QueryHistograms(q);
          ctx->metrics->ObserveStore("query_histograms", MonoNanos() - t0);
          if (!res.ok()) return ErrorResponse(res.status());
          std::string body = "{\"histograms\":[";
          for (size_t i = 0; i < res->size(); ++i) {
            const store::HistogramSeries& s = (*res)[i];
            if (i) body.push_back(',');
            body.append("{\"key\":");
            body.append(bj::serialize(bj::value(s.key)));
            body.append(",\"writer\":");
            body.append(bj::serialize(bj::value(s.writer)));
            body.append(",\"count\":");
            AppendInt(&body, s.count);
            const std::vector<double>* shared = SharedEdges(s);
            if (shared != nullptr) {
              body.append(",\"edges\":");
              AppendNumbers(&body, *shared);
            }
            body.append(",\"steps\":[");
            for (size_t k = 0; k < s.steps.size(); ++k) {
              if (k) body.push_back(',');
              AppendStep(&body, s.steps[k], shared != nullptr);
            }
            body.append("]}");
          }
          body.append("]}");
          return http::HttpResponse::Json(200, std::move(body));
        }));
}

}  // namespace cohort::api
