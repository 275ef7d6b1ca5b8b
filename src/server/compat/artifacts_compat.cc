#include "server/compat/artifacts_compat.h"

#include <algorithm>
#include <charconv>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/text_encoding.h"
#include "server/compat/artifact_manifest.h"
#include "server/compat/artifact_uploads.h"
#include "server/compat/artifact_urls.h"
#include "server/compat/compat_context.h"
#include "server/compat/signed_url.h"
#include "server/compat/wandb_lines.h"

namespace cohort::compat {
namespace {

// The largest manifest read at commit.
constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;

// ---- ids: drafts and versions, as base64 (the vendor's core decodes ids as base64) ----
std::string DraftId(int64_t pk) { return Base64Encode("ArtifactDraft:" + std::to_string(pk)); }
std::string VersionId(int64_t pk) { return Base64Encode("Artifact:" + std::to_string(pk)); }

struct ParsedId {
  bool draft = false;
  int64_t pk = 0;
};
Result<ParsedId> ParseArtifactId(const std::string& id) {
  std::string text = Base64Decode(id);
  for (auto [prefix, draft] : {std::pair<std::string_view, bool>{"ArtifactDraft:", true},
                               std::pair<std::string_view, bool>{"Artifact:", false}}) {
    if (!text.starts_with(prefix)) continue;
    int64_t pk = 0;
    const char* b = text.data() + prefix.size();
    auto [p, ec] = std::from_chars(b, text.data() + text.size(), pk);
    if (ec == std::errc() && p == text.data() + text.size() && pk > 0) return ParsedId{draft, pk};
  }
  return Status::NotFound("artifact id \"" + id + "\" not found");
}

using namespace artifact_urls;  // NOLINT: the signed URLs of artifact_urls.h

// ---- what the answers hold ----
bj::object ProjectJson(const std::string& entity, const std::string& project) {
  return bj::object{{"__typename", "Project"},
                    {"id", Base64Encode("Project:" + entity + "/" + project)},
                    {"internalId", Base64Encode("Project:" + entity + "/" + project)},
                    {"name", project},
                    {"entityName", entity},
                    {"entity", bj::object{{"id", entity}, {"name", entity}}}};
}

bj::object SequenceJson(const std::string& entity, const std::string& project,
                        const std::string& name) {
  return bj::object{{"__typename", "ArtifactSequence"},
                    {"id", Base64Encode("ArtifactSequence:" + entity + "/" + project + "/" + name)},
                    {"name", name},
                    {"project", ProjectJson(entity, project)}};
}

bj::object VersionFragment(GqlContext* c, const store::ArtifactVersion& v) {
  bj::array aliases;
  for (const std::string& a : v.aliases) {
    aliases.push_back(bj::object{{"__typename", "ArtifactAlias"},
                                 {"id", Base64Encode("ArtifactAlias:" + std::to_string(v.pk) +
                                                     ":" + a)},
                                 {"alias", a},
                                 {"artifactCollectionName", v.name}});
  }
  bj::object o{{"__typename", "Artifact"},
               {"id", VersionId(v.pk)},
               {"artifactSequence", SequenceJson(v.entity, v.project, v.name)},
               {"artifactType", bj::object{{"__typename", "ArtifactType"}, {"name", v.type}}},
               {"ttlDurationSeconds", -1},
               {"ttlIsInherited", false},
               {"tags", bj::array{}},
               {"state", "COMMITTED"},
               {"size", v.size},
               {"digest", v.client_digest.empty() ? v.digest : v.client_digest},
               {"fileCount", v.file_count},
               {"createdAt", IsoTime(v.created_ms)},
               {"updatedAt", IsoTime(v.created_ms)},
               {"versionIndex", v.index},
               {"metadata", v.metadata_json},
               {"historyStep", nullptr},
               {"commitHash", nullptr},
               {"aliases", std::move(aliases)}};
  o["description"] = v.description ? bj::value(bj::string(*v.description)) : bj::value(nullptr);
  if (!v.client_manifest.empty()) {
    o["currentManifest"] = bj::object{
        {"id", Base64Encode("ArtifactManifest:" + std::to_string(v.pk))},
        {"file", bj::object{{"directUrl", DownloadUrl(c, v.client_manifest)}}}};
  } else if (std::string url = MadeManifestUrl(c, v.pk); !url.empty()) {
    // Logged by Cohort's SDK: a manifest made when it is asked for (artifact_manifest.h).
    o["currentManifest"] = bj::object{
        {"id", Base64Encode("ArtifactManifest:" + std::to_string(v.pk))},
        {"file", bj::object{{"directUrl", std::move(url)}}}};
  } else {
    o["currentManifest"] = nullptr;
  }
  return o;
}

bj::object DraftFragment(const store::ArtifactDraft& d) {
  return bj::object{{"__typename", "Artifact"},
                    {"id", DraftId(d.pk)},
                    {"artifactSequence", SequenceJson(d.entity, d.project, d.name)},
                    {"artifactType", bj::object{{"name", d.type}}},
                    {"ttlDurationSeconds", -1},
                    {"ttlIsInherited", false},
                    {"tags", bj::array{}},
                    {"state", "PENDING"},
                    {"size", 0},
                    {"digest", d.client_digest},
                    {"fileCount", 0},
                    {"createdAt", IsoTime(d.created_ms)},
                    {"updatedAt", IsoTime(d.created_ms)},
                    {"versionIndex", nullptr},
                    {"description", nullptr},
                    {"metadata", nullptr},
                    {"aliases", bj::array{}}};
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

// The committed version a vendor id names (a draft: once committed).
Result<store::ArtifactVersion> VersionOfId(GqlContext* c, const std::string& id) {
  COHORT_ASSIGN_OR_RETURN(ParsedId parsed, ParseArtifactId(id));
  int64_t pk = parsed.pk;
  if (parsed.draft) {
    COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d,
                            c->api->store->GetArtifactDraft(c->who.entity, parsed.pk));
    if (!d.version_pk) {
      return Status::FailedPrecondition("artifact " + d.name + " is not committed yet");
    }
    pk = *d.version_pk;
  }
  return c->api->store->GetArtifactVersionByPk(c->who.entity, pk);
}

// "name:alias" / "name:v3" / "name" (latest).
std::pair<std::string, std::string> SplitNameAlias(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return {s, "latest"};
  return {s.substr(0, colon), s.substr(colon + 1)};
}

// The content of version `v` logged again by `ref`'s run: committed as the native route commits
// an unchanged re-log (Store::CommitArtifact: the same digest as "latest" is that version, with
// `aliases` added and the run's "output" edge recorded); a new version of the same files when
// "latest" moved since `v` was read.
Result<store::ArtifactVersion> Relog(GqlContext* c, const store::RunRef& ref,
                                     const store::ArtifactVersion& v, const bj::array& aliases) {
  store::ArtifactCommit commit;
  commit.entity = v.entity;
  commit.project = v.project;
  commit.name = v.name;
  commit.type = v.type;
  commit.description = v.description;
  commit.metadata_json = v.metadata_json;
  commit.run_id = ref.run_id;
  commit.now_ms = c->now_ms;
  commit.client_digest = v.client_digest;
  commit.client_manifest = v.client_manifest;
  for (const bj::value& a : aliases) commit.aliases.emplace_back(a.get_string());
  COHORT_ASSIGN_OR_RETURN(commit.files, c->api->store->ListArtifactFiles(v));
  if (!commit.run_id.empty()) COHORT_RETURN_IF_ERROR(EnsureRun(c->api->store, ref).status());
  COHORT_ASSIGN_OR_RETURN(store::ArtifactLogged logged, c->api->store->CommitArtifact(commit));
  return std::move(logged.version);
}

// ---- mutations ----
Result<gql::Resolved> CreateArtifact(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref,
                          CompatRunRef(c->who, StringField(*in, "entityName").value_or(""),
                                       StringField(*in, "projectName").value_or(""),
                                       StringField(*in, "runName").value_or("")));
  store::ArtifactDraft d;
  d.entity = ref.entity;
  d.project = ref.project;
  d.name = StringField(*in, "artifactCollectionName").value_or("");
  d.type = StringField(*in, "artifactTypeName").value_or("");
  d.client_digest = StringField(*in, "digest").value_or("");
  d.client_id = StringField(*in, "clientID").value_or("");
  if (d.client_id.size() > 128) {
    return Status::InvalidArgument("createArtifact: clientID longer than 128 bytes");
  }
  d.created_ms = c->now_ms;
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifactCollectionName", d.name));
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifactTypeName", d.type));
  bj::array aliases;
  if (const bj::value* list = in->if_contains("aliases"); list && list->is_array()) {
    for (const bj::value& a : list->get_array()) {
      if (!a.is_object()) continue;
      auto alias = StringField(a.get_object(), "alias");
      if (!alias || *alias == "latest") continue;
      COHORT_RETURN_IF_ERROR(ValidateAliasName(*alias));
      aliases.push_back(bj::string(*alias));
    }
  }
  // Not kept by Cohort: refused rather than answered as if stored (a version with no TTL and
  // no tags would be a silent loss of what was asked).
  if (const bj::value* tags = in->if_contains("tags");
      tags && tags->is_array() && !tags->get_array().empty()) {
    return Status::InvalidArgument(
        "createArtifact: artifact tags are not supported by Cohort; log the artifact without "
        "tags (aliases are supported)");
  }
  if (const bj::value* ttl = in->if_contains("ttlDurationSeconds");
      ttl && ttl->is_number() && json::ToDouble(*ttl).value_or(0) > 0) {
    return Status::InvalidArgument(
        "createArtifact: artifact TTLs are not supported by Cohort (a version is kept until it "
        "is deleted); log the artifact without a ttl");
  }
  bj::object spec{{"aliases", aliases}, {"run", ref.run_id}};
  if (auto desc = StringField(*in, "description")) spec["description"] = *desc;
  if (auto meta = StringField(*in, "metadata")) {
    auto parsed = ParseLine(*meta);
    if (!parsed.ok()) return Status::InvalidArgument("metadata: " + parsed.status().message());
    spec["metadata"] = std::move(parsed).value();
  }
  d.spec_json = bj::serialize(spec);

