#include "agent/writer_stream.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "agent/agent_log.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/utf8.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;

constexpr uint64_t kMaxMetaBytes = 1 << 20;
constexpr int kSeqTimeShift = 20;

// A stream id as this agent makes them (ids::RandomHex); empty: none.
bool IsStreamId(std::string_view id) {
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::string WriterTarget::ToJson() const {
  bj::object o;
  o["version"] = 1;
  o["base_url"] = base_url;
  o["api_key"] = api_key;
  o["entity"] = entity;
  o["project"] = project;
  o["run_id"] = run_id;
  o["label"] = label;
  o["offline"] = offline;
  o["created_ms"] = created_ms;
  if (!stream_id.empty()) o["stream_id"] = stream_id;
  return bj::serialize(o);
}

Result<WriterTarget> WriterTarget::Parse(std::string_view text) {
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_object()) return Status::Corruption("meta.json: not a JSON object");
  json::FieldReader r(v->as_object(), "meta");
  WriterTarget t;
  t.base_url = r.String("base_url");
  t.api_key = r.OptString("api_key").value_or("");
  t.entity = r.OptString("entity").value_or("");
  t.project = r.String("project");
  t.run_id = r.String("run_id");
  t.label = r.String("label");
  t.offline = r.OptBool("offline").value_or(false);
  t.created_ms = r.OptInt("created_ms").value_or(0);
  t.stream_id = r.OptString("stream_id", limits::kMaxIdBytes).value_or("");
  if (!r.ok()) return Status::Corruption(r.status().message());
  if (!IsStreamId(t.stream_id)) return Status::Corruption("meta.json: bad stream_id");
  return t;
}

std::vector<std::string> ChildPaths(wal::FileSystem* fs, const std::string& dir) {
  std::vector<std::string> out;
  auto names = fs->ListDir(dir);
  if (!names.ok()) return out;
  for (const std::string& name : *names) out.push_back(wal::JoinPath(dir, name));
  std::sort(out.begin(), out.end());
  return out;
}

std::string WriterFinishBody(std::optional<int> exit_code, const std::string& state) {
  bj::object o;
  if (exit_code) o["exit_code"] = *exit_code;
  if (!state.empty()) o["state"] = state;
  return bj::serialize(o);
}

WriterStream::WriterStream(std::string dir, WriterTarget target, wal::FileSystem* fs)
    : dir_(std::move(dir)), target_(std::move(target)), fs_(fs) {}

void WriterStream::Retarget(const std::string& base_url, const std::string& api_key) {
  if (!base_url.empty()) target_.base_url = base_url;
  if (!api_key.empty()) target_.api_key = api_key;
}

WriterStream::~WriterStream() {
  if (log_) (void)log_->Close();
}

Result<std::shared_ptr<WriterStream>> WriterStream::Create(const std::string& dir,
                                                           const WriterTarget& target,
                                                           wal::FileSystem* fs) {
  COHORT_RETURN_IF_ERROR(fs->CreateDir(dir));
  COHORT_RETURN_IF_ERROR(fs->SetPermissions(dir, 0700));  // meta.json holds the API key
  std::shared_ptr<WriterStream> s(new WriterStream(dir, target, fs));
  // Take the WAL (and its lock) before touching meta.json, so that a stream another process
  // holds is left alone.
  COHORT_RETURN_IF_ERROR(s->OpenLog());
  // The directory's stream id stays what it was (a client joining a stream again).
  auto old = wal::ReadFileToString(fs, wal::JoinPath(dir, kMetaFile), kMaxMetaBytes);
  auto old_target = old.ok() ? WriterTarget::Parse(*old) : Result<WriterTarget>(old.status());
  s->target_.stream_id = old_target.ok() && !old_target->stream_id.empty() ? old_target->stream_id
                                                                           : ids::RandomHex(16);
  COHORT_RETURN_IF_ERROR(
      wal::WriteFileAtomically(fs, wal::JoinPath(dir, kMetaFile), s->target_.ToJson(), 0600));
  COHORT_RETURN_IF_ERROR(s->ScanUnacknowledged());
  s->LoadClientsOrWarn();
  return s;
}

