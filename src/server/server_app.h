// ServerApp: `cohort server` put together — opens the store, makes sure an admin key exists
// (writing it to the user's config at first start), registers the API and UI routes, runs the
// HTTP server and the background sweeper that marks writers with stale heartbeats crashed.
//
// Threading: Start/Stop from one thread; the app runs on its own threads in between.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cohort/status.h"
#include "server/api/context.h"
#include "server/http/server.h"
#include "server/limits/rate_limiter.h"
#include "server/metrics.h"
#include "store/store.h"

namespace cohort::server {

struct ServerConfig {
  http::ServerOptions http;
  std::string data_dir;   // default: UserDataDir()/server
  std::string store_url;  // default: sqlite://<data_dir>/cohort.db
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
  bool write_user_config = true;
};

class ServerApp {
 public:
  explicit ServerApp(ServerConfig config);
  ~ServerApp();

  Status Start();
  std::string url() const;  // http://address:port
  // The web UI link with the one-click login token (valid while this server runs).
  std::string ui_url() const;
  // Every (method, pattern) the server routes, the web UI's catch-all included.
  static std::vector<std::pair<std::string, std::string>> RouteTable();
  // Set at first start: the new admin key (shown once).
  const std::string& bootstrap_key() const { return bootstrap_key_; }
  void Stop();
  void Wait();

 private:
  Status Bootstrap();
  Status StartLimiter();
  void SweepLoop();
  void PruneBatchesIfDue(int64_t now_ms);

  ServerConfig config_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<api::Authenticator> auth_;
  std::unique_ptr<limits::RateLimiter> limiter_;
  std::unique_ptr<api::HeartbeatCoalescer> heartbeats_;
  Metrics metrics_;
  api::ApiContext ctx_;
  std::unique_ptr<http::Router> router_;
  std::unique_ptr<http::HttpServer> http_;
  std::string bootstrap_key_;
  std::thread sweeper_;
  int64_t next_prune_ms_ = 0;  // sweeper thread only
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// Raises the soft RLIMIT_NOFILE to the hard limit; warns on stderr when it is still below
// max_connections plus a margin.
void RaiseOpenFileLimit(int max_connections);
// Prometheus text of the rate limiter's per-entity counters.
std::string RenderEntityUsage(const std::vector<limits::EntityUsage>& usage);

// The OS user name, reduced to a valid entity name.
std::string DefaultEntity();

}  // namespace cohort::server
