// cohort::Run, Init and Setup (include/cohort/cohort.h), plus the process-wide hooks that keep
// runs safe across fork() and finish them when the process ends without Finish(): exit() (with
// its status), std::terminate (crashed) and SIGTERM (killed, client/sigterm_watcher.h).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/agent_log.h"
#include "agent/alert_body.h"
#include "agent/socket_io.h"
#include "client/config.h"
#include "client/run_impl.h"
#include "client/sigterm_watcher.h"
#include "client/spawn.h"
#include "core/batch_format.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/mutex.h"
#include "core/utf8.h"
#include "core/version.h"

namespace cohort {
namespace {

namespace bj = boost::json;

// Live runs of this process, for the fork and exit hooks. A run stays here (alive) until
// Run::Finish, even when the program dropped every Run handle, so that the exit hooks end it
// with the process's real exit status. Leaked on purpose: the hooks may run
// during static destruction.
struct Registry {
  Mutex mu;
  std::vector<std::shared_ptr<Run::Impl>> runs COHORT_GUARDED_BY(mu);
  // Held between prepare and parent/child.
  std::vector<std::shared_ptr<Run::Impl>> forking COHORT_GUARDED_BY(mu);
};

Registry& Runs() {
  static auto* r = new Registry();
  return *r;
}

// The pthread_atfork handlers hold Runs().mu and every forking run's locks from ForkPrepare to
// ForkParent/ForkChild. Not analysed: the runs' locks are taken and released per element of a
// list, which the analysis cannot pair.
void ForkPrepare() COHORT_NO_THREAD_SAFETY_ANALYSIS {
  Registry& r = Runs();
  r.mu.Lock();
  r.forking.clear();
  r.forking = r.runs;
  for (auto& impl : r.forking) impl->ForkPrepare();
}

void ForkParent() COHORT_NO_THREAD_SAFETY_ANALYSIS {  // see ForkPrepare
  Registry& r = Runs();
  for (auto it = r.forking.rbegin(); it != r.forking.rend(); ++it) (*it)->ForkParent();
  r.forking.clear();
  r.mu.Unlock();
}

void ForkChild() COHORT_NO_THREAD_SAFETY_ANALYSIS {  // see ForkPrepare
  Registry& r = Runs();
  for (auto it = r.forking.rbegin(); it != r.forking.rend(); ++it) (*it)->ForkChild();
  r.forking.clear();
  r.mu.Unlock();
}

// Finishes every live run this process owns that nobody finished.
void FinishLiveRuns(int exit_code, std::string_view state) {
  std::vector<std::shared_ptr<Run::Impl>> live;
  {
    MutexLock lock(&Runs().mu);
    live = Runs().runs;
  }
  for (auto& impl : live) {
    if (!impl->finished.load() && !impl->child_pending.load()) (void)impl->Finish(exit_code, state);
  }
}

// A normal exit (return from main, exit(n)) finishes runs nobody finished with the process's
// exit status: 0 finished, anything else failed. Runs lost to a signal or _exit() are reported
// crashed by the agent instead.
void FinishAtExit(int status, void*) { FinishLiveRuns(status & 0xff, {}); }

// An uncaught exception (or any other std::terminate) ends the runs as crashed with the exit
// code of the SIGABRT that follows, then lets the previous terminate handler (or abort) run.
std::terminate_handler g_previous_terminate = nullptr;

void FinishAtTerminate() {
  static std::atomic<bool> once{false};
  if (!once.exchange(true)) FinishLiveRuns(128 + SIGABRT, "crashed");
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

// SIGTERM (see client/sigterm_watcher.h): the runs end as killed, 128 + 15 like a shell says.
void FinishAtSigterm() { FinishLiveRuns(128 + SIGTERM, "killed"); }

// The first use of a run in a forked child (no exec): its own writer and flush thread, and its
// own SIGTERM watcher, since the parent's watcher thread does not exist here. Without it a
// SIGTERM took the child's default disposition and its writer was reported crashed, not
// killed.
void StartForkedChild(Run::Impl* impl) {
  if (impl->StartInChild() && impl->rs.settings.handle_sigterm) {
    client::SigtermWatcher::Install(FinishAtSigterm);
  }
}

void InstallProcessHooks(bool handle_sigterm) {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
    on_exit(FinishAtExit, nullptr);
    g_previous_terminate = std::set_terminate(FinishAtTerminate);
  });
  if (handle_sigterm) client::SigtermWatcher::Install(FinishAtSigterm);
}

void Register(const std::shared_ptr<Run::Impl>& impl) {
  MutexLock lock(&Runs().mu);
  auto& runs = Runs().runs;
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](auto& r) { return r->finished.load(); }),
             runs.end());
  runs.push_back(impl);
}

