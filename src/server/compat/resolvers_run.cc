// The vendor's Run (bucket) and Project types over Cohort's runs: what clients read back after
// UpsertBucket, and what RunResumeStatus / RunStoppedStatus / RunState ask for.
#include <cmath>

#include "core/json.h"
#include "core/limits.h"
#include "server/compat/artifacts_compat.h"
#include "server/compat/client_writers.h"
#include "server/compat/resolvers.h"
#include "server/compat/run_files.h"
#include "server/compat/wandb_lines.h"

namespace cohort::compat {
namespace {

bj::object ParseObject(const std::string& text) {
  bj::value v = api::ParseStoredJson(text);
  return v.is_object() ? std::move(v.get_object()) : bj::object{};
}

bj::value NumberOrString(double v) { return json::FromDouble(v); }

class RunObject : public gql::Object {
 public:
  RunObject(GqlContext* c, store::RunRecord run) : c_(c), run_(std::move(run)) {}

  std::string TypeName() const override { return "Run"; }

  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    const std::string& n = f.name();
    store::RunRef ref{run_.entity, run_.project, run_.run_id};
    auto json = [](bj::value v) { return gql::Resolved::Json(std::move(v)); };
    if (n == "id") return json(bj::string(BucketId(ref)));
    if (n == "name") return json(bj::string(run_.run_id));
    if (n == "displayName") return json(bj::string(run_.name.empty() ? run_.run_id : run_.name));
    if (n == "description" || n == "notes") return json(bj::string(run_.notes));
    if (n == "group" || n == "groupName") return json(bj::string(run_.group));
    if (n == "jobType") return json(bj::string(run_.job_type));
    if (n == "host") return json(bj::string(run_.host));
    if (n == "state") return json(bj::string(store::RunStateName(run_.state)));
    if (n == "stopped") return json(false);
    if (n == "exitcode") return json(run_.exit_code ? bj::value(*run_.exit_code) : nullptr);
    if (n == "sweepName") return json(nullptr);
    if (n == "createdAt") return json(bj::string(IsoTime(run_.created_ms)));
    if (n == "updatedAt") return json(bj::string(IsoTime(run_.updated_ms)));
    if (n == "heartbeatAt") return json(bj::string(IsoTime(run_.heartbeat_ms)));
    if (n == "tags") {
      bj::array tags;
      for (const std::string& t : run_.tags) tags.emplace_back(t);
      return json(std::move(tags));
    }
    if (n == "config") {
      return json(bj::string(bj::serialize(ToWandbConfig(ParseObject(run_.config_json)))));
    }
    if (n == "summaryMetrics") return json(bj::string(run_.summary_json));
    if (n == "wandbConfig") return json(bj::string(WandbConfig(f)));
    if (n == "project") return json(ProjectJson());
    if (n == "historyLineCount" || n == "eventsLineCount" || n == "logLineCount") {
      COHORT_RETURN_IF_ERROR(LoadClient());
      std::string_view file = n == "historyLineCount" ? "wandb-history.jsonl"
                              : n == "eventsLineCount" ? "wandb-events.jsonl"
                                                       : "output.log";
      return json(cw_->Position(file));
    }
    if (n == "historyTail") return HistoryTail();
    if (n == "eventsTail") return json(bj::string("[]"));
    if (n == "files") return Files(f);
    return json(nullptr);  // a field Cohort does not keep
  }

 private:
  Status LoadClient() {
    if (cw_) return Status::Ok();
    cw_ = std::make_unique<ClientWriter>(c_->api->store, run_, c_->client);
    return cw_->Load();
  }

  bj::object ProjectJson() const {
    return bj::object{{"id", bj::string(run_.entity + "/" + run_.project)},
                      {"name", run_.project},
                      {"entityName", run_.entity},
                      {"entity", bj::object{{"id", run_.entity}, {"name", run_.entity}}}};
  }

  // The client telemetry keys asked for (wandbConfig(keys: ["t"])), as a JSON string.
  std::string WandbConfig(const gql::FieldInfo& f) const {
    bj::object meta = ParseObject(run_.metadata_json);
    bj::object out;
    const bj::value* wandb = meta.if_contains("wandb");
    const bj::value* keys = f.Arg("keys");
    if (wandb && wandb->is_object()) {
      for (const auto& kv : wandb->get_object()) {
        bool wanted = !keys || !keys->is_array();
        if (keys && keys->is_array()) {
          for (const bj::value& k : keys->get_array()) {
            wanted = wanted || (k.is_string() && k.get_string() == kv.key());
          }
        }
        if (wanted) out[kv.key()] = kv.value();
      }
    }
    return bj::serialize(out);
  }

