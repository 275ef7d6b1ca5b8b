#include "server/http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/http/test_client.h"

namespace cohort::http {
namespace {

// A router with the routes the tests use, and a server around it.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Add("GET", "/hello", [](HttpRequest&) { return HttpResponse::Text(200, "hi"); });
    router_.Add("POST", "/echo", [](HttpRequest& req) {
      return HttpResponse::Text(200, req.body, std::string(req.Header("content-type")));
    });
    router_.Add("GET", "/slow", [](HttpRequest&) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return HttpResponse::Text(200, "slow");
    });
    router_.Add("GET", "/throw",
                [](HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
    router_.Add("GET", "/items/{id}", [](HttpRequest& req) {
      std::string out = req.path + "|" + req.PathParam("id") + "|" + req.remote_address;
      for (const auto& [k, v] : req.query) out += "|" + k + "=" + v;
      return HttpResponse::Text(200, out);
    });
    router_.Add("GET", "/headers", [](HttpRequest&) {
      HttpResponse r = HttpResponse::Json(201, "{}");
      r.headers.emplace_back("X-Custom", "yes");
      r.headers.emplace_back("Set-Cookie", "a=1");
      r.headers.emplace_back("Set-Cookie", "b=2");
      r.headers.emplace_back("X-Bad", "split\r\nInjected: 1");
      return r;
    });
    router_.Add("GET", "/close", [](HttpRequest&) {
      HttpResponse r = HttpResponse::Text(200, "bye");
      r.headers.emplace_back("Connection", "close");
      return r;
    });
  }

  void Start(ServerOptions options = {}) {
    server_ = std::make_unique<HttpServer>(options, &router_);
    if (gate_) server_->SetBodyGate(gate_);
    Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_NE(server_->port(), 0);
  }

  uint16_t port() const { return server_->port(); }

  // A gate that lets a body in only with "Authorization: yes", and counts its calls.
  void GateOnAuthorization() {
    gate_ = [this](const HttpRequest& head) -> std::optional<HttpResponse> {
      gate_calls_.fetch_add(1);
      gate_saw_body_ = gate_saw_body_ || !head.body.empty();
      if (head.Header("authorization") == "yes" && head.path == "/echo") return std::nullopt;
      return HttpResponse::Error(401, "unauthenticated", "no key");
    };
  }

  Router router_;
  BodyGate gate_;
  std::atomic<int> gate_calls_{0};
  std::atomic<bool> gate_saw_body_{false};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 3; ++i) {
    auto resp = client.Get("/hello");
    ASSERT_TRUE(resp.has_value()) << i;
    EXPECT_EQ(resp->status, 200);
    EXPECT_EQ(resp->body, "hi");
    EXPECT_EQ(resp->Header("connection"), "keep-alive");
  }
  EXPECT_EQ(server_->stats().connections_total.load(), 1);
  EXPECT_EQ(server_->stats().requests_total.load(), 3);
}

TEST_F(ServerTest, ResponseCarriesStandardHeaders) {
  Start();
  TestClient client(port());
  auto resp = client.Get("/hello");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->Header("server"), "cohort");
  EXPECT_EQ(resp->Header("content-type"), "text/plain");
  EXPECT_EQ(resp->Header("content-length"), "2");
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send(
      "GET /items/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /items/2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto first = client.Read();
  auto second = client.Read();
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->body.substr(0, 10), "/items/1|1");
  EXPECT_EQ(second->body.substr(0, 10), "/items/2|2");
}

TEST_F(ServerTest, HandlerExtraHeadersAreSentAndUnsafeOnesDropped) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send("GET /headers HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 201);
  EXPECT_EQ(resp->Header("x-custom"), "yes");
  EXPECT_FALSE(resp->Header("set-cookie").empty());
  EXPECT_EQ(resp->Header("x-bad"), "");
  EXPECT_EQ(resp->Header("injected"), "");
  EXPECT_EQ(resp->Header("content-type"), "application/json");
}

TEST_F(ServerTest, HandlerAskingForCloseClosesConnection) {
  Start();
  TestClient client(port());
  auto resp = client.Get("/close");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->Header("connection"), "close");
  EXPECT_TRUE(client.WaitClosed(milliseconds(2000)));
}