Result<std::shared_ptr<WriterStream>> WriterStream::OpenExisting(const std::string& dir,
                                                                 wal::FileSystem* fs) {
  auto text = wal::ReadFileToString(fs, wal::JoinPath(dir, kMetaFile), kMaxMetaBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(dir + ": no " + kMetaFile);
    }
    return text.status();
  }
  COHORT_ASSIGN_OR_RETURN(WriterTarget target, WriterTarget::Parse(*text));
  std::shared_ptr<WriterStream> s(new WriterStream(dir, std::move(target), fs));
  COHORT_RETURN_IF_ERROR(s->OpenLog());
  COHORT_RETURN_IF_ERROR(s->ScanUnacknowledged());
  s->LoadClientsOrWarn();
  return s;
}

Status WriterStream::OpenLog() {
  wal::LogOptions options;
  options.segment_size = 16ull << 20;
  options.fs = fs_;
  COHORT_ASSIGN_OR_RETURN(log_, wal::Log::Open(wal::JoinPath(dir_, kWalDir), options));
  if (!log_->recovery().clean()) {
    Logf(LogLevel::kWarning, "{}: WAL recovery: {}", dir_, log_->recovery().ToString());
  }
  COHORT_ASSIGN_OR_RETURN(already_finished_, fs_->Exists(wal::JoinPath(dir_, kFinishedMarker)));
  return Status::Ok();
}

Status WriterStream::ScanUnacknowledged() {
  uint64_t max_seq = 0;
  int64_t count = 0;
  bool finish = false;                    // an unacknowledged finish record
  bool last_finish = false;               // the log's last record is a finish (acknowledged or not)
  std::map<uint64_t, uint64_t> uploaded;  // frames of the acknowledged records still here
  std::map<uint64_t, uint64_t> stored;    // frames of every record still here
  std::set<uint64_t> finished_sessions;   // whose last join still here is followed by a finish
  const wal::Position acknowledged = log_->acknowledged();
  // From the first record still in the log: the acknowledged ones tell what their sessions
  // stored (those that left the log are in seq.json).
  auto reader = log_->NewReader(wal::Position{});
  wal::Record rec;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool more, reader->Next(&rec));
    if (!more) break;
    auto r = DecodeRecord(rec.payload);
    if (!r.ok()) continue;  // Peek reports it when it gets there
    const bool done = rec.next <= acknowledged;
    if (r->session != 0) {
      uint64_t& f = stored[r->session];
      f = std::max(f, r->frame);
      if (done) uploaded[r->session] = std::max(uploaded[r->session], r->frame);
    }
    last_finish = r->kind == RecordKind::kWriterFinish;
    if (r->session != 0 && r->kind == RecordKind::kWriterFinish) {
      finished_sessions.insert(r->session);
    } else if (r->session != 0 && r->kind == RecordKind::kWriterJoin) {
      finished_sessions.erase(r->session);
    }
    if (done) continue;
    max_seq = std::max(max_seq, r->seq);
    ++count;
    if (r->kind == RecordKind::kWriterFinish) finish = true;
  }
  bool seq_damaged = false;
  if (Status st = LoadSeqState(); !st.ok()) {
    seq_damaged = true;
    // Damaged (the file is replaced atomically, so only outside damage does this): the floor,
    // the join that decided the upload offset and the offset are unknown. Go on rather than
    // strand the records: seqs continue above the WAL's and the clock, and the next join the
    // server acknowledges decides the offset anew, so that every record after it uploads above
    // what the server holds: none is ever taken for a retry of other data (lost), at the price
    // of storing twice the few records the server had stored but not yet acknowledged here.
    const std::string aside = wal::JoinPath(dir_, std::string(kSeqFile) + ".corrupt");
    Status moved = fs_->Rename(wal::JoinPath(dir_, kSeqFile), aside);
    Logf(LogLevel::kWarning,
         "{}: {}; set aside as {}{}: numbering from the WAL and the clock, the upload offset "
         "decided again by the next join",
         dir_, st.ToString(), aside, moved.ok() ? "" : " (failed: " + moved.ToString() + ")");
  }
  uint64_t time_base = uint64_t(NowMillis()) << kSeqTimeShift;
  {
    MutexLock lock(&append_mu_);
    // seq.json is written when acknowledgements first remove records (FlushAcks), or before the
    // first batch is uploaded (SaveStreamId), not here: an open (which a client's Init waits for)
    // costs no extra fsync.
    next_seq_ = std::max({max_seq + 1, time_base, seq_floor_});
    // seq.json's id, else meta.json's; a new one (saved before the first batch) after a damaged
    // seq.json (whose offset is lost: the records go under a new id) or for an older agent's
    // directory.
    if (stream_id_.empty() && !seq_damaged) stream_id_ = target_.stream_id;
    stream_id_saved_.store(!stream_id_.empty());
    if (stream_id_.empty()) stream_id_ = ids::RandomHex(16);
  }
  int64_t refused_loaded = 0;  // seq.json's, for progress_ (which mu_ guards)
  Status last_refusal_loaded;
  {
    MutexLock lock(&append_mu_);
    for (const auto& [session, frame] : stored) {
      last_frame_[session] = std::max(last_frame_[session], frame);
    }
    for (const auto& [session, frame] : saved_frames_) {
      uploaded[session] = std::max(uploaded[session], frame);
      last_frame_[session] = std::max(last_frame_[session], frame);
    }
    frames_saved_at_ = acknowledged;
    refused_loaded = refused_;
    last_refusal_loaded = last_refusal_;
  }
  uploaded_frames_ = std::move(uploaded);
  {
    MutexLock clients(&clients_mu_);
    finished_sessions_ = std::move(finished_sessions);
  }
  reader_ = log_->ReadUnacknowledged();
  ack_written_ = ack_pending_ = acknowledged;
  MutexLock lock(&mu_);
  progress_.appended_seq = max_seq;
  progress_.done_seq = 0;
  progress_.refused = refused_loaded;
  progress_.last_refusal = last_refusal_loaded;
  progress_.appended_records = count;
  // A finish acknowledged earlier: its directory outlived it (a crash while removing it, or it
  // was kept for a client away).
  progress_.finish_appended = finish || last_finish || already_finished_;
  progress_.entity = target_.entity;
  progress_.complete = progress_.finish_appended && count == 0;
  return Status::Ok();
}

