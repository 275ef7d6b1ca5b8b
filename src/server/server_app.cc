#include "server/server_app.h"

#include <pwd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/user_config.h"
#include "server/api/table_cell_cache.h"
#include "server/compat/artifacts_compat.h"
#include "server/compat/compat.h"
#include "server/compat/run_files.h"
#include "server/compat/vendor_tables.h"
#include "server/data_dir.h"
#include "server/http/static_files.h"
#include "server/webhooks/webhook_payload.h"
#include "server/webhooks/webhooks_api.h"
#include "wal/file.h"

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

int RaiseOpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return kDefaultMaxConnections + kReservedDescriptors;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rlim_t(INT_MAX)) return INT_MAX;
  return int(rl.rlim_cur);
}

int ResolveMaxConnections(int requested, int open_file_limit, std::string* warning) {
  // Each connection is one descriptor; the store, logs and listeners need some more.
  const int fits = std::max(1, open_file_limit - kReservedDescriptors);
  if (requested <= 0) return std::min(kDefaultMaxConnections, fits);
  if (requested > fits) {
    *warning = "the open-file limit (" + std::to_string(open_file_limit) +
               ") is below --max-connections (" + std::to_string(requested) + ") + " +
               std::to_string(kReservedDescriptors) +
               "; raise it (ulimit -n, LimitNOFILE=) or lower --max-connections";
  }
  return requested;
}

namespace {
// The API and compat routes (the web UI's are added by Start).
void RegisterRoutes(http::Router& router, api::ApiContext* ctx,
                    webhooks::WebhookDispatcher* dispatcher) {
  api::RegisterApiRoutes(router, ctx);
  webhooks::RegisterWebhookRoutes(router, ctx, dispatcher);
  compat::RegisterCompatRoutes(router, ctx);
}
}  // namespace

// The per-entity series of `all_usage`: of `only` alone, or of every entity when it is "".
std::string RenderEntityUsage(const std::vector<limits::EntityUsage>& all_usage,
                              const std::string& only) {
  std::vector<limits::EntityUsage> usage;
  for (const auto& u : all_usage) {
    if (only.empty() || u.entity == only) usage.push_back(u);
  }
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
  if (*count > 0) return Status::Ok();  // joining a store with keys: the user config is left alone
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
  if (!created->has_value()) return Status::Ok();
  bootstrap_key_ = std::move(secret);
  bootstrap_key_id_ = (*created)->id;
  if (config_.write_user_config) {
    // The account's login to another server (`cohort login`, an earlier server at another
    // address) is kept: a scratch server must not move every client of the account to itself.
    Result<UserConfig> existing = LoadUserConfig();
    if (!existing.ok()) {
      user_config_kept_ = existing.status().message();
    } else if (!existing->base_url.empty() && existing->base_url != url()) {
      user_config_kept_ =
          UserConfigPath() + " holds this account's login to " + existing->base_url + ", kept";
    } else {
      COHORT_RETURN_IF_ERROR(SaveUserConfig({url(), bootstrap_key_}));
      wrote_user_config_ = true;
    }
  }
  return Status::Ok();
}

Status ServerApp::MakeLoginToken() {
  int64_t key_id = bootstrap_key_id_;
  if (key_id == 0) {  // the oldest admin key of the entity that is not revoked
    COHORT_ASSIGN_OR_RETURN(std::vector<store::ApiKeyRecord> keys,
                            store_->ListApiKeys(config_.entity));
    for (const store::ApiKeyRecord& k : keys) {
      if (!k.revoked && k.role == store::KeyRole::kAdmin) {
        key_id = k.id;
        break;
      }
    }
  }
  if (key_id == 0) {
    notes_.push_back("no admin key of entity '" + config_.entity +
                     "' to make a login link for (--entity; `cohort login-link` with any key)");
    return Status::Ok();
  }
  COHORT_ASSIGN_OR_RETURN(login_token_, auth_->CreateLoginToken(key_id));
  return Status::Ok();
}