TEST_F(ServerTest, QueryAndPathArePercentDecodedAndRemoteAddressFilled) {
  Start();
  TestClient client(port());
  auto resp = client.Get("/items/a%20b?x=1%2F2&y=c+d&x=3");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, "/items/a b|a b|127.0.0.1|x=1/2|x=3|y=c d");
}

TEST_F(ServerTest, HeadAnswersGetLengthWithoutBody) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto head = client.Read(/*head=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-length"), "2");
  // Had a body been sent, it would precede this response and break its parsing.
  auto next = client.Get("/hello");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(next->body, "hi");
}

TEST_F(ServerTest, OversizedBodyGets413JsonAndClose) {
  ServerOptions options;
  options.max_body_bytes = 1024;
  Start(options);
  TestClient client(port());
  std::string body(4096, 'x');
  ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\n\r\n" + body));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 413);
  EXPECT_EQ(resp->Header("content-type"), "application/json");
  EXPECT_NE(resp->body.find(R"("code":"payload_too_large")"), std::string::npos);
  EXPECT_EQ(resp->Header("connection"), "close");
  EXPECT_TRUE(client.WaitClosed(milliseconds(2000)));
}

TEST_F(ServerTest, OversizedChunkedBodyGets413) {
  ServerOptions options;
  options.max_body_bytes = 100;
  Start(options);
  TestClient client(port());
  std::string chunk(200, 'y');
  ASSERT_TRUE(
      client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nc8\r\n" +
                  chunk + "\r\n0\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 413);
}

TEST_F(ServerTest, OversizedHeadersGet431Json) {
  ServerOptions options;
  options.max_header_bytes = 1024;
  Start(options);
  TestClient client(port());
  ASSERT_TRUE(client.Send("GET /hello HTTP/1.1\r\nHost: t\r\nX-Pad: " + std::string(2000, 'p') +
                          "\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 431);
  EXPECT_NE(resp->body.find(R"("code":"header_too_large")"), std::string::npos);
  EXPECT_TRUE(client.WaitClosed(milliseconds(2000)));
}

TEST_F(ServerTest, MalformedRequestGets400Json) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send("GET /hello HTTP/1.1\r\nBad Header\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 400);
  EXPECT_NE(resp->body.find(R"("code":"bad_request")"), std::string::npos);
}

TEST_F(ServerTest, ChunkedRequestBodyIsReassembled) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: text/x\r\nTransfer-Encoding: chunked\r\n"
      "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, "hello world");
  EXPECT_EQ(resp->Header("content-type"), "text/x");
}

// A Transfer-Encoding whose last coding is not chunked cannot be framed (RFC 9112): 400 and the
// connection closed, never the body framed by a Content-Length beside it and the connection kept
// (what a request smuggled past a lenient proxy needs).
TEST_F(ServerTest, ATransferEncodingOtherThanChunkedIsRefusedAndTheConnectionClosed) {
  Start();
  for (const char* coding : {"gzip", "chunked, gzip", "identity"}) {
    TestClient client(port());
    ASSERT_TRUE(
        client.Send(std::string("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ") + coding +
                    "\r\nContent-Length: 2\r\n\r\nhiGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto resp = client.Read();
    ASSERT_TRUE(resp.has_value()) << coding;
    EXPECT_EQ(resp->status, 400) << coding;
    EXPECT_TRUE(client.WaitClosed(milliseconds(2000))) << coding;
  }
}

TEST_F(ServerTest, ExpectContinueGetsInterimResponseBeforeBody) {
  Start();
  TestClient client(port());
  ASSERT_TRUE(client.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"));
  // The interim answer must come before the client sends the body.
  auto interim = client.Read(/*head=*/false, /*interim=*/true);
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.Send("abc"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, "abc");
}

TEST_F(ServerTest, BodyGateRefusesALargeBodyBeforeReadingIt) {
  GateOnAuthorization();
  Start();
  TestClient client(port());
  // 32 MiB announced, no byte of it sent: the answer comes at once, not after a timeout.
  auto t0 = Clock::now();
  ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 33554432\r\n\r\n"));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 401);
  EXPECT_LT(SecondsSince(t0), 2.0);
  EXPECT_EQ(resp->Header("connection"), "close");
  EXPECT_TRUE(client.WaitClosed(milliseconds(3000)));
  EXPECT_EQ(gate_calls_.load(), 1);
  EXPECT_FALSE(gate_saw_body_.load());
  EXPECT_EQ(server_->stats().body_bytes_in_flight.load(), 0);
  EXPECT_EQ(server_->stats().bodies_refused_total.load(), 1);
}

