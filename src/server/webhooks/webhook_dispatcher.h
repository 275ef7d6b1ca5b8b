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
//  2. Send. Claims due deliveries (store.h ClaimDeliveries: one server per attempt), posts each
//     with its webhook's format and, for generic payloads with a secret, the signature, and
//     records the attempt: delivered (2xx), pending again after the backoff of
//     webhook_http.h WebhookRetryPolicy (no answer, 408, 425, 429, 5xx), or failed (another
//     answer, or the last attempt). A server that dies while sending leaves a claim that expires
//     after lease_ms, and the delivery is sent again: at least once, exactly once unless a
//     server dies mid-call.
//
// Threading: Start/Stop from one thread; RunOnce and SendTest are thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "cohort/status.h"
#include "core/mutex.h"
#include "server/webhooks/webhook_http.h"
#include "store/store.h"

namespace cohort::server::webhooks {

struct DispatcherOptions {
  std::string owner;     // this server's name in claims; empty: host:pid:random
  std::string base_url;  // the web UI's address for run_url; empty: run_url is null
  int64_t poll_ms = 1000;
  int64_t lease_ms = 60'000;  // well above the poster's timeout
  int claim_limit = 16;       // deliveries claimed per pass
  int event_batch = 256;      // events read per pass
  int64_t gap_wait_ms = 30'000;
  WebhookRetryPolicy retry;
};

// Counts of one pass, for tests and logs.
struct DispatchPass {
  int64_t enqueued = 0;  // deliveries
  int64_t claimed = 0;   // deliveries claimed (and attempted, unless their alert is gone)
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
  // One pass at `now_ms` (what the thread does each poll).
  Result<DispatchPass> RunOnce(int64_t now_ms) COHORT_EXCLUDES(gap_mu_, url_mu_);
  // Posts the test payload (webhook_payload.h TestAlert) to `w` now; records nothing.
  Result<WebhookResponse> SendTest(const store::WebhookRecord& w, int64_t now_ms)
      COHORT_EXCLUDES(url_mu_);

  const std::string& owner() const { return options_.owner; }

 private:
  Result<int64_t> Enqueue(int64_t now_ms) COHORT_EXCLUDES(gap_mu_);
  Result<int64_t> SendDue(int64_t now_ms) COHORT_EXCLUDES(url_mu_);
  std::string BaseUrl() COHORT_EXCLUDES(url_mu_);
  void Loop() COHORT_EXCLUDES(mu_);

  store::Store* const store_;
  WebhookPoster* const poster_;
  DispatcherOptions options_;  // base_url: see base_url_
  Mutex url_mu_;
  std::string base_url_ COHORT_GUARDED_BY(url_mu_);
  Mutex gap_mu_;  // one Enqueue at a time; the holes it waits for
  std::map<int64_t, int64_t> gap_seen_ms_ COHORT_GUARDED_BY(gap_mu_);  // missing id -> since
  Mutex mu_;
  CondVar cv_;
  bool stopping_ COHORT_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace cohort::server::webhooks
