#include "agent/monitor/nvml_source.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

namespace cohort::monitor {
namespace {

// Looks up `symbol` in `lib` as a function of type F; null when absent.
template <typename F>
F Lookup(void* lib, const char* symbol) {
  return reinterpret_cast<F>(::dlsym(lib, symbol));
}

}  // namespace

NvmlSource::~NvmlSource() { Close(); }

std::string NvmlSource::ResolveLibraryPath(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv(kNvmlLibraryEnv);
  if (env != nullptr && env[0] != '\0') return env;
  return kNvmlDefaultLibrary;
}

void NvmlSource::Close() {
  devices_.clear();
  if (initialized_ && fn_.shutdown != nullptr) fn_.shutdown();
  initialized_ = false;
  if (library_ != nullptr) ::dlclose(library_);
  library_ = nullptr;
  fn_ = Functions();
}

std::string NvmlSource::ErrorText(nvmlReturn_t r) const {
  std::string text = "nvml error " + std::to_string(r);
  if (fn_.error_string != nullptr) {
    const char* s = fn_.error_string(r);
    if (s != nullptr) text += std::string(" (") + s + ")";
  }
  return text;
}

Status NvmlSource::OpenLibrary() {
  const std::string path = ResolveLibraryPath(options_.library_path);
  ::dlerror();
  library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* err = ::dlerror();
    return Status::Unavailable("nvml: cannot load " + path + ": " + (err ? err : "unknown"));
  }
  fn_.init = Lookup<nvmlInit_v2_fn>(library_, "nvmlInit_v2");
  fn_.shutdown = Lookup<nvmlShutdown_fn>(library_, "nvmlShutdown");
  fn_.get_count = Lookup<nvmlDeviceGetCount_v2_fn>(library_, "nvmlDeviceGetCount_v2");
  fn_.get_handle =
      Lookup<nvmlDeviceGetHandleByIndex_v2_fn>(library_, "nvmlDeviceGetHandleByIndex_v2");
  if (fn_.init == nullptr || fn_.shutdown == nullptr || fn_.get_count == nullptr ||
      fn_.get_handle == nullptr) {
    return Status::Unavailable("nvml: " + path + " lacks a required function");
  }
  fn_.error_string = Lookup<nvmlErrorString_fn>(library_, "nvmlErrorString");
  fn_.get_utilization =
      Lookup<nvmlDeviceGetUtilizationRates_fn>(library_, "nvmlDeviceGetUtilizationRates");
  fn_.get_memory = Lookup<nvmlDeviceGetMemoryInfo_fn>(library_, "nvmlDeviceGetMemoryInfo");
  fn_.get_temperature = Lookup<nvmlDeviceGetTemperature_fn>(library_, "nvmlDeviceGetTemperature");
  fn_.get_power = Lookup<nvmlDeviceGetPowerUsage_fn>(library_, "nvmlDeviceGetPowerUsage");
  fn_.get_power_limit =
      Lookup<nvmlDeviceGetEnforcedPowerLimit_fn>(library_, "nvmlDeviceGetEnforcedPowerLimit");
  fn_.get_clock = Lookup<nvmlDeviceGetClockInfo_fn>(library_, "nvmlDeviceGetClockInfo");
  return Status::Ok();
}

Status NvmlSource::Open() {
  if (library_ != nullptr) return Status::Ok();
  Status s = OpenLibrary();
  if (s.ok()) {
    nvmlReturn_t r = fn_.init();
    if (r != NVML_SUCCESS) {
      s = Status::Unavailable("nvml: nvmlInit_v2 failed: " + ErrorText(r));
    } else {
      initialized_ = true;
    }
  }
  unsigned int count = 0;
  if (s.ok()) {
    nvmlReturn_t r = fn_.get_count(&count);
    if (r != NVML_SUCCESS) s = Status::Unavailable("nvml: device count: " + ErrorText(r));
  }
  if (s.ok()) {
    std::vector<int> wanted = options_.device_ids;
    if (wanted.empty()) {
      for (unsigned int i = 0; i < count; ++i) wanted.push_back(static_cast<int>(i));
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::string skipped;
    for (int index : wanted) {
      nvmlDevice_t handle = nullptr;
      nvmlReturn_t r = index >= 0 && static_cast<unsigned int>(index) < count
                           ? fn_.get_handle(static_cast<unsigned int>(index), &handle)
                           : NVML_ERROR_NOT_FOUND;
      if (r != NVML_SUCCESS) {
        skipped += " " + std::to_string(index) + ": " + ErrorText(r) + ";";
        continue;
      }
      devices_.push_back(Device{index, handle, "gpu." + std::to_string(index) + "."});
    }
    if (devices_.empty()) {
      s = Status::Unavailable("nvml: no device to sample among " + std::to_string(count) + " (" +
                              skipped + " )");
    }
  }
  if (!s.ok()) Close();
  return s;
}

bool NvmlSource::SampleDevice(const Device& d, std::vector<monitor::Sample>* out) const {
  bool any = false;
  auto add = [&](const char* suffix, double v) {
    out->push_back({d.prefix + suffix, v});
    any = true;
  };
  if (fn_.get_utilization != nullptr) {
    nvmlUtilization_t u{};
    if (fn_.get_utilization(d.handle, &u) == NVML_SUCCESS) {
      add("gpu", u.gpu);
      add("memory", u.memory);
    }
  }
  if (fn_.get_memory != nullptr) {
    nvmlMemory_t m{};
    if (fn_.get_memory(d.handle, &m) == NVML_SUCCESS && m.total > 0) {
      add("memory_allocated", static_cast<double>(m.used) / static_cast<double>(m.total) * 100);
      add("memory_used_mb", static_cast<double>(m.used) / kBytesPerMb);
      add("memory_total_mb", static_cast<double>(m.total) / kBytesPerMb);
    }
  }
  if (fn_.get_temperature != nullptr) {
    unsigned int t = 0;
    if (fn_.get_temperature(d.handle, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS) add("temp", t);
  }
  if (fn_.get_power != nullptr) {
    unsigned int mw = 0;
    if (fn_.get_power(d.handle, &mw) == NVML_SUCCESS) {
      add("power_watts", mw / 1000.0);
      unsigned int limit_mw = 0;
      if (fn_.get_power_limit != nullptr &&
          fn_.get_power_limit(d.handle, &limit_mw) == NVML_SUCCESS && limit_mw > 0) {
        add("power_percent", static_cast<double>(mw) / limit_mw * 100.0);
      }
    }
  }
  if (fn_.get_clock != nullptr) {
    unsigned int mhz = 0;
    if (fn_.get_clock(d.handle, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) add("sm_clock_mhz", mhz);
    if (fn_.get_clock(d.handle, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS) add("mem_clock_mhz", mhz);
  }
  return any;
}

Status NvmlSource::Sample(int64_t /*now_ms*/, std::vector<monitor::Sample>* out) {
  if (!initialized_) return Status::FailedPrecondition("nvml: not open");
  bool any = false;
  for (const Device& d : devices_) any = SampleDevice(d, out) || any;
  if (!any) return Status::Unavailable("nvml: no device answered");
  return Status::Ok();
}

std::vector<int> NvmlSource::device_indices() const {
  std::vector<int> out;
  for (const Device& d : devices_) out.push_back(d.index);
  return out;
}

}  // namespace cohort::monitor
