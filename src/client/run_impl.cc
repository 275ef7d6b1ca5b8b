#include "client/run_impl.h"

#include <unistd.h>

#include <algorithm>
#include <new>

#include "agent/agent_log.h"
#include "agent/socket_io.h"
#include "client/spawn.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/thread_signals.h"

namespace cohort {
namespace {

namespace bj = boost::json;

constexpr int64_t kFlushIntervalMs = 100;
constexpr int64_t kIoBudgetMs = 2000;          // one flush's I/O
constexpr int64_t kSpawnBudgetMs = 10000;      // connecting to or spawning the agent
constexpr size_t kMaxQueuedBytes = 512 << 20;  // frames kept for a missing agent
constexpr size_t kMaxAlertTitlesKept = 4096;   // titles whose last alert time is kept

// Every deadline and timer here, and in the transports, runs on the monotonic clock: a wall
// clock set back (NTP, a resumed VM, a user) must not make Init or Finish wait for years or stop
// reconnects, nor one set ahead cut them short (tests/fault/test_clock_jumps.py). Wall time
// only stamps points.
int64_t MonoMs() { return agent::MonoMillis(); }

// Ingest::Open's refusal when another process (the agent) holds the writer's WAL lock.
bool WalLockedByAnother(const Result<agent::OpenReply>& reply) {
  return reply.ok() && !reply->ok && reply->error.find("is locked by another") != std::string::npos;
}

uint64_t RandomSession() {
  uint64_t v = 0;
  for (char c : ids::RandomHex(8)) v = v * 16 + uint64_t(c <= '9' ? c - '0' : c - 'a' + 10);
  return (v & 0x7fffffffffffffffull) | 1;  // non-zero, fits int64 JSON
}

// "code: message" (Status::ToString) back into a Status.
Status StatusFromText(const std::string& text) {
  size_t colon = text.find(": ");
  std::string code = colon == std::string::npos ? "" : text.substr(0, colon);
  for (int c = int(StatusCode::kInvalidArgument); c <= int(StatusCode::kInternal); ++c) {
    if (StatusCodeName(StatusCode(c)) == code) return Status(StatusCode(c), text.substr(colon + 2));
  }
  return Status::Unavailable(text);
}

}  // namespace

Run::Impl::Impl(client::ResolvedSettings resolved)
    : rs(std::move(resolved)), paths(agent::DefaultAgentPaths()), owner_pid(getpid()) {
  auto_summary = rs.settings.primary.value_or(true);
}

const std::string& Run::Impl::current_name() {
  MutexLock lock(&name_mu);
  return names.empty() ? run_name : names.back();
}

void Run::Impl::SetLocalName(std::string name) {
  MutexLock lock(&name_mu);
  names.push_back(std::move(name));
}

Run::Impl::~Impl() {
  if (!finished.load() && !child_pending.load()) (void)Finish(0, {});
}

Result<agent::OpenReply> Run::Impl::OpenOn(client::AgentTransport* t, const agent::OpenRequest& req,
                                           int64_t deadline_ms) {
  agent::OpenRequest r = req;
  r.wait_ms = std::max<int64_t>(0, std::min(r.wait_ms, deadline_ms - MonoMs() - 20));
  return t->Open(r, deadline_ms);
}

Result<agent::OpenReply> Run::Impl::AwaitAgentOpen(std::unique_ptr<client::AgentTransport>* t,
                                                   int64_t deadline_ms) {
  Result<agent::OpenReply> reply = Status::DeadlineExceeded("agent: no open reply in time");
  while (MonoMs() < deadline_ms) {
    if (*t) {
      // Our open may still be on its way: read on (an answer that came meanwhile is kept).
      reply = (*t)->AwaitOpen(deadline_ms);
      if (reply.ok() || reply.status().code() == StatusCode::kDeadlineExceeded) return reply;
      t->reset();  // the connection broke: open again on a new one
    }
    auto a = client::ConnectOrSpawnAgent(paths, rs.settings.dir, true, deadline_ms);
    if (!a.ok()) {
      reply = a.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    *t = std::move(*a);
    reply = OpenOn(t->get(), open, deadline_ms);
    if (reply.ok() || reply.status().code() == StatusCode::kDeadlineExceeded) return reply;
    t->reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return reply;
}

Status Run::Impl::Start(int64_t deadline_ms) {
  MutexLock io(&io_mu);
  std::unique_ptr<client::AgentTransport> agent_t;
  std::unique_ptr<client::AgentTransport> t;
  Result<agent::OpenReply> reply = Status::Unavailable("no agent");
  const bool shared = rs.settings.transport == "agent";
  if (shared) {
    auto a = client::ConnectOrSpawnAgent(paths, rs.settings.dir, true,
                                         std::min(deadline_ms, MonoMs() + kSpawnBudgetMs));
    if (a.ok()) {
      agent_t = std::move(*a);
      // The agent is asked to answer `margin` before the deadline. If its answer is not here
      // half that margin before it, it may not have taken the writer's WAL yet (a stuck agent):
      // a private agent gets the rest of the time.
      const int64_t answer_by =
          deadline_ms - client::AgentTransport::AnswerMarginMs(deadline_ms - MonoMs()) / 2;
      agent::OpenRequest r = open;
      r.wait_ms = std::max<int64_t>(0, std::min(r.wait_ms, deadline_ms - MonoMs() - 20));
      Status sent = agent_t->SendOpen(r, deadline_ms);
      reply = sent.ok() ? agent_t->AwaitOpen(answer_by) : Result<agent::OpenReply>(sent);
    } else {
      agent::Logf(agent::LogLevel::kDebug, "no shared agent ({}); starting a private agent",
                  a.status().ToString());
    }
  }
  if (reply.ok()) {
    t = std::move(agent_t);
  } else {  // no shared agent, or it failed us: a private agent of this process
    auto local = client::StartPrivateAgent(rs.settings.dir, deadline_ms);
    if (!local.ok()) return local.status();
    Result<agent::OpenReply> local_reply = OpenOn(local->get(), open, deadline_ms);
    if (shared && WalLockedByAnother(local_reply)) {
      // The shared agent holds the writer's WAL: it took our open and its answer is late, or
      // the connection broke after it took it. Only that agent can serve this writer now: go on
      // waiting for it (reconnecting if need be) until the deadline, rather than failing Init
      // with the lock error.
      local->reset();
      agent::Logf(agent::LogLevel::kDebug, "cohort: the agent holds the WAL ({}); waiting for it",
                  reply.status().ToString());
      reply = AwaitAgentOpen(&agent_t, deadline_ms);
      if (reply.ok()) {
        t = std::move(agent_t);
      } else {
        return Status(reply.status().code(),
                      reply.status().message() +
                          " (the agent holds the writer's WAL: " + local_reply->error + ")");
      }
    } else {
      agent_t.reset();
      t = std::move(*local);
      reply = std::move(local_reply);
      private_agent = true;
    }
  }
  if (!reply.ok()) return reply.status();
  if (!reply->ok) return StatusFromText(reply->error);
  entity = reply->entity.empty() ? rs.settings.entity : reply->entity;
  run_name = reply->run_name.empty() ? rs.settings.name : reply->run_name;
  run_fields = reply->run_fields;
  // Where the writer goes on: its own next step when it re-joins, or past the steps of the
  // run's earlier writers when it resumes the run with another label (docs/api.md, Writers).
  buffer.AdvanceStepTo(reply->next_step);
  offline.store(rs.settings.mode == "offline" || !reply->confirmed);
  sent_upto = reply->last_frame;
  NoteStaging(reply->artifact_staging_dir);
  NoteMediaLimits(*reply);
  NoteAgent(*t);
  transport = std::move(t);
  StartFlusher();
  if (rs.settings.capture_console) {
    auto c =
        client::ConsoleCapture::Start([this](bool is_stderr, int64_t time_ms, std::string line) {
          AddConsoleLine(is_stderr, time_ms, std::move(line));
        });
    if (c.ok()) capture = std::move(*c);
  }
  return Status::Ok();
}

void Run::Impl::NoteMediaLimits(const agent::OpenReply& reply) {
  // Kept when a later reply does not say them (a reconnect's reopen does not wait for the
  // server's answer to the join).
  if (reply.max_media_file_bytes > 0) max_media_file_bytes = reply.max_media_file_bytes;
  if (reply.max_media_per_step > 0) max_media_per_step = reply.max_media_per_step;
}

void Run::Impl::StartFlusher() {
  {
    MutexLock lock(&mu);
    stop = false;
  }
  AsyncSignalsBlocked quiet;  // the host's signals go to its own threads (thread_signals.h)
  flusher = std::make_unique<std::thread>([this] { FlushLoop(); });
}

void Run::Impl::StopFlusher() {
  {
    MutexLock lock(&mu);
    stop = true;
  }
  cv.SignalAll();
  if (flusher && flusher->joinable()) flusher->join();
  flusher.reset();
}

void Run::Impl::RequestFlush() {
  if (flush_requested.load(std::memory_order_relaxed) || flush_requested.exchange(true)) return;
  MutexLock lock(&mu);
  cv.Signal();
}

void Run::Impl::AddConsoleLine(bool is_stderr, int64_t time_ms, std::string line) {
  if (finished.load(std::memory_order_relaxed)) return;
  if (buffer.AddConsole(time_ms, is_stderr, std::move(line))) RequestFlush();
}

Status Run::Impl::EnqueueUpdate(std::string body) {
  if (finished.load()) return Status::FailedPrecondition("run already finished");
  {
    MutexLock lock(&mu);
    DrainBufferLocked();  // what was logged before the update goes first
    PendingFrame f{next_frame++, agent::MessageType::kUpdate, std::move(body)};
    frame_bytes += f.body.size();
    frames.push_back(std::move(f));
  }
  RequestFlush();
  return Status::Ok();
}

void Run::Impl::NoteAgent(const client::AgentTransport& t) {
  agent_takes_alerts.store(t.agent_has(agent::kAgentFeatureAlert));
  agent_takes_config_unset.store(t.agent_has(agent::kAgentFeatureConfigUnset));
  agent_pid_now.store(t.agent_pid());
}

Status Run::Impl::EnqueueAlert(const std::string& title, std::string body, int64_t wait_ms) {
  if (finished.load()) return Status::FailedPrecondition("alert: this run is finished");
  if (!agent_takes_alerts.load()) {
    const std::string pid = std::to_string(agent_pid_now.load());
    return Status::Unavailable(
        "alert not sent: the cohort agent of this node (pid " + pid +
        ") is older than this client and cannot take alerts; it exits when idle, or stop it "
        "(kill " + pid + ") and the next run starts a current one");
  }
  {
    MutexLock lock(&mu);
    const int64_t now = MonoMs();
    if (auto it = alert_queued_ms.find(title);
        wait_ms > 0 && it != alert_queued_ms.end() && now - it->second < wait_ms) {
      return Status::Ok();  // the same title within its wait duration: not sent again
    }
    // A bound on the memory of a program that makes up titles: past it, the oldest times go
    // (a title not seen for the longest is the least likely to repeat within its wait).
    if (alert_queued_ms.size() >= kMaxAlertTitlesKept && !alert_queued_ms.count(title)) {
      auto oldest =
          std::min_element(alert_queued_ms.begin(), alert_queued_ms.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      alert_queued_ms.erase(oldest);
    }
    alert_queued_ms[title] = now;
    DrainBufferLocked();  // what was logged before the alert goes first
    PendingFrame f{next_frame++, agent::MessageType::kAlert, std::move(body)};
    frame_bytes += f.body.size();
    frames.push_back(std::move(f));
  }
  RequestFlush();
  return Status::Ok();
}

void Run::Impl::DrainBufferLocked(bool final) {
  while (buffer.Take(&scratch)) {
    NoteLastValuesLocked(scratch);
    // Encoded once, here: the frame's body is the batch the agent stores and the server reads.
    PendingFrame f{
        next_frame++,
        agent::MessageType::kLog,
        {},
        int64_t(scratch.cells.size() + scratch.histograms.size() + scratch.media.size())};
    batch::Encode(scratch, &f.body);
    frame_bytes += f.body.size();
    frames.push_back(std::move(f));
  }
  if (!summary_dirty.empty() &&
      (final || MonoMs() - summary_sent_ms >= client::kSummaryIntervalMs)) {
    EnqueueLastValuesLocked();
  }
  // Not while FlushOnce sends: it holds pointers into `frames` (user threads drain too). The
  // oldest logged values go (counted in dropped()); run updates, alerts and artifact intents are
  // small and kept, as is the newest frame.
  if (frame_bytes <= kMaxQueuedBytes || sending) return;
  const size_t queued_mib = frame_bytes >> 20;
  int64_t values = 0;
  for (auto it = frames.begin(); frame_bytes > kMaxQueuedBytes && std::next(it) != frames.end();) {
    if (it->type != agent::MessageType::kLog) {
      ++it;
      continue;
    }
    values += it->values;
    frame_bytes -= it->body.size();
    it = frames.erase(it);
  }
  if (values == 0) return;  // only run updates, alerts and artifact intents are queued
  frames_dropped_values.fetch_add(values);
  agent::Logf(agent::LogLevel::kWarning,
              "cohort: no agent reachable and {} MiB queued; dropped the oldest {} values "
              "(counted in dropped()) and the console lines logged with them",
              queued_mib, values);
}

void Run::Impl::FlushLoop() {
  MutexLock lock(&mu);
  while (!stop) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kFlushIntervalMs);
    while (!stop && !flush_requested.load()) {
      if (!cv.WaitUntil(mu, until)) break;  // the interval is over
    }
    if (stop) break;
    lock.Unlock();
    FlushOnce(MonoMs() + kIoBudgetMs);
    lock.Lock();
  }
}

void Run::Impl::DropTransport(const Status& why) {
  if (!transport) return;
  agent::Logf(private_agent ? agent::LogLevel::kWarning : agent::LogLevel::kDebug,
              "cohort: {}agent connection lost: {}", private_agent ? "private " : "",
              why.ToString());
  // Acks the agent sent before it went are still readable: take them, or the frames they
  // cover would be sent again (and stored twice) after the reconnect.
  (void)transport->Acked(UINT64_MAX, 0);
  uint64_t acked = transport->acked();
  transport.reset();
  MutexLock lock(&mu);
  while (!frames.empty() && frames.front().number <= acked) {
    frame_bytes -= frames.front().body.size();
    frames.pop_front();
  }
}

namespace {
constexpr int64_t kFinishRetryMs = 1000;  // finish's longest wait between two reconnects
}  // namespace

bool Run::Impl::EnsureTransport(int64_t mono_deadline_ms) {
  if (transport) return true;
  if (MonoMs() < next_connect_ms) return false;
  const int64_t now = MonoMs();
  const int64_t deadline_ms = mono_deadline_ms;
  agent::OpenRequest reopen = open;
  // The run exists (or its creation is in a WAL): a reconnect only re-joins.
  bj::object run;
  run["id"] = open.run_id;
  run["resume"] = "allow";
  reopen.run_json = bj::serialize(run);
  reopen.wait_ms = 0;
  std::unique_ptr<client::AgentTransport> t;
  Result<agent::OpenReply> reply = Status::Unavailable("no agent");
  if (!private_agent && rs.settings.transport == "agent") {
    auto a = client::ConnectOrSpawnAgent(paths, rs.settings.dir, true,
                                         std::min(deadline_ms, now + 3000));
    if (a.ok()) {
      t = std::move(*a);
      reply = t->Open(reopen, deadline_ms);
    }
  }
  bool started_private = false;
  if (!t || !reply.ok() || !reply->ok) {
    t.reset();
    auto local = client::StartPrivateAgent(rs.settings.dir, deadline_ms);
    if (local.ok()) {
      t = std::move(*local);
      reply = t->Open(reopen, deadline_ms);
      started_private = true;
    } else {
      reply = local.status();
    }
  }
  if (!reply.ok() || !reply->ok) {
    ++connect_failures;
    next_connect_ms = MonoMs() + std::min<int64_t>(30000, 250LL << std::min(connect_failures, 7));
    agent::Logf(agent::LogLevel::kDebug, "cohort: reconnect failed: {}",
                reply.ok() ? reply->error : reply.status().ToString());
    return false;
  }
  if (started_private) private_agent = true;
  connect_failures = 0;
  NoteAgent(*t);
  transport = std::move(t);
  sent_upto = reply->last_frame;
  NoteStaging(reply->artifact_staging_dir);
  NoteMediaLimits(*reply);
  MutexLock lock(&mu);
  while (!frames.empty() && frames.front().number <= reply->last_frame) {
    frame_bytes -= frames.front().body.size();
    frames.pop_front();
  }
  return true;
}

void Run::Impl::FlushOnce(int64_t mono_deadline_ms) {
  MutexLock io(&io_mu);
  flush_requested.store(false);
  std::vector<const PendingFrame*> to_send;
  {
    MutexLock lock(&mu);
    DrainBufferLocked();
    if (frames.empty() && !transport) return;
  }
  if (!EnsureTransport(mono_deadline_ms)) return;
  {
    MutexLock lock(&mu);
    // Deque elements stay put while others are pushed at the back; the pops of the threads
    // that hold io_mu cannot come, and the queue's cap waits while `sending`.
    for (const PendingFrame& f : frames) {
      if (f.number > sent_upto) to_send.push_back(&f);
    }
    sending = true;
  }
  Status sent;
  for (const PendingFrame* f : to_send) {
    sent = transport->Send(f->type, f->number, f->body, mono_deadline_ms);
    if (!sent.ok()) break;
    sent_upto = f->number;
  }
  {
    MutexLock lock(&mu);
    sending = false;
  }
  if (!sent.ok()) {
    DropTransport(sent);
    return;
  }
  auto acked = transport->Acked(0, 0);
  if (!acked.ok()) {
    DropTransport(acked.status());
    return;
  }
  MutexLock lock(&mu);
  while (!frames.empty() && frames.front().number <= *acked) {
    frame_bytes -= frames.front().body.size();
    frames.pop_front();
  }
}

Status Run::Impl::Finish(int exit_code, std::string_view state) {
  MutexLock fin(&finish_mu);
  if (finished.load()) return Status::Ok();
  if (child_pending.exchange(false)) {  // a forked child that never logged: nothing to end
    finished.store(true);
    return Status::Ok();
  }
  const int64_t deadline = MonoMs() + int64_t(rs.settings.finish_timeout_s * 1000);
  if (capture) {
    capture->Stop(200);
    capture.reset();
  }
  // The versions logged first (the flusher still sends their frames), leaving the finish itself
  // a quarter of the time (at most 5 s).
  AwaitArtifactsForFinish(deadline - std::min<int64_t>(5000, (deadline - MonoMs()) / 4));
  StopFlusher();
  finished.store(true);  // later Log calls are no-ops

  MutexLock io(&io_mu);
  Status result = Status::DeadlineExceeded("finish: the agent did not confirm in time");
  // The flusher's reconnect backoff (up to 30 s) is not finish's: it tries at once, then at
  // most a second apart (it slept out its whole timeout without a try, then dropped the
  // frames of an agent that was back).
  next_connect_ms = 0;
  while (MonoMs() < deadline) {
    {
      MutexLock lock(&mu);
      DrainBufferLocked(/*final=*/true);
    }
    next_connect_ms = std::min(next_connect_ms, MonoMs() + kFinishRetryMs);
    if (!EnsureTransport(deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::max<int64_t>(1, std::min<int64_t>(50, next_connect_ms - MonoMs()))));
      continue;
    }
    std::vector<const PendingFrame*> to_send;
    uint64_t finish_frame;
    {
      MutexLock lock(&mu);
      for (const PendingFrame& f : frames) {
        if (f.number > sent_upto) to_send.push_back(&f);
      }
      finish_frame = next_frame++;
      sending = true;  // as FlushOnce: the queue's cap erases nothing while these are sent
    }
    Status sent;
    for (const PendingFrame* f : to_send) {
      sent = transport->Send(f->type, f->number, f->body, deadline);
      if (!sent.ok()) break;
      sent_upto = f->number;
    }
    {
      MutexLock lock(&mu);
      sending = false;
    }
    if (!sent.ok()) {
      DropTransport(sent);
      continue;
    }
    agent::FinishRequest req;
    req.exit_code = exit_code;
    req.state = std::string(state);
    req.wait_ms = std::max<int64_t>(0, deadline - MonoMs() - 100);
    auto reply = transport->Finish(finish_frame, req, deadline);
    if (reply.ok()) {
      result = Status::Ok();
      break;
    }
    if (reply.status().code() == StatusCode::kDeadlineExceeded) break;
    DropTransport(reply.status());
  }
  transport.reset();
  {
    MutexLock lock(&mu);
    if (!result.ok()) {
      // What no agent got is lost; what the last one got may be stored (its finish unconfirmed).
      int64_t never_sent = 0, unconfirmed = 0;
      for (const PendingFrame& f : frames)
        (f.number > sent_upto ? never_sent : unconfirmed) += f.values;
      frames_dropped_values.fetch_add(never_sent);
      result = Status(result.code(),
                      result.message() + ": of the values logged, " + std::to_string(never_sent) +
                          " never reached an agent (discarded, counted in "
                          "dropped()) and " +
                          std::to_string(unconfirmed) + " were sent but not confirmed");
    }
    frames.clear();
    frame_bytes = 0;
  }
  return result;
}

// ---- fork ----

void Run::Impl::ForkPrepare() {
  finish_mu.Lock();
  io_mu.Lock();
  mu.Lock();
  buffer.LockForFork();
}

void Run::Impl::ForkParent() {
  buffer.UnlockAfterFork();
  mu.Unlock();
  io_mu.Unlock();
  finish_mu.Unlock();
}

void Run::Impl::ForkChild() {
  // Only the forking thread exists here. Everything the parent's threads or descriptors own is
  // abandoned (leaked), never closed, joined or destroyed.
  buffer.ResetInChild();
  buffer.UnlockAfterFork();
  frames.clear();
  frame_bytes = 0;
  next_frame = 1;
  stop = false;
  new (&cv) CondVar();  // waiters of the parent's copy do not exist here
  summary_dirty.clear();
  mu.Unlock();
  if (transport) {
    transport->AbandonInChild();
    (void)transport.release();
  }
  sent_upto = 0;
  next_connect_ms = 0;
  connect_failures = 0;
  private_agent = false;
  io_mu.Unlock();
  (void)flusher.release();
  if (capture) {
    capture->RestoreInChild();
    (void)capture.release();
  }
  ForgetArtifactsInChild();
  auto_summary = false;  // a forked child is a worker of the parent's run
  owner_pid = getpid();
  if (!finished.load()) child_pending.store(true);
  finish_mu.Unlock();
}

bool Run::Impl::StartInChild() {
  bool expected = true;
  if (!child_pending.compare_exchange_strong(expected, false)) return false;
  MutexLock io(&io_mu);
  std::string label = rs.settings.label + "-" + std::to_string(getpid());
  rs.settings.label = label;
  rs.settings.primary = false;
  rs.settings.update_finish_state = false;
  open.label = label;
  open.session = RandomSession();
  open.pid = getpid();
  bj::object writer;
  writer["label"] = label;
  writer["primary"] = false;
  writer["update_finish_state"] = false;
  writer["host"] = rs.host;
  writer["pid"] = int64_t(getpid());
  open.writer_json = bj::serialize(writer);
  StartFlusher();
  return true;
}

}  // namespace cohort

namespace cohort::client {
uint64_t NewSessionId() { return RandomSession(); }
}  // namespace cohort::client