void Unregister(const Run::Impl* impl) {
  MutexLock lock(&Runs().mu);
  auto& runs = Runs().runs;
  runs.erase(std::remove_if(runs.begin(), runs.end(), [&](auto& r) { return r.get() == impl; }),
             runs.end());
}

const std::string& Empty() {
  static const std::string* s = new std::string();
  return *s;
}

Result<bj::object> ParseObjectArg(std::string_view text, const char* what) {
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_object()) {
    return Status::InvalidArgument(std::string(what) + ": expected a JSON object");
  }
  return std::move(v->as_object());
}

// The open request of a fresh Init: the run to create or resume and the writer to join.
Result<agent::OpenRequest> BuildOpenRequest(const client::ResolvedSettings& rs) {
  const Settings& s = rs.settings;
  agent::OpenRequest req;
  req.session = client::NewSessionId();
  req.base_url = s.base_url;
  req.api_key = s.api_key;
  req.entity = s.entity;
  req.project = s.project;
  req.run_id = s.run_id;
  req.label = s.label;
  req.offline = s.mode == "offline";
  req.data_dir = s.dir;
  req.stats_interval_s = std::max(0.0, s.stats_sampling_interval_s);
  req.gpu_ids = s.stats_gpu_device_ids;
  req.pid = getpid();

  bj::object run;
  run["id"] = s.run_id;
  bool controls_run = !s.shared || s.primary.value_or(true);
  if (controls_run) {
    // Workers of a shared run send nothing but the id: the primary owns the run's fields.
    if (!s.name.empty()) run["name"] = s.name;
    if (!s.group.empty()) run["group"] = s.group;
    if (!s.job_type.empty()) run["job_type"] = s.job_type;
    if (!s.notes.empty()) run["notes"] = s.notes;
    if (!s.tags.empty()) {
      bj::array tags;
      for (const auto& t : s.tags) tags.emplace_back(t);
      run["tags"] = std::move(tags);
    }
    run["host"] = rs.host;
    if (!s.config_json.empty()) {
      COHORT_ASSIGN_OR_RETURN(bj::object config, ParseObjectArg(s.config_json, "config"));
      run["config"] = std::move(config);
    }
    bj::object meta;
    meta["sdk"] = "cohort-cpp/" + std::string(kVersion);
    // false: a run of its own, whose writers continue each other's steps (a resumed run); the
    // server applies that only when told (writers_api.cc), so shared runs keep per-rank steps.
    meta["shared"] = s.shared;
    if (rs.rank) meta["rank"] = *rs.rank;
    if (rs.local_rank) meta["local_rank"] = *rs.local_rank;
    if (rs.world_size) meta["world_size"] = *rs.world_size;
    run["metadata"] = std::move(meta);
    run["resume"] = s.resume;
  } else {
    run["resume"] = "allow";
  }
  req.run_json = bj::serialize(run);

  bj::object writer;
  writer["label"] = s.label;
  writer["primary"] = s.primary.value_or(true);
  writer["update_finish_state"] = s.update_finish_state.value_or(true);
  writer["host"] = rs.host;
  writer["pid"] = int64_t(getpid());
  if (s.stats_gpu_device_ids) {
    bj::array ids;
    for (int id : *s.stats_gpu_device_ids) ids.emplace_back(id);
    writer["gpu_ids"] = std::move(ids);
  }
  req.writer_json = bj::serialize(writer);
  return req;
}

}  // namespace

Run::Run() = default;
Run::~Run() = default;
Run::Run(const Run&) = default;
Run& Run::operator=(const Run&) = default;
Run::Run(Run&&) noexcept = default;
Run& Run::operator=(Run&&) noexcept = default;
Run::Run(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

void Run::Log(const Values& values, std::optional<int64_t> step, bool commit) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return;
  if (impl->child_pending.load(std::memory_order_relaxed)) StartForkedChild(impl);
  if (impl->buffer.Log(values, step, commit)) impl->RequestFlush();
}

void Run::Log(std::span<const Point> points, std::optional<int64_t> step, bool commit) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return;
  if (impl->child_pending.load(std::memory_order_relaxed)) StartForkedChild(impl);
  if (impl->buffer.Log(points, step, commit)) impl->RequestFlush();
}

