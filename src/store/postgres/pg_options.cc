#include "store/postgres/pg_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace cohort::store::pg {
namespace {

Result<int> PositiveInt(std::string_view name, std::string_view value, int max) {
  int v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 1 || v > max) {
    return Status::InvalidArgument("store url: " + std::string(name) + "='" + std::string(value) +
                                   "' is not an integer in [1, " + std::to_string(max) + "]");
  }
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

std::string Get(const ConnInfo& info, std::string_view key) {
  for (const auto& [k, v] : info) {
    if (k == key) return v;
  }
  return "";
}

void Set(ConnInfo* info, const std::string& key, const std::string& value) {
  for (auto& [k, v] : *info) {
    if (k == key) {
      v = value;
      return;
    }
  }
  info->emplace_back(key, value);
}

// The user information of a URL (`user:password` in scheme://user:password@host/...), or "".
std::string_view UserInfo(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  url.remove_prefix(scheme + 3);
  const size_t at = url.rfind('@');
  return at == std::string_view::npos ? std::string_view() : url.substr(0, at);
}

// Whether libpq's quoted `text` can be shown: a name or value made only of letters, digits,
// '_', '.', '-' (an option keyword: `invalid connection option "colour"`) that is no part of
// the URL's user information, or a single character (`"]"`, `"="`).
bool ShowableQuote(std::string_view text, std::string_view user_info) {
  if (text.size() == 1) return true;
  if (text.empty() || user_info.find(text) != std::string_view::npos) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// libpq's parse message without the text it quotes when that may hold a secret (a part of the
// URL, which may be the password: `invalid percent-encoded token: "se%ZZcret"`).
std::string WithoutQuotedText(std::string_view msg, std::string_view user_info) {
  std::string out;
  while (!msg.empty()) {
    const size_t open = msg.find('"');
    const size_t close = open == std::string_view::npos ? open : msg.find('"', open + 1);
    if (close == std::string_view::npos) {
      // An unmatched quote: nothing after it is shown.
      out += msg.substr(0, open);
      break;
    }
    if (ShowableQuote(msg.substr(open + 1, close - open - 1), user_info)) {
      out += msg.substr(0, close + 1);
    } else {
      out += msg.substr(0, open);
      while (!out.empty() && (out.back() == ' ' || out.back() == ':')) out.pop_back();
    }
    msg.remove_prefix(close + 1);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == ':')) {
    out.pop_back();
  }
  return out;
}

// libpq's parse of `url` as keyword/value pairs (only those given).
Result<ConnInfo> LibpqParse(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    std::string msg = err ? err : "out of memory";
    if (err) PQfreemem(err);
    return Status::InvalidArgument("invalid store URL: " + WithoutQuotedText(msg, UserInfo(url)) +
                                   "; check its form: postgresql://user:password@host:port/db");
  }
  ConnInfo info;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && *o->val != '\0') info.emplace_back(o->keyword, o->val);
  }
  PQconninfoFree(opts);
  return info;
}

// read_hosts=h1:p1,h2 -> host=h1,h2 port=p1,<primary's port or 5432>.
Result<ConnInfo> ReadConnInfo(const ConnInfo& primary, std::string_view hosts) {
  std::string default_port = Get(primary, "port");
  if (default_port.empty() || default_port.find(',') != std::string::npos) default_port = "5432";
  std::string host_list, port_list;
  for (std::string_view entry : Split(hosts, ',')) {
    if (entry.empty()) return Status::InvalidArgument("store url: read_hosts has an empty entry");
    // host, host:port, /socket/dir:port, [v6::addr]:port
    std::string_view host = entry, port = default_port;
    if (entry.front() == '[') {
      const size_t close = entry.find(']');
      if (close == std::string_view::npos) {
        return Status::InvalidArgument("store url: read_hosts entry '" + std::string(entry) +
                                       "' lacks ']'");
      }
      host = entry.substr(1, close - 1);
      if (close + 1 < entry.size() && entry[close + 1] == ':') port = entry.substr(close + 2);
    } else if (size_t colon = entry.rfind(':'); colon != std::string_view::npos) {
      host = entry.substr(0, colon);
      port = entry.substr(colon + 1);
    }
    COHORT_RETURN_IF_ERROR(PositiveInt("read_hosts port", port, 65535).status());
    host_list += (host_list.empty() ? "" : ",") + std::string(host);
    port_list += (port_list.empty() ? "" : ",") + std::string(port);
  }
  ConnInfo info;
  for (const auto& [k, v] : primary) {
    if (k != "host" && k != "hostaddr" && k != "port" && k != "target_session_attrs") {
      info.emplace_back(k, v);
    }
  }
  info.emplace_back("host", host_list);
  info.emplace_back("port", port_list);
  return info;
}

}  // namespace

