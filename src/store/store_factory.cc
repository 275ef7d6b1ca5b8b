// OpenStore: picks a Store backend from a URL.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "store/postgres/pg_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace cohort::store {
namespace {

// Splits "path?opt=a&opt2=b" into the path and SqliteOptions.
Result<SqliteOptions> ParseSqliteTarget(std::string_view target) {
  SqliteOptions options;
  std::string_view query;
  if (size_t q = target.find('?'); q != std::string_view::npos) {
    query = target.substr(q + 1);
    target = target.substr(0, q);
  }
  options.path = std::string(target);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string_view name = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (name == "synchronous" && (value == "full" || value == "FULL")) {
      options.synchronous_full = true;
    } else if (name == "synchronous" && (value == "normal" || value == "NORMAL")) {
      options.synchronous_full = false;
    } else if (name == "group_commit" && (value == "on" || value == "off")) {
      options.group_commit = value == "on";
    } else if (name == "checkpoint" && (value == "background" || value == "inline")) {
      options.background_checkpoints = value == "background";
    } else {
      return Status::InvalidArgument(
          "store url: unknown sqlite option '" + std::string(pair) +
          "' (supported: synchronous=normal|full, group_commit=on|off, "
          "checkpoint=background|inline)");
    }
  }
  if (options.path.empty()) return Status::InvalidArgument("store url: empty sqlite path");
  return options;
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out(url);
  // scheme://user:password@host
  if (size_t scheme = out.find("://"); scheme != std::string::npos) {
    // The user information ends at the last '@': a password may hold '/', '?' or '#' (URLs
    // given with one are malformed, and their errors quote them); an '@' further on (in a
    // query) hides more than the password, never less.
    const size_t start = scheme + 3;
    const size_t at = out.rfind('@');
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ...?password=secret&...
  for (size_t q = out.find('?'); q != std::string::npos && q < out.size();) {
    const size_t name = q + 1;
    const size_t amp = std::min(out.find('&', name), out.size());
    constexpr std::string_view kPassword = "password=";
    if (std::string_view(out).substr(name, kPassword.size()) == kPassword) {
      out.replace(name + kPassword.size(), amp - name - kPassword.size(), "***");
    }
    q = out.find('&', name);
  }
  return out;
}

bool IsSharedStoreUrl(std::string_view url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

namespace {

// The SQLite target of a store URL that is not PostgreSQL's: sqlite:///abs/path.db ->
// /abs/path.db, sqlite://relative.db -> relative.db, a plain path as it is. Another scheme (a
// misspelled postgersql://user:password@...) is refused with the URL redacted: never printed as
// a file name.
Result<std::string_view> SqliteTargetOf(std::string_view url) {
  if (url.starts_with("sqlite://")) return url.substr(9);
  if (url.find("://") != std::string_view::npos) {
    return Status::InvalidArgument("store url '" + RedactUrl(url) +
                                   "': unknown scheme (use sqlite:///path.db or "
                                   "postgresql://user:password@host:port/db)");
  }
  return url;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(const std::string& url) {
  std::string_view target = url;
  if (IsSharedStoreUrl(target)) {
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> store, PostgresStore::OpenUrl(url));
    return std::unique_ptr<Store>(std::move(store));
  }
  COHORT_ASSIGN_OR_RETURN(target, SqliteTargetOf(url));
  COHORT_ASSIGN_OR_RETURN(SqliteOptions options, ParseSqliteTarget(target));
  std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return Status::IOError("store: cannot create directory " + parent.string() + ": " +
                             ec.message());
    }
    ::chmod(parent.c_str(), 0700);  // it will hold the database
  }
  // A new database file is private (0600); SQLite gives its -wal and -shm files the mode of the
  // database file.
  if (int fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      fd >= 0) {
    ::close(fd);
  } else if (errno != EEXIST) {
    return Status::IOError("store: cannot create " + options.path + ": " + std::strerror(errno));
  }
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, SqliteStore::Open(options));
  return std::unique_ptr<Store>(std::move(store));
}

Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& url, std::string_view what) {
  const std::string hint = std::string(what) +
                           ": give the servers' store (--store, or the --data-dir of a server "
                           "that ran)";
  if (!IsSharedStoreUrl(url)) {
    COHORT_ASSIGN_OR_RETURN(std::string_view target, SqliteTargetOf(url));
    const std::string path(target.substr(0, target.find('?')));
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return Status::NotFound("no store at " + RedactUrl(path) + " (no such SQLite file); " + hint);
    }
  }
  std::unique_ptr<Store> store;
  if (IsSharedStoreUrl(url)) {
    // A database without Cohort's tables is refused before anything is created in it.
    COHORT_ASSIGN_OR_RETURN(pg::PostgresOptions options, pg::ParsePostgresUrl(url));
    options.create_schema = false;
    Result<std::unique_ptr<PostgresStore>> pg_store = PostgresStore::Open(options);
    if (!pg_store.ok()) {
      return Status(pg_store.status().code(), pg_store.status().message() + "; " + hint);
    }
    store = std::move(*pg_store);
  } else {
    COHORT_ASSIGN_OR_RETURN(store, OpenStore(url));
  }
  COHORT_ASSIGN_OR_RETURN(int64_t keys, store->CountApiKeys(/*with_revoked=*/true));
  if (keys == 0) {
    return Status::FailedPrecondition("the store " + RedactUrl(url) +
                                      " holds no API key: no server ran on it; " + hint);
  }
  return store;
}

}  // namespace cohort::store
