// The artifact intent: what a client hands the node agent when it logs an artifact version
// (docs/artifacts.md, docs/formats.md "Artifact intents"). One JSON representation travels the
// whole way: the client writes it (kArtifact frame), the agent stores those bytes in the writer's
// WAL (RecordKind::kArtifact) and in its uploader's intent file, and the commit body of
// POST /api/v1/artifacts/{entity}/{project}/{name} is the same object without the fields that
// only this machine can use ("id", "staging", each file's "source") and the name (in its URL).
//
//   {"id": "<32 hex>", "name": "model", "type": "model", "description": "...",
//    "metadata": {...}, "aliases": ["best"], "run": "<run id>", "writer": "<label>",
//    "staging": "<dir the agent removes after the commit>",
//    "files": [{"path": "model.pt", "sha256": "<hex>", "size": 1234, "source": "/abs/file"},
//              {"path": "data/train.csv", "ref": "s3://b/train.csv", "digest": "<etag>",
//               "size": 99}]}
//
// Also the status of intents as the agent reports it (kArtifactStatus / kArtifactStatusReply).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/staging_claim.h"
#include "cohort/status.h"
#include "core/artifact_names.h"
#include "wal/file.h"

namespace cohort::agent {

struct ArtifactFileEntry {
  std::string path;    // inside the version
  std::string sha256;  // blob: 64 lowercase hex digits
  int64_t size = -1;   // blob: bytes; reference: -1 when unknown
  std::string source;  // blob: absolute path of the bytes on this machine (staged or original)
  std::string ref;     // reference: the URI (then sha256/source are empty)
  std::string digest;  // reference: checksum or ETag when known
  bool is_ref() const { return !ref.empty(); }
};

struct ArtifactIntent {
  std::string id;
  std::string name;
  std::string type;
  std::string description;
  std::string metadata_json = "{}";  // a JSON object
  std::vector<std::string> aliases;
  std::string run;
  std::string writer;
  std::string staging;  // empty: nothing staged
  std::vector<ArtifactFileEntry> files;
  // true: media blobs (docs/formats.md "Media"): the agent uploads the files' blobs and commits
  // no version (the media rows travel in a batch of the same writer, after this intent).
  bool media = false;

  int64_t blob_bytes() const;  // sum of the blobs' sizes
};

// Names, aliases and paths follow core/artifact_names.h.
// Parses and checks an intent (every name, path, digest and size; unique paths; a blob has an
// absolute source). kInvalidArgument naming the field otherwise.
Result<ArtifactIntent> ParseArtifactIntent(std::string_view json);
std::string ToJson(const ArtifactIntent& intent);
// The body of the commit request: the intent without id, name, staging and sources.
std::string CommitBody(const ArtifactIntent& intent);
// The version digest the server computes (docs/artifacts.md "Digests").
std::string ManifestDigest(const ArtifactIntent& intent);

// ---- status (agent -> client) ----

struct ArtifactStatus {
  std::string id;
  // "unknown" (not handed to the uploader yet, or never seen), "pending", "committed", "failed".
  std::string state = "unknown";
  std::string name;
  int64_t files_total = 0;  // blobs to upload
  int64_t files_done = 0;
  int64_t bytes_total = 0;
  int64_t bytes_done = 0;
  std::string current;         // the file being uploaded
  std::string version;         // committed: "v3"
  std::string digest;          // committed: the version's digest
  int64_t size = 0;            // committed: the version's size
  bool created = false;        // committed: a new version (false: the same digest as latest)
  int64_t parts_uploaded = 0;  // parts this agent PUT for the intent (0 when all were held)
  std::string error;           // failed: the server's message
  std::string last_failure;    // pending: the last transient failure (retried)

  bool terminal() const { return state == "committed" || state == "failed"; }
};

std::string ToJson(const ArtifactStatus& s);
Result<ArtifactStatus> ParseArtifactStatus(std::string_view json);
// kArtifactStatus payload {"ids": [...]} and its reply {"artifacts": [...]}.
std::string ArtifactStatusRequestJson(const std::vector<std::string>& ids);
Result<std::vector<std::string>> ParseArtifactStatusRequest(std::string_view json);
std::string ArtifactStatusReplyJson(const std::vector<ArtifactStatus>& statuses);
Result<std::vector<ArtifactStatus>> ParseArtifactStatusReply(std::string_view json);

}  // namespace cohort::agent
