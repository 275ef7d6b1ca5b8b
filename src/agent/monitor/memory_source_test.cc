#include "agent/monitor/memory_source.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/monitor/proc_fixture.h"

namespace cohort::monitor {
namespace {

std::map<std::string, double> SampleMap(MemorySource* source) {
  std::vector<monitor::Sample> out;
  Status s = source->Sample(1000, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, double> m;
  for (const auto& x : out) m[x.key] = x.value;
  return m;
}

MemorySourceOptions Options(const ProcFixture& proc, std::shared_ptr<const RootPids> pids) {
  MemorySourceOptions o;
  o.proc_root = proc.root();
  o.pids = std::move(pids);
  return o;
}

TEST(MemorySource, MeminfoGivesPercentAndUsedMb) {
  ProcFixture proc;
  proc.Write("meminfo",
             "MemTotal:        8000000 kB\nMemFree:          100000 kB\n"
             "MemAvailable:    6000000 kB\nBuffers:          200000 kB\n");
  MemorySource memory(Options(proc, nullptr));
  ASSERT_TRUE(memory.Open().ok());
  auto m = SampleMap(&memory);
  EXPECT_DOUBLE_EQ(m["memory"], 25.0);
  EXPECT_DOUBLE_EQ(m["memory.used_mb"], 2000000.0 / 1024.0);
  EXPECT_EQ(m.count("proc.memory.rss_mb"), 0u);
  // Values follow the file, sample by sample.
  proc.Write("meminfo", "MemTotal:        8000000 kB\nMemAvailable:    2000000 kB\n");
  EXPECT_DOUBLE_EQ(SampleMap(&memory)["memory"], 75.0);
}

TEST(MemorySource, WithoutMemAvailableUsesFreeBuffersAndCached) {
  ProcFixture proc;
  proc.Write("meminfo", "MemTotal:  1000 kB\nMemFree:  100 kB\nBuffers:  50 kB\nCached:  250 kB\n");
  MemorySource memory(Options(proc, nullptr));
  ASSERT_TRUE(memory.Open().ok());
  EXPECT_DOUBLE_EQ(SampleMap(&memory)["memory"], 60.0);
}

TEST(MemorySource, RssSumsTheProcessTreeOnly) {
  ProcFixture proc;
  proc.Write("meminfo", "MemTotal:  1000000 kB\nMemAvailable:  500000 kB\n");
  proc.WriteProcess(100, 1, 0, 0, 10, 1024);
  proc.WriteProcess(101, 100, 0, 0, 11, 2048);
  proc.WriteProcess(200, 1, 0, 0, 12, 99999);  // not ours
  auto pids = std::make_shared<RootPids>(std::vector<int>{100});
  MemorySource memory(Options(proc, pids));
  ASSERT_TRUE(memory.Open().ok());
  EXPECT_DOUBLE_EQ(SampleMap(&memory)["proc.memory.rss_mb"], 3.0);
  // A kernel thread (no VmRSS line) in the tree adds nothing.
  proc.WriteProcess(102, 100, 0, 0, 13, 0);
  proc.Write("102/status", "Name:\tkworker\nState:\tI (idle)\n");
  EXPECT_DOUBLE_EQ(SampleMap(&memory)["proc.memory.rss_mb"], 3.0);
}

TEST(MemorySource, MissingMeminfoIsUnavailable) {
  ProcFixture proc;
  MemorySource memory(Options(proc, nullptr));
  EXPECT_EQ(memory.Open().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace cohort::monitor