Status ServerApp::PrepareDataDir() {
  // The name of the store's SQLite file (<data-dir>/cohort.db by default), for the names of the
  // files that are Cohort's own in the data directory.
  std::string db_name = "cohort.db";
  if (config_.store_url.starts_with("sqlite://")) {
    const std::string path = config_.store_url.substr(9, config_.store_url.find('?') - 9);
    db_name = std::filesystem::path(path).filename().string();
  }
  // The signing key file and blob directory given by the operator (--signing-key-file,
  // --blob-dir) in the data directory under names of their own are Cohort's entries there too:
  // with the store elsewhere (PostgreSQL) they may be all the directory holds.
  const auto normal = [](const std::string& p) {
    std::error_code ec;
    std::filesystem::path n = std::filesystem::absolute(p, ec);
    if (ec) n = p;
    n = n.lexically_normal();
    return n.has_filename() ? n : n.parent_path();  // "dir/" as "dir"
  };
  const std::filesystem::path data_dir = normal(config_.data_dir);
  std::vector<std::string> own_names;
  for (const std::string* given : {&config_.signing_key_file, &config_.blob_dir}) {
    if (given->empty()) continue;
    const std::filesystem::path p = normal(*given);
    if (p.parent_path() == data_dir) own_names.push_back(p.filename().string());
  }
  return server::PrepareDataDir(wal::FileSystem::Default(), config_.data_dir, db_name, own_names,
                                &notes_);
}

Status ServerApp::LoadSigningKeys() {
  const std::string file = config_.signing_key_file.empty() ? config_.data_dir + "/signing.key"
                                                            : config_.signing_key_file;
  bool created = false;
  COHORT_ASSIGN_OR_RETURN(
      api::SigningKeys keys,
      api::SigningKeys::Load(file, std::getenv(api::kSigningKeysEnv), &created));
  signing_keys_ = std::make_unique<api::SigningKeys>(std::move(keys));
  if (created && !config_.store_url.starts_with("sqlite")) {
    notes_.push_back("created the URL signing key file " + file +
                     ": every server of this store must use the same keys (copy the file, or set " +
                     api::kSigningKeysEnv + "), or upload URLs made by one are refused by another");
  }
  return Status::Ok();
}

std::optional<http::HttpResponse> ServerApp::AdmitBody(const http::HttpRequest& head) {
  if (!api::ExtractApiKey(head).empty()) {
    auto who = auth_->Authenticate(head);
    if (who.ok()) return std::nullopt;
    metrics_.AddRejected("unauthenticated");
    return api::ErrorResponse(who.status());
  }
  if (head.HasQueryParam("s")) {
    Status s = compat::CheckSignedArtifactUpload(&ctx_, head);
    if (s.code() == StatusCode::kNotFound) s = compat::CheckSignedUpload(&ctx_, head);
    if (s.ok()) return std::nullopt;
    metrics_.AddRejected("unauthenticated");
    return api::ErrorResponse(s);
  }
  metrics_.AddRejected("unauthenticated");
  return api::ErrorResponse(Status::Unauthenticated(
      "a request body of " + std::to_string(http::kGatedBodyBytes) +
      " bytes or more needs an API key: send 'Authorization: Bearer <key>'"));
}

Status ServerApp::Ready() {
  if (!accepting_.load()) return Status::Unavailable("the server is starting or shutting down");
  constexpr auto kRecheck = std::chrono::seconds(1);
  MutexLock lock(&ready_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - ready_checked_ >= kRecheck) {
    auto keys = store_->CountApiKeys();
    ready_status_ =
        keys.ok() ? Status::Ok()
                  : Status::Unavailable("the store does not answer: " + keys.status().message());
    ready_checked_ = now;
  }
  return ready_status_;
}

std::vector<std::pair<std::string, std::string>> ServerApp::RouteTable() {
  api::ApiContext ctx;  // handlers are registered, never called
  http::Router router;
  RegisterRoutes(router, &ctx, nullptr);
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
  metrics_.SetTextSource(
      [this](const std::string& only) { return RenderEntityUsage(limiter_->Usage(), only); });
  return Status::Ok();
}

std::string ServerApp::blob_store_name() const {
  return blobs_ ? blobs_->Describe() : std::string("none");
}

