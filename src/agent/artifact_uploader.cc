#include "agent/artifact_uploader.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>

#include "agent/agent_log.h"
#include "agent/client_process.h"
#include "agent/part_pool.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/text_encoding.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;

constexpr uint64_t kMaxIntentFileBytes = 64 << 20;

int64_t MonoMs() { return MonoNanos() / 1000000; }

bool Transient(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return true;
    default:
      return false;
  }
}

bj::object TargetJson(const ArtifactTarget& t) {
  return bj::object{{"base_url", t.base_url},
                    {"api_key", t.api_key},
                    {"entity", t.entity},
                    {"project", t.project}};
}

// The environment's settings over `options` (operators, and the tests that kill an agent in the
// middle of an upload).
ArtifactUploaderOptions WithEnvironment(ArtifactUploaderOptions options) {
  options.parallel_parts = ParallelPartsFromEnvironment(options.parallel_parts);
  options.part_delay_ms = PartDelayFromEnvironment(options.part_delay_ms);
  options.backoff = BackoffOptionsFromEnvironment(options.backoff);
  return options;
}

}  // namespace

// ---- the uploader ----

ArtifactUploader::ArtifactUploader(std::string root, wal::FileSystem* fs,
                                   ArtifactUploaderOptions options)
    : root_(std::move(root)),
      fs_(fs ? fs : wal::FileSystem::Default()),
      options_(WithEnvironment(std::move(options))),
      backoff_(options_.backoff) {}

ArtifactUploader::~ArtifactUploader() { Stop(); }

std::string ArtifactUploader::staging_dir() const { return wal::JoinPath(root_, kStagingDir); }

std::string ArtifactUploader::IntentPath(const std::string& id) const {
  return wal::JoinPath(wal::JoinPath(root_, kIntentsDir), id + ".json");
}

std::string ArtifactUploader::LockPath(const std::string& id) const {
  return wal::JoinPath(wal::JoinPath(root_, kIntentsDir), id + ".lock");
}

Status ArtifactUploader::PrepareDirs() {
  // Private like the writer directories: intents hold the API key, staging holds user data.
  for (const std::string& dir :
       {root_, wal::JoinPath(root_, kIntentsDir), wal::JoinPath(root_, kStagingDir),
        wal::JoinPath(root_, kTrashDir)}) {
    COHORT_RETURN_IF_ERROR(fs_->CreateDir(dir));
    COHORT_RETURN_IF_ERROR(fs_->SetPermissions(dir, 0700));
  }
  return Status::Ok();
}

void ArtifactUploader::Start() {
  MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  stop_ = false;
  pool_ = std::make_unique<PartPool>(options_.parallel_parts, options_.http, fs_,
                                     options_.part_delay_ms);
  thread_ = std::thread([this] { Loop(); });
  trash_waiting_ = true;  // what an earlier agent left
  trash_thread_ = std::thread([this] { EmptyTrashLoop(); });
}

void ArtifactUploader::Stop() {
  {
    MutexLock lock(&mu_);
    if (!started_) return;
    stop_ = true;
  }
  cv_.SignalAll();
  if (pool_) pool_->Abort();
  {
    MutexLock lock(&clients_mu_);
    for (auto& [url, c] : clients_) c->Abort();
  }
  if (thread_.joinable()) thread_.join();
  if (trash_thread_.joinable()) trash_thread_.join();
  pool_.reset();
  {
    MutexLock lock(&clients_mu_);
    clients_.clear();  // aborted for good
  }
  MutexLock lock(&mu_);
  started_ = false;
}

std::string ArtifactUploader::FileJson(const ArtifactTarget& target, std::string_view intent_json,
                                       const ArtifactStatus& status) {
  bj::object o;
  o["version"] = 1;
  o["target"] = TargetJson(target);
  auto intent = json::Parse(intent_json);
  o["intent"] = intent.ok() ? std::move(*intent) : bj::value(bj::object());
  auto st = json::Parse(ToJson(status));
  o["status"] = st.ok() ? std::move(*st) : bj::value(bj::object());
  return bj::serialize(o);
}

