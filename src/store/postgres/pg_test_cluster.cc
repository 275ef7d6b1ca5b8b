#include "store/postgres/pg_test_cluster.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "store/postgres/pg_conn.h"

namespace cohort::store::pg {
namespace {

namespace fs = std::filesystem;

// $COHORT_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin with pg_ctl.
std::string FindBinDir() {
  if (const char* env = std::getenv("COHORT_PG_BIN"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  int best = -1;
  std::string out;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    const int version = std::atoi(name.c_str());
    if (version > best && fs::exists(entry.path() / "bin" / "pg_ctl", ec)) {
      best = version;
      out = (entry.path() / "bin").string();
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<PgTestCluster>> PgTestCluster::Start(const Options& options) {
  std::unique_ptr<PgTestCluster> c(new PgTestCluster());
  c->bin_dir_ = FindBinDir();
  if (c->bin_dir_.empty()) {
    return Status::Unavailable(
        "no PostgreSQL server programs (set COHORT_PG_BIN or install "
        "postgresql)");
  }
  std::string tmpl = (fs::temp_directory_path() / "cohort-pg-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return Status::IOError("mkdtemp failed");
  c->dir_ = tmpl;
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) return Status::Unavailable("running as root but there is no postgres user");
    if (chown(c->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return Status::IOError("cannot chown " + c->dir_ + " to postgres");
    }
  }
  std::random_device rd;
  c->port_ = 20000 + int(rd() % 40000);

  const std::string data = c->dir_ + "/data";
  if (c->RunPgProgram("initdb", {"-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                                 "--locale=C", "--no-sync"}) != 0) {
    return Status::Unavailable("initdb failed: " + c->LogTail());
  }
  std::string server_opts =
      "-k " + c->dir_ + " -p " + std::to_string(c->port_) +
      " -c listen_addresses='' -c max_connections=" + std::to_string(options.max_connections);
  if (!options.durable) server_opts += " -c fsync=off -c full_page_writes=off";
  if (c->RunPgProgram("pg_ctl", {"-D", data, "-w", "-t", "60", "-l", c->dir_ + "/server.log", "-o",
                                 server_opts, "start"}) != 0) {
    return Status::Unavailable("pg_ctl start failed: " + c->LogTail());
  }
  c->started_ = true;
  return c;
}

PgTestCluster::~PgTestCluster() {
  if (started_) {
    RunPgProgram("pg_ctl", {"-D", dir_ + "/data", "-w", "-t", "60", "-m", "fast", "stop"});
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

int PgTestCluster::RunPgProgram(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (geteuid() == 0) argv = {"runuser", "-u", "postgres", "--"};
  argv.push_back(bin_dir_ + "/" + program);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir_ + "/programs.log";
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // The child: cwd / (initdb must be able to return to it as postgres), output to the log.
    if (chdir("/") != 0) _exit(126);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string PgTestCluster::LogTail() const {
  std::string out;
  for (const char* name : {"/programs.log", "/server.log"}) {
    std::ifstream in(dir_ + name);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.size() > 1500) text = text.substr(text.size() - 1500);
    out += text;
  }
  return out;
}

std::string PgTestCluster::Url(const std::string& db, const std::string& extra_query) const {
  std::string url =
      "postgresql://postgres@/" + db + "?host=" + dir_ + "&port=" + std::to_string(port_);
  if (!extra_query.empty()) url += "&" + extra_query;
  return url;
}

Status PgTestCluster::Exec(const std::string& db, const std::string& sql) {
  ConnInfo info = {
      {"host", dir_}, {"port", std::to_string(port_)}, {"user", "postgres"}, {"dbname", db}};
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn, Conn::Connect(info));
  return conn->ExecScript(sql);
}

Status PgTestCluster::CreateDatabase(const std::string& name) {
  return Exec("postgres", "CREATE DATABASE \"" + name + "\"");
}

Status PgTestCluster::DropDatabase(const std::string& name) {
  return Exec("postgres", "DROP DATABASE IF EXISTS \"" + name + "\" WITH (FORCE)");
}

}  // namespace cohort::store::pg
