// The root resolvers: Query (viewer, serverInfo, introspection probes, project/model/entity)
// and Mutation (upsertBucket, createRunFiles, markRunFilesUploaded; artifacts and alerts in
// their own files).
#include "server/compat/resolvers.h"

#include "core/json.h"
#include "core/limits.h"
#include "server/compat/alerts_compat.h"
#include "server/compat/artifacts_compat.h"
#include "server/compat/client_writers.h"
#include "server/compat/run_files.h"
#include "server/compat/wandb_lines.h"
#include "store/record_json.h"

namespace cohort::compat {
namespace {

// Fields listed by the introspection probes (__type(name) { fields { name } }): what Cohort
// answers. The vendor's clients probe to decide which optional features to use.
const std::vector<std::pair<std::string, std::vector<std::string>>>& KnownTypes() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kTypes = {
      {"Query", {"viewer", "serverInfo", "project", "model", "entity", "artifact"}},
      {"Mutation",
       {"upsertBucket", "createRunFiles", "markRunFilesUploaded", "createArtifact",
        "createArtifactManifest", "createArtifactFiles", "commitArtifact", "useArtifact",
        "notifyScriptableRunAlert"}},
      {"ServerInfo", {"cliVersionInfo", "latestLocalVersionInfo", "features"}},
      {"ServerSettings", {}},
  };
  return kTypes;
}

// __type(name): a type Cohort does not know is answered as a type without fields (a null type
// makes the vendor's SDK fail; an empty one makes it use no optional feature).
bj::object TypeJson(const std::string& name) {
  bj::array fields;
  for (const auto& [type, names] : KnownTypes()) {
    if (type != name) continue;
    for (const std::string& f : names) {
      fields.push_back(bj::object{{"name", f},
                                  {"args", bj::array{}},
                                  {"description", nullptr},
                                  {"isDeprecated", false},
                                  {"deprecationReason", nullptr},
                                  {"type", nullptr}});
    }
  }
  return bj::object{{"name", name},
                    {"kind", "OBJECT"},
                    {"description", nullptr},
                    {"fields", std::move(fields)},
                    {"inputFields", bj::array{}},
                    {"interfaces", bj::array{}},
                    {"enumValues", nullptr},
                    {"possibleTypes", nullptr}};
}

std::optional<std::string> StringField(const bj::object& in, std::string_view key) {
  const bj::value* v = in.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

Result<const bj::object*> InputArg(const gql::FieldInfo& f) {
  const bj::value* in = f.Arg("input");
  if (in == nullptr || !in->is_object()) {
    return Status::InvalidArgument(f.name() + ": argument \"input\" must be an object");
  }
  return &in->get_object();
}

// Parses a JSONString argument (bare NaN/Infinity allowed) as an object.
Result<bj::object> JsonStringObject(const std::string& text, std::string_view what) {
  auto parsed = ParseLine(text);
  if (!parsed.ok()) {
    return Status::InvalidArgument(std::string(what) + ": " + parsed.status().message());
  }
  return std::move(parsed).value();
}

class UpsertPayload : public gql::Object {
 public:
  UpsertPayload(GqlContext* c, store::RunRecord run, bool inserted)
      : c_(c), run_(std::move(run)), inserted_(inserted) {}
  std::string TypeName() const override { return "UpsertBucketPayload"; }
  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    if (f.name() == "bucket") return gql::Resolved::Of(MakeRunObject(c_, run_));
    if (f.name() == "inserted") return gql::Resolved::Json(inserted_);
    return gql::Resolved::Json(nullptr);
  }

 private:
  GqlContext* c_;
  store::RunRecord run_;
  bool inserted_;
};

class QueryRoot : public gql::Object {
 public:
  explicit QueryRoot(GqlContext* c) : c_(c) {}
  std::string TypeName() const override { return "Query"; }

  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    const std::string& n = f.name();
    if (n == "viewer") {
      const api::AuthContext& who = c_->who;
      return gql::Resolved::Json(bj::object{
          {"id", "key-" + std::to_string(who.key_id)},
          {"entity", who.entity},
          {"username", who.entity},
          {"name", who.entity},
          {"email", nullptr},
          {"admin", who.role == store::KeyRole::kAdmin},
          {"flags", "{}"},
          {"photoUrl", nullptr},
          {"teams", bj::object{{"edges", bj::array{}}}},
          {"defaultEntity", bj::object{{"id", who.entity}, {"name", who.entity}}}});
    }
    if (n == "serverInfo") {
      return gql::Resolved::Json(bj::object{{"cliVersionInfo", bj::object{}},
                                            {"latestLocalVersionInfo", nullptr},
                                            {"features", ServerFeatures()}});
    }
    if (n == "__type") return gql::Resolved::Json(TypeJson(f.StringArg("name")));
    if (n == "artifact") return ResolveArtifactById(c_, f);
    if (n == "project" || n == "model") {
      COHORT_ASSIGN_OR_RETURN(store::RunRef ref, CompatRunRef(c_->who, f.StringArg("entityName"),
                                                              f.StringArg("name"), ""));
      return gql::Resolved::Of(MakeProjectObject(c_, ref));
    }
    if (n == "entity") {
      std::string name = f.StringArg("name");
      if (!name.empty() && name != c_->who.entity) return gql::Resolved::Json(nullptr);
      return gql::Resolved::Json(bj::object{{"id", c_->who.entity},
                                            {"name", c_->who.entity},
                                            {"isTeam", false},
                                            {"organization", nullptr}});
    }
    return Status::InvalidArgument("Cannot query field \"" + n + "\" on type \"Query\"");
  }

