// Saved views, run files and API keys as a Store keeps them. Plain values.
#pragma once

#include <cstdint>
#include <string>

namespace cohort::store {

struct ViewRecord {
  int64_t id = 0;
  std::string entity, project, name;
  std::string spec_json = "{}";  // {filters, group_by, sort, columns, panels}
  int64_t created_ms = 0, updated_ms = 0;
};

// A file attached to a run (W&B clients upload config.yaml, requirements.txt, output.log...).
struct RunFile {
  std::string name;          // relative path, e.g. "media/images/a.png"
  std::string content_type;  // as uploaded; may be empty
  int64_t size = 0;          // bytes
  int64_t updated_ms = 0;
  std::string data;  // empty in listings
  // Set: the bytes are this blob of the run's entity (blob store), not `data` (empty); `size`
  // is then the blob's.
  std::string sha256;
};

enum class KeyRole { kAdmin, kMember };

struct ApiKeyRecord {
  int64_t id = 0;
  std::string entity;
  std::string name;
  KeyRole role = KeyRole::kMember;
  std::string hash;    // hex SHA-256 of the secret
  std::string prefix;  // first characters of the key, for display
  int64_t created_ms = 0;
  bool revoked = false;
};

// A browser session or a one-time login token (server/api/auth.h), stored by the hash of its
// secret so that every server sharing the store knows it. It acts for the API key `key_id` (with
// that key's entity and role) until `expires_ms`, or until that key is revoked.
enum class SessionKind { kLoginToken, kSession };
struct SessionRecord {
  std::string hash;  // hex SHA-256 of the secret
  SessionKind kind = SessionKind::kSession;
  int64_t key_id = 0;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;
};
// The column value of a SessionKind in both stores' `sessions` table.
const char* SessionKindName(SessionKind kind);

}  // namespace cohort::store