namespace {

// The code StatusCodeName gives `name`; kFailedPrecondition (a refusal for good) when unknown.
StatusCode CodeNamed(std::string_view name) {
  for (int c = int(StatusCode::kInvalidArgument); c <= int(StatusCode::kInternal); ++c) {
    if (StatusCodeName(StatusCode(c)) == name) return StatusCode(c);
  }
  return StatusCode::kFailedPrecondition;
}

}  // namespace

Status WriterStream::LoadSeqState() {
  auto text = wal::ReadFileToString(fs_, wal::JoinPath(dir_, kSeqFile), kMaxMetaBytes);
  if (!text.ok()) {
    // Absent: nothing of this stream was acknowledged yet and no join changed its offset.
    return text.status().code() == StatusCode::kNotFound ? Status::Ok() : text.status();
  }
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) return Status::Corruption(dir_ + "/" + kSeqFile + ": not JSON");
  json::FieldReader r(v->as_object(), kSeqFile);
  int64_t floor = r.Int("floor");
  int64_t joined = r.OptInt("joined_seq").value_or(0);
  int64_t offset = r.OptInt("upload_offset").value_or(0);
  std::string stream_id = r.OptString("stream_id", limits::kMaxIdBytes).value_or("");
  std::map<uint64_t, uint64_t> frames;
  if (const bj::array* sessions = r.OptArray("sessions")) {
    for (const bj::value& v : *sessions) {
      if (!v.is_object()) return Status::Corruption(dir_ + "/" + kSeqFile + ": bad sessions");
      json::FieldReader e(v.as_object(), "sessions[]");
      int64_t session = e.Int("session");
      int64_t frame = e.Int("frame");
      if (!e.ok() || session <= 0 || frame < 0) {
        return Status::Corruption(dir_ + "/" + kSeqFile + ": bad sessions entry");
      }
      frames[uint64_t(session)] = uint64_t(frame);
    }
  }
  const int64_t refused = r.OptInt("refused").value_or(0);
  Status last_refusal;
  if (const bj::object* last = r.OptObject("last_refusal")) {
    json::FieldReader e(*last, "last_refusal");
    std::string code = e.String("code", limits::kMaxIdBytes);
    std::string message = e.String("message", kMaxMetaBytes);
    if (!e.ok()) return Status::Corruption(dir_ + "/" + kSeqFile + ": " + e.status().message());
    last_refusal = Status(CodeNamed(code), std::move(message));
  }
  if (!r.ok()) return Status::Corruption(dir_ + "/" + kSeqFile + ": " + r.status().message());
  if (floor < 0 || joined < 0 || offset < 0 || refused < 0) {
    return Status::Corruption(dir_ + "/" + kSeqFile + ": negative value");
  }
  if (!IsStreamId(stream_id)) {
    return Status::Corruption(dir_ + "/" + kSeqFile + ": bad stream_id");
  }
  stream_id_ = std::move(stream_id);
  MutexLock lock(&append_mu_);
  saved_frames_ = std::move(frames);
  seq_floor_ = uint64_t(floor);
  joined_seq_ = uint64_t(joined);
  upload_offset_ = uint64_t(offset);
  refused_ = refused;
  last_refusal_ = std::move(last_refusal);
  return Status::Ok();
}