  // The same content as the latest version: that version (the client uploads nothing).
  auto latest = c->api->store->GetArtifactVersion(d.entity, d.project, d.name, "latest");
  if (latest.ok()) {
    if (latest->type != d.type) {
      return Status::AlreadyExists("artifact " + d.name + " is of type \"" + latest->type +
                                   "\", not \"" + d.type + "\"");
    }
    if (!d.client_digest.empty() && latest->client_digest == d.client_digest) {
      COHORT_ASSIGN_OR_RETURN(store::ArtifactVersion same, Relog(c, ref, *latest, aliases));
      if (!d.client_id.empty()) {  // its client ID names that version (a table's artifact_path)
        d.version_pk = same.pk;
        COHORT_RETURN_IF_ERROR(c->api->store->CreateArtifactDraft(d).status());
      }
      bj::object art = VersionFragment(c, same);
      art["artifactSequence"].as_object()["latestArtifact"] =
          bj::object{{"id", VersionId(same.pk)}};
      return gql::Resolved::Json(bj::object{{"artifact", std::move(art)}});
    }
  } else if (latest.status().code() != StatusCode::kNotFound) {
    return latest.status();
  }
  COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft made, c->api->store->CreateArtifactDraft(d));
  bj::object art = DraftFragment(made);
  art["artifactSequence"].as_object()["latestArtifact"] =
      latest.ok() ? bj::value(bj::object{{"id", VersionId(latest->pk)}}) : bj::value(nullptr);
  return gql::Resolved::Json(bj::object{{"artifact", std::move(art)}});
}

