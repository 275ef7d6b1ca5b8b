// NvmlSource: per-GPU metrics from NVIDIA's NVML library, loaded at run time with dlopen so
// that the agent neither links against nor needs the NVIDIA driver ("gpu.<i>.*" keys, i the
// NVML device index; see source.h).
//
// Open() loads the library (NvmlSourceOptions::library_path, else $COHORT_NVML_LIBRARY, else
// "libnvidia-ml.so.1"), calls nvmlInit_v2 and resolves the devices to sample; it returns
// kUnavailable when the library is absent, lacks a required function, fails to initialise,
// or none of the requested devices exists. Optional functions that the library lacks, and
// calls a device does not support, just leave their keys out. The destructor calls
// nvmlShutdown and unloads the library. Threading: as MonitorSource (NVML itself is
// thread-safe, but one source instance is used by one thread at a time).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "agent/monitor/nvml_api.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

inline constexpr char kNvmlLibraryEnv[] = "COHORT_NVML_LIBRARY";
inline constexpr char kNvmlDefaultLibrary[] = "libnvidia-ml.so.1";

struct NvmlSourceOptions {
  std::string library_path;     // empty: $COHORT_NVML_LIBRARY, else kNvmlDefaultLibrary
  std::vector<int> device_ids;  // NVML indices to sample (x_stats_gpu_device_ids); empty: all
};

class NvmlSource : public MonitorSource {
 public:
  explicit NvmlSource(NvmlSourceOptions options) : options_(std::move(options)) {}
  ~NvmlSource() override;
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  std::string_view name() const override { return "nvml"; }
  Status Open() override;
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override;

  // The NVML indices sampled, ascending; empty before a successful Open().
  std::vector<int> device_indices() const;

  // The library path Open() loads for `configured` (see the class comment).
  static std::string ResolveLibraryPath(const std::string& configured);

 private:
  struct Functions {
    nvmlInit_v2_fn init = nullptr;
    nvmlShutdown_fn shutdown = nullptr;
    nvmlErrorString_fn error_string = nullptr;
    nvmlDeviceGetCount_v2_fn get_count = nullptr;
    nvmlDeviceGetHandleByIndex_v2_fn get_handle = nullptr;
    nvmlDeviceGetUtilizationRates_fn get_utilization = nullptr;
    nvmlDeviceGetMemoryInfo_fn get_memory = nullptr;
    nvmlDeviceGetTemperature_fn get_temperature = nullptr;
    nvmlDeviceGetPowerUsage_fn get_power = nullptr;
    nvmlDeviceGetEnforcedPowerLimit_fn get_power_limit = nullptr;
    nvmlDeviceGetClockInfo_fn get_clock = nullptr;
  };
  struct Device {
    int index = 0;
    nvmlDevice_t handle = nullptr;
    std::string prefix;  // "gpu.<index>."
  };

  Status OpenLibrary();
  // Appends one device's samples; false when no call on it succeeded.
  bool SampleDevice(const Device& d, std::vector<monitor::Sample>* out) const;
  std::string ErrorText(nvmlReturn_t r) const;
  void Close();

  const NvmlSourceOptions options_;
  void* library_ = nullptr;
  bool initialized_ = false;  // nvmlInit_v2 succeeded; nvmlShutdown owed
  Functions fn_;
  std::vector<Device> devices_;
};

}  // namespace cohort::monitor
