#include "agent/sync.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "agent/agent_paths.h"
#include "agent/artifact_uploader.h"
#include "agent/sender.h"
#include "agent/writer_stream.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort::agent {
namespace {

void FindWriters(wal::FileSystem* fs, const std::string& dir, int depth,
                 std::vector<std::string>* out) {
  auto meta = fs->Exists(wal::JoinPath(dir, WriterStream::kMetaFile));
  if (meta.ok() && *meta) {
    out->push_back(dir);
    return;
  }
  if (depth == 0) return;
  for (const std::string& sub : ChildPaths(fs, dir)) FindWriters(fs, sub, depth - 1, out);
}

// Progress on stderr: on a terminal a bar redrawn in place; otherwise (a log file, a pipe) a
// plain line every 5 seconds, no carriage returns, as `--progress auto` of the other commands
// (the caller's report says the end).
class SyncProgress {
 public:
  explicit SyncProgress(bool enabled)
      : enabled_(enabled), bar_(enabled && isatty(STDERR_FILENO)), last_line_ms_(NowMillis()) {}

  void Draw(int64_t done, int64_t total, int64_t points, bool final) {
    if (!enabled_) return;
    constexpr int64_t kLineEveryMs = 5000;
    std::string text = std::to_string(done) + "/" + std::to_string(total) + " records, " +
                       std::to_string(points) + " points";
    if (bar_) {
      constexpr int kWidth = 30;
      int filled = total > 0 ? int(kWidth * std::min(done, total) / total) : kWidth;
      text = "\rcohort sync [" + std::string(size_t(filled), '#') +
             std::string(size_t(kWidth - filled), '.') + "] " + text + (final ? "\n" : "");
    } else {
      const int64_t now = NowMillis();
      if (final || now - last_line_ms_ < kLineEveryMs) return;
      last_line_ms_ = now;
      text = "cohort sync: " + text + "\n";
    }
    (void)!write(STDERR_FILENO, text.data(), text.size());
  }

 private:
  bool enabled_, bar_;
  int64_t last_line_ms_;
};

// Whether `dir` is an agent's data directory (every agent makes its %artifacts there): one whose
// writers are all uploaded has nothing left, which is no mistake.
bool IsAgentDataDir(wal::FileSystem* fs, const std::string& dir) {
  auto exists = fs->Exists(wal::JoinPath(dir, ArtifactUploader::kDirName));
  return exists.ok() && *exists;
}

// Whether a training process that writes to the writer `dir` may still run: one recorded in
// its clients.json (running, or away and able to come back) whose process has not ended. A
// clients.json that cannot be read counts as a live client. None recorded: the writer's clients
// finished or ended, and what holds the directory is an agent about to let go of it.
bool HasLiveClient(wal::FileSystem* fs, const std::string& dir) {
  auto text = wal::ReadFileToString(fs, wal::JoinPath(dir, WriterStream::kClientsFile), 1 << 20);
  if (!text.ok()) return text.status().code() != StatusCode::kNotFound;
  auto v = json::Parse(*text);
  if (!v.ok() || !v->is_object()) return true;
  for (const char* field : {"running", "clients"}) {
    const json::bj::value* list = v->as_object().if_contains(field);
    if (list == nullptr) continue;
    if (!list->is_array()) return true;
    for (const json::bj::value& c : list->as_array()) {
      const json::bj::object* o = c.if_object();
      if (o == nullptr) return true;
      const json::bj::value* pid = o->if_contains("pid");
      const json::bj::value* start = o->if_contains("start_ticks");
      const json::bj::value* boot = o->if_contains("boot_id");
      if (!pid || !pid->is_int64() || !start || !start->is_int64() || !boot || !boot->is_string()) {
        return true;
      }
      const ClientProcess p{.pid = int(pid->as_int64()),
                            .start_ticks = uint64_t(start->as_int64()),
                            .boot_id = std::string(boot->as_string())};
      if (!p.Ended()) return true;
    }
  }
  return false;
}

// Opens the writer `dir` for upload. One held by an agent whose training processes have all
// ended (`python train.py && cohort sync`: the agent lets go of the writer a moment after the
// script exited) is waited for, saying so on stderr, until `*until` (milliseconds; 0: not set
// yet, then set to `wait_s` from now). The deadline is one for the whole sync: an agent holding
// many writers (to upload while the server is down) is waited for once, not once per writer,
// and writers checked after it passed are skipped without waiting.
Result<std::shared_ptr<WriterStream>> OpenWhenReleased(const std::string& dir, wal::FileSystem* fs,
                                                       double wait_s, int64_t* until) {
  auto s = WriterStream::OpenExisting(dir, fs);
  if (s.ok() || s.status().code() != StatusCode::kFailedPrecondition || wait_s <= 0 ||
      HasLiveClient(fs, dir)) {
    return s;
  }
  if (*until == 0) *until = NowMillis() + int64_t(wait_s * 1000);
  if (NowMillis() >= *until) return s;
  const std::string line = "cohort sync: waiting for the agent to let go of " + dir + "...\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
  while (NowMillis() < *until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = WriterStream::OpenExisting(dir, fs);
    if (s.ok() || s.status().code() != StatusCode::kFailedPrecondition) return s;
  }
  return s;
}

}  // namespace