Result<store::ArtifactDraft> DraftOfId(GqlContext* c, const std::string& id) {
  COHORT_ASSIGN_OR_RETURN(ParsedId parsed, ParseArtifactId(id));
  if (!parsed.draft) {
    return Status::FailedPrecondition("artifact \"" + id + "\" is committed already");
  }
  return c->api->store->GetArtifactDraft(c->who.entity, parsed.pk);
}

Result<gql::Resolved> CreateArtifactManifest(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d,
                          DraftOfId(c, StringField(*in, "artifactID").value_or("")));
  const std::string type = StringField(*in, "type").value_or("FULL");
  if (type != "FULL") {
    return Status::InvalidArgument("createArtifactManifest: only FULL manifests are supported "
                                   "(incremental and distributed artifacts are not yet)");
  }
  bj::object file{{"id", Base64Encode("File:manifest:" + std::to_string(d.pk))},
                  {"name", StringField(*in, "name").value_or("wandb_manifest.json")},
                  {"displayName", "wandb_manifest.json"},
                  {"uploadHeaders", bj::array{}},
                  {"uploadUrl", nullptr}};
  // The client asks twice: first without the manifest's digest (and without selecting the
  // upload URL, @include(if: $includeUpload)), then with it, for the URL.
  const std::string digest = StringField(*in, "digest").value_or("");
  if (!digest.empty()) {
    COHORT_ASSIGN_OR_RETURN(std::string url, UploadUrl(c, d.pk, "manifest", digest));
    file["uploadUrl"] = url;
  }
  return gql::Resolved::Json(bj::object{
      {"artifactManifest",
       bj::object{{"id", Base64Encode("ArtifactManifest:" + std::to_string(d.pk))},
                  {"file", std::move(file)}}}});
}

