// Transport: how a Run's numbered frames reach an Ingest (agent/ingest.h): over the node
// agent's Unix socket (AgentTransport) or to an Ingest inside this process (InProcessTransport,
// when no agent can be had or COHORT_AGENT=inprocess). Both speak the agent protocol's
// semantics: frames are numbered, acks are cumulative and mean "durable in the WAL", and Open
// reports which frames of the session are already durable so a reconnect resends the rest.
//
// Threading: a Transport is used by one thread at a time (the Run's flush thread, or the thread
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

#include "agent/ingest.h"
#include "agent/protocol.h"
#include "cohort/status.h"

namespace cohort::client {

class Transport {
 public:
  virtual ~Transport() = default;

  virtual Result<agent::OpenReply> Open(const agent::OpenRequest& request, int64_t deadline_ms) = 0;
  // Sends a numbered frame (kLog, kUpdate, kFlush). kUnavailable / kDeadlineExceeded when the
  // transport is broken; the caller reconnects.
  virtual Status Send(agent::MessageType type, uint64_t frame, std::string_view body,
                      int64_t deadline_ms) = 0;
  // The highest frame acknowledged so far, after reading every ack that already arrived and
  // then, while `want` is not acknowledged, until `deadline_ms` (in the past: no waiting).
  virtual Result<uint64_t> Acked(uint64_t want, int64_t deadline_ms) = 0;
  // Sends the finish frame and waits for its reply.
  virtual Result<agent::FinishReply> Finish(uint64_t frame, const agent::FinishRequest& request,
                                            int64_t deadline_ms) = 0;
  // The highest acknowledgement received, also after the transport broke.
  virtual uint64_t acked() const = 0;
  virtual bool in_process() const = 0;
  // In a forked child: forget everything shared with the parent (descriptors, threads) without
  // closing or joining anything; the object must then only be leaked.
  virtual void AbandonInChild() = 0;
};

// Over the agent's Unix socket.
class AgentTransport : public Transport {
 public:
  // Connects to `socket_path` and exchanges hellos.
  static Result<std::unique_ptr<AgentTransport>> Connect(const std::string& socket_path,
                                                         int64_t deadline_ms);
  ~AgentTransport() override;

  // SendOpen, then AwaitOpen until the same deadline.
  Result<agent::OpenReply> Open(const agent::OpenRequest& request, int64_t deadline_ms) override;
  Status Send(agent::MessageType type, uint64_t frame, std::string_view body,
              int64_t deadline_ms) override;
  Result<uint64_t> Acked(uint64_t want, int64_t deadline_ms) override;
  Result<agent::FinishReply> Finish(uint64_t frame, const agent::FinishRequest& request,
                                    int64_t deadline_ms) override;
  uint64_t acked() const override { return acked_; }
  bool in_process() const override { return false; }
  void AbandonInChild() override;
  int64_t agent_pid() const { return agent_pid_; }

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
  std::optional<agent::HelloMessage> hello_reply_;
};

// An Ingest of its own, in this process (its Sender and monitor threads run here).
class InProcessTransport : public Transport {
 public:
  explicit InProcessTransport(agent::IngestOptions options);
  ~InProcessTransport() override;

  Result<agent::OpenReply> Open(const agent::OpenRequest& request, int64_t deadline_ms) override;
  Status Send(agent::MessageType type, uint64_t frame, std::string_view body,
              int64_t deadline_ms) override;
  Result<uint64_t> Acked(uint64_t want, int64_t deadline_ms) override;
  Result<agent::FinishReply> Finish(uint64_t frame, const agent::FinishRequest& request,
                                    int64_t deadline_ms) override;
  uint64_t acked() const override { return acked_; }
  bool in_process() const override { return true; }
  void AbandonInChild() override;

 private:
  std::unique_ptr<agent::Ingest> ingest_;
  std::unique_ptr<agent::WriterSession> session_;
  uint64_t appended_ = 0;
  uint64_t acked_ = 0;
};

}  // namespace cohort::client
