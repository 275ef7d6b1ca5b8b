#include "agent/socket_io.h"
#include "client/transport.h"

namespace cohort::client {

InProcessTransport::InProcessTransport(agent::IngestOptions options)
    : ingest_(std::make_unique<agent::Ingest>(std::move(options))) {}

InProcessTransport::~InProcessTransport() {
  session_.reset();
  ingest_.reset();  // stops the Sender: what is not uploaded stays in the WAL
}

void InProcessTransport::AbandonInChild() {
  // The parent's threads do not exist here: never run these destructors.
  (void)session_.release();
  (void)ingest_.release();
}

Result<agent::OpenReply> InProcessTransport::Open(const agent::OpenRequest& request,
                                                  int64_t deadline_ms) {
  agent::OpenRequest req = request;
  req.wait_ms = std::max<int64_t>(0, std::min(req.wait_ms, deadline_ms - agent::MonoMillis()));
  agent::OpenReply reply;
  session_ = ingest_->Open(req, &reply);
  if (session_) acked_ = appended_ = reply.last_frame;
  return reply;
}

Status InProcessTransport::Send(agent::MessageType type, uint64_t frame, std::string_view body,
                                int64_t deadline_ms) {
  if (!session_) return Status::FailedPrecondition("no writer open");
  Status s;
  if (type == agent::MessageType::kLog) {
    s = session_->Log(frame, body);
  } else if (type == agent::MessageType::kUpdate) {
    s = session_->Update(frame, body);
  }
  if (s.ok()) appended_ = std::max(appended_, frame);
  return s;
}

Result<uint64_t> InProcessTransport::Acked(uint64_t want, int64_t deadline_ms) {
  if (session_ && appended_ > acked_) {
    COHORT_RETURN_IF_ERROR(session_->Sync());
    acked_ = appended_;
  }
  return acked_;
}

Result<agent::FinishReply> InProcessTransport::Finish(uint64_t frame,
                                                      const agent::FinishRequest& request,
                                                      int64_t deadline_ms) {
  if (!session_) return Status::FailedPrecondition("no writer open");
  agent::FinishRequest req = request;
  req.wait_ms = std::max<int64_t>(0, std::min(req.wait_ms, deadline_ms - agent::MonoMillis()));
  auto reply = session_->Finish(frame, req);
  if (reply.ok()) acked_ = appended_ = std::max(appended_, frame);
  return reply;
}

}  // namespace cohort::client
