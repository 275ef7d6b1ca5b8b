#include "agent/monitor/nvml_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <set>

namespace cohort::monitor {
namespace {

constexpr char kFakeNvml[] = COHORT_FAKE_NVML_PATH;
constexpr char kFakeNvmlMinimal[] = COHORT_FAKE_NVML_MINIMAL_PATH;
constexpr const char* kFakeEnv[] = {"FAKE_NVML_FAIL_INIT", "FAKE_NVML_DEVICE_COUNT",
                                    "FAKE_NVML_TEMP_0", kNvmlLibraryEnv};

// Clears the fake's knobs around each test so that tests do not leak settings.
class NvmlSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { ClearEnv(); }
  void TearDown() override { ClearEnv(); }
  static void ClearEnv() {
    for (const char* name : kFakeEnv) ::unsetenv(name);
  }

  static NvmlSourceOptions Options(std::vector<int> ids = {}) {
    NvmlSourceOptions o;
    o.library_path = kFakeNvml;
    o.device_ids = std::move(ids);
    return o;
  }

  static std::map<std::string, double> SampleMap(NvmlSource* source) {
    std::vector<monitor::Sample> out;
    Status s = source->Sample(1000, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::map<std::string, double> m;
    for (const auto& x : out) {
      EXPECT_EQ(m.count(x.key), 0u) << "duplicate " << x.key;
      m[x.key] = x.value;
    }
    return m;
  }
};

TEST_F(NvmlSourceTest, AllKeysForTwoDevices) {
  NvmlSource nvml(Options());
  Status s = nvml.Open();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(nvml.device_indices(), (std::vector<int>{0, 1}));
  auto m = SampleMap(&nvml);
  const std::map<std::string, double> expected = {
      {"gpu.0.gpu", 50},
      {"gpu.0.memory", 20},
      {"gpu.0.memory_allocated", 6.25},  // 1024 of 16384 MiB
      {"gpu.0.memory_used_mb", 1024},
      {"gpu.0.memory_total_mb", 16384},
      {"gpu.0.temp", 40},
      {"gpu.0.power_watts", 100},
      {"gpu.0.power_percent", 100.0 / 3.0},
      {"gpu.0.sm_clock_mhz", 1400},
      {"gpu.0.mem_clock_mhz", 5000},
      {"gpu.1.gpu", 51},
      {"gpu.1.memory", 21},
      {"gpu.1.memory_allocated", 12.5},
      {"gpu.1.memory_used_mb", 2048},
      {"gpu.1.memory_total_mb", 16384},
      {"gpu.1.temp", 41},
      {"gpu.1.power_watts", 110},
      {"gpu.1.power_percent", 110.0 / 3.0},
      {"gpu.1.sm_clock_mhz", 1401},
      {"gpu.1.mem_clock_mhz", 5001},
  };
  ASSERT_EQ(m.size(), expected.size());
  for (const auto& [key, value] : expected) {
    ASSERT_EQ(m.count(key), 1u) << key;
    EXPECT_DOUBLE_EQ(m[key], value) << key;
  }
}

TEST_F(NvmlSourceTest, FilterToDeviceOneYieldsOnlyItsKeys) {
  NvmlSource nvml(Options({1}));
  ASSERT_TRUE(nvml.Open().ok());
  EXPECT_EQ(nvml.device_indices(), (std::vector<int>{1}));
  auto m = SampleMap(&nvml);
  EXPECT_EQ(m.size(), 10u);
  for (const auto& [key, value] : m) EXPECT_EQ(key.rfind("gpu.1.", 0), 0u) << key;
  EXPECT_DOUBLE_EQ(m["gpu.1.temp"], 41);
}

TEST_F(NvmlSourceTest, EnvOverridesValueAndDeviceCount) {
  ::setenv("FAKE_NVML_DEVICE_COUNT", "3", 1);
  ::setenv("FAKE_NVML_TEMP_0", "87", 1);
  NvmlSource nvml(Options());
  ASSERT_TRUE(nvml.Open().ok());
  EXPECT_EQ(nvml.device_indices(), (std::vector<int>{0, 1, 2}));
  auto m = SampleMap(&nvml);
  EXPECT_DOUBLE_EQ(m["gpu.0.temp"], 87);
  EXPECT_DOUBLE_EQ(m["gpu.2.temp"], 42);
}

TEST_F(NvmlSourceTest, UnsupportedCallOmitsOnlyItsKey) {
  ::setenv("FAKE_NVML_TEMP_0", "err", 1);
  NvmlSource nvml(Options());
  ASSERT_TRUE(nvml.Open().ok());
  auto m = SampleMap(&nvml);
  EXPECT_EQ(m.count("gpu.0.temp"), 0u);
  EXPECT_EQ(m.count("gpu.0.gpu"), 1u);
  EXPECT_EQ(m.count("gpu.1.temp"), 1u);
}

TEST_F(NvmlSourceTest, MissingOptionalFunctionsOmitTheirKeys) {
  NvmlSourceOptions options = Options();
  options.library_path = kFakeNvmlMinimal;
  NvmlSource nvml(options);
  ASSERT_TRUE(nvml.Open().ok());
  auto m = SampleMap(&nvml);
  std::set<std::string> keys;
  for (const auto& [key, value] : m) keys.insert(key);
  const std::set<std::string> expected = {"gpu.0.gpu",
                                          "gpu.0.memory",
                                          "gpu.0.memory_allocated",
                                          "gpu.0.memory_used_mb",
                                          "gpu.0.memory_total_mb",
                                          "gpu.0.temp",
                                          "gpu.1.gpu",
                                          "gpu.1.memory",
                                          "gpu.1.memory_allocated",
                                          "gpu.1.memory_used_mb",
                                          "gpu.1.memory_total_mb",
                                          "gpu.1.temp"};
  EXPECT_EQ(keys, expected);
}

TEST_F(NvmlSourceTest, InitFailureIsUnavailable) {
  ::setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  NvmlSource nvml(Options());
  Status s = nvml.Open();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("nvmlInit_v2"), std::string::npos) << s.message();
  EXPECT_TRUE(nvml.device_indices().empty());
  std::vector<monitor::Sample> out;
  EXPECT_FALSE(nvml.Sample(1000, &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST_F(NvmlSourceTest, MissingLibraryIsUnavailable) {
  NvmlSourceOptions options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  NvmlSource nvml(options);
  Status s = nvml.Open();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST_F(NvmlSourceTest, EnvVariableChoosesLibraryWhenNoPathGiven) {
  EXPECT_EQ(NvmlSource::ResolveLibraryPath(""), kNvmlDefaultLibrary);
  ::setenv(kNvmlLibraryEnv, kFakeNvml, 1);
  EXPECT_EQ(NvmlSource::ResolveLibraryPath(""), kFakeNvml);
  EXPECT_EQ(NvmlSource::ResolveLibraryPath("/x/lib.so"), "/x/lib.so");
  NvmlSource nvml(NvmlSourceOptions{});
  ASSERT_TRUE(nvml.Open().ok());
  EXPECT_EQ(nvml.device_indices().size(), 2u);
}

TEST_F(NvmlSourceTest, RequestedDevicesThatDoNotExistAreUnavailable) {
  NvmlSource nvml(Options({5, -1}));
  EXPECT_EQ(nvml.Open().code(), StatusCode::kUnavailable);
}

TEST_F(NvmlSourceTest, NoDevicesIsUnavailableAndShutsNvmlDown) {
  ::setenv("FAKE_NVML_DEVICE_COUNT", "0", 1);
  void* lib = ::dlopen(kFakeNvml, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto live = reinterpret_cast<int (*)()>(::dlsym(lib, "fakeNvmlLiveInits"));
  ASSERT_NE(live, nullptr);
  int before = live();
  NvmlSource nvml(Options());
  EXPECT_EQ(nvml.Open().code(), StatusCode::kUnavailable);
  EXPECT_EQ(live(), before);  // the failed Open() already called nvmlShutdown
  ::dlclose(lib);
}

TEST_F(NvmlSourceTest, DestructorShutsNvmlDown) {
  void* lib = ::dlopen(kFakeNvml, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto live = reinterpret_cast<int (*)()>(::dlsym(lib, "fakeNvmlLiveInits"));
  ASSERT_NE(live, nullptr);
  int before = live();
  {
    NvmlSource nvml(Options());
    ASSERT_TRUE(nvml.Open().ok());
    EXPECT_EQ(live(), before + 1);
  }
  EXPECT_EQ(live(), before);
  ::dlclose(lib);
}

}  // namespace
}  // namespace cohort::monitor
