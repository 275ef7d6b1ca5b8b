/* The few declarations of NVIDIA's public NVML C API that the monitor uses, written from the
 * documented API (no NVML SDK is needed to build Cohort). The monitor loads the library with
 * dlopen and looks these functions up with dlsym; tests/fake_nvml implements them.
 *
 * Plain C so that the fake library (C) checks its definitions against these types. Types are
 * declarations only, with no state: safe from any thread.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t; /* an enum in nvml.h; int-sized */
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;    /* % of time a kernel ran over the last sample period */
  unsigned int memory; /* % of time device memory was read or written */
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
  unsigned long long total; /* bytes */
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef int nvmlTemperatureSensors_t;
enum { NVML_TEMPERATURE_GPU = 0 };

typedef int nvmlClockType_t;
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

/* Function types, one per looked-up symbol (the symbol name without "_fn"). */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device,
                                                         nvmlUtilization_t* utilization);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device,
                                                    nvmlTemperatureSensors_t sensor,
                                                    unsigned int* temp_c);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power_mw);
typedef nvmlReturn_t (*nvmlDeviceGetEnforcedPowerLimit_fn)(nvmlDevice_t device,
                                                           unsigned int* limit_mw);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type,
                                                  unsigned int* clock_mhz);

#ifdef __cplusplus
}
#endif