Status ArtifactUploader::Accept(const ArtifactTarget& target, std::string_view intent_json) {
  COHORT_ASSIGN_OR_RETURN(ArtifactIntent intent, ParseArtifactIntent(intent_json));
  const std::string id = intent.id;
  MutexLock lock(&mu_);
  if (entries_.count(id)) return Status::Ok();  // handed again (a re-read WAL record)
  if (LoadLocked(id, /*take_pending=*/true)) return Status::Ok();
  COHORT_RETURN_IF_ERROR(PrepareDirs());
  // The lock before the file: an agent scanning for abandoned intents must not take it.
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<wal::FileLock> file_lock, fs_->LockFile(LockPath(id)));
  Entry e;
  e.intent = std::move(intent);
  e.intent_json = std::string(intent_json);
  e.target = target;
  e.status.id = id;
  e.status.state = "pending";
  e.status.name = e.intent.name;
  std::set<std::string> blobs;
  for (const auto& f : e.intent.files) {
    if (f.is_ref() || !blobs.insert(f.sha256).second) continue;
    ++e.status.files_total;
    e.status.bytes_total += f.size;
  }
  COHORT_RETURN_IF_ERROR(
      wal::WriteFileAtomically(fs_, IntentPath(id), FileJson(target, intent_json, e.status), 0600));
  e.lock = std::move(file_lock);
  Logf(e.intent.media ? LogLevel::kDebug : LogLevel::kInfo,
       "artifact {} ({}): {} file(s), {} bytes to upload", e.intent.name, id, e.intent.files.size(),
       e.status.bytes_total);
  entries_.emplace(id, std::move(e));
  queue_.push_back(id);
  cv_.SignalAll();
  return Status::Ok();
}

bool ArtifactUploader::LoadLocked(const std::string& id, bool take_pending) {
  auto text = wal::ReadFileToString(fs_, IntentPath(id), kMaxIntentFileBytes);
  if (!text.ok()) return false;
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) {
    Logf(LogLevel::kWarning, "{}: not a JSON object; ignored", IntentPath(id));
    return false;
  }
  const bj::object& o = v->as_object();
  Entry e;
  const bj::value* t = o.if_contains("target");
  const bj::value* in = o.if_contains("intent");
  const bj::value* st = o.if_contains("status");
  if (!t || !t->is_object() || !in || !in->is_object() || !st || !st->is_object()) return false;
  json::FieldReader tr(t->as_object(), "target");
  e.target.base_url = tr.String("base_url");
  e.target.api_key = tr.OptString("api_key").value_or("");
  e.target.entity = tr.String("entity");
  e.target.project = tr.String("project");
  e.intent_json = bj::serialize(in->as_object());
  auto intent = ParseArtifactIntent(e.intent_json);
  auto status = ParseArtifactStatus(bj::serialize(st->as_object()));
  if (!tr.ok() || !intent.ok() || !status.ok()) {
    Logf(LogLevel::kWarning, "{}: unreadable intent file; ignored", IntentPath(id));
    return false;
  }
  e.intent = std::move(*intent);
  e.status = std::move(*status);
  if (e.status.terminal()) {
    e.done_ms = NowMillis();
  } else {
    if (!take_pending) return false;
    auto l = fs_->LockFile(LockPath(id));
    if (!l.ok()) return false;  // another live agent uploads it
    e.lock = std::move(*l);
    // Progress restarts from what the server holds.
    e.status.bytes_done = e.status.files_done = 0;
    e.status.current.clear();
    queue_.push_back(id);
    Logf(LogLevel::kInfo, "artifact {} ({}): resuming its upload", e.intent.name, id);
  }
  entries_.emplace(id, std::move(e));
  cv_.SignalAll();
  return true;
}

