// What only the S3 backend does: its SigV4 signature, its settings' checks, its errors with bad
// credentials, and refusing to publish a part replaced after it was verified. The BlobStore
// contract itself runs on both backends in blob_store_test.cc.
#include "blob/s3_blob_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "blob/s3_client.h"
#include "blob/weed_test_server.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/sha256.h"

namespace cohort::blob {
namespace {

// The example of AWS's "Signature Calculations for the Authorization Header" (GET Object with a
// Range, us-east-1, 20130524T000000Z); the signature is the one AWS documents.
TEST(S3SigV4Test, MatchesAwsDocumentedExample) {
  const std::string empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  std::vector<std::pair<std::string, std::string>> headers = {
      {"host", "examplebucket.s3.amazonaws.com"},
      {"range", "bytes=0-9"},
      {"x-amz-content-sha256", empty},
      {"x-amz-date", "20130524T000000Z"}};
  const std::string auth =
      sigv4::Authorization("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                           "us-east-1", "20130524T000000Z", "GET", "/test.txt", "", headers, empty);
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(sigv4::UriEncode("a b/c~d", true), "a%20b/c~d");
  EXPECT_EQ(sigv4::UriEncode("a b/c", false), "a%20b%2Fc");
}

// libcurl sends no default port in the Host header: the signed host must match it.
TEST(S3SigV4Test, TheSignedHostLeavesTheDefaultPortOut) {
  EXPECT_EQ(sigv4::HostHeader("http://127.0.0.1:80"), "127.0.0.1");
  EXPECT_EQ(sigv4::HostHeader("https://minio.internal:443"), "minio.internal");
  EXPECT_EQ(sigv4::HostHeader("http://minio.internal:443"), "minio.internal:443");
  EXPECT_EQ(sigv4::HostHeader("https://minio.internal:8443"), "minio.internal:8443");
  EXPECT_EQ(sigv4::HostHeader("http://[::1]:80"), "[::1]");
  EXPECT_EQ(sigv4::HostHeader("http://host:8080/"), "host:8080");
  EXPECT_EQ(sigv4::HostHeader("http://host"), "host");
}

TEST(S3ConfigTest, MissingOrMalformedSettingsAreNamed) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.bucket = "b";
  c.access_key = "a";
  c.secret_key = "s";
  EXPECT_TRUE(CheckS3Config(c).ok());
  S3Config no_scheme = c;
  no_scheme.endpoint = "127.0.0.1:9000";
  EXPECT_NE(CheckS3Config(no_scheme).message().find("--blob-s3-endpoint"), std::string::npos);
  S3Config with_path = c;
  with_path.endpoint = "http://host/bucket";
  EXPECT_NE(CheckS3Config(with_path).message().find("without a path"), std::string::npos);
  S3Config no_bucket = c;
  no_bucket.bucket = "";
  EXPECT_NE(CheckS3Config(no_bucket).message().find("--blob-s3-bucket"), std::string::npos);
  S3Config no_secret = c;
  no_secret.secret_key = "";
  Status s = CheckS3Config(no_secret);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("COHORT_S3_SECRET_KEY"), std::string::npos);
}

TEST(S3ConfigTest, AnEndpointNobodyAnswersIsNamed) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.bucket = "b";
  c.access_key = "a";
  c.secret_key = "s";
  auto opened = OpenS3BlobStore(c);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(opened.status().message().find("http://127.0.0.1:1"), std::string::npos)
      << opened.status().message();
  EXPECT_NE(opened.status().message().find("--blob-s3-endpoint"), std::string::npos);
}

class S3BlobStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = WeedServerForTest::Start();
    if (!started.ok()) {
      why_not_ = new std::string(started.status().ToString());
      return;
    }
    weed_ = started->release();
  }
  static void TearDownTestSuite() {
    delete weed_;
    weed_ = nullptr;
  }
  void SetUp() override {
    if (weed_ == nullptr) {
      std::printf("SKIPPED the S3 backend: %s\n", why_not_->c_str());
      GTEST_SKIP() << "the S3 backend: " << *why_not_;
    }
  }
  static WeedServerForTest* weed_;
  static std::string* why_not_;
};
WeedServerForTest* S3BlobStoreTest::weed_ = nullptr;
std::string* S3BlobStoreTest::why_not_ = nullptr;

TEST_F(S3BlobStoreTest, BadCredentialsAreNamedAndTheSecretIsNot) {
  S3Config c = weed_->Config("blob-test");
  c.secret_key = "not-the-secret";
  auto opened = OpenS3BlobStore(c);
  ASSERT_FALSE(opened.ok());
  const std::string& m = opened.status().message();
  EXPECT_NE(m.find("403"), std::string::npos) << m;
  EXPECT_NE(m.find("SignatureDoesNotMatch"), std::string::npos) << m;
  EXPECT_NE(m.find("COHORT_S3_SECRET_KEY"), std::string::npos) << m;
  EXPECT_EQ(m.find("not-the-secret"), std::string::npos) << m;
  c = weed_->Config("blob-test");
  c.access_key = "nobody";
  opened = OpenS3BlobStore(c);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("InvalidAccessKeyId"), std::string::npos)
      << opened.status().message();
}