TEST_F(ServerTest, BodyGateRefusesBeforeContinueAndChunkedBodiesToo) {
  GateOnAuthorization();
  Start();
  {
    TestClient client(port());
    ASSERT_TRUE(
        client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n"
                    "Expect: 100-continue\r\n\r\n"));
    auto resp = client.Read(/*head=*/false, /*interim=*/true);
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 401);  // no "100 Continue" first
  }
  {
    TestClient client(port());
    ASSERT_TRUE(client.Send(
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"));
    auto resp = client.Read();
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 401);
  }
  EXPECT_EQ(gate_calls_.load(), 2);
}

TEST_F(ServerTest, SmallBodiesDoNotPassTheGate) {
  GateOnAuthorization();
  Start();
  TestClient client(port());
  const std::string body(kGatedBodyBytes - 1, 's');
  ASSERT_TRUE(client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body));
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body, body);
  EXPECT_EQ(gate_calls_.load(), 0);
}

TEST_F(ServerTest, AdmittedLargeBodyArrivingInPiecesIsReadWhole) {
  GateOnAuthorization();
  Start();
  TestClient client(port());
  std::string body;
  for (int i = 0; body.size() < (3u << 20); ++i) body += std::to_string(i) + ",";
  ASSERT_TRUE(
      client.Send("POST /echo HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n"));
  // Slices of odd sizes with pauses, so that reads end mid-slice.
  for (size_t at = 0; at < body.size();) {
    size_t n = std::min<size_t>(body.size() - at, 700001);
    ASSERT_TRUE(client.Send(std::string_view(body).substr(at, n)));
    at += n;
    std::this_thread::sleep_for(milliseconds(5));
  }
  auto resp = client.Read();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->body.size(), body.size());
  EXPECT_TRUE(resp->body == body);
  EXPECT_EQ(server_->stats().body_bytes_in_flight.load(), 0);  // released after the answer
}

TEST_F(ServerTest, BodiesBeyondTheInFlightBudgetGet503UntilOthersFinish) {
  GateOnAuthorization();
  ServerOptions options;
  options.max_body_bytes_in_flight = 100 << 10;
  Start(options);
  const std::string body(80 << 10, 'b');
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  TestClient first(port());
  ASSERT_TRUE(first.Send(head + body.substr(0, 1000)));  // holds its 80 KiB reservation
  for (int i = 0; i < 200 && server_->stats().body_bytes_in_flight.load() == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(server_->stats().body_bytes_in_flight.load(), int64_t(body.size()));
  {
    TestClient second(port());
    ASSERT_TRUE(second.Send(head));
    auto resp = second.Read();
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 503);
    EXPECT_EQ(resp->Header("retry-after"), "1");
  }
  ASSERT_TRUE(first.Send(body.substr(1000)));
  auto done = first.Read();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(done->body.size(), body.size());
  TestClient third(port());
  ASSERT_TRUE(third.Send(head + body));
  auto again = third.Read();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
}

