#include "agent/artifact_intent.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "core/json.h"
#include "core/limits.h"
#include "core/sha256.h"
#include "core/utf8.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;

constexpr size_t kMaxPathBytes = kMaxRelativePathBytes;
constexpr size_t kMaxUriBytes = 4096;
constexpr size_t kMaxDescriptionBytes = limits::kMaxArtifactDescriptionBytes;
constexpr size_t kMaxAliases = limits::kMaxArtifactAliases;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Result<bj::object> ParseObject(std::string_view json, std::string_view what) {
  auto v = json::Parse(json);
  if (!v.ok()) return Status::InvalidArgument(std::string(what) + ": " + v.status().message());
  if (!v->is_object()) return Status::InvalidArgument(std::string(what) + ": expected an object");
  return std::move(v->as_object());
}

bool KnownScheme(std::string_view uri) {
  return uri.starts_with("file://") || uri.starts_with("s3://") || uri.starts_with("http://") ||
         uri.starts_with("https://");
}

bj::object FileJson(const ArtifactFileEntry& f, bool with_source) {
  bj::object o;
  o["path"] = f.path;
  if (f.is_ref()) {
    o["ref"] = f.ref;
    if (!f.digest.empty()) o["digest"] = f.digest;
    if (f.size >= 0) o["size"] = f.size;
  } else {
    o["sha256"] = f.sha256;
    o["size"] = f.size;
    if (with_source) o["source"] = f.source;
  }
  return o;
}

bj::object IntentJson(const ArtifactIntent& in, bool local) {
  bj::object o;
  if (local) {
    o["id"] = in.id;
    o["name"] = in.name;  // the commit names it in its URL
  }
  o["type"] = in.type;
  if (!in.description.empty()) o["description"] = in.description;
  auto meta = json::Parse(in.metadata_json);
  o["metadata"] = meta.ok() ? std::move(*meta) : bj::value(bj::object());
  bj::array aliases;
  for (const auto& a : in.aliases) aliases.push_back(bj::value(a));
  o["aliases"] = std::move(aliases);
  if (!in.run.empty()) o["run"] = in.run;
  if (!in.writer.empty()) o["writer"] = in.writer;
  if (local && !in.staging.empty()) o["staging"] = in.staging;
  if (in.media) o["media"] = true;
  bj::array files;
  for (const auto& f : in.files) files.push_back(FileJson(f, local));
  o["files"] = std::move(files);
  return o;
}

}  // namespace

int64_t ArtifactIntent::blob_bytes() const {
  int64_t n = 0;
  for (const auto& f : files) {
    if (!f.is_ref()) n += f.size;
  }
  return n;
}

Result<ArtifactIntent> ParseArtifactIntent(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "artifact"));
  json::FieldReader r(o, "artifact");
  r.RejectUnknown({"id", "name", "type", "description", "metadata", "aliases", "run", "writer",
                   "staging", "files", "media"});
  ArtifactIntent in;
  in.media = r.OptBool("media").value_or(false);
  in.id = r.String("id", 64);
  in.name = r.String("name", 256);
  in.type = r.String("type", 256);
  in.description = r.OptString("description", kMaxDescriptionBytes).value_or("");
  if (const bj::object* meta = r.OptObject("metadata")) in.metadata_json = bj::serialize(*meta);
  in.aliases = r.OptStringArray("aliases", 256).value_or(std::vector<std::string>{});
  in.run = r.OptString("run", 256).value_or("");
  in.writer = r.OptString("writer", 256).value_or("");
  in.staging = r.OptString("staging", 4096).value_or("");
  const bj::array* files = r.OptArray("files");
  if (!r.ok()) return r.status();
  if (in.id.empty() || !std::all_of(in.id.begin(), in.id.end(), NameChar)) {
    return Status::InvalidArgument("artifact.id: expected 1-64 bytes of A-Z a-z 0-9 . _ -");
  }
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact name", in.name));
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact type", in.type));
  if (in.aliases.size() > kMaxAliases) {
    return Status::InvalidArgument("artifact.aliases: at most 64");
  }
  for (const auto& a : in.aliases) COHORT_RETURN_IF_ERROR(ValidateAliasName(a));
  if (!files) return Status::InvalidArgument("artifact.files: required");
  if (files->size() > limits::kMaxArtifactFiles) {
    return Status::InvalidArgument("artifact.files: more than " +
                                   std::to_string(limits::kMaxArtifactFiles) +
                                   " files; split the set into several artifacts");
  }
  if (in.metadata_json.size() > limits::kMaxArtifactMetadataBytes) {
    return Status::InvalidArgument("artifact.metadata: larger than 1 MiB");
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string where = "artifact.files[" + std::to_string(i) + "]";
    if (!(*files)[i].is_object()) return Status::InvalidArgument(where + ": expected an object");
    json::FieldReader f((*files)[i].as_object(), where);
    f.RejectUnknown({"path", "sha256", "size", "source", "ref", "digest"});
    ArtifactFileEntry e;
    e.path = f.String("path", kMaxPathBytes + 1);
    e.ref = f.OptString("ref", kMaxUriBytes).value_or("");
    e.digest = f.OptString("digest", 1024).value_or("");
    e.sha256 = f.OptString("sha256", 64).value_or("");
    e.source = f.OptString("source", 4096).value_or("");
    e.size = f.OptInt("size").value_or(-1);
    if (!f.ok()) return f.status();
    COHORT_RETURN_IF_ERROR(ValidateRelativePath("artifact file path", e.path));
    if (e.is_ref()) {
      if (!KnownScheme(e.ref)) {
        return Status::InvalidArgument(where + ".ref '" + e.ref +
                                       "': only file://, s3://, http:// and https:// references");
      }
      if (!e.sha256.empty() || !e.source.empty()) {
        return Status::InvalidArgument(where + ": a reference has no sha256 or source");
      }
    } else {
      if (!cohort::IsSha256Hex(e.sha256)) {
        return Status::InvalidArgument(where + ".sha256: expected 64 lowercase hex digits");
      }
      if (e.size < 0) return Status::InvalidArgument(where + ".size: required, >= 0");
      if (e.source.empty() || e.source.front() != '/') {
        return Status::InvalidArgument(where + ".source: expected an absolute path");
      }
    }
    in.files.push_back(std::move(e));
  }
  for (const auto& e : in.files) {
    if (!seen.insert(e.path).second) {
      return Status::InvalidArgument("artifact.files: the path '" + e.path + "' is given twice");
    }
  }
  return in;
}

