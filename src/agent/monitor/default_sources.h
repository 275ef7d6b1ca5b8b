// MakeDefaultSources: the standard set of monitor sources (cpu, memory, disk, network, nvml)
// configured for one writer, ready to hand to a Sampler. Stateless; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/monitor/proc_util.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

struct MonitorConfig {
  std::string proc_root = kDefaultProcRoot;
  // Roots of the monitored process trees ("proc.*" keys): the training processes the writer
  // runs in. Null: no "proc.*" keys. The caller may update it while sampling runs.
  std::shared_ptr<const RootPids> pids;
  std::string data_dir;                 // its file system gives "disk"; empty: no "disk"
  std::vector<std::string> disk_paths;  // "disk.<path>.used_percent" each
  std::vector<int> gpu_device_ids;      // x_stats_gpu_device_ids; empty: all GPUs
  std::string nvml_library;             // empty: $COHORT_NVML_LIBRARY or libnvidia-ml.so.1
  bool per_cpu = false;                 // also "cpu.<n>"
  bool gpu = true;                      // false: no nvml source at all
};

// Sources in the order cpu, memory, disk, network, nvml (the last only when config.gpu).
std::vector<std::unique_ptr<MonitorSource>> MakeDefaultSources(const MonitorConfig& config);

}  // namespace cohort::monitor
