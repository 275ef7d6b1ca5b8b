// Routes: rank insight. One metric aggregated across the writers of a run or the runs of a group
// (src/series/aggregate.h), and straggler / desynchronisation detection with the ranks x time
// matrix of the Ranks view (src/insight/). docs/api.md, "Rank aggregation".
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/clock.h"
#include "core/limits.h"
#include "insight/heatmap.h"
#include "insight/straggler.h"
#include "series/aggregate.h"
#include "series/chunk.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

constexpr std::string_view kSystemPrefix = limits::kSystemKeyPrefix;
constexpr std::string_view kPerfPrefix = "perf/";
constexpr const char* kStepTimeKey = "perf/step_time";
constexpr const char* kThroughputKey = "perf/throughput";
constexpr int kMaxGroupRuns = 10000;

// One aggregated series: a writer of a run.
struct Member {
  store::RunRef run;
  std::string run_name;
  store::WriterRecord writer;
};

// The members of one run, by index into the member list.
struct RunSlice {
  store::RunRef run;
  std::vector<std::string> labels;
  std::map<std::string, int> index;  // label -> member
};

// "rank_2" < "rank_10": runs of digits compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view na(a.data() + i, ie - i), nb(b.data() + j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

void SortMembers(std::vector<Member>* m) {
  std::stable_sort(m->begin(), m->end(), [](const Member& x, const Member& y) {
    if (x.run_name != y.run_name) return NaturalLess(x.run_name, y.run_name);
    if (x.run.run_id != y.run.run_id) return x.run.run_id < y.run.run_id;
    return NaturalLess(x.writer.label, y.writer.label);
  });
}

Status AddRunMembers(ApiContext* ctx, const store::RunRef& ref, const std::string& run_name,
                     const std::set<std::string>& labels, std::vector<Member>* out) {
  COHORT_ASSIGN_OR_RETURN(auto writers, ctx->store->ListWriters(ref));
  for (auto& w : writers) {
    if (!labels.empty() && !labels.contains(w.label)) continue;
    out->push_back(Member{ref, run_name, std::move(w)});
  }
  return Status::Ok();
}

// Members of the run route (a run's writers) or of the group route (the writers of its runs).
Result<std::vector<Member>> ResolveMembers(ApiContext* ctx, const http::HttpRequest& req,
                                           const store::RunRef& ref, bool group_route) {
  const std::vector<std::string> wanted = SplitListParam(req.QueryParam("writers"));
  const std::set<std::string> labels(wanted.begin(), wanted.end());
  std::vector<Member> members;
  if (!group_route) {
    COHORT_ASSIGN_OR_RETURN(store::RunRecord run, ctx->store->GetRun(ref));
    COHORT_RETURN_IF_ERROR(AddRunMembers(ctx, ref, run.name, labels, &members));
  } else {
    if (!req.HasQueryParam("group")) return Status::InvalidArgument("group: required");
    store::RunQuery q;
    q.entity = ref.entity;
    q.project = ref.project;
    q.filters.push_back(store::Filter{"group", "==", {req.QueryParam("group")}});
    q.sort = "created";
    q.descending = false;
    q.limit = 1000;
    int seen = 0;
    while (true) {
      COHORT_ASSIGN_OR_RETURN(store::RunPage page, ctx->store->ListRuns(q));
      for (const auto& run : page.runs) {
        if (++seen > kMaxGroupRuns) {
          return Status::InvalidArgument("group: more than " + std::to_string(kMaxGroupRuns) +
                                         " runs");
        }
        COHORT_RETURN_IF_ERROR(AddRunMembers(
            ctx, store::RunRef{ref.entity, ref.project, run.run_id}, run.name, labels, &members));
      }
      if (page.next_cursor.empty()) break;
      q.cursor = page.next_cursor;
    }
  }
  SortMembers(&members);
  return members;
}

std::vector<RunSlice> SliceByRun(const std::vector<Member>& members) {
  std::vector<RunSlice> slices;
  std::map<std::string, size_t> by_run;
  for (size_t i = 0; i < members.size(); ++i) {
    auto [it, fresh] = by_run.try_emplace(members[i].run.run_id, slices.size());
    if (fresh) slices.push_back(RunSlice{members[i].run, {}, {}});
    RunSlice& s = slices[it->second];
    s.labels.push_back(members[i].writer.label);
    s.index[members[i].writer.label] = int(i);
  }
  return slices;
}

