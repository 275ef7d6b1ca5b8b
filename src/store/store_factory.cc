// OpenStore: picks a Store backend from a URL.
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

Result<std::unique_ptr<Store>> OpenStore(const std::string& url) {
  std::string_view target = url;
  if (target.starts_with("postgresql://") || target.starts_with("postgres://")) {
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> store, PostgresStore::OpenUrl(url));
    return std::unique_ptr<Store>(std::move(store));
  }
  if (target.starts_with("sqlite://")) {
    // sqlite:///abs/path.db -> /abs/path.db; sqlite://relative.db -> relative.db
    target.remove_prefix(9);
  } else if (target.find("://") != std::string_view::npos) {
    return Status::InvalidArgument("store url '" + url +
                                   "': unknown scheme (use sqlite:///path.db or postgresql://)");
  }
  COHORT_ASSIGN_OR_RETURN(SqliteOptions options, ParseSqliteTarget(target));
  std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return Status::IOError("store: cannot create directory " + parent.string() + ": " +
                             ec.message());
    }
  }
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, SqliteStore::Open(options));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cohort::store