std::optional<ArtifactStatus> ArtifactUploader::FileStatus(const std::string& id) const {
  auto text = wal::ReadFileToString(fs_, IntentPath(id), kMaxIntentFileBytes);
  if (!text.ok()) return std::nullopt;
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) return std::nullopt;
  const bj::value* st = v->as_object().if_contains("status");
  if (!st || !st->is_object()) return std::nullopt;
  auto status = ParseArtifactStatus(bj::serialize(st->as_object()));
  if (!status.ok()) return std::nullopt;
  return std::move(*status);
}

int ArtifactUploader::Recover() {
  auto names = fs_->ListDir(wal::JoinPath(root_, kIntentsDir));
  if (!names.ok()) return 0;
  int taken = 0;
  MutexLock lock(&mu_);
  for (const std::string& name : *names) {
    if (!name.ends_with(".json")) continue;
    const std::string id = name.substr(0, name.size() - 5);
    if (entries_.count(id)) continue;
    // Held by a live agent: not even read (its manifest may be large), until it lets go.
    if (!fs_->LockFile(LockPath(id)).ok()) continue;
    if (LoadLocked(id, true) && !entries_.at(id).status.terminal()) ++taken;
  }
  return taken;
}

bool ArtifactUploader::InStaging(const std::string& dir) const {
  const std::string mine = staging_dir() + "/";
  // Not .clients (the clients' lock files), nor any other name a client does not make.
  return dir.size() > mine.size() && dir.starts_with(mine) && dir[mine.size()] != '.' &&
         dir.find('/', mine.size()) == std::string::npos && dir.find("..") == std::string::npos;
}

void ArtifactUploader::ReleaseStaging(const std::string& dir) {
  if (!InStaging(dir)) return;
  MutexLock sweep(&staging_mu_);  // not while a sweep judges the directory
  // .owner first: a directory without it is never judged, so its .lock (a link to its client's
  // lock file, which would otherwise gather one link per directory) can go after it.
  for (const char* name : {kStagingOwnerFile, kStagingLockFile}) {
    Status st = fs_->Remove(wal::JoinPath(dir, name));
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      Logf(LogLevel::kWarning, "artifact staging {}: {}", dir, st.ToString());
      return;
    }
  }
}

int ArtifactUploader::RemoveOrphanedStaging() {
  auto names = fs_->ListDir(staging_dir());
  if (!names.ok()) return 0;
  int removed = 0;
  const uint64_t own_pid_ns = ThisPidNamespace(fs_);
  for (const std::string& name : *names) {
    if (name.empty() || name[0] == '.') continue;  // .clients: the clients' lock files
    const std::string dir = wal::JoinPath(staging_dir(), name);
    // Judged with ReleaseStaging held off: once the intent is durable, its directory is the
    // uploader's, whatever became of its client.
    MutexLock sweep(&staging_mu_);
    {
      MutexLock lock(&mu_);
      if (entries_.count(name)) continue;  // an intent of ours: removed after its outcome
    }
    auto text = wal::ReadFileToString(fs_, wal::JoinPath(dir, kStagingOwnerFile), 4096);
    if (!text.ok()) continue;  // handed over (or unknown): kept
    auto owner = ParseStagingOwner(*text);
    if (!owner) continue;
    // Held: its process (or a child it forked) runs, in whatever PID namespace. Held by this
    // agent while it looks, so that a directory is judged by one agent at a time.
    const std::string lock_path = wal::JoinPath(dir, kStagingLockFile);
    auto lock = fs_->LockFile(lock_path);
    if (!lock.ok()) continue;
    // The namespace its pid is in. None (a client older than the lock; the file was made just
    // now): taken for this agent's, as before the lock.
    auto lock_text = wal::ReadFileToString(fs_, lock_path, 64);
    const uint64_t ns = lock_text.ok() ? ParseStagingLockNamespace(*lock_text) : 0;
    const bool here = ns == 0 || ns == own_pid_ns;
    // In this agent's namespace its pid also tells (a client whose lock was lost, say by a
    // library that closed every descriptor, still runs while its process does); in another,
    // that pid names nothing here.
    if (here) {
      if (owner->pid > INT32_MAX) continue;
      ClientProcess p{int(owner->pid), owner->start_ticks, owner->boot_id};
      if (p.Alive()) continue;
    }
    // To the trash (a rename): its deletion, maybe of gigabytes, does not hold off ReleaseStaging.
    DiscardStaging("orphan-" + name, dir);
    if (auto left = fs_->Exists(dir); left.ok() && !*left) {
      ++removed;
      Logf(LogLevel::kInfo,
           "artifact staging {}: its client (pid {}{}) ended before handing the version over; "
           "removed",
           dir, owner->pid, here ? "" : " in another PID namespace");
    }
  }
  RemoveEndedClientsLockFiles();
  return removed;
}

