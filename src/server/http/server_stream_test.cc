// Streamed request bodies (RouteOptions::stream_body): the handler reads the body as it arrives,
// whatever its size; other routes keep --max-body-bytes; a cut connection is an error the handler
// sees; the in-flight budget counts a streamed body's buffer, not its length.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/http/server.h"
#include "server/http/test_client.h"

namespace cohort::http {
namespace {

constexpr size_t kSmallMaxBody = 1024;

// FNV-1a over bytes, to compare what the handler saw with what was sent.
uint64_t Fnv(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}
constexpr uint64_t kFnvSeed = 14695981039346656037ull;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + i / 7) & 0xff);
  return s;
}

std::string PutHead(const std::string& target, size_t length, const std::string& extra = "") {
  return "PUT " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) +
         "\r\n" + extra + "\r\n";
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteOptions streamed;
    streamed.stream_body = true;
    streamed.streamed_body_memory_bytes = 512 << 10;
    // Reads the whole body; answers "<bytes> <chunks> <largest chunk> <fnv>".
    router_.Add(
        "PUT", "/stream",
        [](HttpRequest& req) {
          uint64_t h = kFnvSeed, bytes = 0, chunks = 0, largest = 0;
          if (req.body_reader == nullptr || !req.body.empty()) {
            return HttpResponse::Error(500, "internal", "no reader");
          }
          while (true) {
            auto chunk = req.body_reader->Next();
            if (!chunk.ok()) return HttpResponse::Error(400, "cut", chunk.status().message());
            if (chunk->empty()) break;
            h = Fnv(h, *chunk);
            bytes += chunk->size();
            chunks += 1;
            largest = std::max<uint64_t>(largest, chunk->size());
          }
          return HttpResponse::Text(200, std::to_string(bytes) + " " + std::to_string(chunks) +
                                             " " + std::to_string(largest) + " " +
                                             std::to_string(h));
        },
        streamed);
    // Reads until the body ends or fails, and reports how it ended to the test.
    router_.Add(
        "PUT", "/watched",
        [this](HttpRequest& req) {
          bool signalled = false;
          while (true) {
            auto chunk = req.body_reader->Next();
            if (!signalled) {
              first_chunk_.set_value(server_->stats().body_bytes_in_flight.load());
              signalled = true;
            }
            if (!chunk.ok()) {
              ended_.set_value(chunk.status());
              return HttpResponse::Error(400, "cut", chunk.status().message());
            }
            if (chunk->empty()) break;
          }
          ended_.set_value(Status::Ok());
          return HttpResponse::Text(200, "whole");
        },
        streamed);
    // Refuses bodies over 1000 bytes without reading a byte of them.
    router_.Add(
        "PUT", "/picky",
        [](HttpRequest& req) {
          if (req.body_reader->length() > 1000) {
            return HttpResponse::Error(
                413, "payload_too_large",
                "over 1000 bytes: " + std::to_string(req.body_reader->length()));
          }
          while (true) {
            auto chunk = req.body_reader->Next();
            if (!chunk.ok() || chunk->empty()) break;
          }
          return HttpResponse::Text(200, "taken");
        },
        streamed);
    router_.Add("POST", "/echo",
                [](HttpRequest& req) { return HttpResponse::Text(200, req.body); });
    // 1 MiB of Pattern() in pieces of 100 KiB made as they are sent; ?fail: fails after 300 KiB.
    router_.Add("GET", "/download", [](HttpRequest& req) {
      HttpResponse resp = HttpResponse::Text(200, "", "application/octet-stream");
      resp.streamed_length = 1 << 20;
      const bool fail = req.HasQueryParam("fail");
      resp.body_source = [fail, body = Pattern(1 << 20),
                          offset = size_t{0}]() mutable -> Result<std::string> {
        if (fail && offset >= (300 << 10)) return Status::IOError("disk gone");
        std::string piece = body.substr(offset, 100 << 10);
        offset += piece.size();
        return piece;
      };
      return resp;
    });
    // The same in pieces declared to the server: the response's share of the response budget
    // is checked while each piece is made; ?hold: the first piece waits for release_.
    router_.Add("GET", "/counted", [this](HttpRequest& req) {
      HttpResponse resp = HttpResponse::Text(200, "", "application/octet-stream");
      resp.streamed_length = 1 << 20;
      resp.streamed_piece_bytes = 100 << 10;
      const bool hold = req.HasQueryParam("hold");
      resp.body_source = [this, hold, body = Pattern(1 << 20),
                          offset = size_t{0}]() mutable -> Result<std::string> {
        if (hold && offset == 0) {
          held_.set_value();
          release_.get_future().wait();
        }
        std::string piece = body.substr(offset, 100 << 10);
        offset += piece.size();
        const int64_t held = server_->stats().response_bytes_in_flight.load();
        if (held < (100 << 10)) uncounted_pieces_.fetch_add(1);
        if (server_->stats().body_bytes_in_flight.load() != 0) uncounted_pieces_.fetch_add(1);
        int64_t most = most_in_flight_.load();
        while (held > most && !most_in_flight_.compare_exchange_weak(most, held)) {
        }
        return piece;
      };
      return resp;
    });
  }

  void Start(ServerOptions options, RequestObserver observer = nullptr) {
    options.max_body_bytes = kSmallMaxBody;
    server_ = std::make_unique<HttpServer>(options, &router_);
    if (observer) server_->SetObserver(std::move(observer));
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  uint16_t port() const { return server_->port(); }

  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::promise<int64_t> first_chunk_;  // body_bytes_in_flight when the first chunk came
  std::promise<Status> ended_;
  std::atomic<int> uncounted_pieces_{0};    // /counted pieces made outside the response budget
  std::atomic<int64_t> most_in_flight_{0};  // the most response_bytes_in_flight /counted saw
  std::promise<void> held_, release_;       // /counted?hold
};

