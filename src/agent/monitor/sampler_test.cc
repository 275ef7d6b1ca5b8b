#include "agent/monitor/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>

namespace cohort::monitor {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A source that yields {"<name>.n": number of Sample() calls}, or fails to open.
class CountingSource : public MonitorSource {
 public:
  CountingSource(std::string name, Status open_status)
      : name_(std::move(name)), open_status_(std::move(open_status)) {}
  std::string_view name() const override { return name_; }
  Status Open() override {
    ++opens_;
    return open_status_;
  }
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override {
    out->push_back({name_ + ".n", static_cast<double>(++samples_)});
    return Status::Ok();
  }
  int opens() const { return opens_; }

 private:
  std::string name_;
  Status open_status_;
  int opens_ = 0;
  int samples_ = 0;
};

// Collects delivered batches; thread-safe.
class Collector {
 public:
  void Add(SampleBatch b) {
    std::lock_guard<std::mutex> lock(mu_);
    batches_.push_back(std::move(b));
    cv_.notify_all();
  }
  // Waits up to `timeout` for at least `n` batches; returns how many there are.
  size_t WaitFor(size_t n, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return batches_.size() >= n; });
    return batches_.size();
  }
  std::vector<SampleBatch> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SampleBatch> batches_;
};

std::vector<std::unique_ptr<MonitorSource>> Sources(CountingSource** good = nullptr) {
  std::vector<std::unique_ptr<MonitorSource>> v;
  auto g = std::make_unique<CountingSource>("good", Status::Ok());
  if (good != nullptr) *good = g.get();
  v.push_back(std::move(g));
  v.push_back(std::make_unique<CountingSource>("broken", Status::Unavailable("no device")));
  return v;
}

TEST(Sampler, DeliversBatchesAtTheInterval) {
  Collector got;
  Sampler sampler(
      Sources(), [&](SampleBatch b) { got.Add(std::move(b)); }, milliseconds(100));
  auto start = Clock::now();
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_GE(got.WaitFor(3, milliseconds(5000)), 3u);
  auto elapsed = Clock::now() - start;
  sampler.Stop();
  auto batches = got.batches();
  // Three ticks cannot come sooner than three intervals.
  EXPECT_GE(elapsed, milliseconds(300) - milliseconds(5));
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_EQ(batches[i].samples.size(), 1u);
    EXPECT_EQ(batches[i].samples[0].key, "good.n");
    EXPECT_EQ(batches[i].samples[0].value, static_cast<double>(i + 1));
    EXPECT_GT(batches[i].time_ms, 0);
    if (i > 0) {
      EXPECT_GE(batches[i].time_ms - batches[i - 1].time_ms, 50);
    }
  }
  // After Stop() returns no more batches arrive.
  size_t n = batches.size();
  EXPECT_EQ(got.WaitFor(n + 1, milliseconds(300)), n);
}

TEST(Sampler, FirstBatchComesAfterTheFirstDelayNotAnInterval) {
  Collector got;
  Sampler sampler(
      Sources(), [&](SampleBatch b) { got.Add(std::move(b)); }, milliseconds(60000),
      milliseconds(100));
  auto start = Clock::now();
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_EQ(got.WaitFor(1, milliseconds(5000)), 1u);
  EXPECT_GE(Clock::now() - start, milliseconds(100) - milliseconds(5));
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
  EXPECT_EQ(got.WaitFor(2, milliseconds(300)), 1u);  // the next one is an interval away
  sampler.Stop();
}

TEST(Sampler, SampleAtStartGivesABatchAtOnceThenTheFirstDelayAndTheInterval) {
  Collector got;
  Sampler sampler(
      Sources(), [&](SampleBatch b) { got.Add(std::move(b)); }, milliseconds(60000),
      milliseconds(3000), /*sample_at_start=*/true);
  auto start = Clock::now();
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_EQ(got.WaitFor(1, milliseconds(5000)), 1u);
  // Not first_delay later: well before it, with seconds to spare for a loaded machine (thread
  // start, sources, the sample), where a bound of 250 ms failed.
  EXPECT_LT(Clock::now() - start, milliseconds(2500));
  ASSERT_EQ(got.WaitFor(2, milliseconds(8000)), 2u);
  EXPECT_GE(Clock::now() - start, milliseconds(3000) - milliseconds(5));
  EXPECT_EQ(got.WaitFor(3, milliseconds(300)), 2u);  // the next one is an interval away
  sampler.Stop();
  auto batches = got.batches();
  EXPECT_EQ(batches[0].samples[0].value, 1.0);
  EXPECT_EQ(batches[1].samples[0].value, 2.0);
}

TEST(Sampler, SampleAtStartIsTakenEvenWhenStoppedAtOnce) {
  Collector got;
  Sampler sampler(
      Sources(), [&](SampleBatch b) { got.Add(std::move(b)); }, milliseconds(60000),
      milliseconds(60000), /*sample_at_start=*/true);
  ASSERT_TRUE(sampler.Start().ok());
  sampler.Stop();  // a writer that ended right after joining
  EXPECT_EQ(got.batches().size(), 1u);
}