Result<gql::Resolved> CreateArtifactFiles(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  const bj::value* files = in->if_contains("artifactFiles");
  if (files == nullptr || !files->is_array()) {
    return Status::InvalidArgument("createArtifactFiles: artifactFiles must be a list");
  }
  std::vector<std::string> md5s;
  for (const bj::value& spec : files->get_array()) {
    if (spec.is_object()) md5s.push_back(StringField(spec.get_object(), "md5").value_or(""));
  }
  COHORT_ASSIGN_OR_RETURN(auto held, c->api->store->BlobsByMd5(c->who.entity, md5s));
  bj::array edges;
  std::map<std::string, store::ArtifactDraft> drafts;
  for (const bj::value& spec_value : files->get_array()) {
    if (!spec_value.is_object()) {
      return Status::InvalidArgument("createArtifactFiles: each file must be an object");
    }
    const bj::object& spec = spec_value.get_object();
    const std::string id = StringField(spec, "artifactID").value_or("");
    if (!drafts.count(id)) {
      COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d, DraftOfId(c, id));
      drafts.emplace(id, std::move(d));
    }
    const store::ArtifactDraft& d = drafts.at(id);
    const std::string name = StringField(spec, "name").value_or("");
    COHORT_RETURN_IF_ERROR(ValidateRelativePath("file name", name));
    const std::string md5 = StringField(spec, "md5").value_or("");
    const bj::value* parts = spec.if_contains("uploadPartsInput");
    if (parts != nullptr && parts->is_null()) parts = nullptr;
    if (parts != nullptr && (!parts->is_array() || parts->get_array().empty() ||
                             int64_t(parts->get_array().size()) >= kMaxMultipartParts)) {
      return Status::InvalidArgument("createArtifactFiles: \"" + name +
                                     "\": uploadPartsInput must list 1 to " +
                                     std::to_string(kMaxMultipartParts - 1) + " parts");
    }
    if (parts != nullptr) {  // all parts but the last are full: at least this big
      const uint64_t at_least = (parts->get_array().size() - 1) * kVendorPartBytes + 1;
      COHORT_RETURN_IF_ERROR(api::CheckArtifactFileSize(
          c->api->limits,
          "artifact file \"" + name + "\" (" + std::to_string(parts->get_array().size()) +
              " parts of 100 MiB: at least)",
          at_least));
    }
    bj::object node{{"__typename", "File"},
                    {"id", Base64Encode("File:" + std::to_string(d.pk) + ":" + name)},
                    {"name", name},
                    {"displayName", name.substr(name.rfind('/') + 1)},
                    {"uploadHeaders", bj::array{}},
                    {"uploadMultipartUrls", nullptr},
                    {"storagePath", HexLower(Base64Decode(md5))},
                    {"artifact", bj::object{{"id", DraftId(d.pk)}}}};
    auto it = held.find(md5);
    bool stored = false;
    if (it != held.end() && c->api->blobs != nullptr) {
      // "Nothing to upload" must hold until the commit: HoldsBlob touches the record first (gc
      // keeps a blob recorded within its grace period), then asks again.
      COHORT_ASSIGN_OR_RETURN(
          stored, api::HoldsBlob(c->api, c->who.entity, it->second.sha256, it->second.size));
    }
    if (stored) {
      node["uploadUrl"] = nullptr;  // the entity has these bytes: nothing to upload
    } else {
      COHORT_ASSIGN_OR_RETURN(std::string url, UploadUrl(c, d.pk, "file", md5, name));
      node["uploadUrl"] = url;
      if (parts != nullptr) {
        bj::array urls;
        int64_t number = 0;
        for (const bj::value& part : parts->get_array()) {
          const bj::object* po = part.is_object() ? &part.get_object() : nullptr;
          const std::string hex = po ? StringField(*po, "hexMD5").value_or("") : "";
          ++number;
          const bj::value* pn = po ? po->if_contains("partNumber") : nullptr;
          if (pn == nullptr || !pn->is_int64() || pn->get_int64() != number ||
              Md5FromHex(hex).empty()) {
            return Status::InvalidArgument("createArtifactFiles: \"" + name + "\": part " +
                                           std::to_string(number) +
                                           " needs partNumber " + std::to_string(number) +
                                           " and a hexMD5 of 32 hex digits");
          }
          COHORT_ASSIGN_OR_RETURN(
              std::string part_url,
              UploadUrl(c, d.pk, "part-" + std::to_string(number),
                        Base64Encode(Md5FromHex(hex)), name));
          urls.push_back(bj::object{{"partNumber", number}, {"uploadUrl", part_url}});
        }
        node["uploadMultipartUrls"] =
            bj::object{{"uploadID", HexLower(Base64Decode(md5))}, {"uploadUrlParts", urls}};
      }
    }
    edges.push_back(bj::object{{"node", std::move(node)}});
  }
  return gql::Resolved::Json(bj::object{{"files", bj::object{{"edges", std::move(edges)}}}});
}