Status ServerApp::Start() {
  std::string warning;
  config_.http.max_connections =
      ResolveMaxConnections(config_.http.max_connections, RaiseOpenFileLimit(), &warning);
  if (!warning.empty()) notes_.push_back("warning: " + warning);
  if (!config_.public_url.empty()) {
    COHORT_RETURN_IF_ERROR(webhooks::ValidatePublicUrl(config_.public_url));
  }
  COHORT_RETURN_IF_ERROR(PrepareDataDir());
  COHORT_RETURN_IF_ERROR(LoadSigningKeys());
  auto store = store::OpenStore(config_.store_url);
  if (!store.ok()) return store.status();
  store_ = std::move(store).value();
  // On PostgreSQL other servers may share the blob directory (docs/operations.md).
  auto blobs = blob::OpenConfiguredBlobStore(wal::FileSystem::Default(), config_.blob_dir,
                                             config_.data_dir + "/blobs", config_.blob_s3,
                                             store::IsSharedStoreUrl(config_.store_url));
  if (!blobs.ok()) return blobs.status();
  blobs_ = std::move(blobs).value();
  ctx_.blobs = blobs_.get();
  auth_ = std::make_unique<api::Authenticator>(store_.get());
  COHORT_RETURN_IF_ERROR(StartLimiter());
  alerts_ = std::make_unique<alerts::AlertEngine>(store_.get());
  // A writer marked crashed that heartbeats again is running: its crash alerts resolve.
  heartbeats_ = std::make_unique<api::HeartbeatCoalescer>(
      store_.get(), 1000, [alerts = alerts_.get()](const store::HeartbeatUpdate& u) {
        alerts->OnWriterRevived(u.ref, u.label, u.now_ms);
      });
  heartbeats_->Start();
  ctx_.heartbeats = heartbeats_.get();
  ctx_.store = store_.get();
  ctx_.auth = auth_.get();
  ctx_.metrics = &metrics_;
  ctx_.limiter = limiter_.get();
  ctx_.limits = config_.limits;
  ctx_.signing_keys = signing_keys_.get();
  ctx_.alerts = alerts_.get();
  webhook_poster_ =
      std::make_unique<webhooks::CurlWebhookPoster>(webhooks::CurlWebhookPoster::Options{
          .connect_timeout_s = std::min(5.0, config_.webhook_timeout_s),
          .timeout_s = config_.webhook_timeout_s,
          .allow_private = config_.webhook_allow_private});
  webhooks_ = std::make_unique<webhooks::WebhookDispatcher>(
      store_.get(), webhook_poster_.get(),
      webhooks::DispatcherOptions{.lease_ms = int64_t(config_.webhook_timeout_s * 6000),
                                  .retry = webhooks::RetryPolicyFromEnvironment()});
  table_cells_ = std::make_unique<api::TableCellCache>();
  ctx_.table_cells = table_cells_.get();
  ctx_.operator_entity = config_.entity;
  ctx_.ready = [this] { return Ready(); };
  ctx_.table_document = [this](const std::string& entity, const std::string& artifact_ref) {
    return compat::VendorTableDocument(&ctx_, entity, artifact_ref);
  };

  router_ = std::make_unique<http::Router>();
  RegisterRoutes(*router_, &ctx_, webhooks_.get());
  if (!config_.ui_dir.empty() && std::filesystem::exists(config_.ui_dir + "/index.html")) {
    router_->Add("GET", "/{path...}", http::StaticFiles(config_.ui_dir));
  } else {
    router_->Add("GET", "/", [](http::HttpRequest&) {
      http::HttpResponse page = http::HttpResponse::Text(
          200,
          "<!doctype html><title>Cohort</title><h1>Cohort</h1><p>The web UI is not built. "
          "The API is at <a href=\"/api/v1/viewer\">/api/v1</a>.</p>",
          "text/html; charset=utf-8");
      http::AddPageSecurityHeaders(&page);
      return page;
    });
  }

  http_ = std::make_unique<http::HttpServer>(config_.http, router_.get());
  http_->SetObserver([this](const std::string& route, const std::string& method, int status,
                            int64_t ns) { metrics_.ObserveRequest(route, method, status, ns); });
  http_->SetBodyGate([this](const http::HttpRequest& head) { return AdmitBody(head); });
  metrics_.SetGaugeSource([this] {
    const auto& st = http_->stats();
    return std::map<std::string, double>{
        {"cohort_http_connections_open", double(st.connections_open.load())},
        {"cohort_http_connections_total", double(st.connections_total.load())},
        {"cohort_http_connections_rejected_total", double(st.connections_rejected.load())},
        {"cohort_http_body_bytes_in_flight", double(st.body_bytes_in_flight.load())},
        {"cohort_http_bodies_refused_total", double(st.bodies_refused_total.load())},
        {"cohort_http_response_bytes_in_flight", double(st.response_bytes_in_flight.load())},
        {"cohort_http_responses_refused_total", double(st.responses_refused_total.load())},
    };
  });
  COHORT_RETURN_IF_ERROR(http_->Start());
  COHORT_RETURN_IF_ERROR(Bootstrap());
  COHORT_RETURN_IF_ERROR(MakeLoginToken());
  sweeper_ = std::thread([this] { SweepLoop(); });
  webhooks_->SetBaseUrl(config_.public_url.empty() ? url() : config_.public_url);
  webhooks_->Start();
  accepting_.store(true);
  return Status::Ok();
}

std::string ServerApp::ui_url() const {
  return login_token_.empty() ? std::string() : ui_base() + "/?token=" + login_token_;
}

