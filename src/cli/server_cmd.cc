// `cohort server`: run the server (API + web UI) on the embedded SQLite store or PostgreSQL.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "core/user_config.h"
#include "server/api/auth.h"
#include "server/server_app.h"
#include "store/store.h"

namespace cohort::cli {
namespace {

// Keeps memory that answers free for the next answer: without this, glibc returns the few-MB
// buffers of a large read (the points, the JSON text) to the kernel after each request (mmap /
// heap trimming), and the next read pays a page fault per 4 KB again, a quarter of the server's
// CPU on a 100k-point raw read (docs/benchmarks.md, "Reads through HTTP"). Allocations up to
// 16 MB come from the arenas, and an arena keeps up to 64 MB of free memory at its top.
void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

// Writes `text` to `path` with mode 0600 (replacing the file).
Status WritePrivateFile(const std::string& path, const std::string& text) {
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!ok) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

// A secret is shown only on a terminal; otherwise (a log, journald, a container's output) it is
// written to a 0600 file in the data directory and the file is named instead. Returns what to
// print in its place.
std::string ShowSecret(FILE* stream, const std::string& secret, const std::string& file) {
  if (::isatty(::fileno(stream))) return secret;
  Status s = WritePrivateFile(file, secret + "\n");
  if (!s.ok()) return "(not shown: " + s.message() + ")";
  return "in " + file + " (mode 0600)";
}

// The directory of the running executable.
std::filesystem::path ExeDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : p.parent_path();
}

// Finds the built web UI: installed share dir, or the source tree's ui/dist next to a build dir.
std::string FindUiDir() {
  auto exe = ExeDir();
  for (auto candidate : {exe / "../share/cohort/ui", exe / "../../../ui/dist",
                         exe / "../../ui/dist", exe / "../ui/dist"}) {
    std::error_code ec;
    if (std::filesystem::exists(candidate / "index.html", ec)) {
      return std::filesystem::weakly_canonical(candidate, ec).string();
    }
  }
  return "";
}

}  // namespace

void AddBlobS3Options(CLI::App* cmd, blob::S3Config* s3) {
  cmd->add_option("--blob-s3-endpoint", s3->endpoint,
                  "Keep artifact files in an S3-compatible object store at this URL "
                  "(http(s)://host[:port]) instead of --blob-dir (docs/operations.md)")
      ->envname("COHORT_BLOB_S3_ENDPOINT");
  cmd->add_option("--blob-s3-bucket", s3->bucket, "The bucket (made at start when missing)")
      ->envname("COHORT_BLOB_S3_BUCKET");
  cmd->add_option("--blob-s3-prefix", s3->prefix, "Key prefix inside the bucket (e.g. cohort/)")
      ->envname("COHORT_BLOB_S3_PREFIX");
  cmd->add_option("--blob-s3-region", s3->region, "Region the requests are signed for")
      ->envname("COHORT_BLOB_S3_REGION")
      ->capture_default_str();
  cmd->add_option("--blob-s3-access-key", s3->access_key,
                  "Access key id (prefer the environment variable)")
      ->envname("COHORT_S3_ACCESS_KEY");
  cmd->add_option("--blob-s3-secret-key", s3->secret_key,
                  "Secret access key (prefer the environment variable: a flag shows in ps)")
      ->envname("COHORT_S3_SECRET_KEY");
}

