// The dispatcher over a real SQLite store with a fake receiver: which webhooks an event goes to,
// signatures, retries with backoff, giving up, and a restart that neither resends nor skips.
#include "server/webhooks/webhook_dispatcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "server/webhooks/webhook_payload.h"
#include "store/temp_dir_for_test.h"

namespace cohort::server::webhooks {
namespace {

namespace bj = boost::json;

struct Call {
  std::string url, body;
  std::vector<std::string> headers;
};

class FakePoster : public WebhookPoster {
 public:
  Result<WebhookResponse> Post(const std::string& url, const std::string& body,
                               const std::vector<std::string>& headers) override {
    calls.push_back({url, body, headers});
    if (answers.empty()) return WebhookResponse{200, "ok"};
    Result<WebhookResponse> r = answers.front();
    answers.pop_front();
    return r;
  }
  std::vector<Call> calls;
  std::deque<Result<WebhookResponse>> answers;
};

// Answers 200, except that calls to `blocked_url` wait until Release() (a slow receiver, or one
// that never answers). Thread-safe.
class BlockingPoster : public WebhookPoster {
 public:
  explicit BlockingPoster(std::string blocked_url) : blocked_url_(std::move(blocked_url)) {}
  Result<WebhookResponse> Post(const std::string& url, const std::string&,
                               const std::vector<std::string>&) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_[url];
    if (url == blocked_url_) {
      ++blocked_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      --blocked_;
    }
    cv_.notify_all();
    return WebhookResponse{200, "ok"};
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Waits up to 10 s for `pred` (under the lock).
  bool WaitFor(const std::function<bool()>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), pred);
  }
  int Calls(const std::string& url) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_[url];
  }
  int Blocked() {
    std::lock_guard<std::mutex> lock(mu_);
    return blocked_;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> calls_;
  int blocked_ = 0;
  bool released_ = false;

 private:
  const std::string blocked_url_;
};

