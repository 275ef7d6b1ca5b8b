#include <unistd.h>

#include <algorithm>

#include "agent/socket_io.h"
#include "client/transport.h"

namespace cohort::client {

using agent::Frame;
using agent::MessageType;

Result<std::unique_ptr<AgentTransport>> AgentTransport::Connect(const std::string& socket_path,
                                                                int64_t deadline_ms) {
  int64_t left = std::max<int64_t>(1, deadline_ms - agent::MonoMillis());
  COHORT_ASSIGN_OR_RETURN(int fd,
                          agent::ConnectUnix(socket_path, int(std::min<int64_t>(left, 5000))));
  return FromDescriptor(fd, deadline_ms);
}

Result<std::unique_ptr<AgentTransport>> AgentTransport::FromDescriptor(int fd,
                                                                       int64_t deadline_ms) {
  std::unique_ptr<AgentTransport> t(new AgentTransport(fd));
  COHORT_RETURN_IF_ERROR(t->Hello(deadline_ms));
  return t;
}

Status AgentTransport::Hello(int64_t deadline_ms) {
  agent::HelloMessage hello;
  hello.pid = getpid();
  COHORT_RETURN_IF_ERROR(SendRaw(MessageType::kHello, agent::ToJson(hello), deadline_ms));
  COHORT_RETURN_IF_ERROR(Pump(deadline_ms, [&] { return hello_reply_.has_value(); }));
  if (!hello_reply_) return Status::DeadlineExceeded("agent: no hello reply");
  agent_pid_ = hello_reply_->pid;
  return Status::Ok();
}

bool AgentTransport::agent_has(std::string_view feature) const {
  if (!hello_reply_) return false;
  const auto& f = hello_reply_->features;
  return std::find(f.begin(), f.end(), feature) != f.end();
}

AgentTransport::~AgentTransport() {
  if (fd_ >= 0) close(fd_);
}

void AgentTransport::AbandonInChild() {
  if (fd_ >= 0) close(fd_);  // the child's copy only; the parent's connection lives on
  fd_ = -1;
  read_done_ = true;
  broken_ = Status::Unavailable("abandoned after fork");
}

Status AgentTransport::SendRaw(MessageType type, std::string_view payload, int64_t deadline_ms) {
  if (!broken_.ok()) return broken_;
  out_.clear();
  agent::AppendFrame(type, payload, &out_);
  Status s = agent::WriteAll(fd_, out_.data(), out_.size(), deadline_ms);
  if (!s.ok()) broken_ = Status::Unavailable("agent connection: " + s.message());
  return broken_;
}

Status AgentTransport::Pump(int64_t deadline_ms, const std::function<bool()>& until) {
  // Reading goes on after a failed send: acks the agent wrote before it died are still
  // readable and must not be lost.
  auto fail = [&](Status s) {
    read_done_ = true;
    if (broken_.ok()) broken_ = std::move(s);
    return broken_;
  };
  char buf[4096];
  while (!until()) {
    if (read_done_ || fd_ < 0) return broken_.ok() ? Status::Unavailable("agent: closed") : broken_;
    auto n = agent::ReadSome(fd_, buf, sizeof buf, deadline_ms);
    if (!n.ok()) {
      if (n.status().code() == StatusCode::kDeadlineExceeded) return broken_;
      return fail(Status::Unavailable("agent connection: " + n.status().message()));
    }
    if (*n == 0) return fail(Status::Unavailable("agent closed the connection"));
    decoder_.Feed(buf, *n);
    Frame f;
    while (true) {
      auto got = decoder_.Next(&f);
      if (!got.ok()) return fail(got.status());
      if (!*got) break;
      switch (f.type) {
        case MessageType::kHelloReply: {
          auto h = agent::ParseHello(f.payload);
          if (!h.ok()) return fail(h.status());
          hello_reply_ = *h;
          break;
        }
        case MessageType::kOpenReply: {
          auto r = agent::ParseOpenReply(f.payload);
          if (!r.ok()) return fail(r.status());
          open_reply_ = *r;
          break;
        }
        case MessageType::kFinishReply: {
          auto r = agent::ParseFinishReply(f.payload);
          if (!r.ok()) return fail(r.status());
          finish_reply_ = *r;
          break;
        }
        case MessageType::kArtifactStatusReply: {
          auto r = agent::ParseArtifactStatusReply(f.payload);
          if (!r.ok()) return fail(r.status());
          artifact_reply_ = std::move(*r);
          break;
        }
        case MessageType::kAck: {
          uint64_t frame = 0;
          std::string_view rest;
          if (agent::SplitNumbered(f.payload, &frame, &rest).ok()) {
            acked_ = std::max(acked_, frame);
          }
          break;
        }
        case MessageType::kError:
          return fail(agent::ParseError(f.payload));
        default:
          break;
      }
    }
  }
  return broken_;
}

namespace {

constexpr int64_t kMinOpenMarginMs = 100;
constexpr int64_t kMaxOpenMarginMs = 2000;

// How long an Open may ask the agent to wait for the server when `left_ms` remain before the
// caller's deadline.
int64_t AgentWaitBudgetMs(int64_t wait_ms, int64_t left_ms) {
  // The agent counts wait_ms from when it read the request (before it opens and syncs the
  // writer's WAL), which under load (a busy disk, a busy scheduler) can be a while after we
  // sent it, and its answer takes a while to reach us. Leave it a quarter of the time left,
  // between kMinOpenMarginMs and kMaxOpenMarginMs, so that its answer is here before our
  // deadline. A late open answer was the cause of Init failing under load: the agent then
  // holds the writer's WAL (locked) while the caller falls back to a private agent, which
  // cannot open the WAL (Run::Impl::Start now waits for the agent then). A late finish answer
  // fails Finish.
  return std::max<int64_t>(0, std::min(wait_ms, left_ms - AgentTransport::AnswerMarginMs(left_ms)));
}

}  // namespace

int64_t AgentTransport::AnswerMarginMs(int64_t left_ms) {
  return std::clamp<int64_t>(left_ms / 4, kMinOpenMarginMs, kMaxOpenMarginMs);
}

Status AgentTransport::SendOpen(const agent::OpenRequest& request, int64_t deadline_ms) {
  open_reply_.reset();
  agent::OpenRequest req = request;
  req.wait_ms = AgentWaitBudgetMs(req.wait_ms, deadline_ms - agent::MonoMillis());
  return SendRaw(MessageType::kOpen, agent::ToJson(req), deadline_ms);
}

Result<agent::OpenReply> AgentTransport::Open(const agent::OpenRequest& request,
                                              int64_t deadline_ms) {
  COHORT_RETURN_IF_ERROR(SendOpen(request, deadline_ms));
  return AwaitOpen(deadline_ms);
}

Result<agent::OpenReply> AgentTransport::AwaitOpen(int64_t deadline_ms) {
  Status s = Pump(deadline_ms, [&] { return open_reply_.has_value(); });
  if (open_reply_) {
    acked_ = std::max(acked_, open_reply_->last_frame);
    return *open_reply_;
  }
  if (!s.ok()) return s;
  return Status::DeadlineExceeded("agent: no open reply in time");
}

Status AgentTransport::Send(MessageType type, uint64_t frame, std::string_view body,
                            int64_t deadline_ms) {
  if (!broken_.ok()) return broken_;
  out_.clear();
  agent::AppendNumberedFrame(type, frame, body, &out_);
  Status s = agent::WriteAll(fd_, out_.data(), out_.size(), deadline_ms);
  if (!s.ok()) broken_ = Status::Unavailable("agent connection: " + s.message());
  return broken_;
}

Result<uint64_t> AgentTransport::Acked(uint64_t want, int64_t deadline_ms) {
  // First every ack that already arrived, whatever `want` is: acks left unread pile up in the
  // socket until the agent's ack write blocks, and then it drops this client as gone.
  Status s = Pump(0, [] { return false; });
  if (s.ok()) s = Pump(deadline_ms, [&] { return acked_ >= want; });
  if (!s.ok()) return s;
  return acked_;
}

Result<std::vector<agent::ArtifactStatus>> AgentTransport::ArtifactStatus(
    const std::vector<std::string>& ids, int64_t deadline_ms) {
  artifact_reply_.reset();
  COHORT_RETURN_IF_ERROR(
      SendRaw(MessageType::kArtifactStatus, agent::ArtifactStatusRequestJson(ids), deadline_ms));
  Status s = Pump(deadline_ms, [&] { return artifact_reply_.has_value(); });
  if (artifact_reply_) return std::move(*artifact_reply_);
  if (!s.ok()) return s;
  return Status::DeadlineExceeded("agent: no artifact status reply in time");
}

Result<agent::FinishReply> AgentTransport::Finish(uint64_t frame,
                                                  const agent::FinishRequest& request,
                                                  int64_t deadline_ms) {
  finish_reply_.reset();
  agent::FinishRequest req = request;
  req.wait_ms = AgentWaitBudgetMs(req.wait_ms, deadline_ms - agent::MonoMillis());
  COHORT_RETURN_IF_ERROR(Send(MessageType::kFinish, frame, agent::ToJson(req), deadline_ms));
  Status s = Pump(deadline_ms, [&] { return finish_reply_.has_value(); });
  if (finish_reply_) return *finish_reply_;
  if (!s.ok()) return s;
  return Status::DeadlineExceeded("agent: no finish reply in time");
}

}  // namespace cohort::client
