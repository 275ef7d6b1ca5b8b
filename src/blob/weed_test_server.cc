#include "blob/weed_test_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "blob/s3_client.h"

namespace cohort::blob {
namespace {

namespace fs = std::filesystem;

// Whether a TCP port can be bound on 127.0.0.1 now.
bool PortFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// Four ports P such that P and P + 10000 (weed's gRPC twin) are free.
std::vector<int> FreePorts() {
  std::random_device rd;
  std::vector<int> ports;
  while (ports.size() < 4) {
    int p = 20000 + int(rd() % 25000);
    bool taken = false;
    for (int q : ports) taken = taken || q == p;
    if (!taken && PortFree(p) && PortFree(p + 10000)) ports.push_back(p);
  }
  return ports;
}

}  // namespace

Result<std::string> WeedServerForTest::FindBinary() {
  if (const char* env = std::getenv("COHORT_WEED"); env != nullptr && *env != '\0') {
    if (access(env, X_OK) == 0) return std::string(env);
    return Status::NotFound(std::string("COHORT_WEED=") + env + " is not an executable");
  }
  std::string cache;
  if (const char* c = std::getenv("COHORT_CACHE_DIR"); c != nullptr && *c != '\0') {
    cache = c;
  } else if (const char* home = std::getenv("HOME"); home != nullptr) {
    cache = std::string(home) + "/.cache/cohort";
  }
  const std::string bin = cache + "/weed/weed";
  if (access(bin.c_str(), X_OK) == 0) return bin;
  return Status::NotFound("SeaweedFS weed is not built (" + bin +
                          "): run scripts/build-weed.sh, or set COHORT_WEED");
}

Result<std::unique_ptr<WeedServerForTest>> WeedServerForTest::Start() {
  COHORT_ASSIGN_OR_RETURN(std::string bin, FindBinary());
  std::unique_ptr<WeedServerForTest> w(new WeedServerForTest());
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/cohort_weed_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return Status::IOError("mkdtemp " + tmpl);
  w->dir_ = tmpl;
  fs::create_directories(w->dir_ + "/data");
  {
    std::ofstream json(w->dir_ + "/s3.json");
    json << R"({"identities":[{"name":"test","credentials":[{"accessKey":"cohort-test",)"
         << R"("secretKey":"cohort-test-secret"}],)"
         << R"("actions":["Admin","Read","Write","List","Tagging"]}]})";
  }
  const std::vector<int> p = FreePorts();
  w->endpoint_ = "http://127.0.0.1:" + std::to_string(p[3]);
  std::vector<std::string> argv = {bin,
                                   "server",
                                   "-dir=" + w->dir_ + "/data",
                                   "-ip=127.0.0.1",
                                   "-ip.bind=127.0.0.1",
                                   "-master.port=" + std::to_string(p[0]),
                                   "-master.volumeSizeLimitMB=1024",
                                   "-volume.max=0",
                                   "-volume.port=" + std::to_string(p[1]),
                                   "-filer.port=" + std::to_string(p[2]),
                                   "-s3",
                                   "-s3.port=" + std::to_string(p[3]),
                                   "-s3.config=" + w->dir_ + "/s3.json"};
  const std::string log = w->dir_ + "/weed.log";
  pid_t pid = fork();
  if (pid < 0) return Status::IOError("fork");
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  w->pid_ = pid;
  // Ready when a signed listing of a bucket answers (made then, so weed's filer is up).
  S3Client probe(w->Config("cohort-probe"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  Status last;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      w->pid_ = -1;
      return Status::Unavailable("weed exited at start: " + w->LogTail());
    }
    last = probe.CheckOrCreateBucket();
    if (last.ok()) return w;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling a condition
  }
  return Status::Unavailable("weed did not answer within 90 s (" + last.ToString() +
                             "): " + w->LogTail());
}

WeedServerForTest::~WeedServerForTest() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (!dir_.empty() && std::getenv("COHORT_KEEP_WEED_DIR") == nullptr) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

S3Config WeedServerForTest::Config(const std::string& bucket, const std::string& prefix) const {
  S3Config c;
  c.endpoint = endpoint_;
  c.bucket = bucket;
  c.prefix = prefix;
  c.access_key = "cohort-test";
  c.secret_key = "cohort-test-secret";
  return c;
}

std::string WeedServerForTest::LogTail() const {
  std::ifstream in(dir_ + "/weed.log");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > 2000) text = text.substr(text.size() - 2000);
  return text;
}

}  // namespace cohort::blob