// Non-finite numbers follow the API's conventions; NaN stands for "no data" here: null.
bj::value Num(double d) {
  if (std::isnan(d)) return nullptr;
  if (std::isinf(d)) return bj::value(d > 0 ? "Infinity" : "-Infinity");
  return d;
}

bj::value MemberIndex(int i) { return i < 0 ? bj::value(nullptr) : bj::value(i); }

bj::array MembersJson(const std::vector<Member>& members) {
  bj::array out;
  for (const Member& m : members) {
    out.push_back(bj::object{{"run", m.run.run_id},
                             {"run_name", m.run_name},
                             {"writer", m.writer.label},
                             {"host", m.writer.host},
                             {"state", std::string(store::RunStateName(m.writer.state))}});
  }
  return out;
}

Result<std::optional<double>> DoubleParam(const http::HttpRequest& req, std::string_view name) {
  if (!req.HasQueryParam(name)) return std::optional<double>{};
  const std::string v = req.QueryParam(name);
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(out) || out <= 0) {
    return Status::InvalidArgument(std::string(name) + ": expected a positive number, got '" + v +
                                   "'");
  }
  return std::optional<double>{out};
}

Result<int64_t> BoundedInt(const http::HttpRequest& req, std::string_view name, int64_t fallback,
                           int64_t lo, int64_t hi) {
  COHORT_ASSIGN_OR_RETURN(auto v, IntParam(req, name));
  if (!v) return fallback;
  if (*v < lo || *v > hi) {
    return Status::InvalidArgument(std::string(name) + ": expected " + std::to_string(lo) + ".." +
                                   std::to_string(hi));
  }
  return *v;
}

// Series of every member: slice -> label -> key -> info.
using SeriesIndex = std::map<std::string, std::map<std::string, store::SeriesInfo>>;

Result<std::vector<SeriesIndex>> ListMemberSeries(ApiContext* ctx,
                                                  const std::vector<RunSlice>& slices) {
  std::vector<SeriesIndex> out;
  for (const RunSlice& s : slices) {
    COHORT_ASSIGN_OR_RETURN(auto series, ctx->store->ListSeries(s.run));
    SeriesIndex idx;
    for (auto& info : series) {
      if (!s.index.contains(info.writer)) continue;
      std::string writer = info.writer, key = info.key;
      idx[writer][key] = std::move(info);
    }
    out.push_back(std::move(idx));
  }
  return out;
}

// ---- aggregate ----