Status WriterStream::NoteRefused(const Status& why) {
  Status saved;
  {
    MutexLock lock(&append_mu_);
    ++refused_;
    // Bounded and valid UTF-8: seq.json must stay under kMaxMetaBytes and parse (the server's
    // message is its own).
    constexpr size_t kKeptMessageBytes = 1024;
    std::string message;
    utf8::AppendSanitized(why.message(), kKeptMessageBytes, &message);
    last_refusal_ = Status(why.code(), std::move(message));
    saved = WriteSeqStateLocked();
  }
  Update([&why](UploadProgress* p) {
    ++p->refused;
    p->last_refusal = why;
  });
  return saved;
}

Status WriterStream::WriteSeqStateLocked() {
  bj::object o;
  o["floor"] = int64_t(seq_floor_);
  o["joined_seq"] = int64_t(joined_seq_);
  o["upload_offset"] = int64_t(upload_offset_);
  o["stream_id"] = stream_id_;
  if (refused_ > 0) {
    o["refused"] = refused_;
    o["last_refusal"] = bj::object{{"code", std::string(StatusCodeName(last_refusal_.code()))},
                                   {"message", last_refusal_.message()}};
  }
  if (!saved_frames_.empty()) {
    bj::array sessions;
    for (const auto& [session, frame] : saved_frames_) {
      sessions.push_back(bj::object{{"session", int64_t(session)}, {"frame", int64_t(frame)}});
    }
    o["sessions"] = std::move(sessions);
  }
  Status st = wal::WriteFileAtomically(fs_, wal::JoinPath(dir_, kSeqFile), bj::serialize(o));
  if (st.ok()) seq_state_dirty_ = false;
  if (st.ok()) stream_id_saved_.store(true);
  return st;
}

Status WriterStream::SaveStreamId() {
  if (stream_id_saved_.load()) return Status::Ok();
  MutexLock lock(&append_mu_);
  return stream_id_saved_.load() ? Status::Ok() : WriteSeqStateLocked();
}

Status WriterStream::NoteJoined(uint64_t join_seq, uint64_t server_last_seq) {
  // Only this (the Sender's) thread changes the two after opening: they stay as read here.
  uint64_t current_offset, joined_seq;
  {
    MutexLock lock(&append_mu_);
    current_offset = upload_offset_;
    joined_seq = joined_seq_;
  }
  uint64_t offset = current_offset;
  // Decided when this join was first sent (a re-send after a crash): keep what it decided.
  if (join_seq == joined_seq) return Status::Ok();
  // Every record after the join has seq > join_seq: lift the first above server_last_seq.
  if (server_last_seq > join_seq) offset = std::max(offset, server_last_seq - join_seq);
  if (offset != current_offset) {
    // The records before the join were uploaded with the old offset: a crash must not have them
    // re-sent with the new one.
    COHORT_RETURN_IF_ERROR(FlushAcks(true));
    Logf(LogLevel::kInfo,
         "{}: the server holds seq {} of this writer, above this stream's {}: uploading with "
         "seq + {}",
         dir_, server_last_seq, join_seq, offset);
  }
  MutexLock lock(&append_mu_);
  if (offset == upload_offset_) {
    // The usual case: the offset stands. Recording which join decided it can wait until just
    // before the next record is uploaded (Peek), so that the writer's confirmation, which a
    // client's Init waits for, costs no file write.
    joined_seq_ = join_seq;
    seq_state_dirty_ = true;
    return Status::Ok();
  }
  uint64_t old_joined = joined_seq_, old_offset = upload_offset_;
  joined_seq_ = join_seq;
  upload_offset_ = offset;
  Status s = WriteSeqStateLocked();
  if (!s.ok()) {
    joined_seq_ = old_joined;
    upload_offset_ = old_offset;
  }
  return s;
}

