// Routes: saved views of a project — list, create, update, delete.
#include <charconv>

#include "core/limits.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

// The body of a create (name, spec) or of an update (`for_update`: also updated_ms, the version
// the edit is based on, as the view was loaded; an update of another version is refused, 409).
Status ReadView(const http::HttpRequest& req, bool for_update, store::ViewRecord* v) {
  COHORT_ASSIGN_OR_RETURN(bj::object body, ParseBodyObject(req));
  json::FieldReader r(body, "");
  if (for_update) {
    r.RejectUnknown({"name", "spec", "updated_ms"});
  } else {
    r.RejectUnknown({"name", "spec"});
  }
  v->name = r.String("name", limits::kMaxViewNameBytes);
  const bj::object* spec = r.OptObject("spec");
  if (for_update) v->updated_ms = r.OptInt("updated_ms").value_or(0);
  if (!r.ok()) return r.status();
  if (v->updated_ms < 0) return Status::InvalidArgument("updated_ms: must not be negative");
  if (v->name.empty()) return Status::InvalidArgument("name: must not be empty");
  v->spec_json = spec ? bj::serialize(*spec) : "{}";
  return Status::Ok();
}

bj::value ViewToJson(const store::ViewRecord& v) {
  return bj::object{{"id", v.id},
                    {"name", v.name},
                    {"spec", ParseStoredJson(v.spec_json)},
                    {"created_ms", v.created_ms},
                    {"updated_ms", v.updated_ms}};
}

Result<int64_t> ViewId(const http::HttpRequest& req) {
  std::string s = req.PathParam("id");
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return Status::InvalidArgument("id: expected a view id");
  }
  return id;
}

}  // namespace

void RegisterViewRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/views/{entity}/{project}";
  r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto views = ctx->store->ListViews(ref->entity, ref->project);
          if (!views.ok()) return ErrorResponse(views.status());
          bj::array out;
          for (const auto& v : *views) out.push_back(ViewToJson(v));
          return JsonResponse(200, bj::object{{"views", std::move(out)}});
        }));
  r.Add("POST", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::ViewRecord v;
          v.entity = ref->entity;
          v.project = ref->project;
          if (Status s = ReadView(req, /*for_update=*/false, &v); !s.ok()) return ErrorResponse(s);
          auto created = ctx->store->CreateView(v);
          if (!created.ok()) return ErrorResponse(created.status());
          return JsonResponse(201, ViewToJson(*created));
        }));
  r.Add("PUT", base + "/{id}", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto id = ViewId(req);
          if (!id.ok()) return ErrorResponse(id.status());
          store::ViewRecord v;
          v.entity = ref->entity;
          v.project = ref->project;
          v.id = *id;
          if (Status s = ReadView(req, /*for_update=*/true, &v); !s.ok()) return ErrorResponse(s);
          auto updated = ctx->store->UpdateView(v);
          if (!updated.ok()) return ErrorResponse(updated.status());
          return JsonResponse(200, ViewToJson(*updated));
        }));
  r.Add("DELETE", base + "/{id}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto id = ViewId(req);
          if (!id.ok()) return ErrorResponse(id.status());
          if (Status s = ctx->store->DeleteView(ref->entity, ref->project, *id); !s.ok()) {
            return ErrorResponse(s);
          }
          return JsonResponse(200, bj::object{{"deleted", true}});
        }));
}

}  // namespace cohort::api