TEST(Sampler, StopIsPromptDuringALongInterval) {
  Sampler sampler(
      Sources(), [](SampleBatch) {}, milliseconds(60000));
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_TRUE(sampler.running());
  std::this_thread::sleep_for(milliseconds(50));
  auto start = Clock::now();
  sampler.Stop();
  EXPECT_LT(Clock::now() - start, milliseconds(500));
  EXPECT_FALSE(sampler.running());
}

TEST(Sampler, SkipsSourceThatFailsToOpen) {
  CountingSource* good = nullptr;
  Sampler sampler(Sources(&good), nullptr);
  SampleBatch batch = sampler.SampleOnce(1234);
  EXPECT_EQ(batch.time_ms, 1234);
  ASSERT_EQ(batch.samples.size(), 1u);
  EXPECT_EQ(batch.samples[0], (monitor::Sample{"good.n", 1}));
  EXPECT_EQ(sampler.active_sources(), (std::vector<std::string>{"good"}));
  auto skipped = sampler.skipped_sources();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].first, "broken");
  EXPECT_EQ(skipped[0].second.code(), StatusCode::kUnavailable);
  // Sources are opened once only.
  sampler.SampleOnce(1235);
  EXPECT_EQ(good->opens(), 1);
}

// A source that yields the given values as "v.0", "v.1", ...
class FixedSource : public MonitorSource {
 public:
  explicit FixedSource(std::vector<double> values) : values_(std::move(values)) {}
  std::string_view name() const override { return "fixed"; }
  Status Open() override { return Status::Ok(); }
  Status Sample(int64_t, std::vector<monitor::Sample>* out) override {
    for (size_t i = 0; i < values_.size(); ++i) {
      out->push_back({"v." + std::to_string(i), values_[i]});
    }
    return Status::Ok();
  }

 private:
  std::vector<double> values_;
};

TEST(Sampler, ValuesAreRoundedToTwoDecimals) {
  // Values as the sources compute them (a memory share, MiB from kB, a CPU share of ticks).
  const std::vector<double> in = {12.1274284966073,
                                  2923.32421875,
                                  16.748768472906402,
                                  100.0,
                                  64.0,
                                  -0.004,
                                  0.005,
                                  1e300,
                                  -3.14159,
                                  std::numeric_limits<double>::infinity()};
  const std::vector<double> want = {
      12.13, 2923.32, 16.75, 100.0, 64.0,
      0.0,   0.01,    1e300, -3.14, std::numeric_limits<double>::infinity()};
  std::vector<std::unique_ptr<MonitorSource>> sources;
  sources.push_back(std::make_unique<FixedSource>(in));
  sources.push_back(std::make_unique<FixedSource>(std::vector<double>{std::nan("")}));
  Sampler sampler(std::move(sources), nullptr);
  SampleBatch batch = sampler.SampleOnce(1);
  ASSERT_EQ(batch.samples.size(), in.size() + 1);
  for (size_t i = 0; i < in.size(); ++i) {
    // Exactly the double nearest to the short decimal: what the chunk codec stores as one.
    EXPECT_EQ(batch.samples[i].value, want[i]) << in[i];
  }
  EXPECT_FALSE(std::signbit(batch.samples[5].value));  // -0.004 rounds to 0, not -0
  EXPECT_TRUE(std::isnan(batch.samples.back().value));
}

TEST(Sampler, SampleOnceDoesNotCallTheCallback) {
  std::atomic<int> calls{0};
  Sampler sampler(Sources(), [&](SampleBatch) { ++calls; });
  EXPECT_EQ(sampler.SampleOnce().samples.size(), 1u);
  EXPECT_EQ(calls.load(), 0);
}

TEST(Sampler, IntervalBelowMinimumIsRaised) {
  Sampler fast(Sources(), nullptr, milliseconds(1));
  EXPECT_EQ(fast.interval(), Sampler::kMinInterval);
  Sampler dflt(Sources(), nullptr);
  EXPECT_EQ(dflt.interval(), milliseconds(15000));
}

TEST(Sampler, StartTwiceFailsAndRestartAfterStopWorks) {
  Collector got;
  Sampler sampler(
      Sources(), [&](SampleBatch b) { got.Add(std::move(b)); }, milliseconds(100));
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_EQ(sampler.Start().code(), StatusCode::kFailedPrecondition);
  sampler.Stop();
  sampler.Stop();  // idempotent
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_GE(got.WaitFor(1, milliseconds(5000)), 1u);
  sampler.Stop();
}

TEST(Sampler, StopFromTheCallbackEndsSampling) {
  Collector got;
  Sampler* self = nullptr;
  Sampler sampler(
      Sources(),
      [&](SampleBatch b) {
        got.Add(std::move(b));
        self->Stop();
      },
      milliseconds(100));
  self = &sampler;
  ASSERT_TRUE(sampler.Start().ok());
  ASSERT_EQ(got.WaitFor(1, milliseconds(5000)), 1u);
  EXPECT_EQ(got.WaitFor(2, milliseconds(400)), 1u);
  EXPECT_FALSE(sampler.running());
  ASSERT_TRUE(sampler.Start().ok());  // joins the finished thread and starts anew
  sampler.Stop();
}

}  // namespace
}  // namespace cohort::monitor
