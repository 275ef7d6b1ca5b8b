// Routes: runs — create-or-resume, get, patch, delete, list with filters and paging.
#include "core/clock.h"
#include "core/ids.h"
#include "core/limits.h"
#include "server/api/context.h"
#include "server/api/history_columns.h"
#include "server/api/run_list_columns.h"

namespace cohort::api {
namespace {

// Validates that an optional field, when present, is a JSON object; returns its text.
std::optional<std::string> ObjectText(json::FieldReader& r, std::string_view key) {
  const bj::object* o = r.OptObject(key);
  if (!o) return std::nullopt;
  return bj::serialize(*o);
}

http::HttpResponse CreateRun(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.status());
  json::FieldReader r(*body, "");
  r.RejectUnknown({"id", "name", "group", "job_type", "tags", "notes", "host", "config",
                   "metadata", "resume"});
  store::RunUpsert up;
  up.ref = *ref;
  up.ref.run_id = r.OptString("id", 64).value_or("");
  up.name = r.OptString("name", limits::kMaxRunNameBytes);
  up.group = r.OptString("group", limits::kMaxGroupBytes);
  up.job_type = r.OptString("job_type", limits::kMaxJobTypeBytes);
  up.notes = r.OptString("notes", limits::kMaxNotesBytes);
  up.host = r.OptString("host", limits::kMaxHostBytes);
  up.tags = r.OptStringArray("tags", limits::kMaxTagBytes);
  up.config_json = ObjectText(r, "config");
  up.metadata_json = ObjectText(r, "metadata");
  std::string resume = r.OptString("resume", 16).value_or("allow");
  if (!r.ok()) return ErrorResponse(r.status());
  if (resume != "allow" && resume != "must" && resume != "never") {
    return ErrorResponse(Status::InvalidArgument("resume: expected allow, must or never"));
  }
  if (!up.ref.run_id.empty() && !ids::IsValidId(up.ref.run_id)) {
    return ErrorResponse(
        Status::InvalidArgument("id: 1-64 characters of letters, digits, '_', '-', '.'"));
  }
  if (up.tags && up.tags->size() > limits::kMaxTags) {
    return ErrorResponse(
        Status::InvalidArgument("tags: at most " + std::to_string(limits::kMaxTags) + " tags"));
  }
  if (resume == "must" && up.ref.run_id.empty()) {
    return ErrorResponse(Status::InvalidArgument("id: required with resume=must"));
  }
  // Checked by the store in the upsert's own transaction (a check before it let two creates of
  // one id both through: the second resumed the first's run and rewrote it).
  up.resume = resume == "must"    ? store::ResumeMode::kMust
              : resume == "never" ? store::ResumeMode::kNever
                                  : store::ResumeMode::kAllow;
  auto res = ctx->store->UpsertRun(up);
  if (!res.ok()) return ErrorResponse(res.status());
  return JsonResponse(res->second ? 201 : 200, RunToJson(res->first, NowMillis()));
}

http::HttpResponse GetRun(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  auto run = ctx->store->GetRun(*ref);
  if (!run.ok()) return ErrorResponse(run.status());
  auto writers = ctx->store->ListWriters(*ref);
  if (!writers.ok()) return ErrorResponse(writers.status());
  bj::value out = RunToJson(*run, NowMillis());
  bj::array ws;
  for (const auto& w : *writers) ws.push_back(WriterToJson(w));
  out.as_object()["writers"] = std::move(ws);
  return JsonResponse(200, out);
}

http::HttpResponse PatchRun(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.status());
  json::FieldReader r(*body, "");
  r.RejectUnknown(
      {"name", "group", "job_type", "notes", "tags", "config", "config_unset", "summary"});
  store::RunPatch patch;
  patch.name = r.OptString("name", limits::kMaxRunNameBytes);
  patch.group = r.OptString("group", limits::kMaxGroupBytes);
  patch.job_type = r.OptString("job_type", limits::kMaxJobTypeBytes);
  patch.notes = r.OptString("notes", limits::kMaxNotesBytes);
  patch.tags = r.OptStringArray("tags", limits::kMaxTagBytes);
  patch.config_json = ObjectText(r, "config");
  patch.summary_json = ObjectText(r, "summary");
  patch.config_unset =
      r.OptStringArray("config_unset", limits::kMaxKeyBytes).value_or(std::vector<std::string>{});
  if (!r.ok()) return ErrorResponse(r.status());
  if (patch.tags && patch.tags->size() > limits::kMaxTags) {  // as POST refuses them
    return ErrorResponse(
        Status::InvalidArgument("tags: at most " + std::to_string(limits::kMaxTags) + " tags"));
  }
  auto run = ctx->store->PatchRun(*ref, patch);
  if (!run.ok()) return ErrorResponse(run.status());
  return JsonResponse(200, RunToJson(*run, NowMillis()));
}

