// FindCaBundle: where the agent's TLS peers are verified from when libcurl has no default.
#include "agent/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace cohort::agent {
namespace {

class FindCaBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-ca-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)fs_->RemoveAll(dir_); }

  std::string MakeFile(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    auto file = fs_->NewWritableFile(path, wal::WriteMode::kCreateExclusive);
    EXPECT_TRUE(file.ok());
    EXPECT_TRUE((*file)->Append("-----BEGIN CERTIFICATE-----\n").ok());
    EXPECT_TRUE((*file)->Close().ok());
    return path;
  }

  wal::FileSystem* fs_ = wal::FileSystem::Default();
  std::string dir_;
};

TEST_F(FindCaBundleTest, TakesTheFirstCandidateThatExists) {
  const std::string second = MakeFile("second.pem");
  const std::string third = MakeFile("third.pem");
  const std::string missing = dir_ + "/missing.pem";
  const std::vector<std::string_view> candidates = {missing, second, third};
  EXPECT_EQ(FindCaBundle(*fs_, "", candidates), second);
}

TEST_F(FindCaBundleTest, SslCertFileWinsAndNoneFoundIsEmpty) {
  const std::string present = MakeFile("present.pem");
  const std::string missing = dir_ + "/missing.pem";
  const std::vector<std::string_view> candidates = {present};
  EXPECT_EQ(FindCaBundle(*fs_, "/custom/ca.pem", candidates), "/custom/ca.pem");
  const std::vector<std::string_view> none = {missing};
  EXPECT_EQ(FindCaBundle(*fs_, "", none), "");
}

// Answers one request on 127.0.0.1 with `answer`'s bytes, then closes the connection.
class OneAnswerServer {
 public:
  explicit OneAnswerServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 4);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    thread_ = std::thread([this] {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, size_t(n));
      }
      (void)!write(c, answer_.data(), answer_.size());
      close(c);
    });
  }
  ~OneAnswerServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  const std::string& url() const { return url_; }

 private:
  std::string answer_;
  int fd_ = -1;
  std::string url_;
  std::thread thread_;
};

TEST(HttpClientTest, AnAnswerCutAfterItsStatusLineIsATransportFailureNotAnEmptyBody) {
  OneAnswerServer cut("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n");
  HttpClient client(cut.url());
  auto res = client.Request("GET", "/api/v1/viewer", "", "key");
  ASSERT_FALSE(res.ok()) << "status " << res->status << ", body '" << res->body << "'";
  EXPECT_EQ(res.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(res.status().message().find("inside its headers"), std::string::npos)
      << res.status().ToString();
}

TEST(HttpClientTest, AWholeAnswerWithoutABodyIsAnAnswer) {
  OneAnswerServer whole("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
  HttpClient client(whole.url());
  auto res = client.Request("DELETE", "/api/v1/thing", "", "key");
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 204);
  EXPECT_EQ(res->body, "");
}

}  // namespace
}  // namespace cohort::agent
