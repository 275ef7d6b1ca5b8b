/* fake_nvml: a stand-in for NVIDIA's libnvidia-ml.so.1 for the monitor's tests (there is no GPU
 * or driver on the build machines). It implements the NVML functions the monitor's NvmlSource
 * looks up, with the signatures of agent/monitor/nvml_api.h, returning deterministic values
 * per device index i that environment variables can override (read at each call):
 *
 *   FAKE_NVML_FAIL_INIT=1          nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_DEVICE_COUNT         number of devices, default 2, at most 64
 *   FAKE_NVML_<NAME>_<i>           one value of device i; "err" makes the call fail with
 *                                  NVML_ERROR_NOT_SUPPORTED
 *
 *   NAME            default          unit, function
 *   UTIL_GPU        50 + i           %, nvmlDeviceGetUtilizationRates
 *   UTIL_MEMORY     20 + i           %, nvmlDeviceGetUtilizationRates
 *   MEMORY_TOTAL_MB 16384            MiB, nvmlDeviceGetMemoryInfo
 *   MEMORY_USED_MB  1024 * (i + 1)   MiB, nvmlDeviceGetMemoryInfo
 *   TEMP            40 + i           C, nvmlDeviceGetTemperature
 *   POWER_MW        100000 + 10000 i mW, nvmlDeviceGetPowerUsage
 *   POWER_LIMIT_MW  300000           mW, nvmlDeviceGetEnforcedPowerLimit
 *   SM_CLOCK        1400 + i         MHz, nvmlDeviceGetClockInfo(NVML_CLOCK_SM or GRAPHICS)
 *   MEM_CLOCK       5000 + i         MHz, nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)
 *
 *   FAKE_NVML_WOBBLE=1             utilisation, temperature and power change from one reading
 *                                  to the next (a counter per device and reading; as a real
 *                                  GPU's do), memory and clocks stay put (the web UI's tests
 *                                  chart the former and fold the latter away as constants)
 *
 * Built with FAKE_NVML_MINIMAL it lacks nvmlErrorString, the power and the clock functions, as
 * an old driver might. fakeNvmlLiveInits() (not NVML) returns the successful nvmlInit_v2 calls
 * not yet matched by nvmlShutdown. Not thread-safe: the tests call it from one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/monitor/nvml_api.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_CHECK_TYPE(fn) static const fn##_fn fake_check_##fn __attribute__((unused)) = fn
#define FAKE_MAX_DEVICES 64u

struct nvmlDevice_st {
  unsigned int index;
};

static struct nvmlDevice_st g_devices[FAKE_MAX_DEVICES];
static int g_live_inits = 0;

static unsigned int DeviceCount(void) {
  const char* v = getenv("FAKE_NVML_DEVICE_COUNT");
  if (v == NULL || v[0] == '\0') return 2;
  unsigned long n = strtoul(v, NULL, 10);
  return n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (unsigned int)n;
}

/* NVML_SUCCESS when `d` is a handle this library gave out and is still valid. */
static nvmlReturn_t CheckDevice(nvmlDevice_t d) {
  if (g_live_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (d < g_devices || d >= g_devices + FAKE_MAX_DEVICES || d->index >= DeviceCount()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

/* Device d's value NAME: from FAKE_NVML_<name>_<index>, else `fallback`. */
static nvmlReturn_t Value(nvmlDevice_t d, const char* name, unsigned long long fallback,
                          unsigned long long* out) {
  nvmlReturn_t r = CheckDevice(d);
  if (r != NVML_SUCCESS) return r;
  char var[96];
  snprintf(var, sizeof(var), "FAKE_NVML_%s_%u", name, d->index);
  const char* v = getenv(var);
  if (v != NULL && strcmp(v, "err") == 0) return NVML_ERROR_NOT_SUPPORTED;
  *out = (v != NULL && v[0] != '\0') ? strtoull(v, NULL, 10) : fallback;
  return NVML_SUCCESS;
}

/* With FAKE_NVML_WOBBLE=1: 0..range-1, the next of a sequence per device and reading kind;
 * otherwise 0. */
enum { kWobbleUtil, kWobbleTemp, kWobblePower, kWobbleKinds };
static unsigned int Wobble(nvmlDevice_t d, int kind, unsigned int range) {
  static unsigned int calls[FAKE_MAX_DEVICES][kWobbleKinds];
  const char* v = getenv("FAKE_NVML_WOBBLE");
  if (v == NULL || strcmp(v, "1") != 0 || range == 0) return 0;
  return (calls[d->index][kind]++ * 7u + d->index) % range;
}

/* Narrows a Value() to the unsigned int most NVML getters return. */
static nvmlReturn_t UintValue(nvmlDevice_t d, const char* name, unsigned long long fallback,
                              unsigned int* out) {
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long v = 0;
  nvmlReturn_t r = Value(d, name, fallback, &v);
  if (r == NVML_SUCCESS) *out = (unsigned int)v;
  return r;
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  const char* fail = getenv("FAKE_NVML_FAIL_INIT");
  if (fail != NULL && strcmp(fail, "1") == 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  for (unsigned int i = 0; i < FAKE_MAX_DEVICES; ++i) g_devices[i].index = i;
  ++g_live_inits;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (g_live_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  --g_live_inits;
  return NVML_SUCCESS;
}

FAKE_EXPORT int fakeNvmlLiveInits(void) { return g_live_inits; }

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_live_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = DeviceCount();
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (g_live_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || index >= DeviceCount()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t* utilization) {
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = CheckDevice(device);
  if (r != NVML_SUCCESS) return r;
  unsigned int gpu = 0, memory = 0;
  r = UintValue(device, "UTIL_GPU", 50 + device->index, &gpu);
  if (r == NVML_SUCCESS) r = UintValue(device, "UTIL_MEMORY", 20 + device->index, &memory);
  if (r != NVML_SUCCESS) return r;
  const unsigned int w = Wobble(device, kWobbleUtil, 10);
  utilization->gpu = gpu + w > 100 ? 100 : gpu + w;
  utilization->memory = memory + w > 100 ? 100 : memory + w;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = CheckDevice(device);
  if (r != NVML_SUCCESS) return r;
  unsigned long long total_mb = 0, used_mb = 0;
  r = Value(device, "MEMORY_TOTAL_MB", 16384, &total_mb);
  if (r == NVML_SUCCESS)
    r = Value(device, "MEMORY_USED_MB", 1024ull * (device->index + 1), &used_mb);
  if (r != NVML_SUCCESS) return r;
  memory->total = total_mb << 20;
  memory->used = used_mb << 20;
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                  nvmlTemperatureSensors_t sensor,
                                                  unsigned int* temp_c) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = CheckDevice(device);
  if (r != NVML_SUCCESS) return r;
  r = UintValue(device, "TEMP", 40 + device->index, temp_c);
  if (r == NVML_SUCCESS) *temp_c += Wobble(device, kWobbleTemp, 6);
  return r;
}

#ifndef FAKE_NVML_MINIMAL

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power_mw) {
  nvmlReturn_t r = CheckDevice(device);
  if (r != NVML_SUCCESS) return r;
  r = UintValue(device, "POWER_MW", 100000 + 10000ull * device->index, power_mw);
  if (r == NVML_SUCCESS) *power_mw += 1000u * Wobble(device, kWobblePower, 9);
  return r;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                         unsigned int* limit_mw) {
  return UintValue(device, "POWER_LIMIT_MW", 300000, limit_mw);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int* clock_mhz) {
  nvmlReturn_t r = CheckDevice(device);
  if (r != NVML_SUCCESS) return r;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      return UintValue(device, "SM_CLOCK", 1400 + device->index, clock_mhz);
    case NVML_CLOCK_MEM:
      return UintValue(device, "MEM_CLOCK", 5000 + device->index, clock_mhz);
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

FAKE_CHECK_TYPE(nvmlErrorString);
FAKE_CHECK_TYPE(nvmlDeviceGetPowerUsage);
FAKE_CHECK_TYPE(nvmlDeviceGetEnforcedPowerLimit);
FAKE_CHECK_TYPE(nvmlDeviceGetClockInfo);

#endif /* FAKE_NVML_MINIMAL */

/* The definitions above must match the types the monitor calls them through. */
FAKE_CHECK_TYPE(nvmlInit_v2);
FAKE_CHECK_TYPE(nvmlShutdown);
FAKE_CHECK_TYPE(nvmlDeviceGetCount_v2);
FAKE_CHECK_TYPE(nvmlDeviceGetHandleByIndex_v2);
FAKE_CHECK_TYPE(nvmlDeviceGetUtilizationRates);
FAKE_CHECK_TYPE(nvmlDeviceGetMemoryInfo);
FAKE_CHECK_TYPE(nvmlDeviceGetTemperature);
