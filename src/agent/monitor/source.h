// MonitorSource: one kind of system metric (cpu, memory, disk, network, gpu) that the agent's
// system monitor samples periodically.
//
// Keys carry no "system/" prefix; the caller adds it when it stores them as series. Units: "%"
// is 0..100, "mb" is MiB (2^20 bytes, as the seed vendor's SDK reports), temperatures are
// degrees Celsius, clocks MHz, power watts. The full key list, by source:
//
//   cpu      "cpu"                        % of all CPUs busy, machine-wide
//            "cpu.<n>"                    % busy of CPU n (only with CpuSource per_cpu=true)
//            "proc.cpu"                   % of all CPUs used by the monitored process tree
//   memory   "memory"                     % of RAM in use (MemTotal - MemAvailable)
//            "memory.used_mb"             RAM in use
//            "proc.memory.rss_mb"         resident set size summed over the process tree
//   disk     "disk"                       % used of the data directory's file system
//            "disk.<mount>.used_percent"  % used of each extra path, e.g. "disk./.used_percent"
//            "disk.read_mb"               MiB read from whole disks since Open()
//            "disk.write_mb"              MiB written to whole disks since Open()
//   network  "network.sent_mb"            MiB sent on all interfaces but lo since Open()
//            "network.recv_mb"            MiB received on all interfaces but lo since Open()
//   gpu      "gpu.<i>.gpu"                utilisation % of device i (NVML index)
//            "gpu.<i>.memory"             memory-controller utilisation %
//            "gpu.<i>.memory_allocated"   % of device memory allocated
//            "gpu.<i>.memory_used_mb"     device memory allocated
//            "gpu.<i>.memory_total_mb"    device memory size
//            "gpu.<i>.temp"               GPU core temperature, C
//            "gpu.<i>.power_watts"        power draw
//            "gpu.<i>.power_percent"      power draw, % of the enforced power limit
//            "gpu.<i>.sm_clock_mhz"       SM clock
//            "gpu.<i>.mem_clock_mhz"      memory clock
//
// Precision: the Sampler rounds every value to kSampleDecimals decimals (0.01 of its unit) as it
// takes a batch. The sources' ratios and unit conversions carry no meaning beyond that (a CPU
// share over a second of 100 Hz ticks moves in steps of 0.5%; 0.01 MiB is 10 KiB), and a short
// decimal is what the store's chunk codec keeps small (~1-2 bytes a point against 6-8 for a
// full-precision double: docs/formats.md, "Scaled mode"). Integers are unchanged.
//
// A key whose value cannot be read in one sample (a counter went missing, a device call
// failed, the first sample has no delta yet) is left out of that sample; the others stay.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::monitor {

// Bytes in one "mb" of the keys (MiB).
inline constexpr double kBytesPerMb = 1024.0 * 1024.0;

// Decimals kept of every sampled value (see "Precision" above).
inline constexpr int kSampleDecimals = 2;

// `value` rounded to kSampleDecimals decimals: the double nearest to round(value * 100) / 100
// (NaN and infinities as they are).
double RoundSampleValue(double value);

// One measured value. Plain value type.
struct Sample {
  std::string key;  // without the "system/" prefix, e.g. "gpu.0.temp"
  double value = 0;

  bool operator==(const Sample& o) const = default;
};

// Interface of a metric source. Lifecycle: construct, Open() once, then Sample() any number of
// times. Not thread-safe: one thread at a time (the Sampler serialises its calls); sources that
// take a RootPids handle read it under that object's own lock.
class MonitorSource {
 public:
  virtual ~MonitorSource() = default;

  // Short stable name for logs: "cpu", "memory", "disk", "network", "nvml".
  virtual std::string_view name() const = 0;

  // Checks that the source can work here and takes the baselines that later deltas and
  // "since start" counters are measured from. Returns kUnavailable (with the reason) when the
  // source cannot work on this machine (no /proc file, no NVML library, no GPU...): the
  // monitor then skips it, it never fails the monitor. Call once, before Sample().
  virtual Status Open() = 0;

  // Appends this source's samples at wall time `now_ms` (ms since the epoch) to `out`.
  // Returns a non-OK status only when nothing at all could be read this time; samples it
  // appended before failing stay valid.
  virtual Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) = 0;
};

}  // namespace cohort::monitor
