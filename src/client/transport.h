// AgentTransport: how a Run's numbered frames reach an agent, over a Unix stream socket: the
// node's shared agent (Connect, to its socket) or a private agent the client started for this
// process over a socketpair (FromDescriptor, client/spawn.h StartPrivateAgent). One transport,
// the agent protocol's semantics: frames are numbered, acks are cumulative and mean "durable in
// the WAL", and Open reports which frames of the session are already durable so a reconnect
// resends the rest.
//
// Threading: a transport is used by one thread at a time (the Run's flush thread, or the thread
// in Init/Finish while the flush thread is stopped). Every call is bounded by its deadline, on
// the monotonic clock (agent::MonoMillis, agent/socket_io.h), so a dead agent never hangs the
// caller and a wall clock that jumps during a wait neither cuts it short nor stretches it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/artifact_intent.h"
#include "agent/protocol.h"
#include "cohort/status.h"

namespace cohort::client {

class AgentTransport {
 public:
  // Connects to `socket_path` and exchanges hellos.
  static Result<std::unique_ptr<AgentTransport>> Connect(const std::string& socket_path,
                                                         int64_t deadline_ms);
  // Takes `fd` (a connected stream socket, e.g. a socketpair end) and exchanges hellos. The
  // descriptor is closed by the transport, also when this fails.
  static Result<std::unique_ptr<AgentTransport>> FromDescriptor(int fd, int64_t deadline_ms);
  ~AgentTransport();

  // SendOpen, then AwaitOpen until the same deadline.
  Result<agent::OpenReply> Open(const agent::OpenRequest& request, int64_t deadline_ms);
  // Sends a numbered frame (kLog, kUpdate, kFlush). kUnavailable / kDeadlineExceeded when the
  // transport is broken; the caller reconnects.
  Status Send(agent::MessageType type, uint64_t frame, std::string_view body, int64_t deadline_ms);
  // The highest frame acknowledged so far, after reading every ack that already arrived and
  // then until `want` is acknowledged or `deadline_ms` (deadline in the past: only what already
  // arrived).
  Result<uint64_t> Acked(uint64_t want, int64_t deadline_ms);
  // Sends the finish frame and waits for its reply.
  Result<agent::FinishReply> Finish(uint64_t frame, const agent::FinishRequest& request,
                                    int64_t deadline_ms);
  // Asks the agent for the state of artifact intents (kArtifactStatus) and waits for the reply.
  Result<std::vector<agent::ArtifactStatus>> ArtifactStatus(const std::vector<std::string>& ids,
                                                            int64_t deadline_ms);
  // The highest acknowledgement received, also after the transport broke.
  uint64_t acked() const { return acked_; }
  // In a forked child: forget everything shared with the parent (the descriptor) without
  // closing the parent's connection; the object must then only be leaked.
  void AbandonInChild();
  int64_t agent_pid() const { return agent_pid_; }
  // Whether the agent's hello listed `feature` (agent::kAgentFeature*).
  bool agent_has(std::string_view feature) const;

  // Sends the open request, asking the agent to wait for the server no longer than leaves it
  // AnswerMarginMs before `deadline_ms` to answer.
  Status SendOpen(const agent::OpenRequest& request, int64_t deadline_ms);
  // Reads until the answer to the last SendOpen is here (kept if it came earlier) or
  // `deadline_ms` passes (kDeadlineExceeded; the request stays outstanding and a later call
  // reads on).
  Result<agent::OpenReply> AwaitOpen(int64_t deadline_ms);
  // The time an open or finish request leaves the agent to answer when `left_ms` remain
  // before the caller's deadline.
  static int64_t AnswerMarginMs(int64_t left_ms);

 private:
  explicit AgentTransport(int fd) : fd_(fd) {}
  Status Hello(int64_t deadline_ms);
  // Reads frames until `until()` holds or the deadline passes.
  Status Pump(int64_t deadline_ms, const std::function<bool()>& until);
  Status SendRaw(agent::MessageType type, std::string_view payload, int64_t deadline_ms);

  int fd_;
  int64_t agent_pid_ = 0;
  agent::FrameDecoder decoder_;
  std::string out_;
  uint64_t acked_ = 0;
  Status broken_;           // set by the first failure; sends stop
  bool read_done_ = false;  // end of stream or read error; reads stop
  std::optional<agent::OpenReply> open_reply_;
  std::optional<agent::FinishReply> finish_reply_;
  std::optional<std::vector<agent::ArtifactStatus>> artifact_reply_;
  std::optional<agent::HelloMessage> hello_reply_;
};

}  // namespace cohort::client