void ArtifactUploader::RemoveEndedClientsLockFiles() {
  const std::string dir = wal::JoinPath(staging_dir(), kStagingClientsDir);
  auto names = fs_->ListDir(dir);
  if (!names.ok()) return;
  const int64_t now_ns = NowMillis() * 1'000'000;
  for (const std::string& name : *names) {
    const std::string path = wal::JoinPath(dir, name);
    // Free: its process has ended (a client writes its file, then locks it: an hour is far more
    // than that takes). Directories it left keep the file's bytes through their hard links.
    auto st = fs_->Stat(path);
    if (!st.ok() || now_ns - st->mtime_ns < kClientLockFileMinAgeMs * 1'000'000) continue;
    auto lock = fs_->LockFile(path);
    if (lock.ok()) (void)fs_->Remove(path);
  }
}

void ArtifactUploader::Tick() {
  Recover();
  if (const int64_t now = MonoMs(); now - orphans_checked_ms_ >= 60000) {
    orphans_checked_ms_ = now;
    RemoveOrphanedStaging();
  }
  std::vector<std::string> forget;
  {
    MutexLock lock(&mu_);
    const int64_t now = NowMillis();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.done_ms > 0 &&
          now - it->second.done_ms > int64_t(options_.keep_done_s * 1000)) {
        forget.push_back(it->first);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& id : forget) {
    (void)fs_->Remove(IntentPath(id));
    (void)fs_->Remove(LockPath(id));
  }
}

std::vector<ArtifactStatus> ArtifactUploader::StatusOf(const std::vector<std::string>& ids) {
  std::vector<ArtifactStatus> out;
  MutexLock lock(&mu_);
  for (const auto& id : ids) {
    auto it = entries_.find(id);
    if (it == entries_.end() && !id.empty() && ValidateArtifactName("id", id).ok()) {
      // Finished: loaded (and kept); pending elsewhere (another agent's, or one left by a dead
      // agent and not taken yet): as its file says.
      if (LoadLocked(id, /*take_pending=*/false)) {
        it = entries_.find(id);
      } else if (auto st = FileStatus(id)) {
        out.push_back(std::move(*st));
        continue;
      }
    }
    if (it != entries_.end()) {
      out.push_back(it->second.status);
    } else {
      ArtifactStatus s;
      s.id = id;
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::string> ArtifactUploader::failures() const {
  MutexLock lock(&mu_);
  return failures_;
}

int ArtifactUploader::pending() const {
  MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, e] : entries_) n += e.status.terminal() ? 0 : 1;
  return n;
}

void ArtifactUploader::Progress(const std::string& id,
                                const std::function<void(ArtifactStatus*)>& change) {
  MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) change(&it->second.status);
}

