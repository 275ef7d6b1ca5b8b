// Retry timing for the Sender: exponential backoff with jitter, and parsing of the server's
// Retry-After header. Backoff is a plain value type (not thread-safe: one owner); the free
// function is pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace cohort::agent {

// Delay after the n-th consecutive failure: initial * multiplier^(n-1), capped at max, then
// shortened by a random fraction of at most `jitter` (so that many agents that lost the server
// at once do not come back in lockstep).
class Backoff {
 public:
  struct Options {
    double initial_s = 0.25;
    double max_s = 30.0;
    double multiplier = 2.0;
    double jitter = 0.5;  // 0: no jitter; 0.5: each delay is in [base/2, base]
  };
  // `uniform` returns numbers in [0, 1); null: a thread-local PRNG.
  explicit Backoff(Options options, std::function<double()> uniform = nullptr);
  Backoff() : Backoff(Options{}) {}

  // Counts a failure and returns the delay before the next attempt, in seconds.
  double NextDelay();
  // The undithered delay the next failure would get (for tests and logs).
  double BaseDelay() const;
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  Options options_;
  std::function<double()> uniform_;
  int failures_ = 0;
};

// Applies $COHORT_BACKOFF_MAX_S (a positive number of seconds) to `options`: it caps the retry
// backoff of the agent's uploads (batches and artifacts), i.e. how soon after a server outage
// they resume at the latest. For operators and the fault tests. Unset or malformed: unchanged.
Backoff::Options BackoffOptionsFromEnvironment(Backoff::Options options);

// Parses a Retry-After value: delta-seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015
// 07:28:00 GMT", relative to `now_ms`). Never negative; nullopt when unparseable.
std::optional<double> ParseRetryAfter(std::string_view value, int64_t now_ms);

}  // namespace cohort::agent