Status WriterStream::PersistSeqStateIfDirty() {
  MutexLock lock(&append_mu_);
  return seq_state_dirty_ ? WriteSeqStateLocked() : Status::Ok();
}

Result<uint64_t> WriterStream::Append(RecordKind kind, uint64_t session, uint64_t frame,
                                      std::string_view body) {
  MutexLock lock(&append_mu_);
  return AppendLocked(kind, session, frame, body);
}

Result<uint64_t> WriterStream::AppendLocked(RecordKind kind, uint64_t session, uint64_t frame,
                                            std::string_view body) {
  if (!log_) return Status::FailedPrecondition(dir_ + ": stream closed");
  uint64_t seq = next_seq_;
  COHORT_RETURN_IF_ERROR(log_->Append(EncodeRecord(kind, seq, session, frame, body)).status());
  ++next_seq_;
  if (session != 0) {
    uint64_t& f = last_frame_[session];
    f = std::max(f, frame);
  }
  if (kind == RecordKind::kWriterJoin && already_finished_) {
    // The writer runs again (its client came back after its crash was recorded): a later open
    // must not take it for finished.
    Status s = fs_->Remove(wal::JoinPath(dir_, kFinishedMarker));
    if (s.ok() || s.code() == StatusCode::kNotFound) s = fs_->SyncDir(dir_);
    if (!s.ok()) Logf(LogLevel::kWarning, "{}: {}", dir_, s.ToString());
    already_finished_ = false;
  }
  {
    MutexLock plock(&mu_);
    progress_.appended_seq = seq;
    ++progress_.appended_records;
    if (kind == RecordKind::kWriterFinish) progress_.finish_appended = true;
    if (kind == RecordKind::kWriterJoin) progress_.finish_appended = false;
    progress_.complete = false;
  }
  return seq;
}

Result<bool> WriterStream::AppendFrame(RecordKind kind, uint64_t session, uint64_t frame,
                                       std::string_view body) {
  MutexLock lock(&append_mu_);
  auto it = last_frame_.find(session);
  if (session != 0 && it != last_frame_.end() && frame <= it->second) return false;
  COHORT_RETURN_IF_ERROR(AppendLocked(kind, session, frame, body).status());
  return true;
}

Status WriterStream::Sync() {
  MutexLock lock(&append_mu_);
  if (!log_) return Status::FailedPrecondition(dir_ + ": stream closed");
  Status s = log_->Sync();
  if (!s.ok() && log_->broken()) broken_.store(true);
  return s;
}

uint64_t WriterStream::LastFrame(uint64_t session) const {
  MutexLock lock(&append_mu_);
  auto it = last_frame_.find(session);
  return it == last_frame_.end() ? 0 : it->second;
}

Result<bool> WriterStream::ReadRecord(std::optional<Record>* out, wal::Position* next,
                                      wal::Position* skipped) {
  while (!*out) {
    if (!reader_) return false;
    wal::Record rec;
    COHORT_ASSIGN_OR_RETURN(bool more, reader_->Next(&rec));
    for (const wal::Damage& d : reader_->TakeDamage()) {
      Logf(LogLevel::kWarning, "{}: WAL damage skipped: {}", dir_, d.ToString());
    }
    if (!more) return false;
    auto r = DecodeRecord(rec.payload);
    if (!r.ok()) {
      Logf(LogLevel::kWarning, "{}: skipping undecodable record at {}: {}", dir_,
           rec.position.ToString(), r.status().ToString());
      *skipped = std::max(*skipped, rec.next);
      continue;
    }
    *out = std::move(*r);
    *next = rec.next;
  }
  return true;
}

Result<bool> WriterStream::Peek(const Record** record) {
  // A join's decision (NoteJoined) is on disk before any record after it goes out.
  COHORT_RETURN_IF_ERROR(PersistSeqStateIfDirty());
  if (!peeked_) {
    COHORT_ASSIGN_OR_RETURN(bool found, ReadRecord(&peeked_, &peeked_next_, &ack_pending_));
    if (!found) return false;
  }
  *record = &*peeked_;
  return true;
}

