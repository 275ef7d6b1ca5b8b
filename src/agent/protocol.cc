#include "agent/protocol.h"

#include <limits>
#include <string>

#include "core/coding.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;
Result<bj::object> ParseObject(std::string_view json, std::string_view what) {
  auto v = json::Parse(json);
  if (!v.ok()) return Status::InvalidArgument(std::string(what) + ": " + v.status().message());
  if (!v->is_object()) return Status::InvalidArgument(std::string(what) + ": expected an object");
  return std::move(v->as_object());
}

bool ValidObjectText(const std::string& text) {
  if (text.empty()) return true;
  auto v = json::Parse(text);
  return v.ok() && v->is_object();
}

}  // namespace

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kHelloReply:
      return "hello_reply";
    case MessageType::kOpen:
      return "open";
    case MessageType::kOpenReply:
      return "open_reply";
    case MessageType::kLog:
      return "log";
    case MessageType::kUpdate:
      return "update";
    case MessageType::kFlush:
      return "flush";
    case MessageType::kFinish:
      return "finish";
    case MessageType::kAck:
      return "ack";
    case MessageType::kFinishReply:
      return "finish_reply";
    case MessageType::kError:
      return "error";
    case MessageType::kArtifact:
      return "artifact";
    case MessageType::kArtifactStatus:
      return "artifact_status";
    case MessageType::kArtifactStatusReply:
      return "artifact_status_reply";
    case MessageType::kAlert:
      return "alert";
  }
  return "unknown";
}

void AppendFrame(MessageType type, std::string_view payload, std::string* out) {
  coding::PutFixed32(out, uint32_t(payload.size() + 1));
  out->push_back(char(type));
  out->append(payload);
}

void AppendNumberedFrame(MessageType type, uint64_t frame, std::string_view body,
                         std::string* out) {
  std::string number;  // at most 10 bytes: no allocation
  coding::PutVarint64(&number, frame);
  out->reserve(out->size() + kFrameHeaderBytes + 1 + number.size() + body.size());
  coding::PutFixed32(out, uint32_t(1 + number.size() + body.size()));
  out->push_back(char(type));
  out->append(number);
  out->append(body);
}

void FrameDecoder::Feed(const char* data, size_t n) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (size_t{1} << 20) && pos_ > buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(data, n);
}

Result<bool> FrameDecoder::Next(Frame* frame) {
  size_t avail = buf_.size() - pos_;
  if (avail < kFrameHeaderBytes) return false;
  const char* p = buf_.data() + pos_;
  uint32_t len = coding::DecodeFixed32(p);
  if (len == 0 || len > kMaxFrameBytes) {
    return Status::Corruption("agent frame length " + std::to_string(len) + " out of range");
  }
  if (avail < kFrameHeaderBytes + len) return false;
  const char* body = p + kFrameHeaderBytes;
  frame->type = MessageType(uint8_t(body[0]));
  frame->payload.assign(body + 1, len - 1);
  pos_ += kFrameHeaderBytes + len;
  return true;
}

std::string NumberedPayload(uint64_t frame, std::string_view body) {
  std::string out;
  out.reserve(body.size() + 10);
  coding::PutVarint64(&out, frame);
  out.append(body);
  return out;
}

Status SplitNumbered(std::string_view payload, uint64_t* frame, std::string_view* body) {
  if (!coding::GetVarint64(&payload, frame)) {
    return Status::Corruption("agent frame: truncated frame number");
  }
  *body = payload;
  return Status::Ok();
}

// ---- JSON control messages ----

std::string ToJson(const HelloMessage& m) {
  bj::object o;
  o["version"] = m.version;
  o["pid"] = m.pid;
  if (!m.features.empty()) {
    bj::array features;
    for (const std::string& f : m.features) features.emplace_back(f);
    o["features"] = std::move(features);
  }
  return bj::serialize(o);
}

Result<HelloMessage> ParseHello(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "hello"));
  json::FieldReader r(o, "hello");
  HelloMessage m;
  m.version = uint32_t(r.Int("version"));
  m.pid = r.OptInt("pid").value_or(0);
  if (!r.ok()) return r.status();
  if (const bj::value* f = o.if_contains("features")) {
    if (!f->is_array()) return Status::InvalidArgument("hello.features: expected an array");
    for (const bj::value& v : f->as_array()) {
      if (!v.is_string()) return Status::InvalidArgument("hello.features: expected strings");
      m.features.emplace_back(v.as_string());
    }
  }
  return m;
}