void ArtifactUploader::Loop() {
  MutexLock lock(&mu_);
  while (!stop_) {
    // The first pending intent whose retry time has come.
    const int64_t now = MonoMs();
    int64_t next = now + 1000;
    std::string pick;
    for (const std::string& id : queue_) {
      const Entry& e = entries_.at(id);
      if (e.retry_at_ms <= now) {
        pick = id;
        break;
      }
      next = std::min(next, e.retry_at_ms);
    }
    if (pick.empty()) {
      cv_.WaitFor(mu_, std::chrono::milliseconds(std::max<int64_t>(1, next - now)));
      continue;
    }
    Entry snapshot;
    {
      const Entry& e = entries_.at(pick);
      snapshot.intent = e.intent;
      snapshot.target = e.target;
    }
    lock.Unlock();
    Status st = Attempt(pick, &snapshot);
    lock.Lock();
    if (stop_) break;
    Entry& e = entries_.at(pick);
    if (st.ok()) {
      backoff_.Reset();
      continue;  // Finish took it off the queue
    }
    if (Transient(st)) {
      const bool auth =
          st.code() == StatusCode::kUnauthenticated || st.code() == StatusCode::kPermissionDenied;
      const double delay = auth ? options_.auth_pause_s : backoff_.NextDelay();
      e.retry_at_ms = MonoMs() + int64_t(delay * 1000);
      e.status.last_failure = st.message();
      // To the back: another intent may get through meanwhile.
      queue_.erase(std::find(queue_.begin(), queue_.end(), pick));
      queue_.push_back(pick);
      Logf(LogLevel::kInfo, "artifact {} ({}): upload failed, retrying in {:.2f}s: {}",
           e.intent.name, pick, delay, st.ToString());
      continue;
    }
    ArtifactStatus failed = e.status;
    failed.state = "failed";
    failed.error = st.message();
    failed.current.clear();
    lock.Unlock();
    Logf(LogLevel::kError, "artifact {} ({}): failed: {}", snapshot.intent.name, pick,
         st.ToString());
    Finish(pick, std::move(failed));
    lock.Lock();
  }
}

Result<HttpResponse> ArtifactUploader::Call(const std::string& base_url, std::string_view method,
                                            const std::string& path, std::string_view body,
                                            const std::string& api_key) {
  HttpClient* client;
  {
    MutexLock lock(&clients_mu_);
    auto& c = clients_[base_url];
    if (!c) c = std::make_unique<HttpClient>(base_url, options_.http);
    client = c.get();
  }
  return client->Request(method, path, body, api_key);
}

Status ArtifactUploader::Attempt(const std::string& id, Entry* e) {
  Progress(id, [](ArtifactStatus* s) {
    s->bytes_done = 0;
    s->files_done = 0;
  });
  std::set<std::string> done;
  for (const auto& f : e->intent.files) {
    if (f.is_ref() || !done.insert(f.sha256).second) continue;
    {
      MutexLock lock(&mu_);
      if (stop_) return Status::Unavailable("the uploader is stopping");
    }
    Progress(id, [&](ArtifactStatus* s) { s->current = f.path; });
    COHORT_RETURN_IF_ERROR(UploadBlob(id, *e, f));
    Progress(id, [&](ArtifactStatus* s) { ++s->files_done; });
  }
  COHORT_RETURN_IF_ERROR(Commit(id, *e));
  return Status::Ok();
}

