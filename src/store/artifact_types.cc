#include "store/artifact_types.h"

#include <algorithm>
#include <charconv>

#include <boost/json.hpp>

#include "core/limits.h"
#include "core/sha256.h"
#include "core/utf8.h"

namespace cohort::store {

namespace {
Status Invalid(std::string_view what, std::string_view problem) {
  return Status::InvalidArgument(std::string(what) + ": " + std::string(problem));
}

bool IsReferenceUri(std::string_view uri) {
  for (std::string_view scheme : {"file://", "s3://", "gs://", "http://", "https://"}) {
    if (uri.starts_with(scheme) && uri.size() > scheme.size()) return true;
  }
  return false;
}
}  // namespace

Status ValidateArtifactCommit(const ArtifactCommit& c) {
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact name", c.name));
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact type", c.type));
  if (c.aliases.size() > limits::kMaxArtifactAliases) {
    return Invalid("aliases", "at most " + std::to_string(limits::kMaxArtifactAliases));
  }
  for (const std::string& a : c.aliases) {
    if (a == "latest") continue;  // always set; saying so is harmless
    COHORT_RETURN_IF_ERROR(ValidateAliasName(a));
  }
  if (c.description && c.description->size() > limits::kMaxArtifactDescriptionBytes) {
    return Invalid("description", "at most " +
                                      std::to_string(limits::kMaxArtifactDescriptionBytes) +
                                      " bytes");
  }
  if (c.metadata_json.size() > limits::kMaxArtifactMetadataBytes) {
    return Invalid("metadata",
                   "at most " + std::to_string(limits::kMaxArtifactMetadataBytes) + " bytes");
  }
  boost::system::error_code ec;
  boost::json::value meta = boost::json::parse(c.metadata_json, ec);
  if (ec || !meta.is_object()) return Invalid("metadata", "must be a JSON object");
  if (c.files.size() > limits::kMaxArtifactFiles) {
    return Invalid("files", "at most " + std::to_string(limits::kMaxArtifactFiles) +
                                " per version; split the artifact");
  }
  std::vector<std::string_view> paths;
  paths.reserve(c.files.size());
  for (const ArtifactFile& f : c.files) {
    COHORT_RETURN_IF_ERROR(ValidateRelativePath("file path", f.path));
    const std::string what = "file \"" + f.path + "\"";
    if (f.ref.empty()) {
      if (!IsSha256Hex(f.sha256)) {
        return Invalid(what, "sha256 must be 64 lowercase hex digits");
      }
      if (f.size < 0) return Invalid(what, "size must be a number of bytes (0 or more)");
    } else {
      if (!f.sha256.empty()) return Invalid(what, "a reference has no sha256 (use digest)");
      if (!IsReferenceUri(f.ref) || f.ref.size() > 4096 || !utf8::IsValid(f.ref)) {
        return Invalid(what, "ref must be a file://, s3://, gs://, http:// or https:// URI "
                             "of at most 4096 bytes");
      }
      if (f.ref_digest.size() > 512) return Invalid(what, "digest: at most 512 bytes");
      if (f.size < -1) return Invalid(what, "size must be 0 or more (or absent)");
    }
    paths.push_back(f.path);
  }
  std::sort(paths.begin(), paths.end());
  auto dup = std::adjacent_find(paths.begin(), paths.end());
  if (dup != paths.end()) {
    return Invalid("files", "the path \"" + std::string(*dup) + "\" appears twice");
  }
  return Status::Ok();
}

std::string ManifestDigest(const std::vector<ArtifactFile>& files) {
  std::vector<const ArtifactFile*> sorted;
  sorted.reserve(files.size());
  for (const ArtifactFile& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const ArtifactFile* a, const ArtifactFile* b) { return a->path < b->path; });
  Sha256 h;
  h.Update("cohort-artifact-manifest-v1\n");
  for (const ArtifactFile* f : sorted) {
    std::string size = f->size >= 0 ? std::to_string(f->size) : "";
    if (f->ref.empty()) {
      h.Update(f->path + "\t" + f->sha256 + "\t" + size + "\n");
    } else {
      h.Update(f->path + "\tref:" + f->ref + "\t" + f->ref_digest + "\t" + size + "\n");
    }
  }
  return h.FinishHex();
}

Status ArtifactNotFound(std::string_view entity, std::string_view project, std::string_view name,
                        std::string_view version_or_alias) {
  std::string what = std::string(entity) + "/" + std::string(project) + "/" + std::string(name);
  if (!version_or_alias.empty()) what += ":" + std::string(version_or_alias);
  return Status::NotFound("artifact " + what + " not found");
}

}  // namespace cohort::store