// A chunked body says no length: it reserves what arrived as it grows, in 256 KiB steps up to
// --max-body-bytes, and one that finds no room for more is answered 503 and closed. (It once
// reserved nothing, so chunked bodies could hold the body limit each past the budget; then the
// whole body limit each, so that 8 small chunked bodies at once filled the default budget.)
TEST_F(ServerTest, ChunkedBodiesReserveWhatArrivedAndPastTheBudgetGet503) {
  GateOnAuthorization();
  ServerOptions options;
  options.max_body_bytes = 600 << 10;
  options.max_body_bytes_in_flight = 1000 << 10;
  Start(options);
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\nTransfer-Encoding: chunked\r\n\r\n";
  auto wait_in_flight = [&](int64_t bytes) {
    for (int i = 0; i < 300 && server_->stats().body_bytes_in_flight.load() != bytes; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return server_->stats().body_bytes_in_flight.load();
  };
  // Two small chunked bodies hold one step each (the body limit each would not fit twice).
  TestClient first(port()), second(port());
  ASSERT_TRUE(first.Send(head + "5\r\nhello\r\n"));
  ASSERT_EQ(wait_in_flight(256 << 10), int64_t{256 << 10});
  ASSERT_TRUE(second.Send(head + "5\r\nworld\r\n"));
  ASSERT_EQ(wait_in_flight(512 << 10), int64_t{512 << 10});
  {
    // A third grows past its first step: 256 + 256 + 512 KiB is over the budget.
    TestClient third(port());
    char size[16];
    std::snprintf(size, sizeof(size), "%x", 400 << 10);
    ASSERT_TRUE(third.Send(head + size + "\r\n" + std::string(400 << 10, 'x') + "\r\n"));
    auto resp = third.Read();
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->status, 503);
    EXPECT_EQ(resp->Header("retry-after"), "1");
    EXPECT_TRUE(third.WaitClosed(milliseconds(3000)));
  }
  EXPECT_EQ(wait_in_flight(512 << 10), int64_t{512 << 10});
  ASSERT_TRUE(first.Send("0\r\n\r\n"));
  ASSERT_TRUE(second.Send("0\r\n\r\n"));
  auto one = first.Read();
  auto two = second.Read();
  ASSERT_TRUE(one.has_value() && two.has_value());
  EXPECT_EQ(one->status, 200);
  EXPECT_EQ(one->body, "hello");
  EXPECT_EQ(two->body, "world");
  EXPECT_EQ(wait_in_flight(0), 0);
  // One that grows within the budget is read whole.
  TestClient fourth(port());
  const std::string big(500 << 10, 'y');
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", big.size());
  ASSERT_TRUE(fourth.Send(head + size + "\r\n" + big + "\r\n0\r\n\r\n"));
  auto whole = fourth.Read();
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->status, 200);
  EXPECT_TRUE(whole->body == big);
  EXPECT_EQ(server_->stats().bodies_refused_total.load(), 1);
}

TEST_F(ServerTest, ConnectionsBeyondLimitGet503WithRetryAfter) {
  ServerOptions options;
  options.max_connections = 2;
  Start(options);
  TestClient a(port());
  TestClient b(port());
  ASSERT_TRUE(a.Get("/hello").has_value());
  ASSERT_TRUE(b.Get("/hello").has_value());
  TestClient c(port());
  ASSERT_TRUE(c.connected());
  auto resp = c.Get("/hello");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 503);
  EXPECT_EQ(resp->Header("retry-after"), "1");
  EXPECT_NE(resp->body.find(R"("code":"unavailable")"), std::string::npos);
  EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));
  EXPECT_EQ(server_->stats().connections_rejected.load(), 1);
  // The admitted connections keep working.
  auto again = a.Get("/hello");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
}

TEST_F(ServerTest, SlowHandlerDoesNotDelayOtherConnections) {
  Start();
  TestClient slow(port());
  TestClient fast(port());
  ASSERT_TRUE(slow.Send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(50));
  auto t0 = Clock::now();
  auto resp = fast.Get("/hello");
  double fast_seconds = SecondsSince(t0);
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_LT(fast_seconds, 0.5);
  auto slow_resp = slow.Read();
  ASSERT_TRUE(slow_resp.has_value());
  EXPECT_EQ(slow_resp->body, "slow");
}

TEST_F(ServerTest, ReadsDoNotQueueBehindBusyWriteWorkers) {
  router_.Add("POST", "/slow-write", [](HttpRequest&) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return HttpResponse::Text(200, "written");
  });
  ServerOptions options;
  options.worker_threads = 1;
  options.read_threads = 1;
  Start(options);
  TestClient w1(port()), w2(port()), reader(port());
  const std::string write = "POST /slow-write HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(w1.Send(write));
  ASSERT_TRUE(w2.Send(write));  // queued behind the first on the only write worker
  std::this_thread::sleep_for(milliseconds(100));
  auto t0 = Clock::now();
  auto resp = reader.Get("/hello");
  double read_seconds = SecondsSince(t0);
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 200);
  EXPECT_LT(read_seconds, 0.5);
  for (TestClient* c : {&w1, &w2}) {
    auto written = c->Read();
    ASSERT_TRUE(written.has_value());
    EXPECT_EQ(written->body, "written");
  }
}