Status Run::ClaimMediaKey(std::string_view key, std::string_view type) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return Status::Ok();
  auto t = batch::ParseMediaType(type);
  if (!t) return Status::InvalidArgument("media type '" + std::string(type) + "': unknown");
  return impl->buffer.ClaimMedia(key, *t);
}

Status Run::CheckMediaSet(std::string_view key, int64_t count, int64_t largest_file_bytes) const {
  const Impl* impl = impl_.get();
  if (impl == nullptr) return Status::Ok();
  const int64_t said = impl->max_media_per_step.load(std::memory_order_relaxed);
  // Never more than this client's own buffer takes for one set.
  const int64_t per_step = std::min<int64_t>(said > 0 ? said : limits::kDefaultMaxMediaPerStep,
                                             int64_t(limits::kClientMaxBatchMedia));
  const std::string name = "'" + std::string(key) + "'";
  if (count > per_step) {
    std::string limit = "the " + std::to_string(per_step) + " one call may hold";
    if (said > 0 && per_step == said) {
      limit = "the server takes (" + std::to_string(per_step) + ": its --max-media-per-step)";
    }
    return Status::InvalidArgument(name + ": " + std::to_string(count) +
                                   " media in one step, more than " + limit);
  }
  const int64_t max_file = impl->max_media_file_bytes.load(std::memory_order_relaxed);
  if (max_file > 0 && largest_file_bytes > max_file) {
    return Status::InvalidArgument(name + ": a file of " + std::to_string(largest_file_bytes) +
                                   " bytes, more than the server takes (" +
                                   std::to_string(max_file) + ": its --max-media-file-bytes)");
  }
  return Status::Ok();
}

Status Run::LogMedia(std::string_view key, std::string_view type, int64_t step,
                     const std::vector<MediaValue>& set) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return Status::Ok();
  if (impl->child_pending.load(std::memory_order_relaxed)) StartForkedChild(impl);
  auto t = batch::ParseMediaType(type);
  if (!t) return Status::InvalidArgument("media type '" + std::string(type) + "': unknown");
  std::vector<batch::MediaRow> rows(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    const MediaValue& v = set[i];
    batch::MediaRow& r = rows[i];
    r.sha256 = v.sha256;
    r.size = v.size;
    r.mime = v.mime;
    r.width = v.width;
    r.height = v.height;
    r.duration_ms = v.duration_ms;
    r.caption = v.caption;
    r.cell_bytes = v.cell_bytes;
  }
  bool flush = false;
  COHORT_RETURN_IF_ERROR(impl->buffer.LogMedia(key, *t, step, std::move(rows), &flush));
  if (flush) impl->RequestFlush();
  return Status::Ok();
}

Status Run::ClaimHistogramKey(std::string_view key) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return Status::Ok();
  return impl->buffer.ClaimHistogram(key);
}

Status Run::LogHistogram(std::string_view key, int64_t step, const Histogram& histogram) {
  Impl* impl = impl_.get();
  if (impl == nullptr) return Status::Ok();
  if (impl->finished.load(std::memory_order_relaxed)) {  // computed too late: said, not counted
    return Status::FailedPrecondition("histogram '" + std::string(key) +
                                      "': the run finished before it was computed; not logged");
  }
  if (impl->child_pending.load(std::memory_order_relaxed)) StartForkedChild(impl);
  bool flush = false;
  COHORT_RETURN_IF_ERROR(impl->buffer.LogHistogramAt(key, step, histogram, &flush));
  if (flush) impl->RequestFlush();
  return Status::Ok();
}

Status Run::Log(const Values& values, const Histograms& histograms, std::optional<int64_t> step,
                bool commit) {
  Impl* impl = impl_.get();
  if (impl == nullptr || impl->finished.load(std::memory_order_relaxed)) return Status::Ok();
  if (impl->child_pending.load(std::memory_order_relaxed)) StartForkedChild(impl);
  bool flush = false;
  COHORT_RETURN_IF_ERROR(impl->buffer.Log(values, histograms, step, commit, &flush));
  if (flush) impl->RequestFlush();
  return Status::Ok();
}

KeyId Run::Key(std::string_view key) {
  if (!impl_) return KeyId{};
  return KeyId{impl_->buffer.Intern(key)};
}

Status Run::UpdateConfig(std::string_view json_object) {
  if (!impl_) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(bj::object config, ParseObjectArg(json_object, "config"));
  const Settings& s = impl_->rs.settings;
  if (s.shared && !s.primary.value_or(true)) return Status::Ok();  // the primary's alone
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  bj::object body;
  body["config"] = std::move(config);
  return impl_->EnqueueUpdate(bj::serialize(body));
}