// The manifest entries of a draft as a commit's files.
Result<std::vector<store::ArtifactFile>> ManifestFiles(GqlContext* c,
                                                       const store::ArtifactDraft& d) {
  if (d.manifest_sha256.empty()) {
    return Status::FailedPrecondition("artifact " + d.name +
                                      ": its manifest was not uploaded; nothing committed");
  }
  COHORT_ASSIGN_OR_RETURN(uint64_t size, c->api->blobs->Stat(d.manifest_sha256));
  if (size > kMaxManifestBytes) {
    return Status::PayloadTooLarge("artifact " + d.name + ": the manifest is over 64 MiB");
  }
  COHORT_ASSIGN_OR_RETURN(std::string text, c->api->blobs->Read(d.manifest_sha256, 0, size));
  COHORT_ASSIGN_OR_RETURN(bj::value manifest, json::Parse(text));
  const bj::value* contents =
      manifest.is_object() ? manifest.get_object().if_contains("contents") : nullptr;
  if (contents == nullptr || !contents->is_object()) {
    return Status::InvalidArgument("artifact " + d.name + ": the manifest has no \"contents\"");
  }
  std::vector<std::string> md5s;
  for (const auto& [path, entry] : contents->get_object()) {
    if (entry.is_object() && !entry.get_object().contains("ref")) {
      md5s.push_back(StringField(entry.get_object(), "digest").value_or(""));
    }
  }
  COHORT_ASSIGN_OR_RETURN(auto held, c->api->store->BlobsByMd5(d.entity, md5s));
  std::vector<store::ArtifactFile> files;
  for (const auto& [path, entry] : contents->get_object()) {
    if (!entry.is_object()) {
      return Status::InvalidArgument("artifact " + d.name + ": manifest entry \"" +
                                     std::string(path) + "\" is not an object");
    }
    const bj::object& e = entry.get_object();
    store::ArtifactFile file;
    file.path = std::string(path);
    const std::string digest = StringField(e, "digest").value_or("");
    if (const bj::value* size_v = e.if_contains("size"); size_v && size_v->is_int64()) {
      file.size = size_v->get_int64();
    }
    if (auto ref = StringField(e, "ref")) {
      file.ref = *ref;
      file.ref_digest = digest;
    } else {
      if (file.size > 0) {
        COHORT_RETURN_IF_ERROR(api::CheckArtifactFileSize(
            c->api->limits, "artifact " + d.name + ": file \"" + file.path + "\"",
            uint64_t(file.size)));
      }
      auto it = held.find(digest);
      if (it == held.end()) {
        return Status::FailedPrecondition("artifact " + d.name + ": file \"" + file.path +
                                          "\" was not uploaded; nothing committed");
      }
      file.sha256 = it->second.sha256;
      if (file.size >= 0 && file.size != it->second.size) {
        return Status::InvalidArgument("artifact " + d.name + ": file \"" + file.path +
                                       "\": the manifest says " + std::to_string(file.size) +
                                       " bytes, the upload had " +
                                       std::to_string(it->second.size));
      }
      file.size = it->second.size;
    }
    files.push_back(std::move(file));
  }
  return files;
}

Result<gql::Resolved> CommitArtifact(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  const std::string id = StringField(*in, "artifactID").value_or("");
  COHORT_ASSIGN_OR_RETURN(ParsedId parsed, ParseArtifactId(id));
  if (!parsed.draft) return gql::Resolved::Json(bj::object{{"artifact", bj::object{{"id", id}}}});
  COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d,
                          c->api->store->GetArtifactDraft(c->who.entity, parsed.pk));
  if (!d.version_pk) {
    if (c->api->blobs == nullptr) return Status::Unavailable("this server has no blob store");
    COHORT_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, ManifestFiles(c, d));
    COHORT_ASSIGN_OR_RETURN(bj::value spec, json::Parse(d.spec_json));
    const bj::object& s = spec.as_object();
    store::ArtifactCommit commit;
    commit.entity = d.entity;
    commit.project = d.project;
    commit.name = d.name;
    commit.type = d.type;
    commit.files = std::move(files);
    commit.now_ms = c->now_ms;
    commit.run_id = StringField(s, "run").value_or("");
    if (auto desc = StringField(s, "description")) commit.description = *desc;
    if (const bj::value* meta = s.if_contains("metadata"); meta && meta->is_object()) {
      commit.metadata_json = bj::serialize(*meta);
    }
    if (const bj::value* aliases = s.if_contains("aliases"); aliases && aliases->is_array()) {
      for (const bj::value& a : aliases->get_array()) {
        if (a.is_string()) commit.aliases.emplace_back(a.get_string());
      }
    }
    commit.client_digest = d.client_digest;
    commit.client_manifest = d.manifest_sha256;
    if (!commit.run_id.empty()) {
      COHORT_RETURN_IF_ERROR(
          EnsureRun(c->api->store, store::RunRef{d.entity, d.project, commit.run_id}).status());
    }
    COHORT_ASSIGN_OR_RETURN(store::ArtifactLogged logged, c->api->store->CommitArtifact(commit));
    COHORT_RETURN_IF_ERROR(
        c->api->store->SetArtifactDraftVersion(d.entity, d.pk, logged.version.pk));
  }
  return gql::Resolved::Json(
      bj::object{{"artifact", bj::object{{"id", id}, {"digest", d.client_digest}}}});
}

