// AgentConnection: serves one client connection of the agent: the protocol's handshake, then
// frames turned into Ingest calls, with group commit: every frame read in one go is appended,
// then one Sync covers them all and one cumulative ack answers them.
//
// Threading: Serve() runs on the connection's own thread; Stop() may be called from any thread
// and makes Serve() return within about a second.
#pragma once

#include <atomic>
#include <memory>

#include "agent/ingest.h"
#include "agent/protocol.h"

namespace cohort::agent {

class AgentConnection {
 public:
  AgentConnection(int fd, Ingest* ingest);  // takes ownership of fd
  ~AgentConnection();
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  // Serves until the client closes, errs, or Stop(). A client that vanishes without finish
  // leaves its writer crashed.
  void Serve();
  void Stop() { stop_.store(true); }
  bool done() const { return done_.load(); }
  // The client's finish was handled (its writer ended normally), for the private agent.
  bool finished() const { return finished_.load(); }

 private:
  // Handles one frame; false ends the connection.
  bool Handle(const Frame& frame);
  bool Send(MessageType type, std::string_view payload);
  bool SendError(const Status& status);

  const int fd_;
  Ingest* const ingest_;
  std::unique_ptr<WriterSession> session_;
  uint64_t last_frame_ = 0;  // highest frame appended, acked after the next sync
  uint64_t acked_frame_ = 0;
  bool need_sync_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> finished_{false};
};

}  // namespace cohort::agent