Status Run::RemoveConfigKeys(const std::vector<std::string>& keys) {
  if (!impl_ || keys.empty()) return Status::Ok();
  const Settings& s = impl_->rs.settings;
  if (s.shared && !s.primary.value_or(true)) return Status::Ok();  // the primary's alone
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  if (!impl_->agent_takes_config_unset.load()) {  // it would refuse the frame for ever
    const std::string pid = std::to_string(impl_->agent_pid_now.load());
    return Status::Unavailable(
        "config keys not removed: the cohort agent of this node (pid " + pid +
        ") is older than this client; it exits when idle, or stop it (kill " + pid +
        ") and the next run starts a current one");
  }
  bj::array unset;
  for (const std::string& key : keys) unset.emplace_back(key);
  bj::object body;
  body["config_unset"] = std::move(unset);
  return impl_->EnqueueUpdate(bj::serialize(body));
}

Status Run::UpdateSummary(std::string_view json_object) {
  if (!impl_) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(bj::object summary, ParseObjectArg(json_object, "summary"));
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  return impl_->EnqueueSummary(std::move(summary));
}

std::map<std::string, double> Run::LastLoggedValues() const {
  return impl_ ? impl_->LastLoggedValues() : std::map<std::string, double>();
}

namespace {

// The run fields SetName & co. change, with the server's limits (runs_api.cc PatchRun), so
// that a bad value is an error here rather than a patch the server refuses later.
Status CheckRunField(std::string_view field, std::string_view value, size_t max_bytes,
                     bool allow_empty) {
  if ((!allow_empty && value.empty()) || value.size() > max_bytes) {
    return Status::InvalidArgument(std::string(field) + ": must be " + (allow_empty ? "0" : "1") +
                                   ".." + std::to_string(max_bytes) + " bytes");
  }
  if (!utf8::IsValid(value)) {
    return Status::InvalidArgument(std::string(field) + ": not valid UTF-8");
  }
  return Status::Ok();
}

}  // namespace

Status Run::PatchFields(std::string body_json) {
  if (!impl_) return Status::Ok();
  const Settings& s = impl_->rs.settings;
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  if (s.shared && !s.primary.value_or(true)) return Status::Ok();  // the primary's alone
  return impl_->EnqueueUpdate(std::move(body_json));
}

Status Run::SetName(std::string_view name) {
  COHORT_RETURN_IF_ERROR(CheckRunField("name", name, limits::kMaxRunNameBytes, false));
  if (!impl_) return Status::Ok();
  bj::object body;
  body["name"] = name;
  COHORT_RETURN_IF_ERROR(PatchFields(bj::serialize(body)));
  impl_->SetLocalName(std::string(name));
  return Status::Ok();
}

Status Run::SetGroup(std::string_view group) {
  COHORT_RETURN_IF_ERROR(CheckRunField("group", group, limits::kMaxGroupBytes, true));
  bj::object body;
  body["group"] = group;
  return PatchFields(bj::serialize(body));
}

Status Run::SetJobType(std::string_view job_type) {
  COHORT_RETURN_IF_ERROR(CheckRunField("job_type", job_type, limits::kMaxJobTypeBytes, true));
  bj::object body;
  body["job_type"] = job_type;
  return PatchFields(bj::serialize(body));
}

Status Run::SetNotes(std::string_view notes) {
  COHORT_RETURN_IF_ERROR(CheckRunField("notes", notes, limits::kMaxNotesBytes, true));
  bj::object body;
  body["notes"] = notes;
  return PatchFields(bj::serialize(body));
}

Status Run::SetTags(const std::vector<std::string>& tags) {
  bj::array arr;
  for (const auto& t : tags) {
    COHORT_RETURN_IF_ERROR(CheckRunField("tags", t, limits::kMaxTagBytes, false));
    arr.emplace_back(t);
  }
  bj::object body;
  body["tags"] = std::move(arr);
  return PatchFields(bj::serialize(body));
}

void Run::Print(std::string_view text, bool is_stderr) {
  if (!impl_ || impl_->finished.load()) return;
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  int64_t now = NowMillis();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start || end < text.size()) {
      impl_->AddConsoleLine(is_stderr, now, std::string(text.substr(start, end - start)));
    }
    start = end + 1;
  }
}

Status Run::Alert(std::string_view title, std::string_view text, AlertLevel level,
                  double wait_duration_s) {
  std::string_view name = level == AlertLevel::kError  ? "ERROR"
                          : level == AlertLevel::kWarn ? "WARN"
                          : level == AlertLevel::kInfo ? "INFO"
                                                       : "?";
  return Alert(title, text, name, wait_duration_s);
}