Result<gql::Resolved> UseArtifact(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  COHORT_ASSIGN_OR_RETURN(store::ArtifactVersion v,
                          VersionOfId(c, StringField(*in, "artifactID").value_or("")));
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref,
                          CompatRunRef(c->who, StringField(*in, "entityName").value_or(""),
                                       StringField(*in, "projectName").value_or(""),
                                       StringField(*in, "runName").value_or("")));
  if (!ref.run_id.empty()) {
    COHORT_RETURN_IF_ERROR(EnsureRun(c->api->store, ref).status());
    COHORT_RETURN_IF_ERROR(c->api->store
                               ->UseArtifact(v.project, v.name, VersionName(v.index), ref,
                                             "", c->now_ms)
                               .status());
  }
  return gql::Resolved::Json(bj::object{{"artifact", VersionFragment(c, v)}});
}

// completeMultipartUploadArtifact: the parts (each stored as a blob by its PUT) assembled into
// the file's blob, checked against the file's MD5 (uploadID and storagePath are its hex).
Result<gql::Resolved> CompleteMultipartUpload(GqlContext* c, const gql::FieldInfo& f) {
  COHORT_ASSIGN_OR_RETURN(const bj::object* in, InputArg(f));
  COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d,
                          DraftOfId(c, StringField(*in, "artifactID").value_or("")));
  const std::string md5_hex = StringField(*in, "uploadID").value_or("");
  const std::string md5 = Base64Encode(Md5FromHex(md5_hex));
  if (Md5FromHex(md5_hex).empty()) {
    return Status::InvalidArgument("completeMultipartUploadArtifact: unknown uploadID \"" +
                                   md5_hex + "\"");
  }
  if (StringField(*in, "completeMultipartAction").value_or("Complete") != "Complete") {
    return gql::Resolved::Json(bj::object{{"digest", nullptr}});  // aborted: parts go with gc
  }
  if (c->api->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  COHORT_ASSIGN_OR_RETURN(auto held, c->api->store->BlobsByMd5(d.entity, {md5}));
  if (auto it = held.find(md5); it != held.end() && c->api->blobs->Stat(it->second.sha256).ok()) {
    return gql::Resolved::Json(bj::object{{"digest", md5}});  // completed before (a retry)
  }
  std::vector<std::pair<int64_t, std::string>> numbered;
  if (const bj::value* parts = in->if_contains("completedParts"); parts && parts->is_array()) {
    for (const bj::value& part : parts->get_array()) {
      if (!part.is_object()) continue;
      const bj::value* n = part.get_object().if_contains("partNumber");
      std::string hex = StringField(part.get_object(), "hexMD5").value_or("");
      if (hex.size() == 34 && hex.front() == '"' && hex.back() == '"') hex = hex.substr(1, 32);
      numbered.emplace_back(n && n->is_int64() ? n->get_int64() : 0, std::move(hex));
    }
  }
  std::sort(numbered.begin(), numbered.end());
  std::vector<std::string> part_md5s;
  for (size_t k = 0; k < numbered.size(); ++k) {
    if (numbered[k].first != int64_t(k + 1)) {
      return Status::InvalidArgument("completeMultipartUploadArtifact: completedParts must be "
                                     "parts 1 to N, each once");
    }
    part_md5s.push_back(numbered[k].second);
  }
  COHORT_ASSIGN_OR_RETURN(StreamedBlob blob,
                          AssembleMultipartUpload(c->api, d.entity, md5_hex, part_md5s,
                                                  "the multipart upload " + md5_hex));
  return gql::Resolved::Json(bj::object{{"digest", Base64Encode(blob.md5_raw)}});
}

}  // namespace

bool IsArtifactMutation(const std::string& name) {
  return name == "createArtifact" || name == "createArtifactManifest" ||
         name == "updateArtifactManifest" || name == "createArtifactFiles" ||
         name == "commitArtifact" || name == "useArtifact" ||
         name == "completeMultipartUploadArtifact";
}

Result<gql::Resolved> ResolveArtifactMutation(GqlContext* c, const gql::FieldInfo& f) {
  const std::string& n = f.name();
  if (n == "createArtifact") return CreateArtifact(c, f);
  if (n == "createArtifactManifest") return CreateArtifactManifest(c, f);
  if (n == "createArtifactFiles") return CreateArtifactFiles(c, f);
  if (n == "commitArtifact") return CommitArtifact(c, f);
  if (n == "useArtifact") return UseArtifact(c, f);
  if (n == "completeMultipartUploadArtifact") return CompleteMultipartUpload(c, f);
  return Status::InvalidArgument(n + ": incremental and distributed artifact uploads are not "
                                     "supported by Cohort yet");
}