Runner AddServerCommand(CLI::App& app) {
  auto cfg = std::make_shared<server::ServerConfig>();
  cfg->http.port = 8787;
  cfg->http.max_connections = 0;  // derived from the open-file limit (server_app.h)
  auto* cmd = app.add_subcommand("server", "Run the Cohort server (HTTP API and web UI)");
  cmd->add_option("--address", cfg->http.address, "Address to bind (use 0.0.0.0 for all)")
      ->envname("COHORT_ADDRESS")
      ->capture_default_str();
  cmd->add_option("--port", cfg->http.port, "TCP port; 0 picks a free one")
      ->envname("COHORT_PORT")
      ->capture_default_str();
  cmd->add_option("--data-dir", cfg->data_dir,
                  "Data directory (default: $XDG_DATA_HOME/cohort/server or "
                  "~/.local/share/cohort/server)")
      ->envname("COHORT_DATA_DIR");
  cmd->add_option("--store", cfg->store_url,
                  "Store URL: sqlite:///path/cohort.db (default: <data-dir>/cohort.db) or "
                  "postgresql://user@host/db")
      ->envname("COHORT_STORE");
  cmd->add_option("--blob-dir", cfg->blob_dir,
                  "Directory of artifact files (the blob store; default: <data-dir>/blobs). "
                  "Servers sharing one PostgreSQL store must share it too: on one, this or "
                  "--blob-s3-* is required")
      ->envname("COHORT_BLOB_DIR");
  AddBlobS3Options(cmd, &cfg->blob_s3);
  cmd->add_option("--ui-dir", cfg->ui_dir,
                  "Directory of the built web UI (default: found "
                  "next to the binary)")
      ->envname("COHORT_UI_DIR");
  cmd->add_option("--entity", cfg->entity,
                  "Entity of the admin key created at first start (default: your user name)")
      ->envname("COHORT_ENTITY");
  cmd->add_option("--io-threads", cfg->http.io_threads, "Threads parsing HTTP")
      ->envname("COHORT_IO_THREADS")
      ->capture_default_str();
  cmd->add_option("--worker-threads", cfg->http.worker_threads,
                  "Threads running handlers of writes (POST, PUT, PATCH, DELETE)")
      ->envname("COHORT_WORKER_THREADS")
      ->capture_default_str();
  cmd->add_option("--read-threads", cfg->http.read_threads,
                  "Threads running handlers of GET and HEAD (queries never wait behind writes)")
      ->envname("COHORT_READ_THREADS")
      ->capture_default_str();
  cmd->add_option("--max-connections", cfg->http.max_connections,
                  "Concurrent connections; more get 503 (default: 20000, or the open-file limit "
                  "minus 64 when that is lower)")
      ->envname("COHORT_MAX_CONNECTIONS");
  cmd->add_option("--max-body-bytes", cfg->http.max_body_bytes,
                  "Largest request body; larger get 413")
      ->envname("COHORT_MAX_BODY_BYTES")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes-in-flight", cfg->http.max_body_bytes_in_flight,
                  "Request bodies of 16 KiB or more being received or handled, all connections "
                  "together (declared lengths); beyond: 503 + Retry-After")
      ->envname("COHORT_MAX_BODY_BYTES_IN_FLIGHT")
      ->capture_default_str();
  cmd->add_option("--max-response-bytes-in-flight", cfg->http.max_response_bytes_in_flight,
                  "Downloads being sent, all connections together (8 MiB each); beyond: a new "
                  "one waits up to 5 s, then 503 + Retry-After")
      ->envname("COHORT_MAX_RESPONSE_BYTES_IN_FLIGHT")
      ->capture_default_str();
  cmd->add_option("--max-artifact-file-bytes", cfg->limits.max_artifact_file_bytes,
                  "Largest file of an artifact version (uploads, commits and W&B uploads of a "
                  "bigger one are refused with 413 naming the file)")
      ->envname("COHORT_MAX_ARTIFACT_FILE_BYTES")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--max-media-file-bytes", cfg->limits.max_media_file_bytes,
                  "Largest media file (image, audio, video, html, table) a batch may name; a "
                  "row naming a bigger one is refused, the rest of its batch stored")
      ->envname("COHORT_MAX_MEDIA_FILE_BYTES")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--max-media-per-step", cfg->limits.max_media_per_step,
                  "Media of one key at one step of one writer (a list of images is one set); "
                  "the rows beyond are refused, the rest of their batch stored")
      ->envname("COHORT_MAX_MEDIA_PER_STEP")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--max-run-media-bytes", cfg->limits.max_run_media_bytes,
                  "Bytes of media one run may hold, all writers together (beyond: a batch's media "
                  "rows are refused, the rest of it stored)")
      ->envname("COHORT_MAX_RUN_MEDIA_BYTES")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--max-answer-points", cfg->limits.max_answer_points,
                  "Points and buckets one history or system read may answer, all its series "
                  "and runs together (beyond: 413 naming the bound)")
      ->envname("COHORT_MAX_ANSWER_POINTS")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--signing-key-file", cfg->signing_key_file,
                  "Keys signing upload URLs, one a line, the first signs (default: "
                  "<data-dir>/signing.key, made at first start); COHORT_SIGNING_KEYS "
                  "(comma-separated) takes precedence")
      ->envname("COHORT_SIGNING_KEY_FILE");
  cmd->add_option("--idle-timeout", cfg->http.idle_timeout_seconds,
                  "Seconds before an idle keep-alive connection is closed")
      ->envname("COHORT_IDLE_TIMEOUT")
      ->capture_default_str();
  cmd->add_option("--request-timeout", cfg->http.request_timeout_seconds,
                  "Seconds a request may take to arrive whole (slow senders are cut off)")
      ->envname("COHORT_REQUEST_TIMEOUT")
      ->capture_default_str();
  cmd->add_option("--max-header-bytes", cfg->http.max_header_bytes,
                  "Largest request header section; larger get 431")
      ->envname("COHORT_MAX_HEADER_BYTES")
      ->capture_default_str();
  cmd->add_option("--max-keys-per-batch", cfg->limits.max_keys_per_batch,
                  "Distinct metric keys in one ingest batch; more get 413")
      ->envname("COHORT_MAX_KEYS_PER_BATCH")
      ->capture_default_str();
  cmd->add_option("--heartbeat-timeout", cfg->heartbeat_timeout_s,
                  "Seconds without heartbeat after which a running writer is marked crashed")
      ->envname("COHORT_HEARTBEAT_TIMEOUT")
      ->capture_default_str();
  cmd->add_option("--batch-retention-days", cfg->batch_retention_days,
                  "Days to keep the exactly-once records of stored batches (0: forever)")
      ->envname("COHORT_BATCH_RETENTION_DAYS")
      ->capture_default_str();
  cmd->add_option("--sweep-interval", cfg->sweep_interval_s,
                  "Seconds between checks for stale heartbeats")
      ->envname("COHORT_SWEEP_INTERVAL")
      ->capture_default_str();
  cmd->add_option("--limits", cfg->limits_file,
                  "JSON file of rate-limit tiers and entity assignments (docs/operations.md)")
      ->envname("COHORT_LIMITS_FILE");
  cmd->add_option("--default-tier", cfg->default_tier,
                  "Rate-limit tier of entities the limits file does not name (default: "
                  "enterprise, unlimited)")
      ->envname("COHORT_DEFAULT_TIER");
  cmd->add_option("--public-url", cfg->public_url,
                  "The web UI's public address (http(s)://host[:port][/path]) for the run links "
                  "in alert webhook payloads (default: the address the server listens on)")
      ->envname("COHORT_PUBLIC_URL");
  cmd->add_flag("--webhook-allow-private", cfg->webhook_allow_private,
                "Let alert webhooks call loopback, private, link-local and other non-public "
                "addresses (refused by default: a project admin could reach this host's and "
                "network's internal services)")
      ->envname("COHORT_WEBHOOK_ALLOW_PRIVATE");
  cmd->add_option("--webhook-timeout", cfg->webhook_timeout_s,
                  "Seconds an alert webhook call may take (a delivery's claim lasts 6 times that)")
      ->envname("COHORT_WEBHOOK_TIMEOUT")
      ->check(CLI::Range(0.1, 300.0))
      ->capture_default_str();
  auto list_routes = std::make_shared<bool>(false);
  cmd->add_flag("--list-routes", *list_routes,
                "Print every route (METHOD PATTERN, one a line) and exit; the security tests "
                "enumerate the API with it");
  cmd->add_flag("!--no-user-config", cfg->write_user_config,
                "Do not write the admin key made at first start to the user's config file (it is "
                "shown instead: on a terminal, else in <data-dir>/admin-key)");

  return [cmd, cfg, list_routes]() -> int {
    if (!cmd->parsed()) return -1;
    if (*list_routes) {
      for (const auto& [method, pattern] : server::ServerApp::RouteTable()) {
        std::printf("%s %s\n", method.c_str(), pattern.c_str());
      }
      return 0;
    }
    if (cfg->ui_dir.empty()) cfg->ui_dir = FindUiDir();
    // Signals are handled by a dedicated thread so that shutdown is orderly.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);

    KeepFreedMemory();
    server::ServerApp app(*cfg);
    Status s = app.Start();
    if (!s.ok()) {
      std::fprintf(stderr, "cohort server: %s\n", s.ToString().c_str());
      return 1;
    }
    const std::string data_dir = app.data_dir();
    std::string ui_line;
    if (app.ui_url().empty()) {
      ui_line = app.ui_home() + " (no login link: no admin key of the entity)";
    } else if (::isatty(STDOUT_FILENO)) {
      ui_line = app.ui_url() + "  (one-time link, valid " +
                std::to_string(api::kLoginTokenLifetime.count()) +
                " minutes; `cohort login-link` makes another)";
    } else {
      ui_line = app.ui_home() + " (one-time login link " +
                ShowSecret(stdout, app.ui_url(), data_dir + "/login-link") + ")";
    }
    std::printf("%s\nOpen the web UI: %s\n", app.url().c_str(), ui_line.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "cohort server: listening on %s (store %s, blobs %s)\n",
                 app.url().c_str(), store::RedactUrl(app.store_url()).c_str(),
                 app.blob_store_name().c_str());
    for (const std::string& note : app.notes()) {
      std::fprintf(stderr, "cohort server: %s\n", note.c_str());
    }
    if (!app.bootstrap_key().empty()) {
      if (app.wrote_user_config()) {
        std::fprintf(stderr,
                     "cohort server: created the admin key and saved it to %s\n"
                     "               (clients on this account use it automatically)\n",
                     UserConfigPath().c_str());
      } else if (!app.user_config_kept().empty()) {
        const std::string shown = ShowSecret(stderr, app.bootstrap_key(), data_dir + "/admin-key");
        std::fprintf(stderr,
                     "cohort server: created the admin key %s\n"
                     "               (not saved to the user config: %s; shown once;\n"
                     "               `cohort login --host %s KEY` points this account's "
                     "clients here)\n",
                     shown.c_str(), app.user_config_kept().c_str(), app.url().c_str());
      } else {
        std::fprintf(stderr,
                     "cohort server: created the admin key %s\n"
                     "               (not saved to the user config: --no-user-config; shown "
                     "once)\n",
                     ShowSecret(stderr, app.bootstrap_key(), data_dir + "/admin-key").c_str());
      }
    }
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&set, &sig);
      std::fprintf(stderr, "cohort server: signal %d, shutting down\n", sig);
      app.Stop();
    });
    app.Wait();
    app.Stop();
    // Wake the waiter if the server stopped for another reason.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    return 0;
  };
}

}  // namespace cohort::cli
