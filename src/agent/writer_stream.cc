#include "agent/writer_stream.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "agent/agent_log.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

constexpr uint64_t kMaxMetaBytes = 1 << 20;
constexpr int kSeqTimeShift = 20;

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
  if (!r.ok()) return Status::Corruption(r.status().message());
  return t;
}

WriterStream::WriterStream(std::string dir, WriterTarget target)
    : dir_(std::move(dir)), target_(std::move(target)) {}

void WriterStream::Retarget(const std::string& base_url, const std::string& api_key) {
  if (!base_url.empty()) target_.base_url = base_url;
  if (!api_key.empty()) target_.api_key = api_key;
}

WriterStream::~WriterStream() {
  if (log_) (void)log_->Close();
}

Result<std::shared_ptr<WriterStream>> WriterStream::Create(const std::string& dir,
                                                           const WriterTarget& target) {
  wal::FileSystem* fs = wal::FileSystem::Default();
  COHORT_RETURN_IF_ERROR(fs->CreateDir(dir));
  ::chmod(dir.c_str(), 0700);  // meta.json holds the API key
  std::shared_ptr<WriterStream> s(new WriterStream(dir, target));
  // Take the WAL (and its lock) before touching meta.json, so that a stream another process
  // holds is left alone.
  COHORT_RETURN_IF_ERROR(s->OpenLog());
  COHORT_RETURN_IF_ERROR(
      wal::WriteFileAtomically(fs, wal::JoinPath(dir, kMetaFile), target.ToJson()));
  ::chmod(wal::JoinPath(dir, kMetaFile).c_str(), 0600);
  COHORT_RETURN_IF_ERROR(s->ScanUnacknowledged());
  return s;
}

Result<std::shared_ptr<WriterStream>> WriterStream::OpenExisting(const std::string& dir) {
  wal::FileSystem* fs = wal::FileSystem::Default();
  auto text = wal::ReadFileToString(fs, wal::JoinPath(dir, kMetaFile), kMaxMetaBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(dir + ": no " + kMetaFile);
    }
    return text.status();
  }
  COHORT_ASSIGN_OR_RETURN(WriterTarget target, WriterTarget::Parse(*text));
  std::shared_ptr<WriterStream> s(new WriterStream(dir, std::move(target)));
  COHORT_RETURN_IF_ERROR(s->OpenLog());
  COHORT_RETURN_IF_ERROR(s->ScanUnacknowledged());
  return s;
}

Status WriterStream::OpenLog() {
  wal::LogOptions options;
  options.segment_size = 16ull << 20;
  COHORT_ASSIGN_OR_RETURN(log_, wal::Log::Open(wal::JoinPath(dir_, kWalDir), options));
  if (!log_->recovery().clean()) {
    Logf(LogLevel::kWarning, "{}: WAL recovery: {}", dir_, log_->recovery().ToString());
  }
  std::error_code ec;
  already_finished_ = fs::exists(fs::path(dir_) / kFinishedMarker, ec);
  return Status::Ok();
}

Status WriterStream::ScanUnacknowledged() {
  uint64_t max_seq = 0;
  int64_t count = 0;
  bool finish = false;
  auto reader = log_->ReadUnacknowledged();
  wal::Record rec;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool more, reader->Next(&rec));
    if (!more) break;
    auto r = DecodeRecord(rec.payload);
    if (!r.ok()) continue;  // Peek reports it when it gets there
    max_seq = std::max(max_seq, r->seq);
    ++count;
    uint64_t& f = last_frame_[r->session];
    f = std::max(f, r->frame);
    if (r->kind == RecordKind::kWriterFinish) finish = true;
  }
  if (Status st = LoadSeqState(max_seq); !st.ok()) {
    // Damaged: go on as for a stream from before seq.json rather than strand its records.
    Logf(LogLevel::kWarning, "{}: {}; renumbering from the WAL and the clock", dir_, st.ToString());
    std::lock_guard<std::mutex> lock(append_mu_);
    legacy_upto_ = max_seq;
  }
  uint64_t time_base = uint64_t(NowMillis()) << kSeqTimeShift;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    // seq.json is written when acknowledgements first remove records (FlushAcks), not here:
    // an open (which a client's Init waits for) costs no extra fsync.
    next_seq_ = std::max({max_seq + 1, time_base, seq_floor_});
  }
  reader_ = log_->ReadUnacknowledged();
  ack_written_ = ack_pending_ = log_->acknowledged();
  std::lock_guard<std::mutex> lock(mu_);
  progress_.appended_seq = max_seq;
  progress_.done_seq = 0;
  progress_.appended_records = count;
  progress_.finish_appended = finish || already_finished_;
  progress_.entity = target_.entity;
  progress_.complete = already_finished_ && max_seq == 0;
  return Status::Ok();
}