std::string Header(const Call& c, const std::string& name) {
  for (const std::string& h : c.headers) {
    if (h.starts_with(name + ": ")) return h.substr(name.size() + 2);
  }
  return "";
}

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenStore("sqlite://" + (dir_.path() / "c.db").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  DispatcherOptions Options() {
    return DispatcherOptions{.owner = "test",
                             .base_url = "http://ui:1",
                             .retry = {.max_attempts = 3, .initial_ms = 1000, .max_ms = 60'000}};
  }
  store::WebhookRecord Hook(const std::string& name, const std::string& format,
                            const std::string& level, const std::string& secret = "") {
    auto w = store_->CreateWebhook(store::WebhookRecord{.entity = "acme",
                                                        .project = "p",
                                                        .name = name,
                                                        .url = "http://hooks/" + name,
                                                        .format = format,
                                                        .secret = secret,
                                                        .min_level = level,
                                                        .created_ms = 1000});
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return *w;
  }
  store::AlertRecord Raise(const std::string& title, const std::string& level, int64_t now) {
    // Alerts open only on a run that exists.
    EXPECT_TRUE(store_->UpsertRun(store::RunUpsert{.ref = store::RunRef{"acme", "p", "r1"}}).ok());
    auto r = store_->RaiseAlert(store::AlertRaise{.entity = "acme",
                                                  .project = "p",
                                                  .run_id = "r1",
                                                  .writer_label = "rank_0",
                                                  .source = "code",
                                                  .condition_key = "code:" + title,
                                                  .level = level,
                                                  .title = title,
                                                  .now_ms = now});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r->first;
  }

  store::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  FakePoster poster_;
};

TEST_F(DispatcherTest, SendsEachEventToTheMatchingWebhooksOnceSigned) {
  store::WebhookRecord generic = Hook("generic", "generic", "WARN", "k3y");
  Hook("slack", "slack", "ERROR");
  Hook("late", "generic", "INFO");  // created at 1000: older events are not its
  const int64_t now = NowMillis();
  store::AlertRecord warn = Raise("slow", "WARN", now);
  Raise("crash", "ERROR", now);
  Raise("fyi", "INFO", now);
  WebhookDispatcher d(store_.get(), &poster_, Options());
  auto pass = d.RunOnce(now);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  // generic: WARN + ERROR; slack: ERROR; late: all three.
  EXPECT_EQ(pass->enqueued, 6);
  EXPECT_EQ(poster_.calls.size(), 6u);
  int generic_calls = 0;
  for (const Call& c : poster_.calls) {
    if (c.url != "http://hooks/generic") continue;
    ++generic_calls;
    EXPECT_EQ(Header(c, "X-Cohort-Signature"), SignatureValue("k3y", c.body));
    bj::value v = bj::parse(c.body);
    EXPECT_EQ(v.at("version"), 1);
    EXPECT_EQ(v.at("event"), "opened");
    EXPECT_EQ(v.at("alert").at("run"), "r1");
    EXPECT_EQ(v.at("run_url"), "http://ui:1/?p=acme%2Fp&run=r1");
  }
  EXPECT_EQ(generic_calls, 2);
  // Nothing twice: another pass, and a new dispatcher (a restart) on the same store.
  ASSERT_TRUE(d.RunOnce(now + 1).ok());
  WebhookDispatcher restarted(store_.get(), &poster_, Options());
  ASSERT_TRUE(restarted.RunOnce(now + 2).ok());
  EXPECT_EQ(poster_.calls.size(), 6u);
  // A resolution is an event of its own.
  ASSERT_TRUE(store_->ResolveAlert("acme", "p", "r1", "rank_0", "code:slow", now + 3).ok());
  ASSERT_TRUE(restarted.RunOnce(now + 3).ok());
  ASSERT_EQ(poster_.calls.size(), 8u);  // generic (WARN) and late
  auto log = store_->ListDeliveries("acme", "p", generic.id, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 3u);
  EXPECT_EQ((*log)[0].event_kind, "resolved");
  EXPECT_EQ((*log)[0].alert_id, warn.id);
  EXPECT_EQ((*log)[0].state, "delivered");
  EXPECT_EQ((*log)[0].attempts, 1);
  EXPECT_EQ((*log)[0].last_status, 200);
}

TEST_F(DispatcherTest, RetriesWithBackoffAndGivesUpAfterTheLastAttempt) {
  store::WebhookRecord a = Hook("a", "generic", "INFO");
  store::WebhookRecord b = Hook("b", "discord", "INFO");
  const int64_t now = NowMillis();
  Raise("boom", "ERROR", now);
  WebhookDispatcher d(store_.get(), &poster_, Options());
  // a: no answer, then 503, then 200; b: 404 (a wrong URL: not retried).
  poster_.answers = {Status::Unavailable("connection refused"), WebhookResponse{404, "nope"}};
  ASSERT_TRUE(d.RunOnce(now).ok());
  ASSERT_EQ(poster_.calls.size(), 2u);
  auto la = store_->ListDeliveries("acme", "p", a.id, 10);
  ASSERT_TRUE(la.ok());
  ASSERT_EQ(la->size(), 1u);
  EXPECT_EQ((*la)[0].state, "pending");
  EXPECT_EQ((*la)[0].attempts, 1);
  EXPECT_EQ((*la)[0].last_error, "connection refused");
  EXPECT_GE((*la)[0].next_attempt_ms, now + 1000);  // the first backoff
  auto lb = store_->ListDeliveries("acme", "p", b.id, 10);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ((*lb)[0].state, "failed");
  EXPECT_EQ((*lb)[0].last_status, 404);
  EXPECT_EQ((*lb)[0].last_error, "HTTP 404");  // the answer's body is not echoed

  // Not due yet: nothing sent.
  ASSERT_TRUE(d.RunOnce(now + 500).ok());
  EXPECT_EQ(poster_.calls.size(), 2u);
  poster_.answers = {WebhookResponse{503, ""}};
  const int64_t later = (*la)[0].next_attempt_ms;
  ASSERT_TRUE(d.RunOnce(later).ok());
  ASSERT_EQ(poster_.calls.size(), 3u);
  la = store_->ListDeliveries("acme", "p", a.id, 10);
  EXPECT_EQ((*la)[0].attempts, 2);
  EXPECT_EQ((*la)[0].last_status, 503);
  EXPECT_GE((*la)[0].next_attempt_ms, later + 2000);  // doubled
  // The third attempt is the last (max_attempts 3): a failure fails the delivery.
  poster_.answers = {WebhookResponse{500, "down"}};
  ASSERT_TRUE(d.RunOnce((*la)[0].next_attempt_ms).ok());
  la = store_->ListDeliveries("acme", "p", a.id, 10);
  EXPECT_EQ((*la)[0].state, "failed");
  EXPECT_EQ((*la)[0].attempts, 3);
  EXPECT_EQ((*la)[0].last_error, "HTTP 500");
  ASSERT_TRUE(d.RunOnce(NowMillis() + 10'000'000).ok());
  EXPECT_EQ(poster_.calls.size(), 4u);
}

// A slow call holds the claim of its own delivery only: another server (a second dispatcher on
// the store) sends the other deliveries meanwhile, and nothing is sent twice. (Claiming a batch
// left the later ones claimed behind the slow call until the lease expired, then another server
// sent them again.)
TEST_F(DispatcherTest, SlowCallKeepsOnlyItsOwnDeliveryClaimed) {
  Hook("a-slow", "generic", "INFO");  // first by name: its delivery is the oldest due
  Hook("b", "generic", "INFO");
  Hook("c", "slack", "INFO");
  const int64_t now = NowMillis();
  Raise("boom", "ERROR", now);
  BlockingPoster poster("http://hooks/a-slow");
  DispatcherOptions oa = Options(), ob = Options();
  oa.owner = "server-a";
  ob.owner = "server-b";
  WebhookDispatcher a(store_.get(), &poster, oa);
  WebhookDispatcher b(store_.get(), &poster, ob);
  Result<DispatchPass> pass_a = Status::Internal("not run");
  std::thread slow([&] { pass_a = a.RunOnce(now); });
  ASSERT_TRUE(poster.WaitFor([&] { return poster.blocked_ == 1; })) << "a never posted";
  auto pass_b = b.RunOnce(now + 1);
  ASSERT_TRUE(pass_b.ok()) << pass_b.status().ToString();
  EXPECT_EQ(pass_b->claimed, 2);  // b and c, while a-slow's call is in flight
  EXPECT_EQ(poster.Calls("http://hooks/b"), 1);
  EXPECT_EQ(poster.Calls("http://hooks/c"), 1);
  // Later passes of b (its claim has not expired) send nothing again.
  ASSERT_TRUE(b.RunOnce(now + 2).ok());
  poster.Release();
  slow.join();
  ASSERT_TRUE(pass_a.ok()) << pass_a.status().ToString();
  EXPECT_EQ(pass_a->claimed, 1);
  ASSERT_TRUE(a.RunOnce(now + 3).ok());
  ASSERT_TRUE(b.RunOnce(now + 3).ok());
  for (const char* url : {"http://hooks/a-slow", "http://hooks/b", "http://hooks/c"}) {
    EXPECT_EQ(poster.Calls(url), 1) << url;
  }
  auto log = store_->ListProjectDeliveries("acme", "p", std::nullopt, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 3u);
  for (const store::DeliveryRecord& d : *log) {
    EXPECT_EQ(d.state, "delivered");
    EXPECT_EQ(d.attempts, 1);
  }
}

// The running dispatcher sends with several threads: a webhook that does not answer holds one
// sender, and the other webhooks' deliveries go out meanwhile.
TEST_F(DispatcherTest, BlackHoledWebhookDoesNotDelayTheOthers) {
  Hook("a-slow", "generic", "INFO");
  Hook("b", "generic", "INFO");
  Hook("c", "discord", "INFO");
  Raise("boom", "ERROR", NowMillis());
  Raise("bang", "WARN", NowMillis());
  BlockingPoster poster("http://hooks/a-slow");
  DispatcherOptions o = Options();
  o.poll_ms = 20;
  o.senders = 2;
  WebhookDispatcher d(store_.get(), &poster, o);
  d.Start();
  // The others are sent while a call to the silent webhook hangs (whichever sender took it, and
  // whenever: under load it may start after the others are done).
  const bool others_sent = poster.WaitFor([&] {
    return poster.calls_["http://hooks/b"] == 2 && poster.calls_["http://hooks/c"] == 2 &&
           poster.blocked_ == 1;
  });
  // A sender is free: it must not take the silent webhook's second delivery meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int blocked = poster.Blocked();
  poster.Release();
  ASSERT_TRUE(poster.WaitFor([&] { return poster.calls_["http://hooks/a-slow"] == 2; }));
  d.Stop();
  EXPECT_TRUE(others_sent) << "the other webhooks waited behind the silent one";
  EXPECT_EQ(blocked, 1);
  auto log = store_->ListProjectDeliveries("acme", "p", std::nullopt, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 6u);
  for (const store::DeliveryRecord& d : *log) EXPECT_EQ(d.state, "delivered");
}

TEST_F(DispatcherTest, TestPayloadIsSentNowAndRecordsNothing) {
  store::WebhookRecord a = Hook("a", "slack", "ERROR");
  WebhookDispatcher d(store_.get(), &poster_, Options());
  poster_.answers = {WebhookResponse{204, ""}};
  auto r = d.SendTest(a, NowMillis());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 204);
  ASSERT_EQ(poster_.calls.size(), 1u);
  EXPECT_EQ(poster_.calls[0].url, "http://hooks/a");
  EXPECT_NE(poster_.calls[0].body.find("Test alert from Cohort"), std::string::npos);
  EXPECT_EQ(Header(poster_.calls[0], "X-Cohort-Event"), "test");
  auto log = store_->ListDeliveries("acme", "p", a.id, 10);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->empty());
}

}  // namespace
}  // namespace cohort::server::webhooks