std::vector<std::string> FindWriterDirs(const std::string& path, wal::FileSystem* fs) {
  std::vector<std::string> out;
  FindWriters(fs, path, 3, &out);
  std::sort(out.begin(), out.end());
  return out;
}

Result<SyncReport> RunSync(const std::vector<std::string>& paths, const SyncOptions& options) {
  wal::FileSystem* fs = options.fs ? options.fs : wal::FileSystem::Default();
  std::vector<std::string> roots = paths;
  if (roots.empty()) roots.push_back(DefaultAgentDataDir());
  SyncReport report;
  std::vector<std::string> dirs;
  for (const std::string& root : roots) {
    auto exists = fs->Exists(root);
    if (!exists.ok()) return exists.status();
    if (!*exists) {
      if (paths.empty()) return report;  // no data dir yet: nothing to sync
      return Status::NotFound(root + ": no such directory");
    }
    std::vector<std::string> found = FindWriterDirs(root, fs);
    // A PATH given under which there is no writer, unless an agent's data directory, is a
    // mistake (the wrong directory, one too high, a file), not a sync that succeeded.
    if (found.empty() && !paths.empty() && !IsAgentDataDir(fs, root)) {
      return Status::NotFound(
          "no writer directories under " + root + " (expected a writer directory holding " +
          WriterStream::kMetaFile +
          ", a run directory of them, or an agent data directory of runs, at most three levels "
          "above " +
          WriterStream::kMetaFile + "; offline runs are kept under " + DefaultAgentDataDir() + ")");
    }
    for (auto& d : found) dirs.push_back(std::move(d));
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  report.writers = int(dirs.size());

  // Artifact intents (in the WALs, or left by an agent in <data dir>/%artifacts) are uploaded by
  // an uploader of this process, in the data dir of the first writer (or the first path).
  std::string data_dir;
  if (!dirs.empty()) {
    data_dir = std::filesystem::path(dirs.front()).parent_path().parent_path().string();
  } else {
    data_dir = roots.front();
  }
  ArtifactUploaderOptions ao;
  ao.auth_pause_s = 5;
  auto uploader = std::make_unique<ArtifactUploader>(
      wal::JoinPath(data_dir, ArtifactUploader::kDirName), fs, ao);
  uploader->Start();
  const int recovered = uploader->Recover();
  SenderOptions so;
  so.stop_on_auth_error = true;
  so.keep_rejected = true;  // a writer the server refuses is kept, and said, on every sync
  so.artifacts = uploader.get();
  std::map<std::string, std::unique_ptr<Sender>> senders;
  std::vector<std::shared_ptr<WriterStream>> streams;
  int64_t total = 0;
  int64_t release_until = 0;  // one deadline for every held writer waited for (0: none yet)
  for (const std::string& dir : dirs) {
    auto s = OpenWhenReleased(dir, fs, options.release_wait_s, &release_until);
    if (!s.ok()) {
      if (s.status().code() == StatusCode::kFailedPrecondition) {
        ++report.skipped_in_use;
        report.errors.push_back(dir +
                                ": in use by a live agent or training process; skipped (a "
                                "training process that ended lets go of it within seconds: "
                                "retry in a moment)");
      } else {
        report.errors.push_back(dir + ": " + s.status().ToString());
      }
      continue;
    }
    (*s)->Retarget(options.base_url, options.api_key);
    // A writer whose agent and client were killed together: its client's end recorded here too.
    if (auto ended = (*s)->FinishEndedClients(WriterFinishBody(std::nullopt, "crashed"));
        !ended.ok()) {
      report.errors.push_back(dir +
                              ": the end of its client not recorded: " + ended.status().ToString());
    }
    auto& sender = senders[(*s)->target().base_url];
    if (!sender) sender = std::make_unique<Sender>((*s)->target().base_url, so);
    sender->Add(*s);
    total += (*s)->progress().appended_records;
    streams.push_back(*s);
  }
  for (auto& [url, sender] : senders) sender->Start();

  auto finished = [](const UploadProgress& p) {
    return p.done_seq >= p.appended_seq || !p.rejected.ok() || !p.stopped.ok();
  };
  SyncProgress bar(options.progress);
  int64_t last_done = -1, last_progress_ms = NowMillis();
  while (true) {
    int64_t done = 0, points = 0;
    bool all = true;
    for (auto& s : streams) {
      UploadProgress p = s->progress();
      done += p.done_records;
      all = all && finished(p);
    }
    for (auto& [url, sender] : senders) points += sender->stats().points;
    bar.Draw(done, total, points, false);
    int64_t now = NowMillis();
    if (done != last_done) {
      last_done = done;
      last_progress_ms = now;
    }
    if (all) break;
    if (options.give_up_after_s > 0 && now - last_progress_ms > options.give_up_after_s * 1000) {
      report.errors.push_back("gave up: no upload progress for " +
                              std::to_string(int(options.give_up_after_s)) + "s");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Then the artifact versions handed over (and those recovered), while they make progress.
  if (uploader->pending() > 0) {
    if (options.progress) {
      std::string line =
          "cohort sync: uploading " + std::to_string(uploader->pending()) + " artifact version(s)" +
          (recovered ? " (" + std::to_string(recovered) + " left by an agent)" : "") + "\n";
      (void)!write(STDERR_FILENO, line.data(), line.size());
    }
    int64_t last_parts = -1, last_ms = NowMillis();
    while (uploader->pending() > 0) {
      const int64_t now = NowMillis();
      if (uploader->parts_uploaded() != last_parts) {
        last_parts = uploader->parts_uploaded();
        last_ms = now;
      }
      if (options.give_up_after_s > 0 && now - last_ms > options.give_up_after_s * 1000) {
        report.errors.push_back(std::to_string(uploader->pending()) +
                                " artifact version(s) not uploaded: no progress for " +
                                std::to_string(int(options.give_up_after_s)) +
                                "s (kept for the next sync or agent)");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  // Versions refused for good (their staged copies are gone): never a sync that succeeded.
  for (const std::string& failed : uploader->failures()) {
    report.errors.push_back("artifact " + failed +
                            ": not uploaded (refused for good; log it again from the job)");
  }
  for (auto& [url, sender] : senders) {
    sender->Stop();
    SenderStats st = sender->stats();
    report.records += st.records_done + st.records_skipped;
    report.points += st.points;
  }
  bar.Draw(last_done, total, report.points, true);

  for (auto& s : streams) {
    UploadProgress p = s->progress();
    for (auto& [url, sender] : senders) sender->Remove(s.get());
    if (!p.rejected.ok()) {
      report.errors.push_back(s->dir() + ": not uploaded: the server refused it (" +
                              p.rejected.ToString() +
                              "); kept: every sync says this until its cause is fixed or the "
                              "directory is removed");
      (void)s->Close();
      continue;
    }
    if (!p.stopped.ok()) {
      report.errors.push_back(s->dir() + ": not uploaded (" + p.stopped.ToString() +
                              "); kept: sync again with a key the server accepts");
      (void)s->Close();
      continue;
    }
    if (p.done_seq < p.appended_seq) {
      report.errors.push_back(s->dir() + ": not uploaded" +
                              (p.last_failure.ok() ? "" : " (" + p.last_failure.ToString() + ")"));
      (void)s->Close();
      continue;
    }
    if (p.refused > 0) {  // never a sync that succeeded: those records are not on the server
      report.errors.push_back(s->dir() + ": " + std::to_string(p.refused) +
                              " record(s) refused by the server for good and not stored (the "
                              "last: " +
                              p.last_refusal.ToString() +
                              "); the rest is uploaded. The directory is kept and every sync "
                              "says this until you remove it");
      (void)s->Close();
      continue;
    }
    ++report.uploaded;
    // A writer kept for a client away (crashed while its process runs on) stays until then.
    if (p.complete && !s->AwaitsLiveClient()) {
      if (Status removed = s->Remove(); removed.ok()) {
        ++report.removed;
      } else {
        // Every record is on the server; only the directory is left for the next sync.
        report.errors.push_back(s->dir() + ": uploaded, but not removed: " + removed.ToString());
      }
    } else {
      (void)s->Close();
    }
  }
  return report;
}

}  // namespace cohort::agent