http::HttpResponse Aggregate(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who,
                             bool group_route) {
  const int64_t t0 = MonoNanos();
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  const std::string key = req.QueryParam("key");
  if (key.empty()) return ErrorResponse(Status::InvalidArgument("key: required"));
  auto buckets = BoundedInt(req, "buckets", 1000, 1, ctx->limits.max_buckets);
  if (!buckets.ok()) return ErrorResponse(buckets.status());
  series::SeriesQuery range;
  for (auto [name, field] :
       {std::pair{"min_step", &range.min_step}, std::pair{"max_step", &range.max_step},
        std::pair{"min_time", &range.min_time_ms}, std::pair{"max_time", &range.max_time_ms}}) {
    auto v = IntParam(req, name);
    if (!v.ok()) return ErrorResponse(v.status());
    *field = *v;
  }
  if (range.min_step && range.max_step && *range.min_step > *range.max_step) {
    return ErrorResponse(Status::InvalidArgument("min_step: greater than max_step"));
  }
  const std::string pm = req.QueryParam("per_member", "0");
  if (pm != "0" && pm != "1" && pm != "true" && pm != "false") {
    return ErrorResponse(Status::InvalidArgument("per_member: expected 0 or 1"));
  }
  const bool per_member = pm == "1" || pm == "true";

  auto members = ResolveMembers(ctx, req, *ref, group_route);
  if (!members.ok()) return ErrorResponse(members.status());
  const std::vector<RunSlice> slices = SliceByRun(*members);
  auto series = ListMemberSeries(ctx, slices);
  if (!series.ok()) return ErrorResponse(series.status());

  // The members' step range, cut by the request's.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const SeriesIndex& idx : *series) {
    for (const auto& [label, keys] : idx) {
      auto it = keys.find(key);
      if (it == keys.end() || it->second.count == 0) continue;
      lo = std::min(lo, it->second.min_step);
      hi = std::max(hi, it->second.max_step);
    }
  }
  if (range.min_step) lo = std::max(lo, *range.min_step);
  if (range.max_step) hi = std::min(hi, *range.max_step);

  bj::object out{{"key", key}, {"members", MembersJson(*members)}};
  if (lo > hi) {
    out["bucket_width"] = nullptr;
    out["exact"] = true;
    out["buckets"] = bj::array{};
    return JsonResponse(200, out);
  }
  auto grid = series::ChooseAggregateGrid(lo, hi, int(*buckets), series::kMaxChunkPoints);
  if (!grid.ok()) return ErrorResponse(grid.status());

  std::vector<std::vector<series::Bucket>> per(members->size());
  const std::vector<series::GridPart> parts = series::GridParts(*grid);
  for (const RunSlice& s : slices) {
    for (const series::GridPart& part : parts) {
      store::HistoryQuery q{.run = s.run, .keys = {key}, .writers = s.labels, .series = range};
      q.series.min_step = part.min_step;
      q.series.max_step = part.max_step;
      q.series.buckets = part.buckets;
      auto data = ctx->store->QueryHistory(q);
      if (!data.ok()) return ErrorResponse(data.status());
      for (auto& d : *data) {
        auto it = s.index.find(d.writer);
        if (it == s.index.end() || d.key != key) continue;
        auto& dst = per[size_t(it->second)];
        dst.insert(dst.end(), d.buckets.begin(), d.buckets.end());
      }
    }
  }
  const auto agg = series::AggregateMembers(*grid, per, per_member);

  bj::array jb;
  jb.reserve(agg.size());
  for (const auto& b : agg) {
    bj::object o{{"step_min", b.step_min},
                 {"step_max", b.step_max},
                 {"time_min", b.time_min},
                 {"time_max", b.time_max},
                 {"count", b.count},
                 {"members", b.members},
                 {"min", Num(b.min)},
                 {"max", Num(b.max)},
                 {"mean", Num(b.mean)},
                 {"median", Num(b.median)},
                 {"spread", Num(b.spread)},
                 {"min_member", MemberIndex(b.min_member)},
                 {"max_member", MemberIndex(b.max_member)}};
    if (b.outlier_member >= 0) {
      o["outlier"] = bj::object{{"member", b.outlier_member}, {"z", Num(b.outlier_z)}};
    } else {
      o["outlier"] = nullptr;
    }
    if (per_member) {
      bj::array vals;
      for (double v : b.values) vals.push_back(Num(v));
      o["values"] = std::move(vals);
    }
    jb.push_back(std::move(o));
  }
  out["bucket_width"] = grid->width;
  out["exact"] = grid->width == 1;
  out["buckets"] = std::move(jb);
  ctx->metrics->ObserveStore("rank_aggregate", MonoNanos() - t0);
  return JsonResponse(200, out);
}

// ---- stragglers ----