TEST_F(StreamTest, BodyLargerThanMaxBodyBytesReachesTheHandlerInChunks) {
  Start({});
  const std::string body = Pattern(3 << 20);
  TestClient client(port());
  ASSERT_TRUE(client.Send(PutHead("/stream", body.size()) + body));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  ASSERT_EQ(resp->status, 200) << resp->body;
  uint64_t bytes = 0, chunks = 0, largest = 0, h = 0;
  ASSERT_EQ(std::sscanf(resp->body.c_str(), "%lu %lu %lu %lu", &bytes, &chunks, &largest, &h), 4);
  EXPECT_EQ(bytes, body.size());
  EXPECT_EQ(h, Fnv(kFnvSeed, body));  // every byte, in order
  EXPECT_GE(chunks, body.size() / kBodyChunkBytes);
  EXPECT_LE(largest, kBodyChunkBytes);
  // The connection stays usable, also for a request sent right behind the body.
  ASSERT_TRUE(client.Send(PutHead("/stream", 5) + "hello" + PutHead("/stream", 0)));
  auto second = client.Read();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(second->body.substr(0, 4), "5 1 ");
  auto third = client.Read();
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->body.substr(0, 4), "0 0 ");
  EXPECT_EQ(server_->stats().body_bytes_in_flight.load(), 0);
}

TEST_F(StreamTest, OtherRoutesStillGet413OverMaxBodyBytes) {
  Start({});
  TestClient client(port());
  const std::string body(4096, 'x');
  ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\n\r\n" + body));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 413);
  EXPECT_NE(resp->body.find("payload_too_large"), std::string::npos);
  TestClient small(port());
  ASSERT_TRUE(small.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"));
  auto ok = small.Read();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "abc");
}

TEST_F(StreamTest, ACutConnectionIsAnErrorForTheHandler) {
  Start({});
  auto ended = ended_.get_future();
  {
    TestClient client(port());
    ASSERT_TRUE(client.Send(PutHead("/watched", 1 << 20) + std::string(300 << 10, 'a')));
  }  // closed with 724 KiB of the body unsent
  ASSERT_EQ(ended.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status s = ended.get();
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  EXPECT_NE(s.message().find("of 1048576 bytes"), std::string::npos) << s.message();
  // The server goes on serving.
  TestClient next(port());
  ASSERT_TRUE(next.Send(PutHead("/stream", 2) + "ok"));
  auto resp = next.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
}

TEST_F(StreamTest, TheInFlightBudgetCountsTheHandlersBufferAndRefusesBeyondIt) {
  ServerOptions options;
  options.max_body_bytes_in_flight = 1 << 20;
  Start(options);
  auto first_chunk = first_chunk_.get_future();
  auto ended = ended_.get_future();
  const size_t length = 4 << 20;  // far over the budget: only the handler's buffer counts
  TestClient first(port());
  ASSERT_TRUE(first.Send(PutHead("/watched", length) + std::string(64 << 10, 'a')));
  ASSERT_EQ(first_chunk.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(first_chunk.get(), int64_t((512 << 10) + kBodyChunkBytes));
  {
    TestClient second(port());  // 768 KiB more would pass the 1 MiB budget
    ASSERT_TRUE(second.Send(PutHead("/stream", length)));
    auto resp = second.Read();
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 503);
    EXPECT_EQ(resp->Header("retry-after"), "1");
  }
  ASSERT_TRUE(first.Send(std::string(length - (64 << 10), 'b')));
  auto done = first.Read();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(done->body, "whole");
  EXPECT_TRUE(ended.get().ok());
  EXPECT_EQ(server_->stats().body_bytes_in_flight.load(), 0);
}

TEST_F(StreamTest, AHandlerRefusingFromTheLengthAnswersBeforeTheBodyAndNoContinueIsSent) {
  Start({});
  TestClient client(port());
  ASSERT_TRUE(client.Send(PutHead("/picky", 5000, "Expect: 100-continue\r\n")));
  auto resp = client.Read(/*head=*/false, /*interim=*/true);
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 413);  // not 100: the body was never asked for
  EXPECT_NE(resp->body.find("over 1000 bytes: 5000"), std::string::npos);
  EXPECT_EQ(resp->Header("connection"), "close");
  EXPECT_TRUE(client.WaitClosed(std::chrono::milliseconds(3000)));

  TestClient taken(port());
  ASSERT_TRUE(taken.Send(PutHead("/picky", 10, "Expect: 100-continue\r\n")));
  auto interim = taken.Read(false, true);
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(taken.Send("0123456789"));
  auto final_resp = taken.Read();
  ASSERT_TRUE(final_resp.has_value());
  EXPECT_EQ(final_resp->status, 200);
}

