// cohort::Run, Init and Setup (include/cohort/cohort.h), plus the process-wide hooks that keep
// runs safe across fork() and finished at a normal exit.
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/agent_log.h"
#include "client/config.h"
#include "client/run_impl.h"
#include "client/spawn.h"
#include "core/clock.h"
#include "core/json.h"

namespace cohort {
namespace {

namespace bj = boost::json;

// Live runs of this process, for the fork and exit hooks. Leaked on purpose: the hooks may run
// during static destruction.
struct Registry {
  std::mutex mu;
  std::vector<std::weak_ptr<Run::Impl>> runs;
  std::vector<std::shared_ptr<Run::Impl>> forking;  // held between prepare and parent/child
};

Registry& Runs() {
  static auto* r = new Registry();
  return *r;
}

void ForkPrepare() {
  Registry& r = Runs();
  r.mu.lock();
  r.forking.clear();
  for (auto& w : r.runs) {
    if (auto impl = w.lock()) r.forking.push_back(std::move(impl));
  }
  for (auto& impl : r.forking) impl->ForkPrepare();
}

void ForkParent() {
  Registry& r = Runs();
  for (auto it = r.forking.rbegin(); it != r.forking.rend(); ++it) (*it)->ForkParent();
  r.forking.clear();
  r.mu.unlock();
}

void ForkChild() {
  Registry& r = Runs();
  for (auto it = r.forking.rbegin(); it != r.forking.rend(); ++it) (*it)->ForkChild();
  r.forking.clear();
  r.mu.unlock();
}

// A normal exit (return from main, exit()) finishes runs nobody finished, with exit code 0.
// Runs lost to a signal or _exit() are reported crashed by the agent instead.
void FinishAtExit() {
  std::vector<std::shared_ptr<Run::Impl>> live;
  {
    std::lock_guard<std::mutex> lock(Runs().mu);
    for (auto& w : Runs().runs) {
      if (auto impl = w.lock()) live.push_back(std::move(impl));
    }
  }
  for (auto& impl : live) {
    if (!impl->finished.load() && !impl->child_pending.load()) (void)impl->Finish(0, {});
  }
}

void InstallProcessHooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
    std::atexit(FinishAtExit);
  });
}

void Register(const std::shared_ptr<Run::Impl>& impl) {
  std::lock_guard<std::mutex> lock(Runs().mu);
  auto& runs = Runs().runs;
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](auto& w) { return w.expired(); }),
             runs.end());
  runs.push_back(impl);
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
    meta["sdk"] = "cohort-cpp/0.1.0";
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
  if (impl->child_pending.load(std::memory_order_relaxed)) impl->StartInChild();
  if (impl->buffer.Log(values, step, commit)) impl->RequestFlush();
}

Status Run::UpdateConfig(std::string_view json_object) {
  if (!impl_) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(bj::object config, ParseObjectArg(json_object, "config"));
  const Settings& s = impl_->rs.settings;
  if (s.shared && !s.primary.value_or(true)) return Status::Ok();  // the primary's alone
  if (impl_->child_pending.load()) impl_->StartInChild();
  bj::object body;
  body["config"] = std::move(config);
  return impl_->EnqueueUpdate(bj::serialize(body));
}

Status Run::UpdateSummary(std::string_view json_object) {
  if (!impl_) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(bj::object summary, ParseObjectArg(json_object, "summary"));
  if (impl_->child_pending.load()) impl_->StartInChild();
  bj::object body;
  body["summary"] = std::move(summary);
  return impl_->EnqueueUpdate(bj::serialize(body));
}

void Run::Print(std::string_view text, bool is_stderr) {
  if (!impl_ || impl_->finished.load()) return;
  if (impl_->child_pending.load()) impl_->StartInChild();
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

Status Run::Finish(int exit_code, std::string_view state) {
  if (!impl_) return Status::Ok();
  return impl_->Finish(exit_code, state);
}

bool Run::disabled() const { return impl_ == nullptr; }
const std::string& Run::id() const { return impl_ ? impl_->rs.settings.run_id : Empty(); }
const std::string& Run::name() const { return impl_ ? impl_->run_name : Empty(); }
const std::string& Run::entity() const { return impl_ ? impl_->entity : Empty(); }
const std::string& Run::project() const { return impl_ ? impl_->rs.settings.project : Empty(); }
const std::string& Run::label() const { return impl_ ? impl_->rs.settings.label : Empty(); }
int64_t Run::step() const { return impl_ ? impl_->buffer.step() : 0; }
int64_t Run::dropped() const { return impl_ ? impl_->buffer.dropped() : 0; }
bool Run::offline() const { return impl_ && impl_->offline.load(); }

std::string Run::url() const {
  if (!impl_) return {};
  const Settings& s = impl_->rs.settings;
  std::string entity = impl_->entity.empty() ? "-" : impl_->entity;
  return s.base_url + "/" + entity + "/" + s.project + "/runs/" + s.run_id;
}

Result<Run> Init(const Settings& settings) {
  int64_t start = NowMillis();
  COHORT_ASSIGN_OR_RETURN(client::ResolvedSettings rs,
                          client::ResolveSettings(settings, client::Environment::Process()));
  if (rs.settings.mode == "disabled") return Run();
  int64_t deadline = start + int64_t(rs.settings.init_timeout_s * 1000);
  COHORT_ASSIGN_OR_RETURN(agent::OpenRequest open, BuildOpenRequest(rs));
  open.wait_ms = deadline - NowMillis();
  if (!agent::LogEnabled(agent::LogLevel::kDebug) && std::getenv("COHORT_DEBUG") == nullptr) {
    // Inside a training process only warnings of the in-process sender reach the console.
    agent::SetLogLevel(agent::LogLevel::kWarning);
  }
  InstallProcessHooks();
  auto impl = std::make_shared<Run::Impl>(std::move(rs));
  impl->open = std::move(open);
  COHORT_RETURN_IF_ERROR(impl->Start(deadline));
  Register(impl);
  return Run(std::move(impl));
}

Status Setup(const Settings& settings) {
  COHORT_ASSIGN_OR_RETURN(client::ResolvedSettings rs,
                          client::ResolveSettings(settings, client::Environment::Process()));
  if (rs.settings.mode == "disabled" || rs.settings.transport != "agent") return Status::Ok();
  int64_t deadline = NowMillis() + int64_t(rs.settings.init_timeout_s * 1000);
  auto t = client::ConnectOrSpawnAgent(agent::DefaultAgentPaths(), rs.settings.dir, true,
                                       deadline);
  return t.status();
}

}  // namespace cohort
