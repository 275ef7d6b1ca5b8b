// Fuzz target: the agent protocol decoder (src/agent/protocol.h), what the agent reads from a
// client's socket. The first input byte picks a mode:
//   even: the rest is a byte stream, fed to a FrameDecoder in pieces (sizes from the second
//         byte); each frame's payload is then decoded as its type says;
//   odd:  the second byte is a message type and the rest its payload.
// Properties: nothing crashes; a frame decoder that reported corruption is not used further
// (the agent closes the connection); a log frame's batch passes the agent's header check
// (core/batch_format.h CheckHeader) only when its checksum matches, and every refusal names the
// problem; errors carry a message.
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/alert_body.h"
#include "agent/artifact_intent.h"
#include "agent/protocol.h"
#include "core/batch_format.h"
#include "core/coding.h"
#include "core/crc32c.h"
#include "fuzz_check.h"

namespace {

using namespace cohort::agent;

void CheckLogBatch(std::string_view body) {
  cohort::Status s = cohort::batch::CheckHeader(body);
  if (!s.ok()) {
    FUZZ_CHECK(!s.message().empty(), "an error names the problem");
    return;
  }
  FUZZ_CHECK(body.size() >= cohort::batch::kHeaderBytes &&
                 cohort::crc32c::Value(body.substr(cohort::batch::kHeaderBytes)) ==
                     cohort::coding::DecodeFixed32(body.data() + 8),
             "a batch with a wrong checksum passed the header check");
}

template <typename T>
void CheckParsed(const cohort::Result<T>& r) {
  if (!r.ok()) FUZZ_CHECK(!r.status().message().empty(), "an error names the problem");
}

void CheckPayload(MessageType type, std::string_view payload) {
  switch (type) {
    case MessageType::kHello:
    case MessageType::kHelloReply: {
      auto m = ParseHello(payload);
      CheckParsed(m);
      if (m.ok()) CheckParsed(ParseHello(ToJson(*m)));
      return;
    }
    case MessageType::kOpen: {
      auto m = ParseOpenRequest(payload);
      CheckParsed(m);
      if (m.ok()) {
        auto again = ParseOpenRequest(ToJson(*m));
        FUZZ_CHECK(again.ok(), "a serialized OpenRequest does not parse: %s",
                   again.status().ToString().c_str());
        FUZZ_CHECK(again->run_id == m->run_id && again->label == m->label &&
                       again->session == m->session && again->gpu_ids == m->gpu_ids,
                   "OpenRequest changed in a round trip");
      }
      return;
    }
    case MessageType::kOpenReply:
      CheckParsed(ParseOpenReply(payload));
      return;
    case MessageType::kFinishReply:
      CheckParsed(ParseFinishReply(payload));
      return;
    case MessageType::kError: {
      cohort::Status s = ParseError(payload);
      FUZZ_CHECK(!s.ok(), "an error frame parsed as OK");
      return;
    }
    case MessageType::kArtifactStatus:
      CheckParsed(ParseArtifactStatusRequest(payload));
      return;
    case MessageType::kArtifactStatusReply:
      CheckParsed(ParseArtifactStatusReply(payload));
      return;
    case MessageType::kLog:
    case MessageType::kUpdate:
    case MessageType::kArtifact:
    case MessageType::kFlush:
    case MessageType::kFinish:
    case MessageType::kAlert:
    case MessageType::kAck: {
      uint64_t frame = 0;
      std::string_view body;
      if (!SplitNumbered(payload, &frame, &body).ok()) return;
      FUZZ_CHECK(NumberedPayload(frame, body).size() <= payload.size() + 10, "varint size");
      if (type == MessageType::kLog) CheckLogBatch(body);
      if (type == MessageType::kFinish) CheckParsed(ParseFinishRequest(body));
      if (type == MessageType::kAlert) {
        cohort::Status s = CheckAlertBody(body);
        FUZZ_CHECK(s.ok() || s.code() == cohort::StatusCode::kInvalidArgument, "%s",
                   s.ToString().c_str());
      }
      if (type == MessageType::kArtifact) {
        auto intent = ParseArtifactIntent(body);
        CheckParsed(intent);
        if (intent.ok()) {
          auto again = ParseArtifactIntent(ToJson(*intent));
          FUZZ_CHECK(again.ok() && ToJson(*again) == ToJson(*intent),
                     "an artifact intent changed in a round trip");
        }
      }
      return;
    }
  }
  (void)MessageTypeName(type);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (data[0] % 2 == 1) {
    CheckPayload(MessageType(data[1]), rest);
    return 0;
  }
  const size_t piece = 1 + data[1] % 64;
  FrameDecoder decoder;
  for (size_t at = 0; at < rest.size(); at += piece) {
    std::string_view chunk = rest.substr(at, piece);
    decoder.Feed(chunk.data(), chunk.size());
    while (true) {
      Frame frame;
      auto next = decoder.Next(&frame);
      if (!next.ok()) {
        FUZZ_CHECK(next.status().code() == cohort::StatusCode::kCorruption, "%s",
                   next.status().ToString().c_str());
        return 0;  // the agent drops the connection here
      }
      if (!*next) break;
      CheckPayload(frame.type, frame.payload);
    }
  }
  FUZZ_CHECK(decoder.buffered() <= rest.size(), "buffered more than was fed");
  return 0;
}
