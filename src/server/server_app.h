// ServerApp: `cohort server` put together — makes the data directory private, loads the URL
// signing keys, opens the store, makes sure an admin key exists (writing it to the user's config
// when this server created it), makes a one-time login link, registers the API and UI routes,
// runs the HTTP server (large bodies only after authentication), the alert webhook dispatcher
// (webhooks/webhook_dispatcher.h) and the background sweeper that
// marks writers with stale heartbeats crashed and prunes old records and sessions.
//
// Threading: Start/Stop from one thread; the app runs on its own threads in between.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "blob/s3_blob_store.h"
#include "cohort/status.h"
#include "core/mutex.h"
#include "server/alerts/alert_engine.h"
#include "server/api/context.h"
#include "server/http/server.h"
#include "server/limits/rate_limiter.h"
#include "server/metrics.h"
#include "server/webhooks/webhook_dispatcher.h"
#include "store/store.h"

namespace cohort::blob {
class BlobStore;
}

namespace cohort::server {

struct ServerConfig {
  http::ServerOptions http;
  std::string data_dir;   // default: UserDataDir()/server
  std::string store_url;  // default: sqlite://<data_dir>/cohort.db
  std::string blob_dir;   // the blob store (artifact files); default: <data_dir>/blobs
  blob::S3Config blob_s3;  // an S3 blob store instead (exclusive with blob_dir)
  std::string ui_dir;     // built web UI; empty: none
  int heartbeat_timeout_s = 300;
  int sweep_interval_s = 5;
  // Exactly-once records of batches older than this are pruned (Store::PruneBatches), checked
  // about once an hour by the sweeper; 0 keeps them forever.
  int batch_retention_days = 30;
  api::ApiLimits limits;
  std::string limits_file;   // JSON tiers and entity assignments; empty: built-in tiers
  std::string default_tier;  // overrides the file's (or built-in) default tier; empty: keep
  std::string entity;        // entity of the bootstrap admin key; default: the OS user name
  // Write the admin key this server creates (first start on an empty store) and its URL to the
  // user's config file. A server that finds keys in the store never writes the file.
  bool write_user_config = true;
  // Keys signing upload URLs (api/signing_keys.h); default: <data_dir>/signing.key. The
  // environment variable COHORT_SIGNING_KEYS, when set, takes precedence.
  std::string signing_key_file;
  // Alert webhooks (webhooks/): the web UI's public address for run_url (default: the address
  // the server listens on); calls to loopback, private and link-local addresses allowed; the time
  // a call may take (a delivery's claim lasts 6 times that).
  std::string public_url;
  bool webhook_allow_private = false;
  double webhook_timeout_s = 10;
};

// The most connections by default, and the descriptors kept for everything else (store, logs,
// listeners) when the default is derived from the open-file limit.
inline constexpr int kDefaultMaxConnections = 20000;
inline constexpr int kReservedDescriptors = 64;

class ServerApp {
 public:
  explicit ServerApp(ServerConfig config);
  ~ServerApp();

  Status Start();
  std::string url() const;  // http://address:port
  // The web UI link with a one-time login token made at start (api/auth.h): used once, within
  // api::kLoginTokenLifetime. Empty when the entity has no admin key to log in with. At
  // --public-url when one is given (a server behind a proxy, or listening on 0.0.0.0), else at
  // url().
  std::string ui_url() const;
  // Where users reach the web UI: --public-url without a trailing '/', else url().
  std::string ui_base() const;
  const std::string& data_dir() const { return config_.data_dir; }
  const std::string& store_url() const { return config_.store_url; }
  // Where the blobs are ("local /path"), for the start-up line.
  std::string blob_store_name() const;
  // The web UI without a token.
  std::string ui_home() const { return ui_base() + "/"; }
  // Every (method, pattern) the server routes, the web UI's catch-all included.
  static std::vector<std::pair<std::string, std::string>> RouteTable();
  // Set at first start: the new admin key (shown once).
  const std::string& bootstrap_key() const { return bootstrap_key_; }
  // Whether Start wrote bootstrap_key() to the user's config file.
  bool wrote_user_config() const { return wrote_user_config_; }
  // Why Start did not write the key it made to the user's config although asked to (the
  // config names another server, or cannot be read); empty otherwise.
  const std::string& user_config_kept() const { return user_config_kept_; }
  // Notes for the operator gathered by Start (a signing key file created, permissions
  // tightened, the connection limit derived), one line each.
  const std::vector<std::string>& notes() const { return notes_; }
  void Stop() COHORT_EXCLUDES(mu_);
  void Wait();