std::string ToJson(const OpenRequest& m) {
  bj::object o;
  o["session"] = m.session;
  o["base_url"] = m.base_url;
  o["api_key"] = m.api_key;
  o["entity"] = m.entity;
  o["project"] = m.project;
  o["run_id"] = m.run_id;
  o["label"] = m.label;
  o["offline"] = m.offline;
  o["data_dir"] = m.data_dir;
  o["run"] = m.run_json;
  o["writer"] = m.writer_json;
  o["stats_interval_s"] = m.stats_interval_s;
  if (m.gpu_ids) {
    bj::array a;
    for (int id : *m.gpu_ids) a.push_back(id);
    o["gpu_ids"] = std::move(a);
  }
  o["pid"] = m.pid;
  o["wait_ms"] = m.wait_ms;
  return bj::serialize(o);
}

Result<OpenRequest> ParseOpenRequest(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "open"));
  json::FieldReader r(o, "open");
  OpenRequest m;
  if (const bj::value* s = o.if_contains("session"); s && s->is_uint64()) {
    m.session = s->get_uint64();
  } else {
    m.session = uint64_t(r.Int("session"));
  }
  m.base_url = r.String("base_url");
  m.api_key = r.OptString("api_key").value_or("");
  m.entity = r.OptString("entity").value_or("");
  m.project = r.String("project");
  m.run_id = r.String("run_id");
  m.label = r.String("label");
  m.offline = r.OptBool("offline").value_or(false);
  m.data_dir = r.OptString("data_dir").value_or("");
  m.run_json = r.OptString("run", 16 << 20).value_or("{}");
  m.writer_json = r.OptString("writer", 1 << 20).value_or("{}");
  m.stats_interval_s = r.OptDouble("stats_interval_s").value_or(0);
  if (auto ids = r.OptIntArray("gpu_ids")) {
    m.gpu_ids.emplace();
    for (size_t i = 0; i < ids->size(); ++i) {
      const int64_t id = (*ids)[i];
      // GPU indices as NVML numbers them: never negative, and an int (no silent truncation).
      if (id < 0 || id > std::numeric_limits<int>::max()) {
        return Status::InvalidArgument("open.gpu_ids[" + std::to_string(i) +
                                       "]: " + std::to_string(id) + " is not a GPU index (0.." +
                                       std::to_string(std::numeric_limits<int>::max()) + ")");
      }
      m.gpu_ids->push_back(int(id));
    }
  }
  m.pid = r.OptInt("pid").value_or(0);
  m.wait_ms = r.OptInt("wait_ms").value_or(0);
  if (!r.ok()) return r.status();
  if (!ValidObjectText(m.run_json)) return Status::InvalidArgument("open.run: expected an object");
  if (!ValidObjectText(m.writer_json)) {
    return Status::InvalidArgument("open.writer: expected an object");
  }
  return m;
}

std::string ToJson(const OpenReply& m) {
  bj::object o;
  o["ok"] = m.ok;
  if (!m.error.empty()) o["error"] = m.error;
  o["entity"] = m.entity;
  o["run_name"] = m.run_name;
  o["next_step"] = m.next_step;
  o["last_frame"] = m.last_frame;
  o["confirmed"] = m.confirmed;
  o["wal_dir"] = m.wal_dir;
  if (!m.artifact_staging_dir.empty()) o["artifact_staging_dir"] = m.artifact_staging_dir;
  if (m.max_media_file_bytes > 0) o["max_media_file_bytes"] = m.max_media_file_bytes;
  if (m.max_media_per_step > 0) o["max_media_per_step"] = m.max_media_per_step;
  if (!m.run_fields.empty()) o["run_fields"] = m.run_fields;
  return bj::serialize(o);
}

