#include "server/webhooks/webhook_dispatcher.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/clock.h"
#include "server/api/alerts_json.h"
#include "server/webhooks/webhook_payload.h"
#include "store/webhook_checks.h"

namespace cohort::server::webhooks {
namespace {

namespace bj = boost::json;

std::string DefaultOwner() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  std::random_device rd;
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%08x%08x", rd(), rd());
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + suffix;
}

// The receiver's answer is not echoed (last_error is shown to the project's admins, and the
// receiver may be something the admin could not otherwise read): its status only.
std::string ErrorOf(int status) { return "HTTP " + std::to_string(status); }

}  // namespace

WebhookDispatcher::WebhookDispatcher(store::Store* store, WebhookPoster* poster,
                                     DispatcherOptions options)
    : store_(store), poster_(poster), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = DefaultOwner();
  SetBaseUrl(options_.base_url);
}

void WebhookDispatcher::SetBaseUrl(std::string base_url) {
  MutexLock lock(&url_mu_);
  base_url_ = std::move(base_url);
}

std::string WebhookDispatcher::BaseUrl() {
  MutexLock lock(&url_mu_);
  return base_url_;
}

WebhookDispatcher::~WebhookDispatcher() { Stop(); }

void WebhookDispatcher::Start() {
  MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
  for (int i = 0; i < std::max(1, options_.senders); ++i) {
    senders_.emplace_back([this] { SendLoop(); });
  }
}

void WebhookDispatcher::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.SignalAll();
  send_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  for (std::thread& t : senders_) t.join();
  senders_.clear();
}

void WebhookDispatcher::Loop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    lock.Unlock();
    Result<int64_t> added = Enqueue(NowMillis());
    if (added.ok()) {
      NoteSuccess();
    } else {
      NoteFailure(added.status());
    }
    lock.Lock();
    // Each pass, not only when it enqueued: retries fall due too.
    ++enqueue_passes_;
    send_cv_.SignalAll();
    if (!stopping_) cv_.WaitFor(mu_, std::chrono::milliseconds(options_.poll_ms));
  }
}

void WebhookDispatcher::SendLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    const uint64_t seen = enqueue_passes_;
    lock.Unlock();
    Result<bool> sent = SendOne(NowMillis());
    if (!sent.ok()) NoteFailure(sent.status());
    lock.Lock();
    // Nothing due: wait for the next pass (unless one went by meanwhile). An error: wait too.
    const bool idle = !sent.ok() || (!*sent && enqueue_passes_ == seen);
    if (idle && !stopping_) send_cv_.WaitFor(mu_, std::chrono::milliseconds(options_.poll_ms));
  }
}

void WebhookDispatcher::NoteFailure(const Status& s) {
  constexpr int64_t kLogEveryMs = 60'000;
  const int64_t now = NowMillis();
  MutexLock lock(&log_mu_);
  if (failing_ && now - last_logged_ms_ < kLogEveryMs) {
    ++unlogged_failures_;
    return;
  }
  if (failing_ && unlogged_failures_ > 0) {
    std::fprintf(stderr,
                 "cohort: alert webhooks: %s (and %lld more failures since the last "
                 "line; said at most once a minute)\n",
                 s.ToString().c_str(), static_cast<long long>(unlogged_failures_));
  } else {
    std::fprintf(stderr, "cohort: alert webhooks: %s\n", s.ToString().c_str());
  }
  failing_ = true;
  last_logged_ms_ = now;
  unlogged_failures_ = 0;
}

void WebhookDispatcher::NoteSuccess() {
  MutexLock lock(&log_mu_);
  if (!failing_) return;
  std::fprintf(stderr, "cohort: alert webhooks: working again (%lld failures not shown)\n",
               static_cast<long long>(unlogged_failures_));
  failing_ = false;
  unlogged_failures_ = 0;
}

Result<DispatchPass> WebhookDispatcher::RunOnce(int64_t now_ms) {
  DispatchPass pass;
  COHORT_ASSIGN_OR_RETURN(pass.enqueued, Enqueue(now_ms));
  while (pass.claimed < options_.claim_limit) {
    COHORT_ASSIGN_OR_RETURN(bool sent, SendOne(now_ms));
    if (!sent) break;
    ++pass.claimed;
  }
  return pass;
}

