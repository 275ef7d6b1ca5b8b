#include "server/server_app.h"

#include <pwd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/clock.h"
#include "core/ids.h"
#include "core/user_config.h"
#include "server/compat/compat.h"
#include "server/http/static_files.h"

namespace cohort::server {

std::string DefaultEntity() {
  std::string name;
  if (passwd* pw = getpwuid(getuid()); pw && pw->pw_name) name = pw->pw_name;
  if (name.empty()) {
    if (const char* u = std::getenv("USER")) name = u;
  }
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a'), ok = true;
    if (ok) out.push_back(c);
  }
  return out.empty() ? "local" : out.substr(0, 64);
}

void RaiseOpenFileLimit(int max_connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  // Each connection is one descriptor; the store, logs and listeners need some more.
  if (rl.rlim_cur != RLIM_INFINITY && rlim_t(max_connections) + 64 > rl.rlim_cur) {
    std::fprintf(stderr,
                 "cohort server: warning: the open-file limit (%llu) is below --max-connections "
                 "(%d) + 64; raise it (ulimit -n, LimitNOFILE=) or lower --max-connections\n",
                 static_cast<unsigned long long>(rl.rlim_cur), max_connections);
  }
}

namespace {
// The API and compat routes (the web UI's are added by Start).
void RegisterRoutes(http::Router& router, api::ApiContext* ctx) {
  api::RegisterApiRoutes(router, ctx);
  compat::RegisterCompatRoutes(router, ctx);
}
}  // namespace

std::string RenderEntityUsage(const std::vector<limits::EntityUsage>& usage) {
  std::string out;
  out += "# HELP cohort_entity_requests_total Requests admitted per entity (and its tier).\n";
  out += "# TYPE cohort_entity_requests_total counter\n";
  for (const auto& u : usage) {
    out += "cohort_entity_requests_total{entity=\"" + u.entity + "\",tier=\"" + u.tier + "\"} " +
           std::to_string(u.requests) + "\n";
  }
  out += "# HELP cohort_entity_points_total Points admitted per entity.\n";
  out += "# TYPE cohort_entity_points_total counter\n";
  for (const auto& u : usage) {
    out += "cohort_entity_points_total{entity=\"" + u.entity + "\",tier=\"" + u.tier + "\"} " +
           std::to_string(u.points) + "\n";
  }
  out += "# HELP cohort_entity_rate_limited_total Calls refused by the entity's rate limits.\n";
  out += "# TYPE cohort_entity_rate_limited_total counter\n";
  for (const auto& u : usage) {
    out += "cohort_entity_rate_limited_total{entity=\"" + u.entity + "\",tier=\"" + u.tier +
           "\",bucket=\"requests\"} " + std::to_string(u.rejected_requests) + "\n";
    out += "cohort_entity_rate_limited_total{entity=\"" + u.entity + "\",tier=\"" + u.tier +
           "\",bucket=\"points\"} " + std::to_string(u.rejected_points) + "\n";
  }
  return out;
}

ServerApp::ServerApp(ServerConfig config) : config_(std::move(config)) {
  if (config_.data_dir.empty()) config_.data_dir = UserDataDir() + "/server";
  if (config_.store_url.empty()) config_.store_url = "sqlite://" + config_.data_dir + "/cohort.db";
  if (config_.entity.empty()) config_.entity = DefaultEntity();
}

ServerApp::~ServerApp() { Stop(); }

