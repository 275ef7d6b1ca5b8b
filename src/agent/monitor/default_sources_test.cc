#include "agent/monitor/default_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "agent/monitor/sampler.h"

namespace cohort::monitor {
namespace {

TEST(MakeDefaultSources, GivesOneSourcePerKindInOrder) {
  MonitorConfig config;
  std::vector<std::string> names;
  for (const auto& s : MakeDefaultSources(config)) names.emplace_back(s->name());
  EXPECT_EQ(names, (std::vector<std::string>{"cpu", "memory", "disk", "network", "nvml"}));
  config.gpu = false;
  EXPECT_EQ(MakeDefaultSources(config).size(), 4u);
}

// Smoke test against this machine's real /proc: the parsers must understand the kernel's
// actual formats. No GPU here: the nvml source must be skipped, not fail the sampler.
TEST(MakeDefaultSources, RealProcGivesPlausibleValues) {
  MonitorConfig config;
  config.pids = std::make_shared<RootPids>(std::vector<int>{static_cast<int>(::getpid())});
  config.data_dir = std::filesystem::temp_directory_path().string();
  config.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  Sampler sampler(MakeDefaultSources(config), nullptr);
  sampler.SampleOnce();
  // Burn a little CPU so the second sample has a delta.
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + i * 0.5;
  SampleBatch batch = sampler.SampleOnce();
  std::map<std::string, double> m;
  for (const auto& s : batch.samples) m[s.key] = s.value;

  EXPECT_EQ(sampler.active_sources(),
            (std::vector<std::string>{"cpu", "memory", "disk", "network"}));
  ASSERT_EQ(sampler.skipped_sources().size(), 1u);
  EXPECT_EQ(sampler.skipped_sources()[0].first, "nvml");
  for (const char* key : {"cpu", "proc.cpu", "memory", "disk"}) {
    ASSERT_EQ(m.count(key), 1u) << key;
    EXPECT_GE(m[key], 0.0) << key;
    EXPECT_LE(m[key], 100.0) << key;
  }
  EXPECT_GT(m["memory.used_mb"], 0.0);
  EXPECT_GT(m["proc.memory.rss_mb"], 0.5);
  EXPECT_EQ(m.count("network.sent_mb"), 1u);
}

}  // namespace
}  // namespace cohort::monitor