void WriterStream::Pop() {
  if (!peeked_) return;
  uint64_t seq = peeked_->seq;
  if (peeked_->session != 0) {
    uint64_t& f = uploaded_frames_[peeked_->session];
    if (peeked_->frame > f) {
      f = peeked_->frame;
      uploaded_frames_dirty_ = true;
    }
  }
  ack_pending_ = std::max(ack_pending_, peeked_next_);
  peeked_.reset();
  {
    MutexLock lock(&mu_);
    progress_.done_seq = std::max(progress_.done_seq, seq);
    ++progress_.done_records;
    progress_.complete = progress_.finish_appended && progress_.done_seq >= progress_.appended_seq;
  }
  cv_.SignalAll();
}

Status WriterStream::FlushAcks(bool force, int64_t min_interval_ms) {
  const int64_t now = MonoNanos() / 1000000;
  if (!AcksDue(force, min_interval_ms, now)) return Status::Ok();
  {
    MutexLock lock(&append_mu_);
    COHORT_RETURN_IF_ERROR(SaveSeqStateForAcksLocked());
  }
  return WriteAcks(now);
}

Status WriterStream::FlushAcksLocked(bool force, int64_t min_interval_ms) {
  const int64_t now = MonoNanos() / 1000000;
  if (!AcksDue(force, min_interval_ms, now)) return Status::Ok();
  COHORT_RETURN_IF_ERROR(SaveSeqStateForAcksLocked());
  return WriteAcks(now);
}

bool WriterStream::AcksDue(bool force, int64_t min_interval_ms, int64_t now_ms) const {
  if (!log_ || ack_pending_ <= ack_written_) return false;
  return force || now_ms - ack_written_ms_ >= min_interval_ms;
}

Status WriterStream::SaveSeqStateForAcksLocked() {
  // Acknowledged records leave the WAL, whose highest seq then no longer bounds the next
  // opening's: seq.json's floor must be above them first (every seq is below next_seq_).
  const bool floor = seq_floor_ < next_seq_;
  // And what they tell of their sessions' frames must be in seq.json before their segment can
  // go: MarkAcknowledged deletes the segments below the acknowledged position's and that one
  // too once it is sealed (the active one never; its records are read back at open). So the
  // frames are written when the acknowledged position enters a segment, and while it is in a
  // sealed one: not for every acknowledgement.
  const bool frames = uploaded_frames_dirty_ && (ack_pending_.segment != frames_saved_at_.segment ||
                                                 ack_pending_.segment != log_->end().segment);
  if (floor || frames) {
    const uint64_t old_floor = seq_floor_;
    if (floor) seq_floor_ = next_seq_ + kSeqReserve;
    std::map<uint64_t, uint64_t> old_frames = std::exchange(saved_frames_, uploaded_frames_);
    Status st = WriteSeqStateLocked();
    if (!st.ok()) {
      seq_floor_ = old_floor;
      saved_frames_ = std::move(old_frames);
      return st;
    }
    frames_saved_at_ = ack_pending_;
    uploaded_frames_dirty_ = false;
  }
  return Status::Ok();
}

Status WriterStream::WriteAcks(int64_t now_ms) {
  Status s = log_->MarkAcknowledged(ack_pending_);
  // Written when the log took it (a segment it could not delete is only left for later); an ACK
  // file that could not be written (ENOSPC) stays due, or the next flush found nothing to do.
  if (log_->acknowledged() >= ack_pending_) ack_written_ = ack_pending_;
  ack_written_ms_ = now_ms;
  return s;
}

UploadProgress WriterStream::progress() const {
  MutexLock lock(&mu_);
  return progress_;
}

void WriterStream::Update(const std::function<void(UploadProgress*)>& change) {
  {
    MutexLock lock(&mu_);
    change(&progress_);
  }
  cv_.SignalAll();
}

UploadProgress WriterStream::WaitFor(const std::function<bool(const UploadProgress&)>& done,
                                     int64_t deadline_ms) const {
  // The deadline is on the wall clock (the callers' unit) but the wait is measured on the
  // monotonic clock: a wall clock that jumps (NTP, a resumed VM, a user) must neither cut the
  // wait short nor stretch it by the jump (tests/fault/test_clock_jumps.py).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until =
      Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, deadline_ms - NowMillis()));
  MutexLock lock(&mu_);
  while (!done(progress_)) {
    Clock::time_point now = Clock::now();
    if (now >= until) break;
    cv_.WaitUntil(mu_, std::min(until, now + std::chrono::milliseconds(100)));
  }
  return progress_;
}

void WriterStream::Attach(uint64_t session) {
  MutexLock clients(&clients_mu_);
  ++attached_sessions_[session];
  MutexLock lock(&mu_);
  ++attached_;
}