// Reads list filters from simple parameters and the `filters` JSON array.
Status ParseFilters(const http::HttpRequest& req, std::vector<store::Filter>* out) {
  for (const char* field : {"group", "job_type", "host", "tag"}) {
    if (req.HasQueryParam(field)) out->push_back({field, "==", {req.QueryParam(field)}});
  }
  if (req.HasQueryParam("state")) {
    out->push_back({"state", "in", SplitListParam(req.QueryParam("state"))});
  }
  if (req.HasQueryParam("name")) out->push_back({"name", "~", {req.QueryParam("name")}});
  if (!req.HasQueryParam("filters")) return Status::Ok();
  auto parsed = json::Parse(req.QueryParam("filters"));
  if (!parsed.ok() || !parsed->is_array()) {
    return Status::InvalidArgument("filters: expected a JSON array of {field, op, value}");
  }
  int i = 0;
  for (const auto& clause : parsed->as_array()) {
    std::string path = "filters[" + std::to_string(i++) + "]";
    if (!clause.is_object()) return Status::InvalidArgument(path + ": expected an object");
    json::FieldReader r(clause.as_object(), path);
    r.RejectUnknown({"field", "op", "value", "values"});
    store::Filter f;
    f.field = r.String("field", 256);
    f.op = r.OptString("op", 16).value_or("==");
    const bj::value* single = clause.as_object().if_contains("value");
    if (single && !single->is_null()) {
      if (single->is_string()) {
        f.values.emplace_back(single->get_string());
      } else if (single->is_number() || single->is_bool()) {
        f.values.push_back(bj::serialize(*single));
      } else {
        r.Fail("value", "expected a string or a number");
      }
    }
    if (auto vs = r.OptStringArray("values", 1024)) {
      for (auto& v : *vs) f.values.push_back(std::move(v));
    }
    if (!r.ok()) return r.status();
    static const char* kOps[] = {"==", "!=", "in", "not in", "~", "<", ">"};
    bool op_ok = false;
    for (const char* op : kOps) op_ok = op_ok || f.op == op;
    if (!op_ok) {
      return Status::InvalidArgument(path + ".op: expected one of ==, !=, in, not in, ~, <, >");
    }
    if (f.values.empty()) return Status::InvalidArgument(path + ": value or values required");
    out->push_back(std::move(f));
  }
  return Status::Ok();
}

http::HttpResponse ListRuns(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  store::RunQuery q;
  q.entity = ref->entity;
  q.project = ref->project;
  if (Status s = ParseFilters(req, &q.filters); !s.ok()) return ErrorResponse(s);
  std::string sort = req.QueryParam("sort", "-created");
  q.descending = !sort.empty() && sort[0] == '-';
  q.sort = q.descending ? sort.substr(1) : sort;
  static const char* kSorts[] = {"created", "updated", "name", "state", "group", "job_type"};
  bool sort_ok = false;
  for (const char* s : kSorts) sort_ok = sort_ok || q.sort == s;
  // config.<key> / summary.<key>: the store checks the key path (400 naming the sort).
  sort_ok = sort_ok || q.sort.starts_with("config.") || q.sort.starts_with("summary.");
  if (!sort_ok) {
    return ErrorResponse(
        Status::InvalidArgument("sort: expected created, updated, name, state, group, job_type, "
                                "config.<key> or summary.<key> (prefix - to reverse), got '" +
                                q.sort + "'"));
  }
  auto limit = IntParam(req, "limit");
  if (!limit.ok()) return ErrorResponse(limit.status());
  q.limit = int(std::clamp<int64_t>(limit->value_or(100), 1, 1000));
  q.cursor = req.QueryParam("cursor");
  // The same negotiation as the history route: columns when named (docs/formats.md "Run list
  // columns"), JSON by default.
  auto format = NegotiateHistoryFormat(req.Header("accept"), /*bucketed=*/false);
  if (!format.ok()) {
    return http::HttpResponse::Error(406, "not_acceptable", format.status().message());
  }
  auto page = ctx->store->ListRuns(q);
  if (!page.ok()) return ErrorResponse(page.status());
  int64_t now = NowMillis();
  bj::array runs;
  for (const auto& run : page->runs) runs.push_back(RunToJson(run, now));
  if (*format == HistoryFormat::kColumns) {
    return ColumnsResponse(EncodeRunListColumns(runs, page->total, page->next_cursor));
  }
  return JsonResponse(
      200, bj::object{{"runs", std::move(runs)},
                      {"next_cursor", page->next_cursor.empty() ? bj::value(nullptr)
                                                                : bj::value(page->next_cursor)},
                      {"total", page->total}});
}

}  // namespace

void RegisterRunRoutes(http::Router& r, ApiContext* ctx) {
  auto bind = [ctx](auto fn) {
    return Authed(ctx, [ctx, fn](http::HttpRequest& req, const AuthContext& who) {
      return fn(ctx, req, who);
    });
  };
  r.Add("POST", "/api/v1/runs/{entity}/{project}", bind(CreateRun));
  r.Add("GET", "/api/v1/runs/{entity}/{project}", bind(ListRuns));
  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}", bind(GetRun));
  r.Add("PATCH", "/api/v1/runs/{entity}/{project}/{run}", bind(PatchRun));
  r.Add("DELETE", "/api/v1/runs/{entity}/{project}/{run}",
        Authed(
            ctx,
            [ctx](http::HttpRequest& req, const AuthContext& who) {
              auto ref = RunRefFromPath(req, who);
              if (!ref.ok()) return ErrorResponse(ref.status());
              if (Status s = ctx->store->DeleteRun(*ref); !s.ok()) return ErrorResponse(s);
              return JsonResponse(200, bj::object{{"deleted", true}});
            },
            /*admin_only=*/true));
}

}  // namespace cohort::api