TEST_F(StreamTest, AChunkedBodyToAStreamedRouteGets411) {
  Start({});
  TestClient client(port());
  ASSERT_TRUE(
      client.Send("PUT /stream HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 411);
  EXPECT_NE(resp->body.find("Content-Length"), std::string::npos);
}

TEST_F(StreamTest, AStreamedResponseIsSentWholeAndAFailingOneIsCutShort) {
  Start({});
  TestClient client(port());
  auto resp = client.Get("/download");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->Header("content-length"), std::to_string(1 << 20));
  EXPECT_TRUE(resp->body == Pattern(1 << 20));
  auto again = client.Get("/download");  // keep-alive after a streamed answer
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->body.size(), size_t(1) << 20);
  ASSERT_TRUE(client.Send("HEAD /download HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto head = client.Read(/*head=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->Header("content-length"), std::to_string(1 << 20));

  TestClient failing(port());
  ASSERT_TRUE(failing.Send("GET /download?fail=1 HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_FALSE(failing.Read().has_value());  // the connection closes before 1 MiB came
}

// A streamed response holds one piece's share of the response budget (not the request bodies'
// budget) from its head to its end; past the budget a new one waits, then is answered 503 before
// anything of it is sent. A started download never waits.
TEST_F(StreamTest, AStreamedResponseHoldsOneShareOfTheResponseBudgetAndPastItIsRefused) {
  ServerOptions options;
  options.max_response_bytes_in_flight = 150 << 10;  // one 100 KiB share at a time
  options.response_admission_wait_ms = 300;
  std::mutex observed_mu;
  std::vector<int> observed;  // the statuses the request metrics saw
  Start(options, [&](const std::string&, const std::string&, int status, int64_t) {
    std::lock_guard lock(observed_mu);
    observed.push_back(status);
  });
  std::vector<std::future<std::optional<ClientResponse>>> downloads;
  for (int i = 0; i < 3; ++i) {
    downloads.push_back(std::async(std::launch::async, [port = port()] {
      TestClient client(port);
      return client.Get("/counted");
    }));
  }
  for (auto& d : downloads) {
    auto resp = d.get();
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 200);
    EXPECT_TRUE(resp->body == Pattern(1 << 20));
  }
  EXPECT_EQ(uncounted_pieces_.load(), 0);
  EXPECT_LE(most_in_flight_.load(), int64_t{150} << 10);

  // One download holds the budget (its first piece waits): another is refused after the wait.
  auto holding = std::async(std::launch::async, [port = port()] {
    TestClient client(port);
    return client.Get("/counted?hold=1");
  });
  held_.get_future().wait();
  TestClient refused_client(port());
  auto refused = refused_client.Get("/counted");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->Header("retry-after"), "1");
  EXPECT_NE(refused->body.find("--max-response-bytes-in-flight"), std::string::npos);
  release_.set_value();
  auto held = holding.get();
  ASSERT_TRUE(held.has_value());
  EXPECT_TRUE(held->body == Pattern(1 << 20));
  EXPECT_EQ(server_->stats().responses_refused_total.load(), 1);
  EXPECT_EQ(server_->stats().response_bytes_in_flight.load(), 0);  // every share given back
  server_->Stop();
  // The request metrics count what was answered: the refusal as a 503, not the handler's 200.
  std::lock_guard lock(observed_mu);
  std::sort(observed.begin(), observed.end());
  EXPECT_EQ(observed, (std::vector<int>{200, 200, 200, 200, 503}));
}

TEST(StringBodyReaderTest, HandsOutTheBodyInChunksThenEmpty) {
  StringBodyReader reader("abcdefg", 3);
  EXPECT_EQ(reader.length(), 7u);
  std::string got;
  for (int i = 0; i < 3; ++i) got += std::string(*reader.Next());
  EXPECT_EQ(got, "abcdefg");
  EXPECT_EQ(reader.received(), 7u);
  EXPECT_TRUE(reader.Next()->empty());
}

}  // namespace
}  // namespace cohort::http