void WriterStream::Detach(uint64_t session) {
  MutexLock clients(&clients_mu_);
  auto it = attached_sessions_.find(session);
  if (it != attached_sessions_.end() && --it->second <= 0) attached_sessions_.erase(it);
  MutexLock lock(&mu_);
  if (attached_ > 0) --attached_;
}

Status WriterStream::ClientGone(uint64_t session, const std::optional<ClientProcess>& process,
                                std::string_view finish_body, Gone* gone) {
  MutexLock clients(&clients_mu_);
  // The caller's connection is attached still: another one means the client is back.
  auto it = attached_sessions_.find(session);
  if (it != attached_sessions_.end() && it->second > 1) {
    *gone = Gone::kBack;
    return Status::Ok();
  }
  *gone = Gone::kCrashed;
  const bool alive = process && process->Alive();
  if (alive) {
    // Recorded before the finish: a directory whose writer finished must outlive it.
    away_[session] = *process;
    *gone = Gone::kKept;
    // Kept in memory even when the file cannot be written: this agent keeps the writer.
    Status st = WriteClientsLocked();
    if (!st.ok()) Logf(LogLevel::kWarning, "{}: {}", dir_, st.ToString());
  }
  COHORT_RETURN_IF_ERROR(Append(RecordKind::kWriterFinish, session, 0, finish_body).status());
  COHORT_RETURN_IF_ERROR(Sync());
  // Running no more once its finish is durable (not before: a finish that failed leaves the
  // entry for the next agent, which records it).
  if (running_.erase(session) > 0) {
    Status st = WriteClientsLocked();
    if (!st.ok()) Logf(LogLevel::kWarning, "{}: {}", dir_, st.ToString());
  }
  return Status::Ok();
}

Status WriterStream::ClientRunning(uint64_t session, const ClientProcess& process) {
  MutexLock clients(&clients_mu_);
  auto it = running_.find(session);
  if (it != running_.end() && it->second == process) return Status::Ok();  // a reconnect
  running_[session] = process;
  return WriteClientsLocked();
}

void WriterStream::ClientFinished(uint64_t session) {
  MutexLock clients(&clients_mu_);
  if (running_.erase(session) == 0) return;
  if (Status st = WriteClientsLocked(); !st.ok()) {
    Logf(LogLevel::kWarning, "{}: {}", dir_, st.ToString());
  }
}

Result<int> WriterStream::FinishEndedClients(std::string_view finish_body) {
  MutexLock clients(&clients_mu_);
  std::vector<uint64_t> crashed, finished_before;
  for (const auto& [session, process] : running_) {
    if (attached_sessions_.count(session) != 0 || !process.Ended()) continue;
    // Its finish in the WAL already (an agent stopped between the finish and this file's
    // rewrite): ended, not crashed.
    (finished_sessions_.count(session) != 0 ? finished_before : crashed).push_back(session);
  }
  if (crashed.empty() && finished_before.empty()) return 0;
  for (uint64_t session : crashed) {
    COHORT_RETURN_IF_ERROR(Append(RecordKind::kWriterFinish, session, 0, finish_body).status());
  }
  if (!crashed.empty()) COHORT_RETURN_IF_ERROR(Sync());
  // Running no more once their finish is durable.
  for (uint64_t session : crashed) running_.erase(session);
  for (uint64_t session : finished_before) running_.erase(session);
  if (Status st = WriteClientsLocked(); !st.ok()) {
    Logf(LogLevel::kWarning, "{}: {}", dir_, st.ToString());
  }
  return int(crashed.size());
}

Result<bool> WriterStream::ClientBack(uint64_t session) {
  MutexLock clients(&clients_mu_);
  if (away_.erase(session) == 0) return false;
  COHORT_RETURN_IF_ERROR(WriteClientsLocked());
  return true;
}

bool WriterStream::AwaitsLiveClient(std::vector<int>* ended) {
  MutexLock clients(&clients_mu_);
  bool live = false;
  for (auto it = away_.begin(); it != away_.end();) {
    if (it->second.Alive()) {
      live = true;
      ++it;
      continue;
    }
    if (ended) ended->push_back(it->second.pid);
    it = away_.erase(it);
  }
  return live;
}