 private:
  GqlContext* c_;
};

class MutationRoot : public gql::Object {
 public:
  explicit MutationRoot(GqlContext* c) : c_(c) {}
  std::string TypeName() const override { return "Mutation"; }

  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    const std::string& n = f.name();
    if (n == "upsertBucket") return UpsertBucket(f);
    if (n == "createRunFiles") return CreateRunFiles(f);
    if (n == "markRunFilesUploaded") return gql::Resolved::Json(bj::object{{"success", true}});
    if (IsArtifactMutation(n)) return ResolveArtifactMutation(c_, f);
    if (IsAlertMutation(n)) return ResolveAlertMutation(c_, f);
    return Status::InvalidArgument("Cannot query field \"" + n + "\" on type \"Mutation\"");
  }

 private:
  Result<gql::Resolved> UpsertBucket(const gql::FieldInfo& f) {
    COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
    std::string run_id = StringField(*in, "name").value_or("");
    std::string project = StringField(*in, "modelName").value_or("");
    if (run_id.empty()) {  // an update naming the run by the id an earlier answer gave
      store::RunRef from_id;
      if (auto id = StringField(*in, "id"); id && ParseBucketId(*id, &from_id)) {
        run_id = from_id.run_id;
        if (project.empty()) project = from_id.project;
      }
    }
    COHORT_ASSIGN_OR_RETURN(
        store::RunRef ref,
        CompatRunRef(c_->who, StringField(*in, "entityName").value_or(""), project, run_id));
    store::Store* store = c_->api->store;
    std::optional<store::RunRecord> existing;
    if (!ref.run_id.empty()) {
      auto got = store->GetRun(ref);
      if (got.ok()) {
        existing = std::move(got).value();
      } else if (got.status().code() != StatusCode::kNotFound) {
        return got.status();
      }
    }

    store::RunUpsert u;
    u.ref = ref;
    // The native API's limits (core/limits.h): a longer value is refused naming the field (it
    // was cut, possibly inside a character, and tags past the 256th dropped).
    auto bounded = [&](std::string_view field, size_t limit) -> Result<std::optional<std::string>> {
      std::optional<std::string> v = StringField(*in, field);
      if (v && v->size() > limit) {
        return Status::InvalidArgument("upsertBucket: " + std::string(field) + " is " +
                                       std::to_string(v->size()) + " bytes; at most " +
                                       std::to_string(limit));
      }
      return v;
    };
    COHORT_ASSIGN_OR_RETURN(u.name, bounded("displayName", limits::kMaxRunNameBytes));
    COHORT_ASSIGN_OR_RETURN(u.group, bounded("groupName", limits::kMaxGroupBytes));
    COHORT_ASSIGN_OR_RETURN(u.job_type, bounded("jobType", limits::kMaxJobTypeBytes));
    COHORT_ASSIGN_OR_RETURN(u.notes, bounded("notes", limits::kMaxNotesBytes));
    if (!u.notes) {
      COHORT_ASSIGN_OR_RETURN(u.notes, bounded("description", limits::kMaxNotesBytes));
    }
    COHORT_ASSIGN_OR_RETURN(std::optional<std::string> host,
                            bounded("host", limits::kMaxHostBytes));
    if (host && (!existing || existing->host.empty())) u.host = std::move(host);
    if (const bj::value* tags = in->if_contains("tags"); tags && tags->is_array()) {
      std::vector<std::string> list;
      for (const bj::value& t : tags->get_array()) {
        if (!t.is_string()) continue;
        if (t.get_string().size() > limits::kMaxTagBytes) {
          return Status::InvalidArgument("upsertBucket: a tag of " +
                                         std::to_string(t.get_string().size()) +
                                         " bytes; at most " + std::to_string(limits::kMaxTagBytes));
        }
        list.emplace_back(t.get_string());
      }
      if (list.size() > limits::kMaxTags) {
        return Status::InvalidArgument("upsertBucket: " + std::to_string(list.size()) +
                                       " tags; at most " + std::to_string(limits::kMaxTags));
      }
      u.tags = std::move(list);
    }
    bj::object meta_patch;
    if (auto config = StringField(*in, "config")) {
      COHORT_ASSIGN_OR_RETURN(bj::object cfg, JsonStringObject(*config, "config"));
      SplitConfig split = SplitWandbConfig(cfg);
      if (!split.user.empty()) u.config_json = bj::serialize(split.user);
      if (!split.telemetry.is_null()) meta_patch["wandb"] = std::move(split.telemetry);
    }
    for (const char* key : {"program", "commit", "repo", "sweep"}) {
      std::string field = std::string(key) == "program" ? "jobProgram"
                          : std::string(key) == "repo"  ? "jobRepo"
                                                        : key;
      if (auto v = StringField(*in, field); v && !v->empty()) meta_patch[key] = *v;
    }
    if (!meta_patch.empty()) {
      bj::value base = existing ? api::ParseStoredJson(existing->metadata_json) : bj::object{};
      if (!base.is_object()) base = bj::object{};
      DeepMerge(&base.get_object(), meta_patch);
      u.metadata_json = bj::serialize(base);
    }
    // The summary is checked before anything is written: a mutation refused for it writes
    // nothing (the run and its config were stored first).
    std::optional<std::string> summary_json;
    if (auto summary = StringField(*in, "summaryMetrics")) {
      COHORT_ASSIGN_OR_RETURN(bj::object s, JsonStringObject(*summary, "summaryMetrics"));
      summary_json = bj::serialize(CleanSummary(std::move(s)));
      if (summary_json->size() > store::kMaxRunDocumentBytes) {
        return Status::PayloadTooLarge("summaryMetrics: " + std::to_string(summary_json->size()) +
                                       " bytes as JSON; the limit is " +
                                       std::to_string(store::kMaxRunDocumentBytes) + " bytes");
      }
    }
    COHORT_ASSIGN_OR_RETURN(auto upserted, store->UpsertRun(u));
    store::RunRecord run = std::move(upserted.first);
    if (summary_json) {
      store::RunPatch patch;
      patch.summary_json = std::move(summary_json);
      COHORT_ASSIGN_OR_RETURN(run, store->PatchRun(store::RunRef{run.entity, run.project,
                                                                 run.run_id},
                                                   patch));
    }
    return gql::Resolved::Of(std::make_shared<UpsertPayload>(c_, std::move(run), upserted.second));
  }

  Result<gql::Resolved> CreateRunFiles(const gql::FieldInfo& f) {
    COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
    COHORT_ASSIGN_OR_RETURN(store::RunRef ref,
                            CompatRunRef(c_->who, StringField(*in, "entityName").value_or(""),
                                         StringField(*in, "projectName").value_or(""),
                                         StringField(*in, "runName").value_or("")));
    if (ref.run_id.empty()) return Status::InvalidArgument("createRunFiles: runName is required");
    std::vector<std::string> names;
    if (const bj::value* files = in->if_contains("files"); files && files->is_array()) {
      for (const bj::value& v : files->get_array()) {
        if (!v.is_string()) continue;
        if (names.size() >= 10000) return Status::InvalidArgument("createRunFiles: too many files");
        names.emplace_back(v.get_string());
      }
    }
    COHORT_ASSIGN_OR_RETURN(store::RunRecord run, EnsureRun(c_->api->store, ref));
    // Only the primary of a shared run uploads the run's metadata: that marks it.
    bool metadata = false;
    for (const std::string& n : names) {
      metadata = metadata || n == "wandb-metadata.json" || n == "config.yaml" ||
                 n == "requirements.txt" || n == "wandb-summary.json";
    }
    if (metadata && c_->client.shared) {
      ClientWriter cw(c_->api->store, run, c_->client);
      COHORT_RETURN_IF_ERROR(cw.Load());
      COHORT_RETURN_IF_ERROR(cw.Ensure(""));
      COHORT_RETURN_IF_ERROR(cw.Promote(true, false));
    }
    bj::array files;
    for (const std::string& name : names) {
      COHORT_ASSIGN_OR_RETURN(std::string url, UploadUrl(c_->api->signing_keys, c_->base_url,
                                                         c_->who, ref, name, c_->now_ms));
      files.push_back(bj::object{{"name", name}, {"uploadUrl", url}});
    }
    return gql::Resolved::Json(bj::object{{"runID", BucketId(ref)},
                                          {"uploadHeaders", bj::array{}},
                                          {"files", std::move(files)}});
  }

  GqlContext* c_;
};

}  // namespace

bj::array ServerFeatures() {
  bj::array out;
  out.push_back(bj::object{{"name", "STRUCTURED_CONSOLE_LOGS"}, {"isEnabled", true}});
  return out;
}

std::unique_ptr<gql::Object> MakeQueryRoot(GqlContext* c) { return std::make_unique<QueryRoot>(c); }

std::unique_ptr<gql::Object> MakeMutationRoot(GqlContext* c) {
  return std::make_unique<MutationRoot>(c);
}

}  // namespace cohort::compat