Status ArtifactUploader::UploadBlob(const std::string& id, const Entry& e,
                                    const ArtifactFileEntry& f) {
  const ArtifactTarget& t = e.target;
  const std::string blob = "/api/v1/blobs/" + PercentEncode(t.entity) + "/" + f.sha256;
  const std::string size_q = "?size=" + std::to_string(f.size);
  auto r = Call(t.base_url, "GET", blob + size_q, "", t.api_key);
  COHORT_RETURN_IF_ERROR(AnswerStatus(r, "blob " + f.path));
  auto v = json::Parse(r->body);
  if (!v.ok() || !v->is_object()) {
    return Status::Unavailable("blob " + f.path + ": the server's answer is not a JSON object");
  }
  json::FieldReader rd(v->as_object(), "blob");
  const bool stored = rd.OptBool("stored").value_or(false);
  int64_t part_bytes = rd.OptInt("part_bytes").value_or(int64_t(limits::kBlobPartBytes));
  std::vector<int64_t> held = rd.OptIntArray("parts").value_or(std::vector<int64_t>{});
  if (!rd.ok() || part_bytes <= 0) {
    return Status::Unavailable("blob " + f.path + ": unexpected answer: " + r->body.substr(0, 200));
  }
  if (stored) {
    Progress(id, [&](ArtifactStatus* s) { s->bytes_done += f.size; });
    return Status::Ok();
  }
  // The source must still be what was hashed (a changed file fails, it is not committed).
  auto size = fs_->FileSize(f.source);
  if (!size.ok()) {
    return Status::FailedPrecondition(f.path + ": cannot read " + f.source + ": " +
                                      size.status().message());
  }
  if (int64_t(*size) != f.size) {
    return Status::FailedPrecondition(f.path + ": " + f.source + " has " + std::to_string(*size) +
                                      " bytes, not the " + std::to_string(f.size) +
                                      " it had when hashed: log the artifact again");
  }
  // An empty file has no part (blob::PartCount): its upload is the completion alone.
  const int64_t parts = (f.size + part_bytes - 1) / part_bytes;
  std::set<int64_t> have(held.begin(), held.end());
  std::vector<PartJob> jobs;
  int64_t held_bytes = 0;
  for (int64_t n = 0; n < parts; ++n) {
    const int64_t off = n * part_bytes;
    const int64_t len = std::min(f.size, off + part_bytes) - off;
    if (have.count(n)) {
      held_bytes += len;
      continue;
    }
    PartJob j;
    j.base_url = t.base_url;
    j.api_key = t.api_key;
    j.path = blob;
    j.path += "/parts/" + std::to_string(n);
    j.path += size_q;
    j.source = f.source;
    j.offset = off;
    j.length = len;
    j.id = id;
    jobs.push_back(std::move(j));
  }
  Progress(id, [&](ArtifactStatus* s) { s->bytes_done += held_bytes; });
  const auto part_done = [this](const PartJob& job) {
    parts_uploaded_.fetch_add(1);
    Progress(job.id, [&](ArtifactStatus* s) {
      s->bytes_done += job.length;
      ++s->parts_uploaded;
    });
  };
  if (have.empty() && jobs.size() > 1) {
    // A new upload starts with one part, then the others go in parallel: the server sets an
    // upload up with its first part, and first parts arriving together race there (main at
    // 0b3974d: both write uploads/<sha>-<size>/started.tmp, one rename fails, HTTP 404).
    COHORT_RETURN_IF_ERROR(pool_->Run({jobs.front()}, part_done));
    jobs.erase(jobs.begin());
  }
  if (!jobs.empty()) COHORT_RETURN_IF_ERROR(pool_->Run(std::move(jobs), part_done));
  auto c = Call(t.base_url, "POST", blob + "/complete", bj::serialize(bj::object{{"size", f.size}}),
                t.api_key);
  if (c.ok() && c->status == 409) {
    // A part went missing meanwhile: ask again which ones are there.
    return Status::Unavailable("blob " + f.path + ": " + AnswerErrorText(*c));
  }
  return AnswerStatus(c, f.path);
}

ArtifactStatus ArtifactUploader::Committed(const std::string& id) {
  ArtifactStatus done;
  {
    MutexLock lock(&mu_);
    done = entries_.at(id).status;
  }
  done.state = "committed";
  done.current.clear();
  done.last_failure.clear();
  done.bytes_done = done.bytes_total;
  done.files_done = done.files_total;
  return done;
}