Status WriterStream::LoadSeqState(uint64_t max_seq_in_wal) {
  auto text = wal::ReadFileToString(wal::FileSystem::Default(), wal::JoinPath(dir_, kSeqFile),
                                    kMaxMetaBytes);
  if (!text.ok()) {
    if (text.status().code() != StatusCode::kNotFound) return text.status();
    // Absent: a new stream (empty WAL), or one written before seq.json existed, whose records
    // may have been uploaded already (unacknowledged): those keep the seqs they were sent with.
    std::lock_guard<std::mutex> lock(append_mu_);
    legacy_upto_ = max_seq_in_wal;
    return Status::Ok();
  }
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) return Status::Corruption(dir_ + "/" + kSeqFile + ": not JSON");
  json::FieldReader r(v->as_object(), kSeqFile);
  int64_t floor = r.Int("floor");
  int64_t joined = r.OptInt("joined_seq").value_or(0);
  int64_t offset = r.OptInt("upload_offset").value_or(0);
  int64_t legacy = r.OptInt("legacy_upto").value_or(0);
  if (!r.ok()) return Status::Corruption(dir_ + "/" + kSeqFile + ": " + r.status().message());
  if (floor < 0 || joined < 0 || offset < 0 || legacy < 0) {
    return Status::Corruption(dir_ + "/" + kSeqFile + ": negative value");
  }
  std::lock_guard<std::mutex> lock(append_mu_);
  seq_floor_ = uint64_t(floor);
  joined_seq_ = uint64_t(joined);
  upload_offset_ = uint64_t(offset);
  legacy_upto_ = uint64_t(legacy);
  return Status::Ok();
}

Status WriterStream::WriteSeqStateLocked() {
  bj::object o;
  o["floor"] = int64_t(seq_floor_);
  o["joined_seq"] = int64_t(joined_seq_);
  o["upload_offset"] = int64_t(upload_offset_);
  if (legacy_upto_ > 0) o["legacy_upto"] = int64_t(legacy_upto_);
  Status st = wal::WriteFileAtomically(wal::FileSystem::Default(), wal::JoinPath(dir_, kSeqFile),
                                       bj::serialize(o));
  if (st.ok()) seq_state_dirty_ = false;
  return st;
}

Status WriterStream::NoteJoined(uint64_t join_seq, uint64_t server_last_seq) {
  uint64_t offset = upload_offset_;
  // Decided when this join was first sent; or a join of a stream from before seq.json, which
  // may have been sent (with its batches) by the earlier version: keep what it did.
  if (join_seq == joined_seq_ || join_seq <= legacy_upto_) return Status::Ok();
  // Every record after the join has seq > join_seq: lift the first above server_last_seq.
  if (server_last_seq > join_seq) offset = std::max(offset, server_last_seq - join_seq);
  if (offset != upload_offset_) {
    // The records before the join were uploaded with the old offset: a crash must not have them
    // re-sent with the new one.
    COHORT_RETURN_IF_ERROR(FlushAcks(true));
    Logf(LogLevel::kInfo,
         "{}: the server holds seq {} of this writer, above this stream's {}: uploading with "
         "seq + {}",
         dir_, server_last_seq, join_seq, offset);
  }
  std::lock_guard<std::mutex> lock(append_mu_);
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
  std::lock_guard<std::mutex> lock(append_mu_);
  return seq_state_dirty_ ? WriteSeqStateLocked() : Status::Ok();
}

Result<uint64_t> WriterStream::Append(RecordKind kind, uint64_t session, uint64_t frame,
                                      std::string_view body) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (!log_) return Status::FailedPrecondition(dir_ + ": stream closed");
  uint64_t seq = next_seq_;
  COHORT_RETURN_IF_ERROR(log_->Append(EncodeRecord(kind, seq, session, frame, body)).status());
  ++next_seq_;
  if (session != 0) {
    uint64_t& f = last_frame_[session];
    f = std::max(f, frame);
  }
  {
    std::lock_guard<std::mutex> plock(mu_);
    progress_.appended_seq = seq;
    ++progress_.appended_records;
    if (kind == RecordKind::kWriterFinish) progress_.finish_appended = true;
    progress_.complete = false;
  }
  return seq;
}

