#include "agent/backoff.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

namespace cohort::agent {

Backoff::Backoff(Options options, std::function<double()> uniform)
    : options_(options), uniform_(std::move(uniform)) {
  if (!uniform_) {
    uniform_ = [] {
      thread_local std::mt19937_64 rng(std::random_device{}());
      return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    };
  }
}

double Backoff::BaseDelay() const {
  double d = options_.initial_s * std::pow(options_.multiplier, std::max(0, failures_));
  return std::min(d, options_.max_s);
}

double Backoff::NextDelay() {
  double base = BaseDelay();
  ++failures_;
  double u = std::clamp(uniform_(), 0.0, 1.0);
  return base * (1.0 - options_.jitter * u);
}

std::optional<double> ParseRetryAfter(std::string_view value, int64_t now_ms) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  auto r = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (r.ec == std::errc() && r.ptr == value.data() + value.size()) {
    return double(std::max<int64_t>(0, seconds));
  }
  std::string text(value);
  struct tm tm = {};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  int64_t at_ms = int64_t(timegm(&tm)) * 1000;
  return std::max(0.0, double(at_ms - now_ms) / 1000.0);
}

Backoff::Options BackoffOptionsFromEnvironment(Backoff::Options options) {
  if (const char* v = std::getenv("COHORT_BACKOFF_MAX_S"); v && *v) {
    char* end = nullptr;
    double max_s = std::strtod(v, &end);
    if (end && *end == '\0' && max_s > 0) {
      options.max_s = max_s;
      options.initial_s = std::min(options.initial_s, max_s);
    }
  }
  return options;
}

}  // namespace cohort::agent
