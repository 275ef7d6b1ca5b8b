#include "core/user_config.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/ids.h"
#include "core/json.h"

namespace cohort {
namespace {

std::string HomeDir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/tmp";
}

}  // namespace

std::string UserConfigPath() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) {
    return std::string(x) + "/cohort/config.json";
  }
  return HomeDir() + "/.config/cohort/config.json";
}

std::string UserDataDir() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/cohort";
  return HomeDir() + "/.local/share/cohort";
}

std::string UserCacheDir() {
  if (const char* c = std::getenv("COHORT_CACHE_DIR"); c && *c) {
    std::string dir = c;
    if (dir == "~" || dir.starts_with("~/")) dir = HomeDir() + dir.substr(1);
    std::error_code ec;
    if (!dir.starts_with("/")) {
      const std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
      if (!ec) dir = absolute.lexically_normal().string();
    }
    return dir;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/cohort";
  return HomeDir() + "/.cache/cohort";
}

Result<UserConfig> LoadUserConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return UserConfig{};
  std::stringstream ss;
  ss << in.rdbuf();
  auto v = json::Parse(ss.str());
  if (!v.ok() || !v->is_object()) {
    return Status::InvalidArgument(path + ": not a JSON object; fix or delete it");
  }
  UserConfig c;
  const auto& o = v->as_object();
  if (auto* u = o.if_contains("base_url"); u && u->is_string()) c.base_url = u->get_string();
  if (auto* k = o.if_contains("api_key"); k && k->is_string()) c.api_key = k->get_string();
  return c;
}

Status SaveUserConfig(const UserConfig& config, const std::string& path) {
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create " + dir.string() + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  std::string body = json::Serialize(boost::json::object{{"base_url", config.base_url},
                                                         {"api_key", config.api_key}});
  body += "\n";
  std::string tmp = path + ".tmp." + ids::RandomHex(4);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("cannot write " + tmp + ": " + std::strerror(errno));
  bool ok = ::write(fd, body.data(), body.size()) == ssize_t(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace cohort