Status WriterStream::Sync() {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (!log_) return Status::FailedPrecondition(dir_ + ": stream closed");
  return log_->Sync();
}

uint64_t WriterStream::LastFrame(uint64_t session) const {
  std::lock_guard<std::mutex> lock(append_mu_);
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

Result<bool> WriterStream::PeekNext(const Record** record) {
  if (!peeked_) return false;
  if (!ahead_) {
    COHORT_ASSIGN_OR_RETURN(bool found, ReadRecord(&ahead_, &ahead_next_, &ahead_skipped_));
    if (!found) return false;
  }
  *record = &*ahead_;
  return true;
}

void WriterStream::Pop() {
  if (!peeked_) return;
  uint64_t seq = peeked_->seq;
  ack_pending_ = std::max({ack_pending_, peeked_next_, ahead_skipped_});
  ahead_skipped_ = wal::Position{};
  peeked_.reset();
  if (ahead_) {
    peeked_ = std::move(ahead_);
    peeked_next_ = ahead_next_;
    ahead_.reset();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_.done_seq = std::max(progress_.done_seq, seq);
    ++progress_.done_records;
    progress_.complete = progress_.finish_appended && progress_.done_seq >= progress_.appended_seq;
  }
  cv_.notify_all();
}

Status WriterStream::FlushAcks(bool force, int64_t min_interval_ms) {
  return FlushAcksImpl(force, min_interval_ms, /*append_mu_held=*/false);
}

Status WriterStream::FlushAcksImpl(bool force, int64_t min_interval_ms, bool append_mu_held) {
  if (!log_ || ack_pending_ <= ack_written_) return Status::Ok();
  int64_t now = MonoNanos() / 1000000;
  if (!force && now - ack_written_ms_ < min_interval_ms) return Status::Ok();
  {
    // Acknowledged records leave the WAL, whose highest seq then no longer bounds the next
    // opening's: seq.json's floor must be above them first (every seq is below next_seq_).
    std::unique_lock<std::mutex> lock(append_mu_, std::defer_lock);
    if (!append_mu_held) lock.lock();
    if (seq_floor_ < next_seq_) {
      seq_floor_ = next_seq_ + kSeqReserve;
      COHORT_RETURN_IF_ERROR(WriteSeqStateLocked());
    }
  }
  Status s = log_->MarkAcknowledged(ack_pending_);
  if (s.ok() || s.code() != StatusCode::kInvalidArgument) ack_written_ = ack_pending_;
  ack_written_ms_ = now;
  return s;
}

UploadProgress WriterStream::progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return progress_;
}

void WriterStream::Update(const std::function<void(UploadProgress*)>& change) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    change(&progress_);
  }
  cv_.notify_all();
}

UploadProgress WriterStream::WaitFor(const std::function<bool(const UploadProgress&)>& done,
                                     int64_t deadline_ms) const {
  // The deadline is on the wall clock (the callers' unit) but the wait is measured on the
  // monotonic clock: a wall clock that jumps (NTP, a resumed VM, a user) must neither cut the
  // wait short nor stretch it by the jump (tests/fault/test_clock_jumps.py).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until =
      Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, deadline_ms - NowMillis()));
  std::unique_lock<std::mutex> lock(mu_);
  while (!done(progress_)) {
    Clock::time_point now = Clock::now();
    if (now >= until) break;
    cv_.wait_until(lock, std::min(until, now + std::chrono::milliseconds(100)));
  }
  return progress_;
}

void WriterStream::Attach() {
  std::lock_guard<std::mutex> lock(mu_);
  ++attached_;
}

void WriterStream::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  if (attached_ > 0) --attached_;
}

int WriterStream::attached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return attached_;
}

Status WriterStream::Close() {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (!log_) return Status::Ok();
  if (seq_state_dirty_) (void)WriteSeqStateLocked();
  (void)FlushAcksImpl(true, 0, /*append_mu_held=*/true);
  Status s = log_->Close();
  reader_.reset();
  log_.reset();
  return s;
}

Status WriterStream::Remove() {
  {
    // Mark first: a crash while deleting leaves a directory the next agent knows is done.
    std::FILE* f = std::fopen((fs::path(dir_) / kFinishedMarker).c_str(), "w");
    if (f) std::fclose(f);
  }
  (void)Close();
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) return Status::IOError("remove " + dir_ + ": " + ec.message());
  fs::path parent = fs::path(dir_).parent_path();
  if (fs::is_empty(parent, ec) && !ec) fs::remove(parent, ec);
  return Status::Ok();
}

}  // namespace cohort::agent