TEST_F(S3BlobStoreTest, TheBucketIsMadeWhenMissingAndBlobsLiveUnderThePrefix) {
  auto opened = OpenS3BlobStore(weed_->Config("made-at-open", "team/cohort"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const std::string data = "hello";
  const std::string sha = Sha256::Hex(data);
  ASSERT_TRUE((*opened)->PutPart(sha, data.size(), 0, data).ok());
  auto verified = (*opened)->Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE((*verified)->Publish().ok());
  S3Client raw(weed_->Config("made-at-open"));
  auto size = raw.HeadObject("team/cohort/sha256/" + sha.substr(0, 2) + "/" + sha);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, data.size());
  EXPECT_EQ((*opened)->Describe(), "s3 " + weed_->endpoint() + "/made-at-open/team/cohort/");
}

TEST_F(S3BlobStoreTest, APartReplacedAfterVerificationIsNotPublished) {
  auto opened = OpenS3BlobStore(weed_->Config("blob-test", "replaced"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  BlobStore& store = **opened;
  const std::string data(1000, 'a');
  const std::string sha = Sha256::Hex(data);
  ASSERT_TRUE(store.PutPart(sha, data.size(), 0, data).ok());
  auto verified = store.Verify(sha, data.size());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  ASSERT_TRUE(store.PutPart(sha, data.size(), 0, std::string(1000, 'b')).ok());
  Status published = (*verified)->Publish();
  EXPECT_EQ(published.code(), StatusCode::kFailedPrecondition) << published.ToString();
  EXPECT_EQ(store.Stat(sha).status().code(), StatusCode::kNotFound);
}

// A multipart upload of the bucket left open under the prefix (a publication's Compose cut by a
// crash, an abort that failed) keeps its parts stored, and billed, until aborted: the sweep of
// idle uploads aborts those begun before its cutoff, and no other.
TEST_F(S3BlobStoreTest, MultipartUploadsLeftOpenAreAbortedOnceIdle) {
  auto opened = OpenS3BlobStore(weed_->Config("multipart-test", "pre"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  S3Client raw(weed_->Config("multipart-test"));
  auto ours = raw.CreateMultipartUpload("pre/sha256/ab/left-open");
  auto other = raw.CreateMultipartUpload("elsewhere/big");
  auto not_ours = raw.CreateMultipartUpload("pre/someone-else/big");  // under the prefix too
  ASSERT_TRUE(ours.ok() && other.ok() && not_ours.ok()) << ours.status().ToString();
  auto pending = [&](const std::string& prefix) {
    std::vector<std::string> ids;
    EXPECT_TRUE(raw.ListMultipartUploads(prefix,
                                         [&](const S3Client::PendingMultipart& u) {
                                           EXPECT_GT(u.initiated_ms, 0) << u.key;
                                           ids.push_back(u.upload_id);
                                           return Status::Ok();
                                         })
                    .ok());
    return ids;
  };
  ASSERT_EQ(pending("pre/sha256/"), std::vector<std::string>{*ours});
  // Begun within the grace period: a publication may still be running.
  EXPECT_EQ(*(*opened)->DropUploadsIdleSince(NowMillis() - 3'600'000), 0);
  EXPECT_EQ(pending("pre/sha256/"), std::vector<std::string>{*ours});
  auto dropped = (*opened)->DropUploadsIdleSince(NowMillis() + 3'600'000);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 1);
  EXPECT_TRUE(pending("pre/sha256/").empty());
  // Keys this store never composes are not its to abort, under its prefix or not.
  EXPECT_EQ(pending("pre/someone-else/"), std::vector<std::string>{*not_ours});
  EXPECT_EQ(pending("elsewhere/"), std::vector<std::string>{*other});
  EXPECT_TRUE(raw.AbortMultipartUpload("elsewhere/big", *other).ok());
  EXPECT_TRUE(raw.AbortMultipartUpload("pre/someone-else/big", *not_ours).ok());
}

// Verification hashes the parts through StreamRange: the bytes of the range, in order, in
// pieces of libcurl's receive buffer (never the whole range in one string, which is what keeps
// the server's memory flat while it verifies an upload).
TEST_F(S3BlobStoreTest, StreamRangeHandsOutTheRangeInSmallPiecesInOrder) {
  S3Client s3(weed_->Config("blob-test"));
  ASSERT_TRUE(s3.CheckOrCreateBucket().ok());
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char((i * 131 + i / 7) & 0xff);
  ASSERT_TRUE(s3.PutObject("streamed/object", data).ok());
  struct Case {
    uint64_t offset, length;
  };
  for (Case c : {Case{0, data.size() + 1}, Case{12345, 2 << 20}, Case{data.size() - 10, 100},
                 Case{data.size() + 5, 10}}) {
    std::string got;
    size_t largest = 0;
    int restarts = 0;
    std::string etag;
    auto streamed = s3.StreamRange(
        "streamed/object", c.offset, c.length,
        [&] {
          ++restarts;
          got.clear();
        },
        [&](std::string_view piece) {
          largest = std::max(largest, piece.size());
          got.append(piece);
        },
        &etag);
    ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
    const std::string want =
        c.offset >= data.size() ? std::string() : data.substr(c.offset, c.length);
    EXPECT_EQ(*streamed, want.size()) << c.offset;
    EXPECT_TRUE(got == want) << c.offset << ": " << got.size() << " bytes, not " << want.size();
    EXPECT_GE(restarts, 1);
    EXPECT_LE(largest, size_t(1) << 20) << "the range was held whole before it was handed out";
    if (!want.empty()) {
      EXPECT_FALSE(etag.empty());
    }
  }
  auto missing = s3.StreamRange(
      "streamed/none", 0, 10, [] {}, [](std::string_view) {});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
}

// An HTTP server on loopback that answers its connections, one after the other, with the given
// raw answers (each sent as it is, then the connection closed): a scripted object store.
class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(fd_, 8) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (const std::string& answer : answers_) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::string request;
        char buf[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::read(c, buf, sizeof(buf));
          if (n <= 0) break;
          request.append(buf, size_t(n));
        }
        for (size_t sent = 0; sent < answer.size();) {
          ssize_t n = ::send(c, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += size_t(n);
        }
        ::close(c);
      }
    });
  }
  ~ScriptedHttpServer() {
    ::shutdown(fd_, SHUT_RDWR);  // ends an accept still waiting
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  S3Config Config() const {
    return S3Config{.endpoint = "http://127.0.0.1:" + std::to_string(port_),
                    .bucket = "b",
                    .access_key = "k",
                    .secret_key = "s"};
  }

 private:
  std::vector<std::string> answers_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A GET that fails midway is retried, and what its first attempts handed out is taken back
// (`restart`): an object store's error answer (503) never reaches the sink, and a body cut short
// is handed out again from its start by the next attempt. Verification relies on this to hash
// every byte of a part exactly once.
TEST(S3StreamRangeTest, AnAttemptCutMidwayStartsOverAndAnErrorIsNotHandedOut) {
  std::string data(100000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char('a' + i % 26);
  const std::string head =
      "HTTP/1.1 206 Partial Content\r\nContent-Length: " + std::to_string(data.size()) +
      "\r\nETag: \"e1\"\r\nConnection: close\r\n\r\n";
  const std::string slow_down =
      "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>later</Message></Error>";
  ScriptedHttpServer server(
      {"HTTP/1.1 503 Service Unavailable\r\nContent-Length: " + std::to_string(slow_down.size()) +
           "\r\nConnection: close\r\n\r\n" + slow_down,
       head + data.substr(0, 40000),  // then closed: fewer bytes than its Content-Length
       head + data});
  S3Client s3(server.Config());
  std::string got, every_piece;
  int restarts = 0;
  std::string etag;
  auto streamed = s3.StreamRange(
      "part-0", 0, data.size(),
      [&] {
        ++restarts;
        got.clear();
      },
      [&](std::string_view piece) {
        got.append(piece);
        every_piece.append(piece);
      },
      &etag);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(restarts, 3);
  EXPECT_EQ(every_piece.size(), 40000 + data.size());  // the cut attempt's bytes, then all
  EXPECT_EQ(every_piece.find("SlowDown"), std::string::npos);
  EXPECT_EQ(*streamed, data.size());
  EXPECT_TRUE(got == data) << got.size() << " bytes";
  EXPECT_EQ(etag, "\"e1\"");
}

// Credentials that may not list the bucket's multipart uploads (403 AccessDenied) leave them:
// the sweep of idle uploads is not failed for it (cohort gc would exit 1 every night).
TEST(S3StreamRangeTest, UploadsThatMayNotBeListedAreLeftAndTheSweepGoesOn) {
  const std::string denied =
      "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>";
  const std::string refusal =
      "HTTP/1.1 403 Forbidden\r\nContent-Length: " + std::to_string(denied.size()) +
      "\r\nConnection: close\r\n\r\n" + denied;
  const std::string listed =
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>";
  const std::string list_answer =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(listed.size()) +
      "\r\nConnection: close\r\n\r\n" + listed;
  // The bucket's check at open, the store's own parts (none), then the two refused listings.
  ScriptedHttpServer server({list_answer, list_answer, refusal, refusal});
  auto opened = OpenS3BlobStore(server.Config());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto dropped = (*opened)->DropUploadsIdleSince(NowMillis());
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 0);
}

// A server that ignores the Range header answers 200 with the whole object: only the range's
// bytes are handed out.
TEST(S3StreamRangeTest, AServerIgnoringTheRangeHandsOutOnlyTheRange) {
  const std::string data = "0123456789abcdefghij";
  ScriptedHttpServer server({"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(data.size()) +
                             "\r\nConnection: close\r\n\r\n" + data});
  S3Client s3(server.Config());
  std::string got;
  auto streamed = s3.StreamRange(
      "o", 5, 7, [&] { got.clear(); }, [&](std::string_view piece) { got.append(piece); });
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(got, "56789ab");
  EXPECT_EQ(*streamed, 7u);
}

}  // namespace
}  // namespace cohort::blob