bool IsGpuUtilKey(const std::string& key) {
  // system/gpu.<index>.gpu (src/agent/monitor/nvml_source.cc)
  static const std::string p = std::string(kSystemPrefix) + "gpu.";
  if (key.rfind(p, 0) != 0 || key.size() < p.size() + 5) return false;
  const std::string_view rest = std::string_view(key).substr(p.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  for (size_t i = 0; i < dot; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return false;
  }
  return rest.substr(dot) == ".gpu";
}

// The user key present for the most members (ties: most points, then name); perf/ keys only
// when nothing else is logged.
std::string ChooseClockKey(const std::vector<SeriesIndex>& series) {
  std::map<std::string, std::pair<int64_t, int64_t>> score;  // key -> members, points
  for (const SeriesIndex& idx : series) {
    for (const auto& [label, keys] : idx) {
      for (const auto& [key, info] : keys) {
        if (key.rfind(kSystemPrefix, 0) == 0) continue;
        auto& s = score[key];
        ++s.first;
        s.second += info.count;
      }
    }
  }
  std::string best;
  std::tuple<bool, int64_t, int64_t> best_score{false, -1, -1};
  for (const auto& [key, s] : score) {
    std::tuple<bool, int64_t, int64_t> sc{key.rfind(kPerfPrefix, 0) != 0, s.first, s.second};
    if (best.empty() || sc > best_score) {  // map order: the first name wins ties
      best = key;
      best_score = sc;
    }
  }
  return best;
}

std::vector<double> Values(const store::SeriesData& d, size_t last_n) {
  std::vector<double> v;
  const size_t from = d.points.size() > last_n ? d.points.size() - last_n : 0;
  for (size_t i = from; i < d.points.size(); ++i) {
    if (std::isfinite(d.points[i].value)) v.push_back(d.points[i].value);
  }
  return v;
}

bj::value SignalJson(const insight::Signal& s, bool with_source) {
  if (!s.present) return nullptr;
  bj::object o{{"value", Num(s.value)},
               {"n", s.n},
               {"z", Num(s.z)},
               {"ratio", Num(s.ratio)},
               {"flagged", s.flagged}};
  if (with_source) o["source"] = s.source;
  return o;
}

bj::array MatrixRows(const std::vector<std::vector<double>>& rows) {
  bj::array out;
  for (const auto& row : rows) {
    bj::array r;
    for (double v : row) r.push_back(Num(v));
    out.push_back(std::move(r));
  }
  return out;
}

http::HttpResponse Stragglers(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who,
                              bool group_route, const insight::StragglerOptions& defaults) {
  const int64_t t0 = MonoNanos();
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  insight::StragglerOptions opt = defaults;
  for (auto [name, field] : {std::pair{"z", &opt.z}, std::pair{"ratio", &opt.ratio},
                             std::pair{"lag_ratio", &opt.lag_ratio}}) {
    auto v = DoubleParam(req, name);
    if (!v.ok()) return ErrorResponse(v.status());
    if (*v) *field = **v;
  }
  auto window = BoundedInt(req, "window", opt.window, 2, 100000);
  auto desync = BoundedInt(req, "desync_steps", opt.desync_steps, 1, int64_t(1) << 50);
  auto columns = BoundedInt(req, "columns", 60, 1, 1000);
  for (const auto* r : {&window, &desync, &columns}) {
    if (!r->ok()) return ErrorResponse(r->status());
  }
  opt.window = int(*window);
  opt.desync_steps = *desync;
  auto min_time = IntParam(req, "min_time");
  auto max_time = IntParam(req, "max_time");
  if (!min_time.ok()) return ErrorResponse(min_time.status());
  if (!max_time.ok()) return ErrorResponse(max_time.status());
  if (*min_time && *max_time && **min_time > **max_time) {
    return ErrorResponse(Status::InvalidArgument("min_time: greater than max_time"));
  }

  auto members = ResolveMembers(ctx, req, *ref, group_route);
  if (!members.ok()) return ErrorResponse(members.status());
  const std::vector<RunSlice> slices = SliceByRun(*members);
  auto series = ListMemberSeries(ctx, slices);
  if (!series.ok()) return ErrorResponse(series.status());
  const std::string key =
      req.HasQueryParam("key") ? req.QueryParam("key") : ChooseClockKey(*series);

  // Window inputs, one raw query per member.
  std::vector<insight::MemberSignals> in(members->size());
  std::vector<std::vector<std::string>> gpu_keys(members->size());
  for (size_t si = 0; si < slices.size(); ++si) {
    for (const auto& [label, m] : slices[si].index) {
      const auto& keys = (*series)[si][label];
      insight::MemberSignals& sig = in[size_t(m)];
      sig.running = !store::IsTerminal((*members)[size_t(m)].writer.state);
      for (const auto& [k, info] : keys) {
        if (IsGpuUtilKey(k)) gpu_keys[size_t(m)].push_back(k);
      }
      // Each key's own last `window` steps: keys that end at the same step share a query (a
      // key that stopped early made one query start there, and the raw page of the others then
      // held their oldest steps, not their last).
      std::map<int64_t, std::vector<std::string>> by_start;
      for (const std::string& k : {key, std::string(kStepTimeKey), std::string(kThroughputKey)}) {
        auto it = keys.find(k);
        if (k.empty() || it == keys.end() || it->second.count == 0) continue;
        by_start[it->second.max_step - opt.window].push_back(k);
      }
      for (auto& [start, window_keys] : by_start) {
        store::HistoryQuery q;
        q.run = slices[si].run;
        q.writers = {label};
        q.keys = std::move(window_keys);
        q.series.min_step = start;
        q.series.limit =
            std::min<int64_t>(ctx->limits.max_raw_points, int64_t(opt.window) * 8 + 64);
        auto data = ctx->store->QueryHistory(q);
        if (!data.ok()) return ErrorResponse(data.status());
        for (const auto& d : *data) {
          if (d.key == key) {
            const size_t from_i =
                d.points.size() > size_t(opt.window) + 1 ? d.points.size() - opt.window - 1 : 0;
            sig.clock.assign(d.points.begin() + long(from_i), d.points.end());
          } else if (d.key == kStepTimeKey) {
            sig.step_time_s = Values(d, size_t(opt.window));
          } else if (d.key == kThroughputKey) {
            sig.throughput = Values(d, size_t(opt.window));
          }
        }
      }
      // Mean GPU utilisation over the window's time span.
      if (!gpu_keys[size_t(m)].empty() && sig.clock.size() >= 2) {
        store::HistoryQuery g;
        g.run = slices[si].run;
        g.writers = {label};
        g.keys = gpu_keys[size_t(m)];
        g.series.min_time_ms = sig.clock.front().time_ms;
        g.series.max_time_ms = sig.clock.back().time_ms;
        g.series.buckets = 1;
        auto gd = ctx->store->QueryHistory(g);
        if (!gd.ok()) return ErrorResponse(gd.status());
        double sum = 0;
        int64_t n = 0;
        for (const auto& d : *gd) {
          for (const auto& b : d.buckets) {
            sum += b.sum;
            n += b.count - b.nan_count;
          }
        }
        if (n > 0) sig.gpu_util = sum / double(n);
      }
    }
  }
  const insight::StragglerReport rep = insight::DetectStragglers(in, opt);

  // The heatmap: fine step buckets of every member, laid on time columns.
  const bool explicit_steps =
      std::any_of(rep.members.begin(), rep.members.end(),
                  [](const auto& v) { return v.step_time.source == "perf/step_time"; });
  // Two step buckets per column: enough samples for every column, and coarse enough that a long
  // series is read from chunk summaries (see the grid's rounding).
  const int fine = int(std::min<int64_t>(*columns * 2, 10000));
  std::vector<std::vector<series::Bucket>> clock_b(members->size()), steps_b(members->size());
  std::vector<std::vector<std::vector<series::Bucket>>> gpu_b(members->size());
  bool any_gpu = false;
  // Per member, keys with the same step range share queries; each range is laid on an aligned
  // grid (series/aggregate.h) so that stored chunks are read as summaries where possible.
  for (size_t si = 0; si < slices.size(); ++si) {
    const RunSlice& s = slices[si];
    for (const auto& [label, m] : s.index) {
      const auto& infos = (*series)[si][label];
      std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> by_range;
      std::vector<std::string> wanted = gpu_keys[size_t(m)];
      if (!key.empty()) wanted.push_back(key);
      if (explicit_steps) wanted.push_back(kStepTimeKey);
      for (const std::string& k : wanted) {
        auto it = infos.find(k);
        if (it == infos.end() || it->second.count == 0) continue;
        by_range[{it->second.min_step, it->second.max_step}].push_back(k);
      }
      for (const auto& [range, keys] : by_range) {
        auto grid =
            series::ChooseAggregateGrid(range.first, range.second, fine, series::kMaxChunkPoints);
        if (!grid.ok()) return ErrorResponse(grid.status());
        for (const series::GridPart& part : series::GridParts(*grid)) {
          store::HistoryQuery q;
          q.run = s.run;
          q.writers = {label};
          q.keys = keys;
          q.series.min_step = part.min_step;
          q.series.max_step = part.max_step;
          q.series.buckets = part.buckets;
          q.series.min_time_ms = *min_time;
          q.series.max_time_ms = *max_time;
          auto data = ctx->store->QueryHistory(q);
          if (!data.ok()) return ErrorResponse(data.status());
          for (auto& d : *data) {
            if (d.writer != label) continue;
            std::vector<series::Bucket>* dst = nullptr;
            if (d.key == key) {
              dst = &clock_b[size_t(m)];
            } else if (d.key == kStepTimeKey) {
              dst = &steps_b[size_t(m)];
            } else if (IsGpuUtilKey(d.key)) {
              any_gpu = true;
              gpu_b[size_t(m)].push_back({});
              dst = &gpu_b[size_t(m)].back();
            }
            if (dst) dst->insert(dst->end(), d.buckets.begin(), d.buckets.end());
          }
        }
      }
    }
  }
  int64_t tmin = INT64_MAX, tmax = INT64_MIN;
  for (const auto& bs : clock_b) {
    for (const auto& b : bs) {
      tmin = std::min(tmin, b.time_min);
      tmax = std::max(tmax, b.time_max);
    }
  }
  if (*min_time) tmin = **min_time;
  if (*max_time) tmax = **max_time;
  bj::value matrix = nullptr;
  if (tmin <= tmax) {
    const insight::TimeColumns cols = insight::ChooseTimeColumns(tmin, tmax, int(*columns));
    std::vector<std::vector<double>> step_rows, gpu_rows;
    for (size_t m = 0; m < members->size(); ++m) {
      if (explicit_steps) {
        std::vector<double> row = insight::MeanColumns(cols, {steps_b[m]});
        for (double& v : row) v *= 1000.0;  // seconds -> ms
        step_rows.push_back(std::move(row));
      } else {
        step_rows.push_back(insight::StepTimeColumns(cols, insight::BucketCorners(clock_b[m])));
      }
      gpu_rows.push_back(insight::MeanColumns(cols, gpu_b[m]));
    }
    bj::array times;
    for (int j = 0; j < cols.count; ++j) times.push_back(cols.Start(j));
    matrix =
        bj::object{{"time_min", cols.time_min},
                   {"bucket_ms", cols.bucket_ms},
                   {"times", std::move(times)},
                   {"step_time_source", explicit_steps ? kStepTimeKey : "timestamps"},
                   {"step_time_ms", MatrixRows(step_rows)},
                   {"gpu_util", any_gpu ? bj::value(MatrixRows(gpu_rows)) : bj::value(nullptr)}};
  }

  bj::array jm = MembersJson(*members);
  for (size_t i = 0; i < jm.size(); ++i) {
    const insight::MemberVerdict& v = rep.members[i];
    bj::object& o = jm[i].as_object();
    o["last_step"] = v.last_step >= 0 ? bj::value(v.last_step) : bj::value(nullptr);
    o["last_time"] = v.last_step >= 0 ? bj::value(v.last_time) : bj::value(nullptr);
    o["step_time"] = SignalJson(v.step_time, true);
    o["lag"] = SignalJson(v.lag, false);
    o["gpu_util"] = SignalJson(v.gpu_util, false);
    o["throughput"] = SignalJson(v.throughput, false);
    o["flagged"] = v.flagged;
    bj::array reasons;
    for (const auto& r : v.reasons) reasons.push_back(bj::value(r));
    o["reasons"] = std::move(reasons);
  }
  bj::array stragglers;
  for (int i : rep.stragglers) stragglers.push_back(i);
  bj::object out{{"key", key},
                 {"window", opt.window},
                 {"thresholds", bj::object{{"z", opt.z},
                                           {"ratio", opt.ratio},
                                           {"lag_ratio", opt.lag_ratio},
                                           {"desync_steps", opt.desync_steps},
                                           {"min_members", opt.min_members}}},
                 {"median_step_time_ms", Num(rep.median_step_time_ms)},
                 {"members", std::move(jm)},
                 {"stragglers", std::move(stragglers)},
                 {"desync", bj::object{{"flagged", rep.desync.flagged},
                                       {"step_gap", rep.desync.step_gap},
                                       {"ahead", MemberIndex(rep.desync.ahead)},
                                       {"behind", MemberIndex(rep.desync.behind)},
                                       {"reason", rep.desync.reason}}},
                 {"matrix", std::move(matrix)}};
  ctx->metrics->ObserveStore("rank_stragglers", MonoNanos() - t0);
  return JsonResponse(200, out);
}

}  // namespace

void RegisterRanksRoutes(http::Router& r, ApiContext* ctx) {
  const insight::StragglerOptions defaults = insight::StragglerOptionsFromEnv();
  const std::string run = "/api/v1/runs/{entity}/{project}/{run}/ranks";
  const std::string group = "/api/v1/groups/{entity}/{project}/ranks";
  for (bool g : {false, true}) {
    const std::string& base = g ? group : run;
    r.Add("GET", base + "/aggregate",
          Authed(ctx, [ctx, g](http::HttpRequest& req, const AuthContext& who) {
            return Aggregate(ctx, req, who, g);
          }));
    r.Add("GET", base + "/stragglers",
          Authed(ctx, [ctx, g, defaults](http::HttpRequest& req, const AuthContext& who) {
            return Stragglers(ctx, req, who, g, defaults);
          }));
  }
}

}  // namespace cohort::api