Status Run::Alert(std::string_view title, std::string_view text, std::string_view level,
                  double wait_duration_s) {
  COHORT_RETURN_IF_ERROR(agent::CheckAlert(title, text, level));
  if (!(wait_duration_s >= 0) || !std::isfinite(wait_duration_s)) {
    return Status::InvalidArgument("alert wait_duration: must be a finite number of seconds >= 0");
  }
  if (!impl_) return Status::Ok();
  if (impl_->child_pending.load()) StartForkedChild(impl_.get());
  int64_t time_ms = NowMillis();
  int64_t last = impl_->last_alert_ms.load();
  while (!impl_->last_alert_ms.compare_exchange_weak(last, std::max(time_ms, last + 1))) {
  }
  time_ms = std::max(time_ms, last + 1);
  return impl_->EnqueueAlert(std::string(title), agent::AlertBody(title, text, level, time_ms),
                             int64_t(std::min(wait_duration_s, 1e12) * 1000));
}

Status Run::Finish(int exit_code, std::string_view state) {
  if (!impl_) return Status::Ok();
  Status s = impl_->Finish(exit_code, state);
  Unregister(impl_.get());
  return s;
}

bool Run::disabled() const { return impl_ == nullptr; }
const std::string& Run::id() const { return impl_ ? impl_->rs.settings.run_id : Empty(); }
const std::string& Run::name() const { return impl_ ? impl_->current_name() : Empty(); }
const std::string& Run::entity() const { return impl_ ? impl_->entity : Empty(); }
const std::string& Run::project() const { return impl_ ? impl_->rs.settings.project : Empty(); }
const std::string& Run::label() const { return impl_ ? impl_->rs.settings.label : Empty(); }
const std::string& Run::run_fields() const { return impl_ ? impl_->run_fields : Empty(); }
int64_t Run::step() const { return impl_ ? impl_->buffer.step() : 0; }
int64_t Run::dropped() const {
  return impl_ ? impl_->buffer.dropped() + impl_->frames_dropped() : 0;
}
bool Run::offline() const { return impl_ && impl_->offline.load(); }

std::string Run::url() const {
  if (!impl_) return {};
  const Settings& s = impl_->rs.settings;
  std::string entity = impl_->entity.empty() ? "-" : impl_->entity;
  return s.base_url + "/" + entity + "/" + s.project + "/runs/" + s.run_id;
}

Result<Run> Init(const Settings& settings) {
  const int64_t start = agent::MonoMillis();  // Init's deadline is on the monotonic clock
  COHORT_ASSIGN_OR_RETURN(client::ResolvedSettings rs,
                          client::ResolveSettings(settings, client::Environment::Process()));
  if (rs.settings.mode == "disabled") return Run();
  int64_t deadline = start + int64_t(rs.settings.init_timeout_s * 1000);
  COHORT_ASSIGN_OR_RETURN(agent::OpenRequest open, BuildOpenRequest(rs));
  open.wait_ms = deadline - agent::MonoMillis();
  if (!agent::LogEnabled(agent::LogLevel::kDebug) && std::getenv("COHORT_DEBUG") == nullptr) {
    // Inside a training process only the client library's warnings reach the console.
    agent::SetLogLevel(agent::LogLevel::kWarning);
  }
  const bool handle_sigterm = rs.settings.handle_sigterm;
  InstallProcessHooks(handle_sigterm);
  auto impl = std::make_shared<Run::Impl>(std::move(rs));
  impl->open = std::move(open);
  if (Status st = impl->Start(deadline); !st.ok()) {
    // Never started: nothing to finish. Without this ~Impl would run Finish, which retries for
    // finish_timeout, and a failed Init would return only after init + finish timeouts.
    impl->finished.store(true);
    return st;
  }
  Register(impl);
  return Run(std::move(impl));
}

Status Setup(const Settings& settings) {
  COHORT_ASSIGN_OR_RETURN(client::ResolvedSettings rs,
                          client::ResolveSettings(settings, client::Environment::Process()));
  if (rs.settings.mode == "disabled" || rs.settings.transport != "agent") return Status::Ok();
  int64_t deadline = agent::MonoMillis() + int64_t(rs.settings.init_timeout_s * 1000);
  auto t = client::ConnectOrSpawnAgent(agent::DefaultAgentPaths(), rs.settings.dir, true, deadline);
  return t.status();
}

}  // namespace cohort
