// NetworkSource: bytes sent and received since Open() on every interface except loopback,
// from /proc/net/dev ("network.sent_mb", "network.recv_mb").
//
// Counters are summed per interface as positive deltas, so an interface that appears, vanishes
// or has its counters reset never makes the totals go backwards. /proc/net/dev is per network
// namespace: the figures are those of the agent's namespace. Threading: as MonitorSource.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/monitor/proc_util.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

struct NetworkSourceOptions {
  std::string proc_root = kDefaultProcRoot;
};

class NetworkSource : public MonitorSource {
 public:
  explicit NetworkSource(NetworkSourceOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "network"; }
  Status Open() override;
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override;

 private:
  struct Bytes {
    uint64_t recv = 0;
    uint64_t sent = 0;
  };
  // Reads the per-interface byte counters, loopback excluded.
  Status ReadNetDev(std::map<std::string, Bytes>* out) const;

  const NetworkSourceOptions options_;
  std::map<std::string, Bytes> prev_;
  Bytes total_;  // since Open()
};

}  // namespace cohort::monitor
