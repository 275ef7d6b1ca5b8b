#include "agent/monitor/default_sources.h"

#include "agent/monitor/cpu_source.h"
#include "agent/monitor/disk_source.h"
#include "agent/monitor/memory_source.h"
#include "agent/monitor/network_source.h"
#include "agent/monitor/nvml_source.h"

namespace cohort::monitor {

std::vector<std::unique_ptr<MonitorSource>> MakeDefaultSources(const MonitorConfig& config) {
  std::vector<std::unique_ptr<MonitorSource>> sources;
  CpuSourceOptions cpu;
  cpu.proc_root = config.proc_root;
  cpu.pids = config.pids;
  cpu.per_cpu = config.per_cpu;
  sources.push_back(std::make_unique<CpuSource>(std::move(cpu)));

  MemorySourceOptions memory;
  memory.proc_root = config.proc_root;
  memory.pids = config.pids;
  sources.push_back(std::make_unique<MemorySource>(std::move(memory)));

  DiskSourceOptions disk;
  disk.proc_root = config.proc_root;
  disk.data_path = config.data_dir;
  disk.mount_paths = config.disk_paths;
  sources.push_back(std::make_unique<DiskSource>(std::move(disk)));

  NetworkSourceOptions network;
  network.proc_root = config.proc_root;
  sources.push_back(std::make_unique<NetworkSource>(std::move(network)));

  if (config.gpu) {
    NvmlSourceOptions nvml;
    nvml.library_path = config.nvml_library;
    nvml.device_ids = config.gpu_device_ids;
    sources.push_back(std::make_unique<NvmlSource>(std::move(nvml)));
  }
  return sources;
}

}  // namespace cohort::monitor