TEST_F(ServerTest, SlowlorisClientIsClosedAfterRequestTimeout) {
  ServerOptions options;
  options.request_timeout_seconds = 1;
  Start(options);
  TestClient client(port());
  std::string request = "GET /hello HTTP/1.1\r\nHost: t\r\nX-Slow: " + std::string(100, 's');
  auto t0 = Clock::now();
  bool closed = false;
  for (char c : request) {
    if (!client.Send(std::string_view(&c, 1))) {
      closed = true;
      break;
    }
    if (client.WaitClosed(milliseconds(100))) {
      closed = true;
      break;
    }
  }
  double seconds = SecondsSince(t0);
  EXPECT_TRUE(closed);
  EXPECT_GT(seconds, 0.8);
  EXPECT_LT(seconds, 3.0);
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosedAfterIdleTimeout) {
  ServerOptions options;
  options.idle_timeout_seconds = 1;
  Start(options);
  TestClient client(port());
  ASSERT_TRUE(client.Get("/hello").has_value());
  auto t0 = Clock::now();
  EXPECT_TRUE(client.WaitClosed(milliseconds(3000)));
  EXPECT_GT(SecondsSince(t0), 0.8);
}

TEST_F(ServerTest, ThrowingHandlerGives500AndConnectionStaysUsable) {
  Start();
  TestClient client(port());
  auto resp = client.Get("/throw");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 500);
  EXPECT_EQ(resp->body, R"({"error":{"code":"internal","message":"internal server error"}})");
  auto next = client.Get("/hello");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->status, 200);
}

TEST_F(ServerTest, UnknownRouteGives404ThroughServer) {
  Start();
  TestClient client(port());
  auto resp = client.Get("/nope");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->status, 404);
  EXPECT_EQ(resp->Header("content-type"), "application/json");
}

TEST_F(ServerTest, ManyConcurrentConnectionsAllSucceed) {
  Start();
  constexpr int kClients = 300;
  constexpr int kRounds = 3;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->connected()) << i;
  }
  int ok = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kClients; ++i) {
      ASSERT_TRUE(
          clients[i]->Send("GET /items/" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    for (int i = 0; i < kClients; ++i) {
      auto resp = clients[i]->Read();
      ASSERT_TRUE(resp.has_value()) << "client " << i << " round " << round;
      std::string expect = "/items/" + std::to_string(i) + "|";
      if (resp->status == 200 && resp->body.compare(0, expect.size(), expect) == 0) ++ok;
    }
  }
  EXPECT_EQ(ok, kClients * kRounds);
  EXPECT_EQ(server_->stats().connections_open.load(), kClients);
}

TEST_F(ServerTest, StopWithOpenIdleConnectionsReturnsPromptly) {
  Start();
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(std::make_unique<TestClient>(port()));
    ASSERT_TRUE(clients.back()->Get("/hello").has_value());
  }
  auto t0 = Clock::now();
  server_->Stop();
  EXPECT_LT(SecondsSince(t0), 1.0);
  for (auto& c : clients) EXPECT_TRUE(c->WaitClosed(milliseconds(1000)));
  server_->Stop();  // idempotent
  EXPECT_EQ(server_->stats().connections_open.load(), 0);
}

TEST_F(ServerTest, WaitReturnsOnceStopped) {
  Start();
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    server_->Wait();
    returned = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load());
  server_->Stop();
  waiter.join();
  EXPECT_TRUE(returned.load());
}

TEST_F(ServerTest, ObserverSeesRouteMethodAndStatus) {
  std::mutex mu;
  std::vector<std::string> seen;
  server_ = std::make_unique<HttpServer>(ServerOptions{}, &router_);
  server_->SetObserver(
      [&](const std::string& route, const std::string& method, int status, int64_t duration_ns) {
        std::lock_guard lock(mu);
        seen.push_back(route + " " + method + " " + std::to_string(status) +
                       (duration_ns >= 0 ? "" : " negative"));
      });
  ASSERT_TRUE(server_->Start().ok());
  TestClient client(server_->port());
  ASSERT_TRUE(client.Get("/items/5").has_value());
  ASSERT_TRUE(client.Get("/missing").has_value());
  server_->Stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "/items/{id} GET 200");
  EXPECT_EQ(seen[1], "unmatched GET 404");
}

TEST_F(ServerTest, StartFailsWithStatusWhenPortIsTaken) {
  Start();
  ServerOptions options;
  options.port = port();
  HttpServer second(options, &router_);
  Status st = second.Start();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError);
}

TEST_F(ServerTest, StartFailsWithStatusForBadAddress) {
  ServerOptions options;
  options.address = "not an address";
  HttpServer server(options, &router_);
  EXPECT_FALSE(server.Start().ok());
}

}  // namespace
}  // namespace cohort::http
