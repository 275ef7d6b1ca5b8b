// The agent protocol: how a client library talks to the node agent over a Unix stream socket
// (docs/formats.md, "Agent protocol").
//
// A connection carries frames in both directions:
//   frame = u32 length (LE, of type+payload) | u8 type | payload
// A Unix stream socket is a reliable local stream, so frames carry no checksum of their own.
// Control messages (hello, open, finish and their replies) carry a JSON object; log frames carry
// a batch v4 (core/batch_format.h), checksummed by the client that encoded it, which the agent
// checks (header and checksum, no decoding) and stores verbatim in its WAL.
//
// Every data-bearing client message (log, update, flush, finish, artifact, alert) starts with a
// frame number (varint, 1, 2, 3, ... per client session). The agent answers with cumulative acks
// ("every frame up to N is durable in the WAL"), so a client can pipeline and, after reconnecting
// to a new agent, resend exactly the frames the old one had not made durable.
//
// Everything here is pure encoding: no I/O, no state shared between calls; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "core/limits.h"

namespace cohort::agent {

inline constexpr uint32_t kProtocolVersion = 2;
inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr size_t kMaxFrameBytes = limits::kMaxFrameBytes;

enum class MessageType : uint8_t {
  kHello = 1,        // client -> agent, JSON HelloMessage
  kHelloReply = 2,   // agent -> client, JSON HelloMessage
  kOpen = 3,         // client -> agent, JSON OpenRequest
  kOpenReply = 4,    // agent -> client, JSON OpenReply
  kLog = 5,          // client -> agent, varint frame + batch v4
  kUpdate = 6,       // client -> agent, varint frame + JSON run patch ({"config": {...}}, {"name": ..})
  kFlush = 7,        // client -> agent, varint frame; answered by an ack once durable
  kFinish = 8,       // client -> agent, varint frame + JSON FinishRequest
  kAck = 9,          // agent -> client, varint frame: every frame <= it is durable
  kFinishReply = 10, // agent -> client, JSON FinishReply
  kError = 11,       // agent -> client, JSON {"code": "...", "message": "..."}; then it closes
  kArtifact = 12,    // client -> agent, varint frame + JSON artifact intent (artifact_intent.h)
  kArtifactStatus = 13,       // client -> agent, JSON {"ids": [...]}
  kArtifactStatusReply = 14,  // agent -> client, JSON {"artifacts": [ArtifactStatus...]}
  kAlert = 15,       // client -> agent, varint frame + JSON alert (alert_body.h)
};

std::string_view MessageTypeName(MessageType type);

struct Frame {
  MessageType type = MessageType::kHello;
  std::string payload;
};

// Appends one encoded frame to `out`.
void AppendFrame(MessageType type, std::string_view payload, std::string* out);
// Appends the frame of a numbered payload (NumberedPayload(frame, body)) without building the
// payload apart: `body` is copied once.
void AppendNumberedFrame(MessageType type, uint64_t frame, std::string_view body,
                         std::string* out);

// Splits a byte stream into frames. Feed bytes as they arrive, then call Next until it returns
// false. Not thread-safe (one reader per connection).
class FrameDecoder {
 public:
  void Feed(const char* data, size_t n);
  // True and `*frame` set when a whole frame was buffered; false when more bytes are needed.
  // kCorruption for a length of 0 or above kMaxFrameBytes: the stream cannot be trusted after.
  Result<bool> Next(Frame* frame);
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// ---- frame-numbered payloads ----

// Payload of kLog / kUpdate / kFlush / kFinish / kArtifact / kAlert: varint frame number, then
// `body`.
std::string NumberedPayload(uint64_t frame, std::string_view body);
// Splits such a payload. kCorruption when the frame number is truncated.
Status SplitNumbered(std::string_view payload, uint64_t* frame, std::string_view* body);

// ---- control messages (JSON) ----

// What an agent's hello reply says it takes beyond its protocol version's first messages. An agent
// from before a feature does not list it: a client then does not send that message (the agent
// would refuse the frame, and the client resend it forever).
inline constexpr std::string_view kAgentFeatureAlert = "alert";  // kAlert frames
// kUpdate frames with "config_unset" (keys removed from the run's config).
inline constexpr std::string_view kAgentFeatureConfigUnset = "config_unset";

struct HelloMessage {
  uint32_t version = kProtocolVersion;
  int64_t pid = 0;
  std::vector<std::string> features;  // the agent's reply: kAgentFeature*
};

// What a client asks the agent to open: where to upload, the run to create or join, the writer
// to join as, and how to sample system metrics for it.
struct OpenRequest {
  uint64_t session = 0;  // random per client connection lifetime; frames number within it
  std::string base_url;
  std::string api_key;
  std::string entity;  // empty: the key's entity
  std::string project;
  std::string run_id;
  std::string label;
  bool offline = false;   // keep records in the WAL, send nothing (cohort sync uploads later)
  std::string data_dir;   // WAL root; empty: the agent's default
  std::string run_json;     // body of POST /api/v1/runs/{entity}/{project} (a JSON object)
  std::string writer_json;  // body of POST .../writers (a JSON object)
  double stats_interval_s = 0;             // system monitor period; 0: no monitor
  std::optional<std::vector<int>> gpu_ids; // GPUs to sample; none: all
  int64_t pid = 0;                         // root of the monitored process tree
  int64_t wait_ms = 0;  // how long the agent may wait for the server to confirm the writer
};

struct OpenReply {
  bool ok = false;
  std::string error;       // when !ok
  std::string entity;      // resolved entity, when known
  std::string run_name;    // the server's name for the run, when known
  int64_t next_step = 0;   // the writer's next step on the server (re-joins continue)
  uint64_t last_frame = 0; // highest frame of this session already durable at the agent
  bool confirmed = false;  // the server acknowledged the run and the writer
  std::string wal_dir;     // where this writer's records are kept
  std::string artifact_staging_dir;  // where the client stages copies of artifact files
  // The server's media limits when confirmed (0: not known).
  int64_t max_media_file_bytes = 0;
  int64_t max_media_per_step = 0;
  // When confirmed, the run's fields as the server holds them (a resumed run's group, job_type,
  // notes, tags, config and summary): a JSON object's text; empty when not known.
  std::string run_fields;
};

// The fields of the server's answer to a run upsert (the run) that an open reply passes on
// (OpenReply::run_fields): its group, job_type, notes, tags, config and summary, those present
// and of the right type; the config and then the summary are each left out when the fields with
// it would be over kMaxRunFieldsBytes. Empty when the answer is no JSON object.
inline constexpr size_t kMaxRunFieldsBytes = 4 << 20;
std::string RunFieldsOfAnswer(std::string_view answer);

struct FinishRequest {
  std::optional<int> exit_code;
  std::string state;    // empty: from the exit code
  int64_t wait_ms = 0;  // how long the agent may wait for the upload to complete
};

struct FinishReply {
  bool uploaded = false;        // every record of the writer reached the server
  int64_t pending_records = 0;  // records still waiting to be uploaded
};

std::string ToJson(const HelloMessage& m);
std::string ToJson(const OpenRequest& m);
std::string ToJson(const OpenReply& m);
std::string ToJson(const FinishRequest& m);
std::string ToJson(const FinishReply& m);
Result<HelloMessage> ParseHello(std::string_view json);
Result<OpenRequest> ParseOpenRequest(std::string_view json);
Result<OpenReply> ParseOpenReply(std::string_view json);
Result<FinishRequest> ParseFinishRequest(std::string_view json);
Result<FinishReply> ParseFinishReply(std::string_view json);

// kError payload.
std::string ErrorJson(const Status& status);
Status ParseError(std::string_view json);

}  // namespace cohort::agent