Status ArtifactUploader::Commit(const std::string& id, const Entry& e) {
  const ArtifactTarget& t = e.target;
  Progress(id, [](ArtifactStatus* s) { s->current.clear(); });
  if (e.intent.media) {
    // Media blobs (docs/formats.md "Media"): uploaded, held by the entity; the rows that name
    // them come in the writer's batches. No version to commit.
    Logf(LogLevel::kDebug, "media {}: {} blob(s) uploaded", id, e.intent.files.size());
    Finish(id, Committed(id));
    return Status::Ok();
  }
  const std::string path = "/api/v1/artifacts/" + PercentEncode(t.entity) + "/" +
                           PercentEncode(t.project) + "/" + PercentEncode(e.intent.name);
  auto r = Call(t.base_url, "POST", path, CommitBody(e.intent), t.api_key);
  if (r.ok() && r->status == 409 && r->body.find("upload it first") != std::string::npos) {
    // A blob found held when this attempt began is gone at the commit (gc forgot it while the
    // other files uploaded): the next attempt asks again and uploads it.
    return Status::Unavailable("commit of " + e.intent.name + ": " + AnswerErrorText(*r));
  }
  COHORT_RETURN_IF_ERROR(AnswerStatus(r, "commit of " + e.intent.name));
  auto v = json::Parse(r->body);
  ArtifactStatus done = Committed(id);
  if (v.ok() && v->is_object()) {
    json::FieldReader rd(v->as_object(), "version");
    done.version = rd.OptString("version", 64).value_or("");
    done.digest = rd.OptString("digest", 128).value_or("");
    done.size = rd.OptInt("size").value_or(0);
    done.created = rd.OptBool("created").value_or(r->status == 201);
  }
  Logf(LogLevel::kInfo, "artifact {} ({}): committed as {} ({})", e.intent.name, id, done.version,
       done.created ? "new" : "same as latest");
  Finish(id, std::move(done));
  return Status::Ok();
}

void ArtifactUploader::EmptyTrashLoop() {
  const std::string trash = wal::JoinPath(root_, kTrashDir);
  MutexLock lock(&mu_);
  while (!stop_) {
    if (!trash_waiting_) {
      cv_.Wait(mu_);
      continue;
    }
    trash_waiting_ = false;
    lock.Unlock();
    auto names = fs_->ListDir(trash);
    for (size_t i = 0; names.ok() && i < names->size(); ++i) {
      if (Status st = fs_->RemoveAll(wal::JoinPath(trash, (*names)[i])); !st.ok()) {
        Logf(LogLevel::kWarning, "artifact staging: {}", st.ToString());
      }
    }
    lock.Lock();
  }
}

void ArtifactUploader::DiscardStaging(const std::string& id, const std::string& staging) {
  // Only a directory of our own staging area is ever removed.
  if (!InStaging(staging)) return;
  const std::string to = wal::JoinPath(wal::JoinPath(root_, kTrashDir), id);
  Status st = fs_->CreateDir(wal::JoinPath(root_, kTrashDir));
  if (st.ok()) st = fs_->Rename(staging, to);
  if (st.ok()) {
    MutexLock lock(&mu_);
    trash_waiting_ = true;
    cv_.SignalAll();
    return;
  }
  if (st.code() == StatusCode::kNotFound) return;  // removed already (a re-handed intent)
  if (Status rm = fs_->RemoveAll(staging); !rm.ok()) {
    Logf(LogLevel::kWarning, "artifact {}: staged copies not removed: {}", id, rm.ToString());
  }
}

void ArtifactUploader::Finish(const std::string& id, ArtifactStatus outcome) {
  std::string file, staging;
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    staging = it->second.intent.staging;
  }
  // Out of staging before the outcome is told: nothing reads the copies any more.
  DiscardStaging(id, staging);
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    e.status = std::move(outcome);
    e.done_ms = NowMillis();
    // With its terminal state (pending() counts it done from here): a reader of both never
    // sees it done and not failed.
    if (e.status.state == "failed") {
      if (failures_.size() == kMaxFailuresKept) failures_.erase(failures_.begin());
      failures_.push_back(e.intent.name + " (" + id + "): " + e.status.error);
    }
    queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
    file = FileJson(e.target, e.intent_json, e.status);
  }
  Status st = wal::WriteFileAtomically(fs_, IntentPath(id), file, 0600);
  if (!st.ok()) Logf(LogLevel::kWarning, "artifact {}: outcome not saved: {}", id, st.ToString());
  cv_.SignalAll();
  MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.lock.reset();
}

}  // namespace cohort::agent