  // The client's last history row, as the vendor's historyTail: a JSON string of a list of
  // JSON strings. A resuming client continues its steps from it.
  Result<gql::Resolved> HistoryTail() {
    COHORT_RETURN_IF_ERROR(LoadClient());
    bj::array tail;
    if (cw_->bound()) {
      store::RunRef ref{run_.entity, run_.project, run_.run_id};
      COHORT_ASSIGN_OR_RETURN(auto series, c_->api->store->ListSeries(ref));
      int64_t last = -1;
      std::vector<std::string> keys;
      for (const store::SeriesInfo& s : series) {
        if (s.writer != cw_->label() || s.key.starts_with(limits::kSystemKeyPrefix) || s.count == 0) continue;
        last = std::max(last, s.max_step);
        keys.push_back(s.key);
      }
      if (last >= 0) {
        store::HistoryQuery q;
        q.run = ref;
        q.keys = keys;
        q.writers = {cw_->label()};
        q.series.min_step = last;
        q.series.max_step = last;
        COHORT_ASSIGN_OR_RETURN(auto data, c_->api->store->QueryHistory(q));
        bj::object row;
        row["_step"] = last;
        int64_t time = 0;
        for (const store::SeriesData& s : data) {
          if (s.points.empty()) continue;
          row[s.key] = NumberOrString(s.points.back().value);
          time = std::max(time, s.points.back().time_ms);
        }
        if (time > 0) {
          row["_timestamp"] = double(time) / 1000.0;
          row["_runtime"] = std::max<double>(0, double(time - run_.created_ms) / 1000.0);
        }
        tail.emplace_back(bj::serialize(row));
      }
    }
    return gql::Resolved::Json(bj::string(bj::serialize(tail)));
  }

  // files(names: [...]) { uploadHeaders edges { node { name url directUrl sizeBytes } } }
  Result<gql::Resolved> Files(const gql::FieldInfo& f) {
    store::RunRef ref{run_.entity, run_.project, run_.run_id};
    std::vector<std::string> names;
    if (const bj::value* v = f.Arg("names"); v && v->is_array()) {
      for (const bj::value& n : v->get_array()) {
        if (n.is_string() && names.size() < 10000) names.emplace_back(n.get_string());
      }
    } else {
      COHORT_ASSIGN_OR_RETURN(auto files, c_->api->store->ListRunFiles(ref));
      for (const store::RunFile& file : files) names.push_back(file.name);
    }
    bj::array edges;
    for (const std::string& name : names) {
      if (name.empty()) continue;
      auto upload = UploadUrl(c_->api->signing_keys, c_->base_url, c_->who, ref, name, c_->now_ms);
      std::string download = DownloadUrl(c_->base_url, ref, name);
      bj::object node{{"id", name},
                      {"name", name},
                      {"url", upload.ok() ? *upload : download},
                      {"directUrl", download},
                      {"updatedAt", IsoTime(c_->now_ms)}};
      edges.push_back(bj::object{{"node", std::move(node)}});
    }
    return gql::Resolved::Json(
        bj::object{{"uploadHeaders", bj::array{}}, {"edges", std::move(edges)}});
  }

  GqlContext* c_;
  store::RunRecord run_;
  std::unique_ptr<ClientWriter> cw_;
};

class ProjectObject : public gql::Object {
 public:
  ProjectObject(GqlContext* c, store::RunRef ref) : c_(c), ref_(std::move(ref)) {}

  std::string TypeName() const override { return "Project"; }

  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    const std::string& n = f.name();
    if (n == "id") return gql::Resolved::Json(bj::string(ref_.entity + "/" + ref_.project));
    if (n == "name") return gql::Resolved::Json(bj::string(ref_.project));
    if (n == "entityName") return gql::Resolved::Json(bj::string(ref_.entity));
    if (n == "entity") {
      return gql::Resolved::Json(bj::object{{"id", ref_.entity}, {"name", ref_.entity}});
    }
    if (n == "run" || n == "bucket") {
      store::RunRef ref = ref_;
      ref.run_id = f.StringArg("name");
      if (ref.run_id.empty()) return gql::Resolved::Of(nullptr);
      auto run = c_->api->store->GetRun(ref);
      if (!run.ok()) {
        // missingOk or not: an absent run is null, as the vendor's server answers.
        if (run.status().code() == StatusCode::kNotFound ||
            run.status().code() == StatusCode::kInvalidArgument) {
          return gql::Resolved::Of(nullptr);
        }
        return run.status();
      }
      return gql::Resolved::Of(MakeRunObject(c_, std::move(run).value()));
    }
    if (IsProjectArtifactField(n)) return ResolveProjectArtifactField(c_, ref_, f);
    return gql::Resolved::Json(nullptr);
  }

 private:
  GqlContext* c_;
  store::RunRef ref_;
};

}  // namespace

gql::ObjectPtr MakeRunObject(GqlContext* c, store::RunRecord run) {
  return std::make_shared<RunObject>(c, std::move(run));
}

gql::ObjectPtr MakeProjectObject(GqlContext* c, store::RunRef project) {
  return std::make_shared<ProjectObject>(c, std::move(project));
}

}  // namespace cohort::compat
