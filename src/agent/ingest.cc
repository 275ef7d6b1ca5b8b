#include "agent/ingest.h"

#include <filesystem>

#include "agent/agent_log.h"
#include "agent/alert_body.h"
#include "agent/monitor/default_sources.h"
#include "agent/monitor/sampler.h"
#include "core/batch_format.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kFirstSystemSampleDelay{1000};

}  // namespace

std::string PathComponent(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  bool dots_only = !s.empty() && s.find_first_not_of('.') == std::string_view::npos;
  for (unsigned char c : s) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && !dots_only);
    if (plain) {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// ---- WriterSession ----

WriterSession::WriterSession(Ingest* ingest, std::shared_ptr<WriterStream> stream, Sender* sender,
                             uint64_t session)
    : ingest_(ingest), stream_(std::move(stream)), sender_(sender), session_(session) {
  stream_->Attach(session_);
}

WriterSession::~WriterSession() {
  if (!finished_) Crash();
  StopMonitor();
  stream_->Detach(session_);
  ingest_->SessionEnded(stream_.get());
}

const std::string& WriterSession::dir() const { return stream_->dir(); }

void WriterSession::set_client(std::optional<ClientProcess> process) {
  client_ = std::move(process);
  if (!client_) return;
  if (Status st = stream_->ClientRunning(session_, *client_); !st.ok()) {
    Logf(LogLevel::kWarning, "{}: the client's process not recorded: {}", stream_->dir(),
         st.ToString());
  }
}

void WriterSession::StopMonitor() {
  if (sampler_) {
    sampler_->Stop();
    sampler_.reset();
  }
}

void WriterSession::OnSamples(int64_t time_ms,
                              const std::vector<std::pair<std::string, double>>& samples) {
  batch::Batch b;
  b.keys.reserve(samples.size());
  b.cells.reserve(samples.size());
  for (const auto& [key, value] : samples) {
    b.cells.push_back({uint32_t(b.keys.size()), value});
    b.keys.push_back(key);
  }
  b.system.push_back(
      {.step = 0, .time_ms = time_ms, .begin = 0, .count = uint32_t(samples.size())});
  std::string body;
  batch::Encode(b, &body);
  auto seq = stream_->Append(RecordKind::kBatch, 0, 0, body);
  if (seq.ok() && stream_->Sync().ok()) {
    if (sender_) sender_->Wake();
  } else {
    Logf(LogLevel::kWarning, "{}: system sample not stored", stream_->dir());
  }
}

Status WriterSession::Log(uint64_t frame, std::string_view batch) {
  if (finished_) return Status::FailedPrecondition("writer already finished");
  // The header and checksum only (no decoding): the client encoded the batch once, and the
  // server checks it again; a frame damaged on its way is refused here, not stored.
  if (Status s = batch::CheckHeader(batch); !s.ok()) {
    return Status(s.code(), "log frame " + std::to_string(frame) + ": " + s.message());
  }
  // A frame the session stored already (another connection of the client got it there first)
  // is not stored again.
  return stream_->AppendFrame(RecordKind::kBatch, session_, frame, batch).status();
}

Status WriterSession::Update(uint64_t frame, std::string_view json_text) {
  if (finished_) return Status::FailedPrecondition("writer already finished");
  auto v = json::Parse(json_text);
  if (!v.ok() || !v->is_object()) return Status::InvalidArgument("update: expected an object");
  for (const auto& kv : v->as_object()) {
    const std::string_view k = kv.key();
    const bj::value& val = kv.value();
    bool ok = false;
    if (k == "config" || k == "summary") {
      ok = val.is_object();
    } else if (k == "name" || k == "group" || k == "job_type" || k == "notes") {
      ok = val.is_string();
    } else if (k == "tags" || k == "config_unset") {
      ok = val.is_array();
      for (const auto& t : ok ? val.as_array() : bj::array()) ok = ok && t.is_string();
    }
    if (!ok) {
      return Status::InvalidArgument(
          "update: only \"config\"/\"summary\" objects, \"name\"/\"group\"/\"job_type\"/"
          "\"notes\" strings and \"tags\"/\"config_unset\" arrays of strings");
    }
  }
  return stream_->AppendFrame(RecordKind::kRunPatch, session_, frame, json_text).status();
}

Status WriterSession::Artifact(uint64_t frame, std::string_view json_text) {
  if (finished_) return Status::FailedPrecondition("writer already finished");
  auto intent = ParseArtifactIntent(json_text);
  if (!intent.ok()) return intent.status();
  COHORT_RETURN_IF_ERROR(
      stream_->AppendFrame(RecordKind::kArtifact, session_, frame, json_text).status());
  if (!intent->staging.empty()) staged_.push_back(intent->staging);
  return Status::Ok();
}

Status WriterSession::Alert(uint64_t frame, std::string_view json_text) {
  if (finished_) return Status::FailedPrecondition("writer already finished");
  COHORT_RETURN_IF_ERROR(CheckAlertBody(json_text));
  return stream_->AppendFrame(RecordKind::kAlert, session_, frame, json_text).status();
}

Status WriterSession::Sync(bool wake_sender) {
  COHORT_RETURN_IF_ERROR(stream_->Sync());
  if (!staged_.empty()) {
    // The intents are durable: their staging directories are the uploader's now.
    if (ArtifactUploader* up = ingest_->artifacts()) {
      for (const std::string& dir : staged_) up->ReleaseStaging(dir);
    }
    staged_.clear();
  }
  if (wake_sender) WakeSender();
  return Status::Ok();
}

void WriterSession::WakeSender() {
  if (sender_) sender_->Wake();
}

Result<FinishReply> WriterSession::Finish(uint64_t frame, const FinishRequest& request) {
  StopMonitor();
  if (!finished_) {
    COHORT_RETURN_IF_ERROR(stream_
                               ->Append(RecordKind::kWriterFinish, session_, frame,
                                        WriterFinishBody(request.exit_code, request.state))
                               .status());
    finished_ = true;
  }
  COHORT_RETURN_IF_ERROR(Sync());
  stream_->ClientFinished(session_);
  UploadProgress start = stream_->progress();
  UploadProgress p = start;
  if (sender_ && request.wait_ms > 0) {
    // Wait for the upload, but not for a server that is failing: the agent keeps the records.
    p = stream_->WaitFor(
        [&](const UploadProgress& p) {
          return p.done_seq >= start.appended_seq || !p.rejected.ok() ||
                 p.failures > start.failures || sender_->BackingOff();
        },
        NowMillis() + request.wait_ms);
  }
  FinishReply reply;
  reply.uploaded = sender_ != nullptr && p.done_seq >= start.appended_seq;
  reply.pending_records = std::max<int64_t>(0, p.appended_records - p.done_records);
  return reply;
}

void WriterSession::Release() {
  StopMonitor();
  finished_ = true;
}

void WriterSession::Crash() {
  StopMonitor();
  if (finished_) return;
  finished_ = true;
  WriterStream::Gone gone = WriterStream::Gone::kCrashed;
  Status st =
      stream_->ClientGone(session_, client_, WriterFinishBody(std::nullopt, "crashed"), &gone);
  if (!st.ok()) {
    Logf(LogLevel::kWarning, "{}: client gone without finish; its crash not recorded: {}",
         stream_->dir(), st.ToString());
    return;
  }
  switch (gone) {
    case WriterStream::Gone::kBack:
      Logf(LogLevel::kInfo, "{}: client gone from this connection, back on another",
           stream_->dir());
      return;
    case WriterStream::Gone::kCrashed:
      Logf(LogLevel::kInfo, "{}: client gone without finish: writer crashed", stream_->dir());
      break;
    case WriterStream::Gone::kKept:
      Logf(LogLevel::kInfo,
           "{}: client gone without finish: writer crashed; its process (pid {}) runs on and "
           "may re-open the session",
           stream_->dir(), client_->pid);
      break;
  }
  WakeSender();
}

// ---- Ingest ----

Ingest::Ingest(IngestOptions options)
    : options_(std::move(options)), fs_(options_.fs ? options_.fs : wal::FileSystem::Default()) {
  if (!options_.data_dir.empty()) {
    artifacts_ = std::make_unique<ArtifactUploader>(
        wal::JoinPath(NormalizeDir(options_.data_dir), ArtifactUploader::kDirName), fs_,
        options_.artifacts);
    if (Status st = artifacts_->PrepareDirs(); !st.ok()) {
      Logf(LogLevel::kWarning, "artifact uploads: {}", st.ToString());
    }
    artifacts_->Start();
  }
}

Ingest::~Ingest() {
  MutexLock lock(&mu_);
  for (auto& [url, sender] : senders_) sender->Stop();
  if (artifacts_) artifacts_->Stop();
  for (auto& [dir, slot] : streams_) {
    if (slot.sender) slot.sender->Remove(slot.stream.get());
    (void)slot.stream->Close();
  }
  streams_.clear();
  senders_.clear();
}

std::string NormalizeDir(const std::string& dir) {
  std::string d = fs::path(dir).lexically_normal().string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

std::string Ingest::WriterDir(const std::string& data_dir, const std::string& run_id,
                              const std::string& label) {
  return NormalizeDir(data_dir) + "/" + PathComponent(run_id) + "/" + PathComponent(label);
}

Sender* Ingest::SenderFor(const std::string& base_url) {
  auto& s = senders_[base_url];
  if (!s) {
    SenderOptions so = options_.sender;
    so.artifacts = artifacts_.get();
    s = std::make_unique<Sender>(base_url, so);
    s->Start();
  }
  return s.get();
}

std::unique_ptr<WriterSession> Ingest::Open(const OpenRequest& req, OpenReply* reply) {
  // req.wait_ms counts from here, not from after the WAL work below: the client leaves a margin
  // for its answer (client/agent_transport.cc), which slow fsyncs must not eat.
  const int64_t start_ns = MonoNanos();
  *reply = OpenReply{};
  std::string data_dir = req.data_dir.empty() ? options_.data_dir : req.data_dir;
  std::string dir = WriterDir(data_dir, req.run_id, req.label);
  reply->wal_dir = dir;
  if (artifacts_) reply->artifact_staging_dir = artifacts_->staging_dir();

  WriterTarget target;
  target.base_url = req.base_url;
  target.api_key = req.api_key;
  target.entity = req.entity;
  target.project = req.project;
  target.run_id = req.run_id;
  target.label = req.label;
  target.offline = req.offline;
  target.created_ms = NowMillis();

  std::shared_ptr<WriterStream> stream;
  Sender* sender = nullptr;
  std::unique_ptr<WriterSession> session;
  {
    MutexLock lock(&mu_);
    // Another open is moving this writer to another server or mode: wait until the new stream
    // is in place, so that this open sees the old stream or the new one, never the move.
    while (moving_.count(dir) != 0) moved_.Wait(mu_);
    auto it = streams_.find(dir);
    // The same server and mode: the stream goes on. Another key while the server refuses the
    // stream's (revoked, a new one given) moves the stream like another server does, so that
    // its records, the backlog included, go with the key the client has now; a key that works
    // is never replaced by an open (two processes, or a mistyped key, would take turns).
    // A stream whose WAL broke (a failed sync) is opened anew the same way: the new one
    // recovers what is durable and says which frames it holds, and the client resends the rest.
    const bool broken = it != streams_.end() && it->second.stream->broken();
    if (broken) Logf(LogLevel::kWarning, "{}: its WAL failed earlier; opening it anew", dir);
    const bool same_key_or_working =
        it != streams_.end() &&
        (req.offline || it->second.stream->target().api_key == req.api_key ||
         !it->second.stream->progress().key_refused);
    if (it != streams_.end() && !broken && it->second.stream->target().base_url == req.base_url &&
        it->second.stream->target().offline == req.offline && same_key_or_working) {
      stream = it->second.stream;
      sender = it->second.sender;
    } else {
      bool moved = false;
      if (it != streams_.end()) {  // the same writer, now for another server, mode or key
        StreamSlot old = std::move(it->second);
        streams_.erase(it);
        moving_.insert(dir);
        moved = true;
        // Remove waits for an upload of this stream in flight, up to a request timeout: not
        // under mu_, which every other open, Tick() and the agent's status need.
        lock.Unlock();
        if (old.sender) old.sender->Remove(old.stream.get());
        (void)old.stream->Close();
        lock.Lock();
      }
      auto end_move = [&] {
        mu_.AssertHeld();  // called below, under the lock
        if (!moved) return;
        moving_.erase(dir);
        moved_.SignalAll();
      };
      auto created = WriterStream::Create(dir, target, fs_);
      if (!created.ok()) {
        end_move();
        reply->error = created.status().ToString();
        return nullptr;
      }
      stream = *created;
      sender = req.offline ? nullptr : SenderFor(req.base_url);
      streams_[dir] = StreamSlot{stream, sender, 0};
      if (sender) sender->Add(stream);
      end_move();
    }
    // Attached under the lock, so that Tick() cannot retire the stream in between.
    session.reset(new WriterSession(this, stream, sender, req.session));
  }

  // Records of this writer not uploaded yet, from before this open (a backlog): a key refused
  // at this open must not drop them (below).
  const UploadProgress before = stream->progress();
  const bool had_backlog = before.appended_seq > before.done_seq;
  if (had_backlog && sender && before.key_refused) {
    // The server refuses this key for the writer's earlier records already: the same answer at
    // once, with nothing appended (each open appended a run upsert and a join that no finish
    // would ever follow).
    reply->error = before.last_failure.ToString() +
                   " (this writer's earlier records are kept until a key the server accepts "
                   "uploads them)";
    session->finished_ = true;
    return nullptr;
  }
  // Whatever an earlier connection of this session appended is durable before we report it.
  Status st = stream->Sync();
  if (st.ok()) {
    reply->last_frame = stream->LastFrame(req.session);
    if (!req.run_json.empty()) {
      st = stream->Append(RecordKind::kRunUpsert, req.session, 0, req.run_json).status();
    }
  }
  Result<uint64_t> join_seq = st.ok()
                                  ? stream->Append(RecordKind::kWriterJoin, req.session, 0,
                                                   req.writer_json.empty() ? "{}" : req.writer_json)
                                  : Result<uint64_t>(st);
  if (join_seq.ok()) st = session->Sync();
  if (!join_seq.ok() || !st.ok()) {
    reply->error = (join_seq.ok() ? st : join_seq.status()).ToString();
    session->finished_ = true;  // nothing to crash: the writer never started
    return nullptr;
  }
  // Its join is durable: a client that went away is back.
  if (auto back = stream->ClientBack(req.session); !back.ok()) {
    Logf(LogLevel::kWarning, "{}: {}", dir, back.status().ToString());
  } else if (*back) {
    Logf(LogLevel::kInfo, "{}: the client that went away is back (pid {})", dir, req.pid);
  }

  if (options_.system_monitor && req.stats_interval_s > 0) {
    monitor::MonitorConfig mc;
    session->pids_ = std::make_shared<monitor::RootPids>();
    if (req.pid > 0) session->pids_->Add(int(req.pid));
    mc.pids = session->pids_;
    mc.data_dir = data_dir;
    if (req.gpu_ids) mc.gpu_device_ids = *req.gpu_ids;
    WriterSession* raw = session.get();
    session->sampler_ = std::make_unique<monitor::Sampler>(
        monitor::MakeDefaultSources(mc),
        [raw](monitor::SampleBatch batch) {
          std::vector<std::pair<std::string, double>> samples;
          samples.reserve(batch.samples.size());
          for (auto& s : batch.samples) samples.emplace_back(std::move(s.key), s.value);
          raw->OnSamples(batch.time_ms, samples);
        },
        std::chrono::milliseconds(int64_t(req.stats_interval_s * 1000)),
        // A first sample as the writer joins (a rank that dies at once still has system
        // metrics), the next soon after, late enough for CPU shares to measure something:
        // then every interval.
        std::min(std::chrono::milliseconds(int64_t(req.stats_interval_s * 1000)),
                 kFirstSystemSampleDelay),
        /*sample_at_start=*/true);
    Status ms = session->sampler_->Start();
    if (!ms.ok()) Logf(LogLevel::kWarning, "{}: system monitor: {}", dir, ms.ToString());
  }

  UploadProgress start = stream->progress();
  UploadProgress p = start;
  const int64_t wait_left_ms = req.wait_ms - (MonoNanos() - start_ns) / 1000000;
  if (sender && wait_left_ms > 0) {
    p = stream->WaitFor(
        [&](const UploadProgress& p) {
          // Not for a server that is known to be failing: the writer buffers meanwhile.
          return p.done_seq >= *join_seq || !p.rejected.ok() || p.failures > start.failures ||
                 sender->BackingOff();
        },
        NowMillis() + wait_left_ms);
  }
  StatusCode failure = p.last_failure.code();
  if (p.rejected.ok() && p.failures > start.failures &&
      (failure == StatusCode::kUnauthenticated || failure == StatusCode::kPermissionDenied)) {
    // A wrong key at open is the caller's to fix now, not something to buffer for later; but a
    // backlog of the writer's earlier records stays (the writer pauses, as on a key revoked
    // while it runs) for an agent or `cohort sync` with a key the server accepts.
    if (had_backlog) {
      reply->error = p.last_failure.ToString() +
                     " (this writer's earlier records are kept until a key the server accepts "
                     "uploads them)";
      session->finished_ = true;
      return nullptr;
    }
    stream->Update([&](UploadProgress* u) { u->rejected = u->last_failure; });
    p = stream->progress();
  }
  if (!p.rejected.ok()) {
    reply->error = p.rejected.ToString();
    session->finished_ = true;  // the stream drops everything; nothing more to record
    return nullptr;
  }
  reply->ok = true;
  reply->confirmed = p.done_seq >= *join_seq && p.joined;
  reply->entity = p.entity.empty() ? req.entity : p.entity;
  reply->run_name = p.run_name;
  reply->next_step = reply->confirmed ? p.next_step : 0;
  if (reply->confirmed) {
    reply->max_media_file_bytes = p.max_media_file_bytes;
    reply->max_media_per_step = p.max_media_per_step;
    if (p.run_fields) reply->run_fields = *p.run_fields;
  }
  return session;
}

void Ingest::SessionEnded(WriterStream* stream) {
  MutexLock lock(&mu_);
  for (auto& [dir, slot] : streams_) {
    if (slot.stream.get() == stream) slot.idle_since_ms = 0;
  }
}

void Ingest::FinishUnattendedWriters() {
  std::vector<std::pair<std::shared_ptr<WriterStream>, Sender*>> unattended;
  {
    MutexLock lock(&mu_);
    for (auto& [dir, slot] : streams_) {
      if (slot.stream->attached() == 0) unattended.emplace_back(slot.stream, slot.sender);
    }
  }
  // Not under mu_: a finish is appended and synced.
  for (auto& [stream, sender] : unattended) {
    if (stream->broken()) continue;  // nothing can be appended; the next agent records it
    auto finished = stream->FinishEndedClients(WriterFinishBody(std::nullopt, "crashed"));
    if (!finished.ok()) {
      Logf(LogLevel::kWarning, "{}: the end of a client that ended unwatched not recorded: {}",
           stream->dir(), finished.status().ToString());
    } else if (*finished > 0) {
      Logf(LogLevel::kInfo,
           "{}: the client's process ended while no agent watched it: writer crashed",
           stream->dir());
      if (sender) sender->Wake();
    }
  }
}

int Ingest::RecoverDir(const std::string& data_dir) {
  int resumed = 0;
  if (artifacts_ && NormalizeDir(data_dir) == NormalizeDir(options_.data_dir)) {
    if (int n = artifacts_->Recover(); n > 0) {
      Logf(LogLevel::kInfo, "{}: resuming {} artifact upload(s)", artifacts_->root(), n);
    }
  }
  for (const std::string& run : ChildPaths(fs_, NormalizeDir(data_dir))) {
    for (const std::string& dir : ChildPaths(fs_, run)) {
      auto meta = fs_->Exists(wal::JoinPath(dir, WriterStream::kMetaFile));
      if (!meta.ok() || !*meta) continue;
      {
        MutexLock lock(&mu_);
        if (streams_.count(dir) || moving_.count(dir)) continue;  // ours, or being moved
      }
      auto stream = WriterStream::OpenExisting(dir, fs_);
      if (!stream.ok()) {
        if (stream.status().code() != StatusCode::kFailedPrecondition) {
          Logf(LogLevel::kWarning, "{}: cannot resume: {}", dir, stream.status().ToString());
        }
        continue;  // held by a live process (a private agent or another agent)
      }
      MutexLock lock(&mu_);
      Sender* sender =
          (*stream)->target().offline ? nullptr : SenderFor((*stream)->target().base_url);
      streams_[dir] = StreamSlot{*stream, sender, 0};
      if (sender) sender->Add(*stream);
      UploadProgress p = (*stream)->progress();
      Logf(LogLevel::kInfo, "{}: resumed with {} record(s) to upload{}", dir, p.appended_records,
           sender ? "" : " (offline: kept for cohort sync)");
      ++resumed;
    }
  }
  return resumed;
}

void Ingest::Tick() {
  if (artifacts_) artifacts_->Tick();
  FinishUnattendedWriters();
  std::vector<StreamSlot> to_remove, to_close;
  const int64_t now = NowMillis();
  {
    MutexLock lock(&mu_);
    for (auto it = streams_.begin(); it != streams_.end();) {
      StreamSlot& slot = it->second;
      if (slot.stream->attached() > 0) {
        slot.idle_since_ms = 0;
        slot.kept = false;
        ++it;
        continue;
      }
      UploadProgress p = slot.stream->progress();
      bool drained = p.done_seq >= p.appended_seq;
      if (slot.sender && drained && (p.complete || !p.rejected.ok())) {
        std::vector<int> ended;
        bool keep = p.rejected.ok() && slot.stream->AwaitsLiveClient(&ended);
        for (int pid : ended) {
          Logf(LogLevel::kInfo, "{}: the process of the client away (pid {}) has ended",
               slot.stream->dir(), pid);
        }
        if (keep) {
          if (!slot.kept) {
            Logf(LogLevel::kInfo,
                 "{}: writer uploaded and finished (crashed), its client away: keeping the "
                 "writer for its return",
                 slot.stream->dir());
          }
          slot.kept = true;
          slot.idle_since_ms = 0;
          ++it;
          continue;
        }
        if (now >= slot.remove_after_ms) {
          // An open of this writer waits until its directory is gone (below): a new stream made
          // meanwhile would lose its files to the removal.
          moving_.insert(it->first);
          to_remove.push_back(slot);
          it = streams_.erase(it);
        } else {
          ++it;
        }
        continue;
      }
      if (!slot.sender || drained) {
        if (slot.idle_since_ms == 0) slot.idle_since_ms = now;
        bool close = !slot.sender || now - slot.idle_since_ms >= options_.orphan_close_s * 1000;
        if (close) {
          moving_.insert(it->first);  // an open waits for the close (as for a removal)
          to_close.push_back(slot);
          it = streams_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  const auto done_with = [&](const std::string& dir) {
    MutexLock lock(&mu_);
    moving_.erase(dir);
    moved_.SignalAll();
  };
  for (StreamSlot& slot : to_remove) {
    slot.sender->Remove(slot.stream.get());
    Status s = slot.stream->Remove();
    if (s.ok()) {
      Logf(LogLevel::kInfo, "{}: writer uploaded and finished; WAL removed", slot.stream->dir());
      done_with(slot.stream->dir());
      continue;
    }
    // Nothing is lost (every record was acknowledged) and nothing was deleted: keep the stream
    // and try again later.
    Logf(LogLevel::kWarning,
         "{}: writer uploaded and finished, but its directory cannot be removed ({}); kept, "
         "trying again in {:.0f}s",
         slot.stream->dir(), s.ToString(), options_.remove_retry_s);
    slot.remove_after_ms = now + int64_t(options_.remove_retry_s * 1000);
    MutexLock lock(&mu_);
    const std::string dir = slot.stream->dir();
    streams_.emplace(dir, std::move(slot));
    moving_.erase(dir);
    moved_.SignalAll();
  }
  for (StreamSlot& slot : to_close) {
    if (slot.sender) slot.sender->Remove(slot.stream.get());
    (void)slot.stream->Close();
    done_with(slot.stream->dir());
  }
}

bool Ingest::Idle() const {
  if (artifacts_ && artifacts_->pending() > 0) return false;
  MutexLock lock(&mu_);
  for (const auto& [dir, slot] : streams_) {
    if (slot.stream->attached() > 0) return false;
    UploadProgress p = slot.stream->progress();
    if (slot.sender && p.done_seq < p.appended_seq) return false;
  }
  return true;
}

size_t Ingest::stream_count() const {
  MutexLock lock(&mu_);
  return streams_.size();
}

SenderStats Ingest::stats() const {
  MutexLock lock(&mu_);
  SenderStats total;
  for (const auto& [url, s] : senders_) {
    SenderStats st = s->stats();
    total.requests += st.requests;
    total.records_done += st.records_done;
    total.records_skipped += st.records_skipped;
    total.points += st.points;
    total.retries += st.retries;
    total.backoff_s = std::max(total.backoff_s, st.backoff_s);
  }
  return total;
}

}  // namespace cohort::agent
