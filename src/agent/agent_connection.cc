#include "agent/agent_connection.h"

#include <unistd.h>

#include "agent/agent_log.h"
#include "agent/socket_io.h"
#include "core/clock.h"
#include "core/coding.h"

namespace cohort::agent {
namespace {

constexpr int64_t kSendTimeoutMs = 10000;
constexpr size_t kReadChunk = 1 << 20;

}  // namespace

AgentConnection::AgentConnection(int fd, Ingest* ingest) : fd_(fd), ingest_(ingest) {}

AgentConnection::~AgentConnection() {
  session_.reset();  // without finish: crashed
  close(fd_);
}

bool AgentConnection::Send(MessageType type, std::string_view payload) {
  std::string out;
  AppendFrame(type, payload, &out);
  Status s = WriteAll(fd_, out.data(), out.size(), MonoMillis() + kSendTimeoutMs);
  if (!s.ok()) Logf(LogLevel::kDebug, "connection: send failed: {}", s.ToString());
  return s.ok();
}

bool AgentConnection::SendError(const Status& status) {
  Logf(LogLevel::kWarning, "connection: {}", status.ToString());
  Send(MessageType::kError, ErrorJson(status));
  return false;
}

void AgentConnection::Serve() {
  FrameDecoder decoder;
  std::string buf(kReadChunk, '\0');
  bool open = true;
  while (open && !stop_.load()) {
    auto n = ReadSome(fd_, buf.data(), buf.size(), MonoMillis() + 1000);
    if (!n.ok()) {
      if (n.status().code() == StatusCode::kDeadlineExceeded) continue;
      break;
    }
    if (*n == 0) break;  // the client closed
    decoder.Feed(buf.data(), *n);
    Frame frame;
    while (open) {
      auto got = decoder.Next(&frame);
      if (!got.ok()) {
        open = SendError(got.status());
        break;
      }
      if (!*got) break;
      open = Handle(frame);
    }
    // Group commit: one sync for everything this read brought, then one cumulative ack.
    if (open && need_sync_ && session_) {
      Status s = session_->Sync(/*wake_sender=*/false);
      if (!s.ok()) {
        open = SendError(s);
        break;
      }
      need_sync_ = false;
      acked_frame_ = last_frame_;
      // Ack first, upload second: whatever the server holds, the client was told about.
      open = Send(MessageType::kAck, NumberedPayload(acked_frame_, ""));
      session_->WakeSender();
    }
  }
  // Stopped by the agent (not by the client): the client will carry on with the next agent.
  if (stop_.load() && session_) session_->Release();
  session_.reset();
  done_.store(true);
}

bool AgentConnection::Handle(const Frame& frame) {
  switch (frame.type) {
    case MessageType::kHello: {
      auto hello = ParseHello(frame.payload);
      if (!hello.ok()) return SendError(hello.status());
      if (hello->version != kProtocolVersion) {
        return SendError(Status::FailedPrecondition(
            "protocol version " + std::to_string(hello->version) + " not supported (agent has " +
            std::to_string(kProtocolVersion) + ")"));
      }
      HelloMessage reply;
      reply.pid = getpid();
      reply.features = {std::string(kAgentFeatureAlert), std::string(kAgentFeatureConfigUnset)};
      return Send(MessageType::kHelloReply, ToJson(reply));
    }
    case MessageType::kOpen: {
      if (session_) return SendError(Status::FailedPrecondition("writer already open"));
      auto req = ParseOpenRequest(frame.payload);
      if (!req.ok()) return SendError(req.status());
      OpenReply reply;
      session_ = ingest_->Open(*req, &reply);
      // Its process, from the kernel (not the request): while it runs, a writer it leaves
      // without finishing is kept for its return.
      if (session_) session_->set_client(ClientProcess::Find(PeerPid(fd_)));
      Logf(LogLevel::kInfo, "open {}/{} label {} (pid {}): {}", req->project, req->run_id,
           req->label, req->pid, reply.ok ? "ok" : reply.error);
      last_frame_ = acked_frame_ = reply.last_frame;
      return Send(MessageType::kOpenReply, ToJson(reply)) && reply.ok;
    }
    case MessageType::kArtifactStatus: {
      auto ids = ParseArtifactStatusRequest(frame.payload);
      if (!ids.ok()) return SendError(ids.status());
      std::vector<ArtifactStatus> statuses;
      if (ArtifactUploader* up = ingest_->artifacts()) {
        statuses = up->StatusOf(*ids);
      } else {
        for (const auto& id : *ids) statuses.push_back(ArtifactStatus{.id = id});
      }
      return Send(MessageType::kArtifactStatusReply, ArtifactStatusReplyJson(statuses));
    }
    case MessageType::kLog:
    case MessageType::kUpdate:
    case MessageType::kArtifact:
    case MessageType::kAlert:
    case MessageType::kFlush:
    case MessageType::kFinish: {
      if (!session_) return SendError(Status::FailedPrecondition("no writer open"));
      uint64_t number = 0;
      std::string_view body;
      Status s = SplitNumbered(frame.payload, &number, &body);
      if (!s.ok()) return SendError(s);
      if (frame.type == MessageType::kLog) {
        // A resent frame that is already durable is acknowledged, not stored again.
        if (number > last_frame_) s = session_->Log(number, body);
      } else if (frame.type == MessageType::kUpdate) {
        if (number > last_frame_) s = session_->Update(number, body);
      } else if (frame.type == MessageType::kArtifact) {
        if (number > last_frame_) s = session_->Artifact(number, body);
      } else if (frame.type == MessageType::kAlert) {
        if (number > last_frame_) s = session_->Alert(number, body);
      } else if (frame.type == MessageType::kFinish) {
        auto req = ParseFinishRequest(body);
        if (!req.ok()) return SendError(req.status());
        auto reply = session_->Finish(number, *req);
        if (!reply.ok()) return SendError(reply.status());
        finished_.store(true);
        last_frame_ = acked_frame_ = std::max(last_frame_, number);
        need_sync_ = false;
        return Send(MessageType::kAck, NumberedPayload(acked_frame_, "")) &&
               Send(MessageType::kFinishReply, ToJson(*reply));
      }
      if (!s.ok()) return SendError(s);
      last_frame_ = std::max(last_frame_, number);
      need_sync_ = true;
      return true;
    }
    default:
      return SendError(Status::InvalidArgument("unexpected message " +
                                               std::string(MessageTypeName(frame.type))));
  }
}

}  // namespace cohort::agent