std::string ServerApp::ui_base() const {
  if (config_.public_url.empty()) return url();
  std::string base = config_.public_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string ServerApp::url() const {
  std::string host = config_.http.address;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(http_ ? http_->port() : config_.http.port);
}

void ServerApp::SweepLoop() {
  // Heartbeats could not reach a server that was down: no writer is marked crashed until its
  // agent has had time to come back (its uploads back off for at most 30 s, it heartbeats every
  // 30 s: kSweepGraceMs, or the heartbeat timeout if shorter). A writer marked crashed later that
  // heartbeats again is running again (store.h WriterStore::Heartbeat). Bounded so that a server
  // restarted often still sweeps.
  constexpr int64_t kSweepGraceMs = 90'000;
  const int64_t sweep_from_ms =
      NowMillis() + std::min(kSweepGraceMs, int64_t(config_.heartbeat_timeout_s) * 1000);
  MutexLock lock(&mu_);
  while (!stopping_) {
    cv_.WaitFor(mu_, std::chrono::seconds(config_.sweep_interval_s));
    if (stopping_) break;
    lock.Unlock();
    // Heartbeats answered so far must be in the store before it is searched for stale writers;
    // when they cannot be written, no writer is marked crashed this time.
    if (Status s = heartbeats_->Flush(); !s.ok()) {
      std::fprintf(stderr, "cohort: writing heartbeats failed: %s\n", s.ToString().c_str());
      lock.Lock();
      continue;
    }
    int64_t now = NowMillis();
    auto swept = now < sweep_from_ms ? Result<store::StaleSweep>(store::StaleSweep{})
                                     : store_->MarkStaleWritersCrashed(
                                           now - int64_t(config_.heartbeat_timeout_s) * 1000, now);
    if (!swept.ok()) {
      std::fprintf(stderr, "cohort: heartbeat sweep failed: %s\n",
                   swept.status().ToString().c_str());
    } else {
      for (const store::CrashedWriter& w : swept->crashed) {
        std::fprintf(stderr,
                     "cohort: writer %s of run %s/%s/%s marked crashed: no heartbeat for %lld s\n",
                     w.label.c_str(), w.run.entity.c_str(), w.run.project.c_str(),
                     w.run.run_id.c_str(), (long long)((now - w.heartbeat_ms) / 1000));
      }
      // Runs ended as orphaned: their alerts end as at any run's end (no writer end says so).
      for (const store::RunRef& run : swept->orphans_ended) alerts_->OnRunEnded(run, now);
    }
    alerts_->Tick(now);  // the writers ended (those just marked crashed too), then tick rules
    PruneBatchesIfDue(now);
    PruneSessionsIfDue(now);
    ReleaseFreeSpace(/*stopping=*/false);
    lock.Lock();
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

void ServerApp::ReleaseFreeSpace(bool stopping) {
  // A sweep gives back at most this much (deleting a large run frees it over several sweeps),
  // and so does a stop (bounded: a stop must stay short; the rest goes after the next start
  // when it still counts as many, docs/operations.md "Disk space").
  constexpr int64_t kPerCallBytes = int64_t{64} << 20;
  auto released = store_->ReleaseFreeSpace(kPerCallBytes, stopping);
  if (!released.ok()) {
    std::fprintf(stderr, "cohort: giving free space back failed: %s\n",
                 released.status().ToString().c_str());
  }
}

void ServerApp::PruneSessionsIfDue(int64_t now_ms) {
  if (now_ms < next_session_prune_ms_) return;
  constexpr int64_t kHourMs = 3600 * 1000;
  next_session_prune_ms_ = now_ms + kHourMs;
  auto pruned = store_->PruneSessions(now_ms);
  if (!pruned.ok()) {
    std::fprintf(stderr, "cohort: pruning expired sessions failed: %s\n",
                 pruned.status().ToString().c_str());
    next_session_prune_ms_ = now_ms + kHourMs / 12;
  }
}

void ServerApp::Stop() {
  accepting_.store(false);
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.SignalAll();
  if (http_) http_->Stop();
  const bool served = sweeper_.joinable();  // Start got that far
  if (sweeper_.joinable()) sweeper_.join();
  if (webhook_poster_) webhook_poster_->Abort();  // a call in flight ends now
  if (webhooks_) webhooks_->Stop();
  if (heartbeats_) heartbeats_->Stop();  // writes what is pending
  if (store_ && served) ReleaseFreeSpace(/*stopping=*/true);  // no sweep runs now
}

void ServerApp::Wait() {
  if (http_) http_->Wait();
}

}  // namespace cohort::server
