// Record: one entry of a writer's WAL, i.e. one request the Sender will make to the server, in
// the order the writer produced them (docs/formats.md, "Agent protocol", WAL records).
//
//   record = u8 kind | fixed64 seq | fixed64 session | varint frame | body
//
// `seq` is the record's sequence number within its writer: strictly increasing, stable across
// retries and restarts, and sent as the batch's "seq" so that the server stores it once.
// `session`/`frame` name the client frame the record came from (0/0 for records the agent made
// itself, e.g. system samples or a crash finish), so that a client that reconnects learns which
// of its frames are already durable. `body` is a batch v4 (kBatch, core/batch_format.h), posted
// as it is, or a JSON object (the others; an alert's is the body of the alerts route as it is).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::agent {

enum class RecordKind : uint8_t {
  kRunUpsert = 1,     // POST /api/v1/runs/{entity}/{project}          body: run JSON
  kWriterJoin = 2,    // POST .../{run}/writers                       body: writer JSON
  kBatch = 3,         // POST .../{run}/writers/{label}/batches       body: batch v4
  kRunPatch = 4,      // PATCH .../{run}                              body: {"config"|"summary"}
  kWriterFinish = 5,  // POST .../{run}/writers/{label}/finish        body: {"exit_code","state"}
  kArtifact = 6,      // handed to the agent's ArtifactUploader      body: artifact intent JSON
  kAlert = 7,         // POST .../{run}/writers/{label}/alerts        body: alert JSON, alert_body.h
};

std::string_view RecordKindName(RecordKind kind);

struct Record {
  RecordKind kind = RecordKind::kBatch;
  uint64_t seq = 0;
  uint64_t session = 0;
  uint64_t frame = 0;
  std::string body;
};

std::string EncodeRecord(RecordKind kind, uint64_t seq, uint64_t session, uint64_t frame,
                         std::string_view body);
inline std::string EncodeRecord(const Record& r) {
  return EncodeRecord(r.kind, r.seq, r.session, r.frame, r.body);
}
// kCorruption when truncated or of an unknown kind.
Result<Record> DecodeRecord(std::string_view data);

}  // namespace cohort::agent