Result<gql::Resolved> ResolveArtifactById(GqlContext* c, const gql::FieldInfo& f) {
  const std::string id = f.StringArg("id");
  COHORT_ASSIGN_OR_RETURN(ParsedId parsed, ParseArtifactId(id));
  if (parsed.draft) {
    COHORT_ASSIGN_OR_RETURN(store::ArtifactDraft d,
                            c->api->store->GetArtifactDraft(c->who.entity, parsed.pk));
    if (!d.version_pk) return gql::Resolved::Json(DraftFragment(d));
  }
  auto v = VersionOfId(c, id);
  if (!v.ok()) {
    if (v.status().code() == StatusCode::kNotFound) return gql::Resolved::Json(nullptr);
    return v.status();
  }
  bj::object out = VersionFragment(c, *v);
  out["id"] = id;  // the id the client knows
  return gql::Resolved::Json(std::move(out));
}

namespace {

// Project.artifactCollection(name) { artifactMembership(aliasName) { files(after, first) } }:
// where the vendor's SDK gets each file's download URL (all on one page).
class CollectionObject : public gql::Object {
 public:
  CollectionObject(GqlContext* c, store::RunRef project, std::string name)
      : c_(c), project_(std::move(project)), name_(std::move(name)) {}
  std::string TypeName() const override { return "ArtifactSequence"; }
  Result<gql::Resolved> Resolve(const gql::FieldInfo& f) override {
    const std::string& n = f.name();
    if (n == "__typename") return gql::Resolved::Json("ArtifactSequence");
    if (n == "name") return gql::Resolved::Json(bj::string(name_));
    if (n == "id") {
      return gql::Resolved::Json(bj::string(
          Base64Encode("ArtifactSequence:" + project_.entity + "/" + project_.project + "/" + name_)));
    }
    if (n != "artifactMembership" && n != "artifact") return gql::Resolved::Json(nullptr);
    std::string alias = f.StringArg("aliasName");
    if (alias.empty()) alias = f.StringArg("name");
    if (alias.empty()) alias = "latest";
    auto v = c_->api->store->GetArtifactVersion(project_.entity, project_.project, name_, alias);
    if (!v.ok()) {
      if (v.status().code() == StatusCode::kNotFound) return gql::Resolved::Json(nullptr);
      return v.status();
    }
    COHORT_ASSIGN_OR_RETURN(auto files, c_->api->store->ListArtifactFiles(*v));
    bj::array edges;
    for (const store::ArtifactFile& file : files) {
      if (!file.ref.empty()) continue;  // references are fetched from where they point
      edges.push_back(bj::object{
          {"node", bj::object{{"__typename", "File"},
                              {"id", Base64Encode("File:" + std::to_string(v->pk) + ":" +
                                                  file.path)},
                              {"name", file.path},
                              {"directUrl", DownloadUrl(c_, file.sha256)},
                              {"url", DownloadUrl(c_, file.sha256)},
                              {"sizeBytes", file.size}}}});
    }
    bj::object out = VersionFragment(c_, *v);
    out["files"] = bj::object{
        {"pageInfo", bj::object{{"__typename", "PageInfo"}, {"endCursor", nullptr},
                                {"hasNextPage", false}}},
        {"edges", std::move(edges)}};
    return gql::Resolved::Json(std::move(out));
  }

 private:
  GqlContext* c_;
  store::RunRef project_;
  std::string name_;
};

}  // namespace

bool IsProjectArtifactField(const std::string& name) {
  return name == "artifact" || name == "artifactType" ||
         name == "artifactCollectionMembership" || name == "artifactCollection" ||
         name == "artifactSequence";
}

Result<gql::Resolved> ResolveProjectArtifactField(GqlContext* c, const store::RunRef& project,
                                                  const gql::FieldInfo& f) {
  auto [name, alias] = SplitNameAlias(f.StringArg("name"));
  if (f.name() == "artifactCollection" || f.name() == "artifactSequence") {
    std::string collection = f.StringArg("name");
    auto versions = c->api->store->ListArtifactVersions(project.entity, project.project,
                                                        collection);
    if (!versions.ok()) {
      if (versions.status().code() == StatusCode::kNotFound ||
          versions.status().code() == StatusCode::kInvalidArgument) {
        return gql::Resolved::Json(nullptr);
      }
      return versions.status();
    }
    return gql::Resolved::Of(std::make_shared<CollectionObject>(c, project, collection));
  }
  auto v = c->api->store->GetArtifactVersion(project.entity, project.project, name, alias);
  if (!v.ok()) {
    if (v.status().code() == StatusCode::kNotFound ||
        v.status().code() == StatusCode::kInvalidArgument) {
      return gql::Resolved::Json(nullptr);
    }
    return v.status();
  }
  if (f.name() == "artifactType") {
    return gql::Resolved::Json(bj::object{{"__typename", "ArtifactType"}, {"name", v->type}});
  }
  bj::object art = VersionFragment(c, *v);
  if (f.name() == "artifact") return gql::Resolved::Json(std::move(art));
  // artifactCollectionMembership
  return gql::Resolved::Json(
      bj::object{{"__typename", "ArtifactCollectionMembership"},
                 {"id", Base64Encode("ArtifactCollectionMembership:" + std::to_string(v->pk))},
                 {"versionIndex", v->index},
                 {"createdAt", IsoTime(v->created_ms)},
                 {"aliases", art["aliases"]},
                 {"artifactCollection", SequenceJson(v->entity, v->project, v->name)},
                 {"artifact", std::move(art)}});
}

