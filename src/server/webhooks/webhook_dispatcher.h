// WebhookDispatcher: sends a project's alerts to its webhooks (docs/api.md "Alert webhooks").
// The server runs one on its own thread (server_app.cc); every server of a store runs one.
//
// Each pass (about once a second):
//  1. Enqueue. Reads the alert events (the outbox alert_events, in id order) after the store's
//     delivery cursor and enqueues one delivery per event and enabled webhook of the event's
//     project whose min_level the alert meets and that existed when the event was created; then
//     moves the cursor up. Enqueueing is idempotent (one delivery per (webhook, event)), so
//     servers that read the same events at once, or a server restarted after enqueueing but
//     before moving the cursor, enqueue nothing twice; the cursor being in the store, a restart
//     neither resends nor skips. On PostgreSQL an event id can become visible after a higher
//     one (ids are taken before commit; a rolled-back transaction leaves a hole), so the cursor
//     stops before a missing id until it has been missing for gap_wait_ms; the events after it
//     are enqueued meanwhile, and again each pass (changing nothing).
//  2. Send. `senders` threads each claim ONE due delivery (store.h ClaimDeliveries, limit 1: one
//     server per attempt) right before posting it, so that a slow receiver holds only the claim
//     of the call in flight (a batch claimed at once expired behind a slow call, and another
//     server sent the rest again), and one black-holed URL (every call a timeout) holds one
//     sender while the others go on with every other webhook (a sender claims no delivery of a
//     webhook this server is calling already). Each delivery is posted with its
//     webhook's format and, for generic payloads with a secret, the signature, and the attempt
//     recorded: delivered (2xx), pending again after the backoff of webhook_http.h
//     WebhookRetryPolicy (no answer, 408, 425, 429, 5xx), or failed (another answer, or the
//     last attempt). A claim lasts lease_ms, well above the poster's timeout; a server that
//     dies while sending leaves a claim that expires, and the delivery is sent again: at least
//     once, exactly once unless a server dies mid-call.
//
// Threading: Start/Stop from one thread; RunOnce and SendTest are thread-safe. The dispatcher
// runs 1 + senders threads between Start and Stop (enqueueing; sending).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cohort/status.h"
#include "core/mutex.h"
#include "server/webhooks/webhook_http.h"
#include "store/store.h"

namespace cohort::server::webhooks {

struct DispatcherOptions {
  std::string owner;     // this server's name in claims; empty: host:pid:random
  std::string base_url;  // the web UI's address for run_url; empty: run_url is null
  int64_t poll_ms = 1000;
  int64_t lease_ms = 60'000;  // a claim; well above the poster's timeout
  int senders = 4;            // threads sending, one delivery at a time each (at least 1)
  int claim_limit = 16;       // deliveries RunOnce sends at most
  int event_batch = 256;      // events read per pass
  int64_t gap_wait_ms = 30'000;
  WebhookRetryPolicy retry;
};

// Counts of one pass, for tests and logs.
struct DispatchPass {
  int64_t enqueued = 0;  // deliveries
  int64_t claimed = 0;   // deliveries claimed (and attempted, unless their webhook is gone)
};

class WebhookDispatcher {
 public:
  WebhookDispatcher(store::Store* store, WebhookPoster* poster, DispatcherOptions options);
  ~WebhookDispatcher();
  WebhookDispatcher(const WebhookDispatcher&) = delete;
  WebhookDispatcher& operator=(const WebhookDispatcher&) = delete;

  // The web UI's address for run_url (the server knows its port only once it listens).
  void SetBaseUrl(std::string base_url) COHORT_EXCLUDES(url_mu_);
  void Start() COHORT_EXCLUDES(mu_);
  void Stop() COHORT_EXCLUDES(mu_);
  // One pass at `now_ms` on the calling thread: enqueues, then sends due deliveries one at a
  // time (each claimed right before it is sent) until none is due or claim_limit were sent.
  Result<DispatchPass> RunOnce(int64_t now_ms) COHORT_EXCLUDES(gap_mu_, url_mu_, claim_mu_);
  // Posts the test payload (webhook_payload.h TestAlert) to `w` now; records nothing.
  Result<WebhookResponse> SendTest(const store::WebhookRecord& w, int64_t now_ms)
      COHORT_EXCLUDES(url_mu_);

  const std::string& owner() const { return options_.owner; }

 private:
  Result<int64_t> Enqueue(int64_t now_ms) COHORT_EXCLUDES(gap_mu_);
  // Claims one due delivery and sends it; false when none was due (or another server got it).
  Result<bool> SendOne(int64_t now_ms) COHORT_EXCLUDES(url_mu_, claim_mu_);
  // Posts a claimed delivery and records the attempt.
  Status Send(const store::DeliveryRecord& d, int64_t now_ms) COHORT_EXCLUDES(url_mu_);
  std::string BaseUrl() COHORT_EXCLUDES(url_mu_);
  void Loop() COHORT_EXCLUDES(mu_);      // enqueues each poll_ms, wakes the senders
  void SendLoop() COHORT_EXCLUDES(mu_);  // one sender
  // The loops' failures on stderr: the first of a spell, then at most one line a minute with
  // how many more there were, and one line when a pass works again (a database that is down
  // for an hour wrote ~18,000 lines: every thread, every poll).
  void NoteFailure(const Status& s) COHORT_EXCLUDES(log_mu_);
  void NoteSuccess() COHORT_EXCLUDES(log_mu_);

  store::Store* const store_;
  WebhookPoster* const poster_;
  DispatcherOptions options_;  // base_url: see base_url_
  Mutex url_mu_;
  std::string base_url_ COHORT_GUARDED_BY(url_mu_);
  Mutex gap_mu_;  // one Enqueue at a time; the holes it waits for
  std::map<int64_t, int64_t> gap_seen_ms_ COHORT_GUARDED_BY(gap_mu_);  // missing id -> since
  // This server's senders claim one after another (they would all race for the same oldest
  // due row); the post happens outside it.
  Mutex claim_mu_;
  // The webhooks being called now: a sender claims none of their deliveries, so that a webhook
  // with many due deliveries that does not answer holds one sender, not all of them.
  std::multiset<int64_t> in_flight_ COHORT_GUARDED_BY(claim_mu_);
  Mutex mu_;
  CondVar cv_;       // the enqueueing thread: Stop
  CondVar send_cv_;  // the senders: new deliveries, Stop
  bool stopping_ COHORT_GUARDED_BY(mu_) = false;
  // Counts the enqueueing passes: a sender that saw one go by while it sent looks again at once.
  uint64_t enqueue_passes_ COHORT_GUARDED_BY(mu_) = 0;
  std::thread thread_;
  std::vector<std::thread> senders_;
  Mutex log_mu_;
  bool failing_ COHORT_GUARDED_BY(log_mu_) = false;
  int64_t last_logged_ms_ COHORT_GUARDED_BY(log_mu_) = 0;
  int64_t unlogged_failures_ COHORT_GUARDED_BY(log_mu_) = 0;
};

}  // namespace cohort::server::webhooks
