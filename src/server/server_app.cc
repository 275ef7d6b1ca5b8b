#include "server/server_app.h"

#include <pwd.h>
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
    bootstrap_key_ = api::NewApiKeySecret();
    store::ApiKeyRecord rec;
    rec.entity = config_.entity;
    rec.name = "local-admin";
    rec.role = store::KeyRole::kAdmin;
    rec.hash = api::HashApiKey(bootstrap_key_);
    rec.prefix = bootstrap_key_.substr(0, 7);
    rec.created_ms = NowMillis();
    auto created = store_->CreateApiKey(rec);
    if (!created.ok()) return created.status();
    if (config_.write_user_config) {
      COHORT_RETURN_IF_ERROR(SaveUserConfig({url, bootstrap_key_}));
    }
    return Status::Ok();
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

Status ServerApp::Start() {
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
  ctx_.store = store_.get();
  ctx_.auth = auth_.get();
  ctx_.metrics = &metrics_;
  ctx_.limits = config_.limits;

  router_ = std::make_unique<http::Router>();
  api::RegisterApiRoutes(*router_, &ctx_);
  compat::RegisterCompatRoutes(*router_, &ctx_);
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
    int64_t now = NowMillis();
    auto marked =
        store_->MarkStaleWritersCrashed(now - int64_t(config_.heartbeat_timeout_s) * 1000, now);
    if (!marked.ok()) {
      std::fprintf(stderr, "cohort: heartbeat sweep failed: %s\n",
                   marked.status().ToString().c_str());
    }
    lock.lock();
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
}

void ServerApp::Wait() {
  if (http_) http_->Wait();
}

}  // namespace cohort::server