Status CheckSignedArtifactUpload(api::ApiContext* ctx, const http::HttpRequest& head) {
  std::string_view path = head.target;
  path = path.substr(0, path.find('?'));
  constexpr std::string_view kPrefix = "/artifacts-upload/";
  if (head.method != "PUT" || !path.starts_with(kPrefix)) {
    return Status::NotFound("not an artifact upload");
  }
  path.remove_prefix(kPrefix.size());
  std::vector<std::string> seg;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    seg.push_back(http::PercentDecode(path.substr(start, end - start)));
    start = end + 1;
  }
  if (seg.size() != 4) return Status::Unauthenticated("this request needs an API key");
  COHORT_ASSIGN_OR_RETURN(UploadPath p, ParseUploadPath(seg[0], seg[1], seg[2], seg[3]));
  return CheckSignedUrl(ctx, head, "artifact file", p.entity, [&](int64_t key, int64_t expires) {
    return UploadText(key, p.entity, p.draft, p.kind, p.md5_hex, expires);
  });
}

void RegisterArtifactCompatRoutes(http::Router& r, api::ApiContext* ctx) {
  r.Add("PUT", "/artifacts-upload/{entity}/{draft}/{kind}/{md5}",
        Guarded("artifact upload", [ctx](http::HttpRequest& req) {
          auto p = ParseUploadPath(req.PathParam("entity"), req.PathParam("draft"),
                                   req.PathParam("kind"), req.PathParam("md5"));
          if (!p.ok()) return api::ErrorResponse(p.status());
          Status signed_ok =
              CheckSignedUrl(ctx, req, "artifact file", p->entity, [&](int64_t key, int64_t x) {
                return UploadText(key, p->entity, p->draft, p->kind, p->md5_hex, x);
              });
          if (!signed_ok.ok()) return api::ErrorResponse(signed_ok);
          if (ctx->blobs == nullptr) {
            return api::ErrorResponse(Status::Unavailable("this server has no blob store"));
          }
          auto draft = ctx->store->GetArtifactDraft(p->entity, p->draft);
          if (!draft.ok()) return api::ErrorResponse(draft.status());
          const std::string file = req.QueryParam("f");
          std::string what = p->kind == "manifest" ? "the artifact manifest"
                             : file.empty()        ? "the artifact file"
                                                   : "artifact file \"" + file + "\"";
          if (int64_t part = MultipartPartNumber(p->kind); part > 0) {
            what = "part " + std::to_string(part) + " of " + what;
          }
          auto stored = StreamIntoBlobStore(ctx, req.body_reader, p->entity, p->md5_hex, what);
          if (!stored.ok()) return api::ErrorResponse(stored.status());
          const std::string& sha = stored->sha256;
          const uint64_t size = stored->size;
          if (p->kind == "manifest") {
            if (Status s = ctx->store->SetArtifactDraftManifest(p->entity, p->draft, sha);
                !s.ok()) {
              return api::ErrorResponse(s);
            }
          }
          auto resp = api::JsonResponse(200, bj::object{{"sha256", sha}, {"size", int64_t(size)}});
          resp.headers.emplace_back("ETag", "\"" + p->md5_hex + "\"");
          return resp;
        }),
        http::RouteOptions{.stream_body = true,
                           .streamed_body_memory_bytes = limits::kBlobPartBytes});

  r.Add("GET", "/artifacts-download/{entity}/{sha256}",
        Guarded("artifact download", [ctx](http::HttpRequest& req) {
          const std::string entity = req.PathParam("entity");
          const std::string sha = req.PathParam("sha256");
          if (!IsSha256Hex(sha)) return api::ErrorResponse(Status::NotFound("no such file"));
          Status signed_ok =
              CheckSignedUrl(ctx, req, "artifact file", entity, [&](int64_t key, int64_t x) {
                return DownloadText(key, entity, sha, x);
              });
          if (!signed_ok.ok()) return api::ErrorResponse(signed_ok);
          auto held = ctx->store->HeldBlobs(entity, {sha});
          if (!held.ok()) return api::ErrorResponse(held.status());
          if (!held->count(sha) || ctx->blobs == nullptr) {
            return api::ErrorResponse(Status::NotFound("no such file"));
          }
          return api::ServeBlobBytes(ctx, req, sha, uint64_t(held->at(sha)), sha);
        }));
}

}  // namespace cohort::compat
