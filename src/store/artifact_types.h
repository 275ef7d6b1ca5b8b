// Artifacts as a Store keeps them (docs/artifacts.md): collections, versions with their
// manifests, aliases, lineage, and the blobs an entity holds. Plain values, and the checks and
// digests every backend applies the same way. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "core/artifact_names.h"

namespace cohort::store {

// One entry of a version's manifest: a blob (sha256 and size) or a reference (ref, with the
// digest and size when known).
struct ArtifactFile {
  std::string path;
  std::string sha256;      // empty for a reference
  int64_t size = -1;       // bytes; -1: unknown (references only)
  std::string ref;         // the URI of a reference; empty for a blob
  std::string ref_digest;  // a reference's checksum or ETag; may be empty
};

// What logging a version asks for (Store::CommitArtifact).
struct ArtifactCommit {
  std::string entity, project, name, type;
  std::optional<std::string> description;
  std::string metadata_json = "{}";  // a JSON object
  std::vector<std::string> aliases;  // besides "latest"
  std::string run_id;                // the producing run (of the same project); empty: none
  std::string writer;                // its writer's label; may be empty
  std::vector<ArtifactFile> files;
  int64_t now_ms = 0;
  // Logged by a W&B client: its digest and the blob of the manifest it uploaded.
  std::string client_digest, client_manifest;
};

struct ArtifactVersion {
  int64_t pk = 0;
  std::string entity, project, name, type;
  int64_t index = 0;  // the N of vN
  std::string digest;
  int64_t size = 0;  // bytes of its blobs and references of known size
  int64_t file_count = 0;
  std::optional<std::string> description;
  std::string metadata_json = "{}";
  int64_t created_ms = 0;
  std::string run_id, writer;        // who logged it; empty when logged outside a run
  std::vector<std::string> aliases;  // sorted
  std::string client_digest, client_manifest;  // ArtifactCommit's
};

// A version a W&B client is uploading: created first, committed when its files and manifest
// are there (server/compat/artifacts_compat.cc).
struct ArtifactDraft {
  int64_t pk = 0;
  std::string entity, project, name, type;
  std::string client_digest;
  std::string spec_json = "{}";  // description, metadata, aliases, run, writer
  std::string manifest_sha256;   // empty until the manifest is uploaded
  std::optional<int64_t> version_pk;  // once committed
  std::string client_id;              // the W&B client's ID of it ("" for others)
  int64_t created_ms = 0;
};

// A blob an entity holds (the `blobs` table).
struct HeldBlob {
  std::string entity, sha256;
  int64_t size = 0;
  int64_t created_ms = 0;
};

// A blob an entity holds, named by the MD5 a W&B client gave it.
struct BlobByMd5 {
  std::string sha256;
  int64_t size = 0;
};

struct ArtifactLogged {
  ArtifactVersion version;
  bool created = false;  // false: the latest version had this digest already
};

struct ArtifactCollection {
  std::string entity, project, name, type;
  int64_t version_count = 0;
  int64_t created_ms = 0, updated_ms = 0;
  std::optional<ArtifactVersion> latest;  // without files; none when every version was deleted
};

// A lineage edge: a run (and writer) that logged ("output") or used ("input") a version.
struct ArtifactUse {
  std::string entity, project, run_id, writer;
  std::string direction;  // "output" | "input"
  int64_t used_ms = 0;
};

struct RunArtifact {
  ArtifactVersion version;
  std::string direction;  // "output" | "input"
  std::string writer;
  int64_t used_ms = 0;
};

// Everything about a commit that can be checked without the database: names, paths (unique),
// digests, sizes, references, metadata (a JSON object), limits.
Status ValidateArtifactCommit(const ArtifactCommit& commit);

// The version digest of a manifest (docs/artifacts.md, "Digests"): files in any order.
std::string ManifestDigest(const std::vector<ArtifactFile>& files);

Status ArtifactNotFound(std::string_view entity, std::string_view project, std::string_view name,
                        std::string_view version_or_alias = "");

}  // namespace cohort::store