std::string ToJson(const ArtifactIntent& intent) { return bj::serialize(IntentJson(intent, true)); }

std::string CommitBody(const ArtifactIntent& intent) {
  return bj::serialize(IntentJson(intent, false));
}

std::string ManifestDigest(const ArtifactIntent& intent) {
  std::vector<const ArtifactFileEntry*> sorted;
  for (const auto& f : intent.files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->path < b->path; });
  Sha256 h;
  h.Update("cohort-artifact-manifest-v1\n");
  for (const auto* f : sorted) {
    std::string line = f->path + "\t";
    if (f->is_ref()) {
      line += "ref:" + f->ref + "\t" + f->digest + "\t" +
              (f->size >= 0 ? std::to_string(f->size) : std::string());
    } else {
      line += f->sha256 + "\t" + std::to_string(f->size);
    }
    line += "\n";
    h.Update(line);
  }
  return h.FinishHex();
}

// ---- status ----

std::string ToJson(const ArtifactStatus& s) {
  bj::object o;
  o["id"] = s.id;
  o["state"] = s.state;
  if (!s.name.empty()) o["name"] = s.name;
  o["files_total"] = s.files_total;
  o["files_done"] = s.files_done;
  o["bytes_total"] = s.bytes_total;
  o["bytes_done"] = s.bytes_done;
  if (!s.current.empty()) o["current"] = s.current;
  if (!s.version.empty()) {
    o["version"] = s.version;
    o["digest"] = s.digest;
    o["size"] = s.size;
    o["created"] = s.created;
  }
  o["parts_uploaded"] = s.parts_uploaded;
  if (!s.error.empty()) o["error"] = s.error;
  if (!s.last_failure.empty()) o["last_failure"] = s.last_failure;
  return bj::serialize(o);
}

namespace {

Result<ArtifactStatus> StatusFromObject(const bj::object& o) {
  json::FieldReader r(o, "artifact_status");
  ArtifactStatus s;
  s.id = r.String("id", 64);
  s.state = r.String("state", 32);
  s.name = r.OptString("name", 256).value_or("");
  s.files_total = r.OptInt("files_total").value_or(0);
  s.files_done = r.OptInt("files_done").value_or(0);
  s.bytes_total = r.OptInt("bytes_total").value_or(0);
  s.bytes_done = r.OptInt("bytes_done").value_or(0);
  s.current = r.OptString("current", 2048).value_or("");
  s.version = r.OptString("version", 64).value_or("");
  s.digest = r.OptString("digest", 128).value_or("");
  s.size = r.OptInt("size").value_or(0);
  s.created = r.OptBool("created").value_or(false);
  s.parts_uploaded = r.OptInt("parts_uploaded").value_or(0);
  s.error = r.OptString("error", 1 << 16).value_or("");
  s.last_failure = r.OptString("last_failure", 1 << 16).value_or("");
  if (!r.ok()) return r.status();
  return s;
}

}  // namespace

Result<ArtifactStatus> ParseArtifactStatus(std::string_view json) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(json, "artifact_status"));
  return StatusFromObject(o);
}

std::string ArtifactStatusRequestJson(const std::vector<std::string>& ids) {
  bj::array a;
  for (const auto& id : ids) a.push_back(bj::value(id));
  bj::object o;
  o["ids"] = std::move(a);
  return bj::serialize(o);
}

Result<std::vector<std::string>> ParseArtifactStatusRequest(std::string_view json) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(json, "artifact_status"));
  json::FieldReader r(o, "artifact_status");
  auto ids = r.OptStringArray("ids", 64);
  if (!r.ok()) return r.status();
  return ids.value_or(std::vector<std::string>{});
}

std::string ArtifactStatusReplyJson(const std::vector<ArtifactStatus>& statuses) {
  std::string out = "{\"artifacts\":[";
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (i) out += ",";
    out += ToJson(statuses[i]);
  }
  out += "]}";
  return out;
}

Result<std::vector<ArtifactStatus>> ParseArtifactStatusReply(std::string_view json) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(json, "artifact_status_reply"));
  std::vector<ArtifactStatus> out;
  const bj::value* a = o.if_contains("artifacts");
  if (!a || !a->is_array()) {
    return Status::InvalidArgument("artifact_status_reply.artifacts: expected an array");
  }
  for (const bj::value& v : a->as_array()) {
    if (!v.is_object()) return Status::InvalidArgument("artifact_status_reply: not an object");
    COHORT_ASSIGN_OR_RETURN(ArtifactStatus s, StatusFromObject(v.as_object()));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cohort::agent