Status ServerApp::Bootstrap() {
  auto count = store_->CountApiKeys();
  if (!count.ok()) return count.status();
  std::string url = this->url();
  auto existing = LoadUserConfig();
  if (*count == 0) {
    // Several servers may start on one empty database at once: the store creates the key only
    // while there is none, atomically, so exactly one of them bootstraps.
    std::string secret = api::NewApiKeySecret();
    store::ApiKeyRecord rec;
    rec.entity = config_.entity;
    rec.name = "local-admin";
    rec.role = store::KeyRole::kAdmin;
    rec.hash = api::HashApiKey(secret);
    rec.prefix = secret.substr(0, 7);
    rec.created_ms = NowMillis();
    auto created = store_->CreateFirstApiKey(rec);
    if (!created.ok()) return created.status();
    if (created->has_value()) {
      bootstrap_key_ = std::move(secret);
      if (config_.write_user_config) {
        COHORT_RETURN_IF_ERROR(SaveUserConfig({url, bootstrap_key_}));
      }
      return Status::Ok();
    }
  }
  // Later starts: keep the local config pointing at this server if its key is ours.
  if (config_.write_user_config && existing.ok() && !existing->api_key.empty() &&
      existing->base_url != url) {
    if (store_->FindApiKey(api::HashApiKey(existing->api_key)).ok()) {
      COHORT_RETURN_IF_ERROR(SaveUserConfig({url, existing->api_key}));
    }
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> ServerApp::RouteTable() {
  api::ApiContext ctx;  // handlers are registered, never called
  http::Router router;
  RegisterRoutes(router, &ctx);
  auto routes = router.Routes();
  routes.emplace_back("GET", "/{path...}");  // the web UI (or its placeholder page at "/")
  return routes;
}

Status ServerApp::StartLimiter() {
  limits::LimitsConfig lc = limits::DefaultLimitsConfig();
  if (!config_.limits_file.empty()) {
    COHORT_ASSIGN_OR_RETURN(lc, limits::LoadLimitsConfig(config_.limits_file));
  }
  if (!config_.default_tier.empty()) {
    if (!lc.tiers.count(config_.default_tier)) {
      return Status::InvalidArgument("--default-tier: unknown tier '" + config_.default_tier + "'");
    }
    lc.default_tier = config_.default_tier;
  }
  limiter_ = std::make_unique<limits::RateLimiter>(std::move(lc));
  metrics_.SetTextSource([this] { return RenderEntityUsage(limiter_->Usage()); });
  return Status::Ok();
}

Status ServerApp::Start() {
  RaiseOpenFileLimit(config_.http.max_connections);
  std::error_code ec;
  std::filesystem::create_directories(config_.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create data directory " + config_.data_dir + ": " +
                           ec.message());
  }
  auto store = store::OpenStore(config_.store_url);
  if (!store.ok()) return store.status();
  store_ = std::move(store).value();
  auth_ = std::make_unique<api::Authenticator>(store_.get());
  COHORT_RETURN_IF_ERROR(StartLimiter());
  heartbeats_ = std::make_unique<api::HeartbeatCoalescer>(store_.get());
  heartbeats_->Start();
  ctx_.heartbeats = heartbeats_.get();
  ctx_.store = store_.get();
  ctx_.auth = auth_.get();
  ctx_.metrics = &metrics_;
  ctx_.limiter = limiter_.get();
  ctx_.limits = config_.limits;

  router_ = std::make_unique<http::Router>();
  RegisterRoutes(*router_, &ctx_);
  if (!config_.ui_dir.empty() && std::filesystem::exists(config_.ui_dir + "/index.html")) {
    router_->Add("GET", "/{path...}", http::StaticFiles(config_.ui_dir));
  } else {
    router_->Add("GET", "/", [](http::HttpRequest&) {
      return http::HttpResponse::Text(
          200,
          "<!doctype html><title>Cohort</title><h1>Cohort</h1><p>The web UI is not built. "
          "The API is at <a href=\"/api/v1/viewer\">/api/v1</a>.</p>",
          "text/html; charset=utf-8");
    });
  }

  http_ = std::make_unique<http::HttpServer>(config_.http, router_.get());
  http_->SetObserver([this](const std::string& route, const std::string& method, int status,
                            int64_t ns) { metrics_.ObserveRequest(route, method, status, ns); });
  metrics_.SetGaugeSource([this] {
    const auto& st = http_->stats();
    return std::map<std::string, double>{
        {"cohort_http_connections_open", double(st.connections_open.load())},
        {"cohort_http_connections_total", double(st.connections_total.load())},
        {"cohort_http_connections_rejected_total", double(st.connections_rejected.load())},
    };
  });
  COHORT_RETURN_IF_ERROR(http_->Start());
  COHORT_RETURN_IF_ERROR(Bootstrap());
  auth_->SetUiToken(ids::RandomHex(16),
                    api::AuthContext{config_.entity, store::KeyRole::kAdmin, "browser-session", 0});
  sweeper_ = std::thread([this] { SweepLoop(); });
  return Status::Ok();
}

std::string ServerApp::ui_url() const {
  return url() + "/?token=" + (auth_ ? auth_->ui_token() : std::string());
}

std::string ServerApp::url() const {
  std::string host = config_.http.address;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(http_ ? http_->port() : config_.http.port);
}

void ServerApp::SweepLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::seconds(config_.sweep_interval_s));
    if (stopping_) break;
    lock.unlock();
    // Heartbeats answered so far must be in the store before it is searched for stale writers;
    // when they cannot be written, no writer is marked crashed this time.
    if (Status s = heartbeats_->Flush(); !s.ok()) {
      std::fprintf(stderr, "cohort: writing heartbeats failed: %s\n", s.ToString().c_str());
      lock.lock();
      continue;
    }
    int64_t now = NowMillis();
    auto marked =
        store_->MarkStaleWritersCrashed(now - int64_t(config_.heartbeat_timeout_s) * 1000, now);
    if (!marked.ok()) {
      std::fprintf(stderr, "cohort: heartbeat sweep failed: %s\n",
                   marked.status().ToString().c_str());
    }
    PruneBatchesIfDue(now);
    lock.lock();
  }
}

void ServerApp::PruneBatchesIfDue(int64_t now_ms) {
  if (config_.batch_retention_days <= 0 || now_ms < next_prune_ms_) return;
  constexpr int64_t kHourMs = 3600 * 1000;
  next_prune_ms_ = now_ms + kHourMs;
  const int64_t before = now_ms - int64_t(config_.batch_retention_days) * 24 * kHourMs;
  auto pruned = store_->PruneBatches(before);
  if (!pruned.ok()) {
    std::fprintf(stderr, "cohort: pruning batch records failed: %s\n",
                 pruned.status().ToString().c_str());
    next_prune_ms_ = now_ms + kHourMs / 12;  // try again sooner
  }
}

void ServerApp::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (http_) http_->Stop();
  if (sweeper_.joinable()) sweeper_.join();
  if (heartbeats_) heartbeats_->Stop();  // writes what is pending
}

void ServerApp::Wait() {
  if (http_) http_->Wait();
}

}  // namespace cohort::server