std::string RunFieldsOfAnswer(std::string_view answer) {
  auto v = json::Parse(answer);
  if (!v.ok() || !v->is_object()) return "";
  const bj::object& run = v->as_object();
  bj::object out;
  for (std::string_view key : {"group", "job_type", "notes"}) {
    if (const bj::value* f = run.if_contains(key); f && f->is_string()) out[key] = *f;
  }
  if (const bj::value* f = run.if_contains("tags"); f && f->is_array()) {
    bj::array tags;
    for (const bj::value& t : f->as_array()) {
      if (t.is_string()) tags.push_back(t);
    }
    out["tags"] = std::move(tags);
  }
  std::string text = bj::serialize(out);
  // The config, then the summary, each left out when the reply would be over the limit with it
  // (the run's other fields are not).
  for (std::string_view key : {"config", "summary"}) {
    const bj::value* f = run.if_contains(key);
    if (!f || !f->is_object()) continue;
    out[key] = *f;
    std::string with = bj::serialize(out);
    if (with.size() <= kMaxRunFieldsBytes) {
      text = std::move(with);
    } else {
      out.erase(key);
    }
  }
  return text;
}

Result<OpenReply> ParseOpenReply(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "open_reply"));
  json::FieldReader r(o, "open_reply");
  OpenReply m;
  m.ok = r.OptBool("ok").value_or(false);
  m.error = r.OptString("error").value_or("");
  m.entity = r.OptString("entity").value_or("");
  m.run_name = r.OptString("run_name").value_or("");
  m.next_step = r.OptInt("next_step").value_or(0);
  if (const bj::value* f = o.if_contains("last_frame"); f && f->is_uint64()) {
    m.last_frame = f->get_uint64();
  } else {
    m.last_frame = uint64_t(r.OptInt("last_frame").value_or(0));
  }
  m.confirmed = r.OptBool("confirmed").value_or(false);
  m.wal_dir = r.OptString("wal_dir").value_or("");
  m.artifact_staging_dir = r.OptString("artifact_staging_dir").value_or("");
  m.max_media_file_bytes = std::max<int64_t>(0, r.OptInt("max_media_file_bytes").value_or(0));
  m.max_media_per_step = std::max<int64_t>(0, r.OptInt("max_media_per_step").value_or(0));
  m.run_fields = r.OptString("run_fields", kMaxRunFieldsBytes).value_or("");
  if (!r.ok()) return r.status();
  if (!m.run_fields.empty() && !ValidObjectText(m.run_fields)) {
    return Status::InvalidArgument("open_reply.run_fields: expected an object");
  }
  return m;
}

std::string ToJson(const FinishRequest& m) {
  bj::object o;
  if (m.exit_code) o["exit_code"] = *m.exit_code;
  if (!m.state.empty()) o["state"] = m.state;
  o["wait_ms"] = m.wait_ms;
  return bj::serialize(o);
}

Result<FinishRequest> ParseFinishRequest(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "finish"));
  json::FieldReader r(o, "finish");
  FinishRequest m;
  if (auto code = r.OptInt("exit_code")) m.exit_code = int(*code);
  m.state = r.OptString("state").value_or("");
  m.wait_ms = r.OptInt("wait_ms").value_or(0);
  if (!r.ok()) return r.status();
  return m;
}

std::string ToJson(const FinishReply& m) {
  bj::object o;
  o["uploaded"] = m.uploaded;
  o["pending_records"] = m.pending_records;
  return bj::serialize(o);
}

Result<FinishReply> ParseFinishReply(std::string_view text) {
  COHORT_ASSIGN_OR_RETURN(bj::object o, ParseObject(text, "finish_reply"));
  json::FieldReader r(o, "finish_reply");
  FinishReply m;
  m.uploaded = r.OptBool("uploaded").value_or(false);
  m.pending_records = r.OptInt("pending_records").value_or(0);
  if (!r.ok()) return r.status();
  return m;
}

std::string ErrorJson(const Status& status) {
  bj::object o;
  o["code"] = StatusCodeName(status.code());
  o["message"] = status.message();
  return bj::serialize(o);
}

Status ParseError(std::string_view text) {
  auto o = ParseObject(text, "error");
  if (!o.ok()) return Status::Internal("agent sent a malformed error");
  json::FieldReader r(*o, "error");
  std::string code = r.OptString("code").value_or("internal");
  std::string message = r.OptString("message", 1 << 16).value_or("");
  for (int c = int(StatusCode::kInvalidArgument); c <= int(StatusCode::kInternal); ++c) {
    if (StatusCodeName(StatusCode(c)) == code) return Status(StatusCode(c), "agent: " + message);
  }
  return Status::Internal("agent: " + message);
}

}  // namespace cohort::agent
