#include "agent/record.h"

#include "core/coding.h"

namespace cohort::agent {

std::string_view RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kRunUpsert: return "run_upsert";
    case RecordKind::kWriterJoin: return "writer_join";
    case RecordKind::kBatch: return "batch";
    case RecordKind::kRunPatch: return "run_patch";
    case RecordKind::kWriterFinish: return "writer_finish";
    case RecordKind::kArtifact: return "artifact";
    case RecordKind::kAlert: return "alert";
  }
  return "unknown";
}

std::string EncodeRecord(RecordKind kind, uint64_t seq, uint64_t session, uint64_t frame,
                         std::string_view body) {
  std::string out;
  out.reserve(body.size() + 28);
  out.push_back(char(kind));
  coding::PutFixed64(&out, seq);
  coding::PutFixed64(&out, session);
  coding::PutVarint64(&out, frame);
  out.append(body);
  return out;
}

Result<Record> DecodeRecord(std::string_view data) {
  if (data.size() < 18) return Status::Corruption("wal record: truncated header");
  Record r;
  uint8_t kind = uint8_t(data[0]);
  if (kind < uint8_t(RecordKind::kRunUpsert) || kind > uint8_t(RecordKind::kAlert)) {
    return Status::Corruption("wal record: unknown kind " + std::to_string(kind));
  }
  r.kind = RecordKind(kind);
  r.seq = coding::DecodeFixed64(data.data() + 1);
  r.session = coding::DecodeFixed64(data.data() + 9);
  data.remove_prefix(17);
  if (!coding::GetVarint64(&data, &r.frame)) {
    return Status::Corruption("wal record: truncated frame number");
  }
  r.body.assign(data);
  return r;
}

}  // namespace cohort::agent