Status WriterStream::WriteClientsLocked() {
  wal::FileSystem* const fs = fs_;
  const std::string path = wal::JoinPath(dir_, kClientsFile);
  if (away_.empty() && running_.empty()) {
    Status s = fs->Remove(path);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    return Status::Ok();
  }
  auto entries = [](const std::map<uint64_t, ClientProcess>& processes) {
    bj::array out;
    for (const auto& [session, p] : processes) {
      out.push_back(bj::object{{"session", int64_t(session)},
                               {"pid", p.pid},
                               {"start_ticks", int64_t(p.start_ticks)},
                               {"boot_id", p.boot_id}});
    }
    return out;
  };
  bj::object o;
  o["version"] = 1;
  o["clients"] = entries(away_);
  o["running"] = entries(running_);
  return wal::WriteFileAtomically(fs, path, bj::serialize(o));
}

void WriterStream::LoadClientsOrWarn() {
  // Unreadable (damage, which the atomic write rules out otherwise): as if no client were away.
  if (Status st = LoadClients(); !st.ok()) {
    Logf(LogLevel::kWarning, "{}: {}; no client is awaited", dir_, st.ToString());
  }
}

Status WriterStream::LoadClients() {
  auto text = wal::ReadFileToString(fs_, wal::JoinPath(dir_, kClientsFile), kMaxMetaBytes);
  if (!text.ok()) {
    return text.status().code() == StatusCode::kNotFound ? Status::Ok() : text.status();
  }
  const std::string what = dir_ + "/" + kClientsFile;
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) return Status::Corruption(what + ": not a JSON object");
  json::FieldReader r(v->as_object(), kClientsFile);
  if (r.Int("version") != 1 && r.ok()) {
    return Status::FailedPrecondition(what + ": unsupported version");
  }
  auto entries = [&](const char* field, std::map<uint64_t, ClientProcess>* out) -> Status {
    const bj::array* list = r.OptArray(field);
    if (list == nullptr) return Status::Ok();
    for (const bj::value& c : *list) {
      if (!c.is_object()) return Status::Corruption(what + ": a client is not an object");
      json::FieldReader e(c.as_object(), std::string(field) + "[]");
      ClientProcess p;
      int64_t session = e.Int("session");
      int64_t pid = e.Int("pid");
      int64_t start = e.Int("start_ticks");
      p.boot_id = e.String("boot_id");
      if (!e.ok()) return Status::Corruption(what + ": " + e.status().message());
      if (session <= 0 || pid <= 0 || pid > INT32_MAX || start < 0) {
        return Status::Corruption(what + ": a client entry is out of range");
      }
      p.pid = int(pid);
      p.start_ticks = uint64_t(start);
      (*out)[uint64_t(session)] = std::move(p);
    }
    return Status::Ok();
  };
  std::map<uint64_t, ClientProcess> away, running;
  COHORT_RETURN_IF_ERROR(entries("clients", &away));
  COHORT_RETURN_IF_ERROR(entries("running", &running));
  if (!r.ok()) return Status::Corruption(what + ": " + r.status().message());
  MutexLock clients(&clients_mu_);
  away_ = std::move(away);
  running_ = std::move(running);
  return Status::Ok();
}

int WriterStream::attached() const {
  MutexLock lock(&mu_);
  return attached_;
}

Status WriterStream::Close() {
  MutexLock lock(&append_mu_);
  if (!log_) return Status::Ok();
  if (seq_state_dirty_) (void)WriteSeqStateLocked();
  (void)FlushAcksLocked(true, 0);
  Status s = log_->Close();
  reader_.reset();
  log_.reset();
  return s;
}

Status WriterStream::Remove() {
  // Mark first, durably: a crash while deleting leaves a directory the next agent knows is done.
  // Without the mark nothing is deleted (every record was acknowledged: keeping it loses nothing).
  Status marked = wal::WriteFileAtomically(fs_, wal::JoinPath(dir_, kFinishedMarker), "");
  if (!marked.ok()) {
    return Status(marked.code(), dir_ + ": cannot write the " + kFinishedMarker +
                                     " marker: " + marked.message());
  }
  (void)Close();
  COHORT_RETURN_IF_ERROR(fs_->RemoveAll(dir_));
  const size_t slash = dir_.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string parent = dir_.substr(0, slash);
    auto left = fs_->ListDir(parent);
    if (left.ok() && left->empty()) (void)fs_->Remove(parent);  // rmdir of the empty run dir
  }
  return Status::Ok();
}

}  // namespace cohort::agent