Result<PostgresOptions> ParsePostgresUrl(const std::string& url) {
  std::string_view u = url;
  if (!u.starts_with("postgresql://") && !u.starts_with("postgres://")) {
    return Status::InvalidArgument("store url '" + store::RedactUrl(url) +
                                   "' is not postgresql://...");
  }
  PostgresOptions options;
  std::string libpq_url(u.substr(0, u.find('?')));
  std::string_view read_hosts;
  bool read_pool_given = false;
  if (size_t q = u.find('?'); q != std::string_view::npos) {
    std::string kept;
    for (std::string_view pair : Split(u.substr(q + 1), '&')) {
      if (pair.empty()) continue;
      size_t eq = pair.find('=');
      std::string_view name = pair.substr(0, eq);
      std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
      if (name == "pool_size") {
        COHORT_ASSIGN_OR_RETURN(options.pool_size, PositiveInt(name, value, 1000));
      } else if (name == "read_pool_size") {
        COHORT_ASSIGN_OR_RETURN(options.read_pool_size, PositiveInt(name, value, 1000));
        read_pool_given = true;
      } else if (name == "pool_timeout_ms") {
        COHORT_ASSIGN_OR_RETURN(int ms, PositiveInt(name, value, 3'600'000));
        options.pool_timeout = std::chrono::milliseconds(ms);
      } else if (name == "ingest_cache") {
        if (value != "on" && value != "off") {
          return Status::InvalidArgument("store option ingest_cache: expected on or off, got '" +
                                         std::string(value) + "'");
        }
        options.ingest_cache = value == "on";
      } else if (name == "group_commit") {
        if (value == "0" || value == "off") {
          options.group_commit = 0;
        } else {
          COHORT_ASSIGN_OR_RETURN(options.group_commit, PositiveInt(name, value, 1000));
        }
      } else if (name == "read_hosts") {
        read_hosts = value;
      } else {
        kept += (kept.empty() ? "?" : "&") + std::string(pair);
      }
    }
    libpq_url += kept;
  }
  COHORT_ASSIGN_OR_RETURN(options.conninfo, LibpqParse(libpq_url));
  if (Get(options.conninfo, "fallback_application_name").empty()) {
    Set(&options.conninfo, "fallback_application_name", "cohort");
  }
  // A database that vanishes without closing its connections (a host lost, a partition, some
  // failovers) is noticed within about a minute, not after the kernel's retransmissions (15
  // minutes): a call waiting on a dead socket holds its pooled connection and the writer and run
  // locks it took. Each can be set in the URL instead.
  for (const auto& [key, value] : {std::pair<const char*, const char*>{"keepalives", "1"},
                                   {"keepalives_idle", "30"},
                                   {"keepalives_interval", "10"},
                                   {"keepalives_count", "3"},
                                   {"tcp_user_timeout", "60000"}}) {
    if (Get(options.conninfo, key).empty()) Set(&options.conninfo, key, value);
  }
  if (!read_pool_given) options.read_pool_size = options.pool_size;
  if (!read_hosts.empty()) {
    COHORT_ASSIGN_OR_RETURN(options.read_conninfo, ReadConnInfo(options.conninfo, read_hosts));
  }
  return options;
}

std::string DescribeConnInfo(const ConnInfo& info) {
  std::string out;
  for (const char* key : {"host", "port", "dbname", "user"}) {
    std::string v = Get(info, key);
    if (!v.empty()) out += (out.empty() ? "" : " ") + std::string(key) + "=" + v;
  }
  return out.empty() ? "(libpq defaults)" : out;
}

}  // namespace cohort::store::pg
