// Run's artifacts (include/cohort/cohort.h, docs/artifacts.md): building the intent, hashing and
// staging files off the caller's thread, asking the agent how the upload goes, and Finish's
// wait with progress.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <new>
#include <set>
#include <thread>

#include "agent/agent_log.h"
#include "agent/artifact_intent.h"
#include "agent/file_digest.h"
#include "agent/hash_cache.h"
#include "agent/socket_io.h"
#include "client/run_impl.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/thread_signals.h"
#include "core/user_config.h"

namespace cohort {
namespace {

namespace bj = boost::json;

constexpr int64_t kPollMs = 100;
// WaitArtifact asks again after 5 ms, then twice as long each time up to kPollMs: a version that
// is committed at once (nothing to upload) is seen within milliseconds.
constexpr int64_t kFirstWaitPollMs = 5;
constexpr int64_t kQueryBudgetMs = 2000;

int64_t MonoMs() { return agent::MonoMillis(); }

ArtifactVersion FromAgent(const agent::ArtifactStatus& s) {
  ArtifactVersion v;
  v.id = s.id;
  v.state = s.state;
  v.name = s.name;
  v.version = s.version;
  v.digest = s.digest;
  v.size = s.size;
  v.created = s.created;
  v.files_done = s.files_done;
  v.files_total = s.files_total;
  v.bytes_done = s.bytes_done;
  v.bytes_total = s.bytes_total;
  v.parts_uploaded = s.parts_uploaded;
  v.error = s.error;
  return v;
}

bool Terminal(const ArtifactVersion& v) { return v.state == "committed" || v.state == "failed"; }

std::string Bytes(int64_t n) {
  char buf[64];
  const double d = double(n);
  if (n >= (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", d / double(int64_t{1} << 30));
  } else if (n >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", d / double(1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", d / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  }
  return buf;
}

void Err(const std::string& line) {
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

// Checks what the caller can be told at the call: names, paths, duplicates, metadata.
Status CheckArtifact(const Artifact& a) {
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact name", a.name));
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact type", a.type));
  for (const auto& alias : a.aliases) COHORT_RETURN_IF_ERROR(ValidateAliasName(alias));
  if (!a.metadata_json.empty()) {
    auto m = json::Parse(a.metadata_json);
    if (!m.ok() || !m->is_object()) {
      return Status::InvalidArgument("artifact metadata: expected a JSON object");
    }
  }
  std::set<std::string> paths;
  for (const auto& f : a.files) {
    COHORT_RETURN_IF_ERROR(ValidateRelativePath("artifact file path", f.path));
    if (f.source.empty()) return Status::InvalidArgument("artifact file " + f.path + ": no source");
    if (!paths.insert(f.path).second) {
      return Status::InvalidArgument("artifact: the path '" + f.path + "' is given twice");
    }
  }
  for (const auto& r : a.references) {
    COHORT_RETURN_IF_ERROR(ValidateRelativePath("artifact file path", r.path));
    if (!paths.insert(r.path).second) {
      return Status::InvalidArgument("artifact: the path '" + r.path + "' is given twice");
    }
  }
  if (paths.empty()) return Status::InvalidArgument("artifact " + a.name + ": no files");
  return Status::Ok();
}

}  // namespace

void Run::Impl::ForgetArtifactsInChild() {
  new (&art_mu) Mutex();                      // a parent's thread may have held it
  new (&hashers) std::vector<std::thread>();  // the old one leaked: never joined here
  artifacts.clear();
}

void Run::Impl::NoteStaging(const std::string& dir) {
  if (dir.empty()) return;
  MutexLock lock(&art_mu);
  artifact_staging = dir;
}

std::string Run::Impl::staging_dir() const {
  MutexLock lock(&art_mu);
  return artifact_staging;
}

Result<std::string> Run::Impl::EnqueueArtifactIntent(std::string_view intent_json) {
  if (finished.load()) return Status::FailedPrecondition("run already finished");
  auto v = json::Parse(intent_json);
  if (!v.ok() || !v->is_object()) {
    return Status::InvalidArgument("artifact intent: expected a JSON object");
  }
  bj::object& o = v->as_object();
  if (!o.contains("id")) o["id"] = ids::RandomHex(16);
  o["run"] = rs.settings.run_id;
  o["writer"] = rs.settings.label;
  std::string body = bj::serialize(o);
  // The agent checks it again; a bad intent here is the caller's, named at the call.
  COHORT_ASSIGN_OR_RETURN(agent::ArtifactIntent intent, agent::ParseArtifactIntent(body));
  if (!intent.media) {  // media blobs: nothing to wait for at Finish (the agent uploads them)
    MutexLock lock(&art_mu);
    ArtifactVersion& a = artifacts[intent.id];
    a.id = intent.id;
    a.name = intent.name;
    a.state = "queued";
    a.files_total = 0;
    a.bytes_total = intent.blob_bytes();
    for (const auto& f : intent.files) a.files_total += f.is_ref() ? 0 : 1;
  }
  {
    MutexLock lock(&mu);
    // What was logged before goes first. Not for media: their rows are logged after the intent
    // (so they follow it in any case), and a batch cut per media set would only be smaller.
    if (!intent.media) DrainBufferLocked();
    PendingFrame f{next_frame++, agent::MessageType::kArtifact, std::move(body)};
    frame_bytes += f.body.size();
    frames.push_back(std::move(f));
  }
  RequestFlush();
  return intent.id;
}

Result<std::string> Run::Impl::LogArtifact(const Artifact& artifact) {
  if (finished.load()) return Status::FailedPrecondition("run already finished");
  COHORT_RETURN_IF_ERROR(CheckArtifact(artifact));
  const std::string id = ids::RandomHex(16);
  MutexLock lock(&art_mu);
  if (artifacts_closed) return Status::FailedPrecondition("run already finished");
  ArtifactVersion& a = artifacts[id];
  a.id = id;
  a.name = artifact.name;
  a.state = "hashing";
  const std::string staging_root = artifact_staging;
  AsyncSignalsBlocked quiet;  // the host's signals go to its own threads (thread_signals.h)
  hashers.emplace_back([this, id, artifact, staging_root] {
    agent::ArtifactIntent in;
    in.id = id;
    in.name = artifact.name;
    in.type = artifact.type;
    in.description = artifact.description;
    if (!artifact.metadata_json.empty()) in.metadata_json = artifact.metadata_json;
    in.aliases = artifact.aliases;
    wal::FileSystem* fs = wal::FileSystem::Default();
    Status st;
    const bool stage = !staging_root.empty();
    if (stage) {
      in.staging = staging_root + "/" + id;
      st = fs->CreateDir(in.staging);
      // Ours until the agent has the intent: a crash here leaves it for the agent to delete
      // once this process is gone (agent/staging_claim.h).
      if (st.ok()) st = agent::ClaimStaging(fs, in.staging);
    }
    const std::string cache_dir = UserCacheDir();
    for (size_t i = 0; st.ok() && i < artifact.files.size(); ++i) {
      const ArtifactFile& f = artifact.files[i];
      agent::ArtifactFileEntry e;
      e.path = f.path;
      const std::string source = Absolute(f.source);
      e.source = source;
      std::string copy;
      if (stage && !f.immutable) copy = e.source = in.staging + "/" + std::to_string(i);
      // Through the hash cache (docs/formats.md, "Hash cache"): an immutable file logged
      // before and unchanged since is not read again.
      auto d = agent::HashFileCached(fs, source, cache_dir, copy);
      if (!d.ok()) {
        st = Status(d.status().code(),
                    "artifact " + artifact.name + ": " + f.path + ": " + d.status().message());
        break;
      }
      e.sha256 = d->sha256;
      e.size = d->size;
      in.files.push_back(std::move(e));
    }
    for (const auto& r : artifact.references) {
      agent::ArtifactFileEntry e;
      e.path = r.path;
      e.ref = r.uri;
      e.digest = r.digest;
      e.size = r.size;
      in.files.push_back(std::move(e));
    }
    if (st.ok()) {
      std::vector<std::string> cached;
      for (size_t i = 0; i < artifact.files.size(); ++i) {
        if (!stage || artifact.files[i].immutable) cached.push_back(in.files[i].source);
      }
      MutexLock l(&art_mu);
      artifact_cached_sources[id] = std::move(cached);
    }
    if (st.ok()) st = EnqueueArtifactIntent(agent::ToJson(in)).status();
    if (!st.ok()) {
      if (!in.staging.empty()) (void)fs->RemoveAll(in.staging);
      agent::Logf(agent::LogLevel::kWarning, "cohort: {}", st.ToString());
      MutexLock l(&art_mu);
      artifacts[id].state = "failed";
      artifacts[id].error = st.message();
      artifact_cached_sources.erase(id);
    }
  });
  return id;
}

void Run::Impl::QueryArtifactsLocked(const std::vector<std::string>& ids,
                                     int64_t mono_deadline_ms) {
  if (ids.empty() || !EnsureTransport(mono_deadline_ms)) return;
  auto r = transport->ArtifactStatus(ids, mono_deadline_ms);
  if (!r.ok()) {
    if (r.status().code() != StatusCode::kDeadlineExceeded) DropTransport(r.status());
    return;
  }
  std::vector<std::string> forget;  // sources whose cached digests named other bytes
  {
    MutexLock lock(&art_mu);
    for (const agent::ArtifactStatus& s : *r) {
      auto it = artifacts.find(s.id);
      if (it == artifacts.end() || Terminal(it->second)) continue;
      // "unknown": not handed to the uploader yet (its frame is on its way, or behind the run's
      // earlier records): still queued.
      if (s.state == "unknown") continue;
      it->second = FromAgent(s);
      if (!Terminal(it->second)) continue;
      auto sources = artifact_cached_sources.find(s.id);
      if (sources == artifact_cached_sources.end()) continue;
      // The server's "not the blob announced": a digest the cache gave was not the file's (a
      // file rewritten without moving its modification time). Its entry goes, so that logging
      // the file again reads it (the Python SDK does the same).
      if (it->second.state == "failed" &&
          it->second.error.find("not the blob announced") != std::string::npos) {
        for (std::string& source : sources->second) forget.push_back(std::move(source));
      }
      artifact_cached_sources.erase(sources);
    }
  }
  wal::FileSystem* fs = wal::FileSystem::Default();
  const std::string cache_dir = forget.empty() ? std::string() : UserCacheDir();
  for (const std::string& source : forget) {
    if (auto st = fs->Stat(source); st.ok()) agent::ForgetHash(fs, cache_dir, *st);
  }
}

Result<ArtifactVersion> Run::Impl::ArtifactState(const std::string& id, int64_t mono_deadline_ms) {
  {
    MutexLock lock(&art_mu);
    auto it = artifacts.find(id);
    if (it == artifacts.end()) {
      return Status::NotFound("artifact " + id + ": not logged by this run");
    }
    if (Terminal(it->second) || it->second.state == "hashing") return it->second;
  }
  if (!finished.load()) {
    MutexLock io(&io_mu);
    QueryArtifactsLocked({id}, mono_deadline_ms);
  }
  MutexLock lock(&art_mu);
  return artifacts.at(id);
}

Result<ArtifactVersion> Run::Impl::WaitArtifact(const std::string& id, double timeout_s) {
  const int64_t deadline = timeout_s < 0 ? INT64_MAX : MonoMs() + int64_t(timeout_s * 1000);
  int64_t poll_ms = kFirstWaitPollMs;
  while (true) {
    auto st = ArtifactState(id, std::min(deadline, MonoMs() + kQueryBudgetMs));
    if (!st.ok()) return st.status();
    if (st->state == "committed") return *st;
    if (st->state == "failed") {
      return Status::FailedPrecondition("artifact " + st->name + ": " + st->error);
    }
    if (finished.load()) {
      return Status::FailedPrecondition("artifact " + st->name +
                                        ": the run finished before the version was committed; "
                                        "the agent goes on uploading it");
    }
    if (MonoMs() >= deadline) {
      return Status::DeadlineExceeded("artifact " + st->name + ": not committed yet (" + st->state +
                                      ", " + Bytes(st->bytes_done) + " of " +
                                      Bytes(st->bytes_total) + ")");
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(poll_ms, std::max<int64_t>(1, deadline - MonoMs()))));
    poll_ms = std::min(kPollMs, poll_ms * 2);
  }
}

void Run::Impl::AwaitArtifactsForFinish(int64_t mono_deadline_ms) {
  std::vector<std::thread> joining;
  {
    MutexLock lock(&art_mu);
    joining.swap(hashers);
    artifacts_closed = true;
  }
  for (auto& t : joining) t.join();  // every intent is queued (or failed) after this
  std::vector<std::string> ids;
  {
    MutexLock lock(&art_mu);
    for (const auto& [id, a] : artifacts) {
      if (!Terminal(a)) ids.push_back(id);
    }
  }
  if (ids.empty()) return;
  if (rs.settings.mode == "offline") {
    Err("cohort: " + std::to_string(ids.size()) +
        " artifact version(s) kept in the agent's WAL: `cohort sync` uploads them (offline run)\n");
    return;
  }
  const bool tty = isatty(2) == 1;
  std::map<std::string, int64_t> files_shown;
  int64_t last_draw = 0;
  while (true) {
    {
      MutexLock io(&io_mu);
      QueryArtifactsLocked(ids, std::min(mono_deadline_ms, MonoMs() + kQueryBudgetMs));
    }
    std::vector<ArtifactVersion> now;
    {
      MutexLock lock(&art_mu);
      for (const auto& id : ids) now.push_back(artifacts.at(id));
    }
    int64_t done = 0, total = 0;
    bool all = true;
    for (const auto& a : now) {
      done += a.bytes_done;
      total += a.bytes_total;
      all = all && Terminal(a);
      if (!tty && (a.files_done != files_shown[a.id] || Terminal(a)) && files_shown[a.id] != -1) {
        files_shown[a.id] = Terminal(a) ? -1 : a.files_done;
        if (a.state == "committed") {
          Err("cohort: artifact " + a.name + " committed as " + a.version + "\n");
        } else if (a.state == "failed") {
          Err("cohort: artifact " + a.name + " failed: " + a.error + "\n");
        } else {
          Err("cohort: artifact " + a.name + ": " + std::to_string(a.files_done) + "/" +
              std::to_string(a.files_total) + " files uploaded (" + Bytes(a.bytes_done) + " of " +
              Bytes(a.bytes_total) + ")\n");
        }
      }
    }
    if (tty && (all || MonoMs() - last_draw >= 200)) {
      last_draw = MonoMs();
      const int width = 30;
      const int fill = total > 0 ? int(double(done) / double(total) * width) : width;
      std::string bar(size_t(std::clamp(fill, 0, width)), '#');
      bar.resize(width, '.');
      Err("\rcohort: uploading artifacts [" + bar + "] " + Bytes(done) + " / " + Bytes(total) +
          (all ? "\n" : ""));
      if (all) {
        for (const auto& a : now) {
          Err(a.state == "committed"
                  ? "cohort: artifact " + a.name + " committed as " + a.version + "\n"
                  : "cohort: artifact " + a.name + " failed: " + a.error + "\n");
        }
      }
    }
    if (all) return;
    if (MonoMs() >= mono_deadline_ms) {
      if (tty) Err("\n");
      for (const auto& a : now) {
        if (Terminal(a)) continue;
        Err("cohort: artifact " + a.name + ": " + Bytes(a.bytes_total - a.bytes_done) + " of " +
            Bytes(a.bytes_total) +
            " not uploaded within finish_timeout; the agent goes on "
            "uploading it (it keeps the intent across restarts)\n");
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

// ---- Run ----

Result<std::string> Run::LogArtifact(const Artifact& artifact) {
  if (!impl_) return Status::FailedPrecondition("log_artifact: the run is disabled");
  return impl_->LogArtifact(artifact);
}

Result<std::string> Run::LogArtifactIntent(std::string_view intent_json) {
  if (!impl_) return Status::FailedPrecondition("log_artifact: the run is disabled");
  return impl_->EnqueueArtifactIntent(intent_json);
}

Result<ArtifactVersion> Run::ArtifactState(const std::string& id) {
  if (!impl_) return Status::FailedPrecondition("artifact: the run is disabled");
  return impl_->ArtifactState(id, MonoMs() + kQueryBudgetMs);
}

Result<ArtifactVersion> Run::WaitArtifact(const std::string& id, double timeout_s) {
  if (!impl_) return Status::FailedPrecondition("artifact: the run is disabled");
  return impl_->WaitArtifact(id, timeout_s);
}

std::string Run::artifact_staging_dir() const { return impl_ ? impl_->staging_dir() : ""; }
int64_t Run::max_media_file_bytes() const { return impl_ ? impl_->max_media_file_bytes.load() : 0; }
int64_t Run::max_media_per_step() const { return impl_ ? impl_->max_media_per_step.load() : 0; }

}  // namespace cohort