 private:
  Status PrepareDataDir();
  Status LoadSigningKeys();
  Status Bootstrap();
  Status MakeLoginToken();
  Status StartLimiter();
  // The body gate of the HTTP server: large bodies need a valid key or a signed upload URL.
  std::optional<http::HttpResponse> AdmitBody(const http::HttpRequest& head);
  // /healthz readiness: not stopping, and the store answered (checked at most once a second).
  Status Ready() COHORT_EXCLUDES(ready_mu_);
  void SweepLoop() COHORT_EXCLUDES(mu_);
  void PruneBatchesIfDue(int64_t now_ms);
  void PruneSessionsIfDue(int64_t now_ms);
  void ReleaseFreeSpace(bool stopping);  // store.h ReleaseFreeSpace

  ServerConfig config_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<blob::BlobStore> blobs_;
  std::unique_ptr<api::SigningKeys> signing_keys_;
  std::unique_ptr<api::Authenticator> auth_;
  std::unique_ptr<limits::RateLimiter> limiter_;
  std::unique_ptr<alerts::AlertEngine> alerts_;  // rule evaluation (ctx_.alerts)
  // After alerts_: its last flush (destruction) tells alerts_ of revived writers.
  std::unique_ptr<api::HeartbeatCoalescer> heartbeats_;
  std::unique_ptr<api::TableCellCache> table_cells_;  // ctx_.table_cells
  std::unique_ptr<webhooks::CurlWebhookPoster> webhook_poster_;
  std::unique_ptr<webhooks::WebhookDispatcher> webhooks_;  // sends alerts to webhooks
  Metrics metrics_;
  api::ApiContext ctx_;
  std::unique_ptr<http::Router> router_;
  std::unique_ptr<http::HttpServer> http_;
  std::string bootstrap_key_;
  int64_t bootstrap_key_id_ = 0;
  bool wrote_user_config_ = false;
  std::string user_config_kept_;
  std::string login_token_;
  std::vector<std::string> notes_;
  std::thread sweeper_;
  int64_t next_prune_ms_ = 0;          // sweeper thread only
  int64_t next_session_prune_ms_ = 0;  // sweeper thread only
  std::atomic<bool> accepting_{false};
  Mutex ready_mu_;
  std::chrono::steady_clock::time_point ready_checked_ COHORT_GUARDED_BY(ready_mu_){};
  Status ready_status_ COHORT_GUARDED_BY(ready_mu_);
  Mutex mu_;
  CondVar cv_;
  bool stopping_ COHORT_GUARDED_BY(mu_) = false;
};

// Raises the soft RLIMIT_NOFILE to the hard limit and returns it (INT_MAX when unlimited).
int RaiseOpenFileLimit();
// The connection limit: `requested` when > 0, else kDefaultMaxConnections bounded by what the
// open-file limit leaves after kReservedDescriptors. *warning is set when `requested` does not
// fit the limit.
int ResolveMaxConnections(int requested, int open_file_limit, std::string* warning);
// Prometheus text of the rate limiter's per-entity counters.
std::string RenderEntityUsage(const std::vector<limits::EntityUsage>& usage);

// The OS user name, reduced to a valid entity name.
std::string DefaultEntity();

}  // namespace cohort::server
