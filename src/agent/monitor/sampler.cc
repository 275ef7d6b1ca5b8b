#include "agent/monitor/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"

namespace cohort::monitor {

Sampler::Sampler(std::vector<std::unique_ptr<MonitorSource>> sources, Callback callback,
                 std::chrono::milliseconds interval, std::chrono::milliseconds first_delay,
                 bool sample_at_start)
    : interval_(std::max(interval, kMinInterval)),
      first_delay_(first_delay.count() < 0 ? interval_ : first_delay),
      sample_at_start_(sample_at_start),
      callback_(std::move(callback)),
      sources_(std::move(sources)) {}

Sampler::~Sampler() { Stop(); }

Status Sampler::Start() {
  MutexLock lifecycle(&lifecycle_mu_);
  {
    MutexLock lock(&mu_);
    if (running_ && !stop_) return Status::FailedPrecondition("sampler already running");
  }
  // A thread asked to stop from inside its callback may still need joining.
  if (thread_.joinable()) thread_.join();
  {
    MutexLock lock(&mu_);
    stop_ = false;
    running_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Sampler::Stop() {
  if (std::this_thread::get_id() == loop_thread_id_.load()) {
    // Called from the callback: joining here would wait on ourselves.
    MutexLock lock(&mu_);
    stop_ = true;
    return;
  }
  MutexLock lifecycle(&lifecycle_mu_);
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&mu_);
  running_ = false;
}

bool Sampler::running() const {
  MutexLock lock(&mu_);
  return running_ && !stop_;
}

void Sampler::Loop() {
  loop_thread_id_.store(std::this_thread::get_id());
  OpenSources();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  if (sample_at_start_) {
    SampleBatch batch = SampleOnce();
    if (!batch.samples.empty() && callback_) callback_(std::move(batch));
  }
  Clock::time_point next = start + first_delay_;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stop_) {
        if (!cv_.WaitUntil(mu_, next)) break;  // time for the next batch
      }
      if (stop_) break;
    }
    SampleBatch batch = SampleOnce();
    if (!batch.samples.empty() && callback_) callback_(std::move(batch));
    // Keep a fixed cadence; ticks missed by a slow callback are skipped, not bunched up.
    next += interval_;
    Clock::time_point now = Clock::now();
    if (next <= now) next = now + interval_;
  }
  loop_thread_id_.store(std::thread::id());
}

void Sampler::OpenSourcesLocked() {
  if (opened_) return;
  opened_ = true;
  for (const auto& source : sources_) {
    Status s = source->Open();
    if (s.ok()) {
      active_.push_back(source.get());
    } else {
      skipped_.emplace_back(std::string(source->name()), std::move(s));
    }
  }
}

void Sampler::OpenSources() {
  MutexLock lock(&sources_mu_);
  OpenSourcesLocked();
}

double RoundSampleValue(double value) {
  constexpr double kScale = [] {  // 10^kSampleDecimals
    double scale = 1;
    for (int i = 0; i < kSampleDecimals; ++i) scale *= 10;
    return scale;
  }();
  if (!std::isfinite(value)) return value;
  const double scaled = value * kScale;
  // Past 2^52 every double is an integer already: nothing to round (and no overflow below).
  if (std::fabs(scaled) >= 0x1p52) return value;
  const double rounded = std::round(scaled) / kScale;
  return rounded == 0 ? 0.0 : rounded;  // -0.004 -> 0, not -0
}

SampleBatch Sampler::SampleOnce(int64_t now_ms) {
  MutexLock lock(&sources_mu_);
  OpenSourcesLocked();
  SampleBatch batch;
  batch.time_ms = now_ms;
  for (MonitorSource* source : active_) {
    // A failing source contributes nothing this time; the samples it added before failing
    // are still valid.
    (void)source->Sample(now_ms, &batch.samples);
  }
  for (monitor::Sample& sample : batch.samples) sample.value = RoundSampleValue(sample.value);
  return batch;
}

SampleBatch Sampler::SampleOnce() { return SampleOnce(NowMillis()); }

std::vector<std::string> Sampler::active_sources() const {
  MutexLock lock(&sources_mu_);
  std::vector<std::string> names;
  for (const MonitorSource* s : active_) names.emplace_back(s->name());
  return names;
}

std::vector<std::pair<std::string, Status>> Sampler::skipped_sources() const {
  MutexLock lock(&sources_mu_);
  return skipped_;
}

}  // namespace cohort::monitor