Result<int64_t> WebhookDispatcher::Enqueue(int64_t now_ms) {
  MutexLock lock(&gap_mu_);
  COHORT_ASSIGN_OR_RETURN(int64_t cursor, store_->GetDeliveryCursor());
  COHORT_ASSIGN_OR_RETURN(std::vector<store::AlertEvent> events,
                          store_->ListAlertEvents(cursor, options_.event_batch));
  if (events.empty()) return int64_t{0};
  std::map<std::pair<std::string, std::string>, std::vector<store::WebhookRecord>> hooks;
  std::vector<store::DeliveryIntent> intents;
  int64_t next_cursor = cursor;
  bool contiguous = true;
  for (const store::AlertEvent& ev : events) {
    if (contiguous && ev.id != next_cursor + 1) {
      // A hole: an event not committed yet, or never (a rolled-back id). Wait for it a while.
      auto [it, fresh] = gap_seen_ms_.emplace(next_cursor + 1, now_ms);
      if (now_ms - it->second < options_.gap_wait_ms) contiguous = false;
    }
    if (contiguous) next_cursor = ev.id;
    auto key = std::make_pair(ev.entity, ev.project);
    auto found = hooks.find(key);
    if (found == hooks.end()) {
      COHORT_ASSIGN_OR_RETURN(std::vector<store::WebhookRecord> list,
                              store_->ListWebhooks(ev.entity, ev.project));
      found = hooks.emplace(key, std::move(list)).first;
    }
    std::vector<const store::WebhookRecord*> targets;
    for (const store::WebhookRecord& w : found->second) {
      if (w.enabled && w.created_ms <= ev.created_ms) targets.push_back(&w);
    }
    if (targets.empty()) continue;
    Result<store::AlertRecord> alert = store_->GetAlert(ev.entity, ev.project, ev.alert_id);
    if (!alert.ok()) {
      if (alert.status().code() == StatusCode::kNotFound) continue;  // deleted with its run
      return alert.status();
    }
    const int level = store::AlertLevelRank(alert->level);
    for (const store::WebhookRecord* w : targets) {
      if (level < store::AlertLevelRank(w->min_level)) continue;
      intents.push_back(store::DeliveryIntent{.webhook_id = w->id,
                                              .entity = ev.entity,
                                              .project = ev.project,
                                              .event_id = ev.id,
                                              .alert_id = ev.alert_id,
                                              .event_kind = ev.kind,
                                              .now_ms = now_ms});
    }
  }
  COHORT_ASSIGN_OR_RETURN(int64_t added, store_->EnqueueDeliveries(intents, next_cursor));
  gap_seen_ms_.erase(gap_seen_ms_.begin(), gap_seen_ms_.upper_bound(next_cursor));
  return added;
}

Result<bool> WebhookDispatcher::SendOne(int64_t now_ms) {
  std::vector<store::DeliveryRecord> claimed;
  {
    MutexLock lock(&claim_mu_);
    const std::vector<int64_t> busy(in_flight_.begin(), in_flight_.end());
    COHORT_ASSIGN_OR_RETURN(
        claimed, store_->ClaimDeliveries(options_.owner, now_ms, options_.lease_ms, 1, busy));
    if (claimed.empty()) return false;
    in_flight_.insert(claimed.front().webhook_id);
  }
  Status sent = Send(claimed.front(), now_ms);
  {
    MutexLock lock(&claim_mu_);
    in_flight_.erase(in_flight_.find(claimed.front().webhook_id));
  }
  COHORT_RETURN_IF_ERROR(sent);
  return true;
}

Status WebhookDispatcher::Send(const store::DeliveryRecord& d, int64_t now_ms) {
  store::DeliveryAttempt attempt;
  Result<store::WebhookRecord> w = store_->GetWebhook(d.entity, d.project, d.webhook_id);
  if (!w.ok()) {
    if (w.status().code() == StatusCode::kNotFound) return Status::Ok();  // deleted with its log
    return w.status();
  }
  Result<store::AlertRecord> alert = store_->GetAlert(d.entity, d.project, d.alert_id);
  if (!w->enabled) {
    attempt.error = "the webhook is disabled";
  } else if (!alert.ok() && alert.status().code() != StatusCode::kNotFound) {
    return alert.status();
  } else if (!alert.ok()) {
    attempt.error = "the alert no longer exists";
  } else {
    const bj::object json = api::AlertToJson(*alert).as_object();
    const std::string body = FormatPayload(w->format, d.event_kind, json, RunUrl(BaseUrl(), json));
    Result<WebhookResponse> r =
        poster_->Post(w->url, body, PayloadHeaders(w->format, d.event_kind, d.id, w->secret, body));
    const bool last = d.attempts + 1 >= options_.retry.max_attempts;
    // From the end of the call (a pass's `now_ms` may be in the future in tests).
    const int64_t done = std::max(now_ms, NowMillis());
    auto retry_at = [&] { return done + RetryDelayMs(options_.retry, d.attempts + 1); };
    if (!r.ok()) {
      attempt.error = r.status().message();
      // A refused destination (not a public address) is not tried again.
      if (!last && r.status().code() != StatusCode::kPermissionDenied) {
        attempt.retry_at_ms = retry_at();
      }
    } else {
      attempt.status = r->status;
      attempt.delivered = r->status >= 200 && r->status < 300;
      if (!attempt.delivered) {
        attempt.error = ErrorOf(r->status);
        if (!last && RetryableStatus(r->status)) attempt.retry_at_ms = retry_at();
      }
    }
  }
  attempt.now_ms = std::max(now_ms, NowMillis());
  COHORT_ASSIGN_OR_RETURN(bool recorded, store_->FinishDelivery(d.id, options_.owner, attempt));
  if (!recorded) {
    std::fprintf(stderr,
                 "cohort: alert webhooks: delivery %lld was claimed by another server while "
                 "this one sent it (the claim of %lld ms expired)\n",
                 static_cast<long long>(d.id), static_cast<long long>(options_.lease_ms));
  }
  return Status::Ok();
}

Result<WebhookResponse> WebhookDispatcher::SendTest(const store::WebhookRecord& w, int64_t now_ms) {
  const bj::object json = TestAlert(w.entity, w.project, now_ms);
  const std::string body = FormatPayload(w.format, "test", json, RunUrl(BaseUrl(), json));
  return poster_->Post(w.url, body, PayloadHeaders(w.format, "test", 0, w.secret, body));
}

}  // namespace cohort::server::webhooks
