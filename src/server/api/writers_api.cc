// Routes: writers of a run — join, list, heartbeat, finish.
#include <limits>

#include "core/clock.h"
#include "server/alerts/alert_engine.h"
#include "server/api/context.h"
#include "store/run_state.h"

namespace cohort::api {
namespace {

http::HttpResponse Join(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.status());
  json::FieldReader r(*body, "");
  r.RejectUnknown({"label", "primary", "update_finish_state", "host", "pid", "gpu_ids"});
  store::WriterJoin join;
  join.label = r.String("label", 1024);
  join.primary = r.OptBool("primary").value_or(true);
  join.update_finish_state = r.OptBool("update_finish_state").value_or(true);
  join.host = r.OptString("host", 256).value_or("");
  join.pid = r.OptInt("pid").value_or(0);
  join.gpu_ids = r.OptIntArray("gpu_ids").value_or(std::vector<int64_t>{});
  if (!r.ok()) return ErrorResponse(r.status());
  if (Status s = CheckWriterLabel(join.label, ctx->limits); !s.ok()) return ErrorResponse(s);
  // A re-join answers 200, a first join 201.
  bool existed = false;
  auto ws = ctx->store->ListWriters(*ref);
  if (ws.ok()) {
    for (const auto& w : *ws) existed = existed || w.label == join.label;
  }
  auto w = ctx->store->JoinWriter(*ref, join);
  if (!w.ok()) return ErrorResponse(w.status());
  if (existed && ctx->alerts) ctx->alerts->OnWriterRejoined(*ref, join.label, NowMillis());
  bj::value out = WriterToJson(*w);
  // Where the writer continues: a primary writer of a resumed run of its own (its client said
  // metadata.shared false) with another label goes on after the run's other primary writers
  // (run_state.h, JoinNextStep; docs/api.md). In a shared run every rank keeps its own steps,
  // all of them primary when launched without torchrun.
  if (ws.ok()) {
    auto run = ctx->store->GetRun(*ref);
    const bj::value meta = run.ok() ? ParseStoredJson(run->metadata_json) : bj::value();
    const bj::value* shared = meta.is_object() ? meta.as_object().if_contains("shared") : nullptr;
    if (shared != nullptr && shared->is_bool() && !shared->as_bool()) {
      out.as_object()["next_step"] = store::JoinNextStep(*w, *ws);
    }
  }
  // The limits a client can check media against when they are logged (docs/api.md).
  out.as_object()["media_limits"] =
      bj::object{{"max_media_file_bytes", int64_t(ctx->limits.max_media_file_bytes)},
                 {"max_media_per_step", ctx->limits.max_media_per_step}};
  return JsonResponse(existed ? 200 : 201, out);
}

http::HttpResponse Finish(ApiContext* ctx, http::HttpRequest& req, const AuthContext& who) {
  auto ref = RunRefFromPath(req, who);
  if (!ref.ok()) return ErrorResponse(ref.status());
  auto body = ParseBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.status());
  json::FieldReader r(*body, "");
  r.RejectUnknown({"exit_code", "state"});
  auto exit_code = r.OptInt("exit_code");
  auto state_name = r.OptString("state", 32);
  if (!r.ok()) return ErrorResponse(r.status());
  // A process's exit status is an int: a larger value is no exit code (it wrapped to 0 and
  // reported a clean exit).
  if (exit_code && (*exit_code < std::numeric_limits<int>::min() ||
                    *exit_code > std::numeric_limits<int>::max())) {
    return ErrorResponse(Status::InvalidArgument("exit_code: " + std::to_string(*exit_code) +
                                                 " is not an exit status (a 32-bit integer)"));
  }
  store::RunState state = store::StateForExitCode(int(exit_code.value_or(0)));
  if (state_name) {
    auto parsed = store::ParseRunState(*state_name);
    if (!parsed || !store::IsTerminal(*parsed)) {
      return ErrorResponse(Status::InvalidArgument(
          "state: expected finished, failed, crashed, killed or preempted"));
    }
    state = *parsed;
  }
  std::optional<int> code;
  if (exit_code) code = int(*exit_code);
  const int64_t now = NowMillis();
  auto w = ctx->store->FinishWriter(*ref, req.PathParam("label"), state, code, now);
  if (!w.ok()) return ErrorResponse(w.status());
  // In the request, so that the caller reads its end's alerts (its code alerts resolved, a
  // failure raised) as soon as it is answered.
  if (ctx->alerts) ctx->alerts->HandleWriterEnds(now);
  return JsonResponse(200, WriterToJson(*w));
}

}  // namespace

void RegisterWriterRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/runs/{entity}/{project}/{run}/writers";
  r.Add("POST", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return Join(ctx, req, who);
        }));
  r.Add("GET", base, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          if (auto run = ctx->store->GetRun(*ref); !run.ok()) return ErrorResponse(run.status());
          auto ws = ctx->store->ListWriters(*ref);
          if (!ws.ok()) return ErrorResponse(ws.status());
          bj::array out;
          for (const auto& w : *ws) out.push_back(WriterToJson(w));
          return JsonResponse(200, bj::object{{"writers", std::move(out)}});
        }));
  r.Add("POST", base + "/{label}/heartbeat",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          // Coalesced: remembered now, written with the others within a second.
          const int64_t now = NowMillis();
          const std::string label = req.PathParam("label");
          if (ctx->heartbeats) {
            if (Status s = ctx->heartbeats->Record(*ref, label, now); !s.ok()) {
              return ErrorResponse(s);
            }
          } else {
            auto revived = ctx->store->Heartbeat(*ref, label, now);
            if (!revived.ok()) return ErrorResponse(revived.status());
            if (*revived && ctx->alerts) ctx->alerts->OnWriterRevived(*ref, label, now);
          }
          if (ctx->alerts) ctx->alerts->OnHeartbeat(*ref, req.PathParam("label"), now);
          return JsonResponse(200, bj::object{{"ok", true}});
        }));
  r.Add("POST", base + "/{label}/finish",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          return Finish(ctx, req, who);
        }));
}

}  // namespace cohort::api
