#include "agent/monitor/cpu_source.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/monitor/proc_fixture.h"

namespace cohort::monitor {
namespace {

std::map<std::string, double> ToMap(const std::vector<monitor::Sample>& samples) {
  std::map<std::string, double> m;
  for (const auto& s : samples) {
    EXPECT_EQ(m.count(s.key), 0u) << "duplicate key " << s.key;
    m[s.key] = s.value;
  }
  return m;
}

// /proc/stat with an aggregate line and two CPUs; guest fields must not count.
std::string Stat(int user, int system, int idle, int cpu0_busy, int cpu0_idle) {
  auto n = [](int v) { return std::to_string(v); };
  return "cpu  " + n(user) + " 0 " + n(system) + " " + n(idle) + " 0 0 0 0 999 999\n" + "cpu0 " +
         n(cpu0_busy) + " 0 0 " + n(cpu0_idle) + " 0 0 0 0 0 0\n" + "cpu1 0 0 0 100 0 0 0 0 0 0\n" +
         "intr 12345 0 0\nctxt 999\nbtime 1700000000\n";
}

CpuSourceOptions Options(const ProcFixture& proc, std::shared_ptr<const RootPids> pids) {
  CpuSourceOptions o;
  o.proc_root = proc.root();
  o.pids = std::move(pids);
  o.clock_ticks_per_second = 100;
  return o;
}

TEST(CpuSource, TwoSamplesGiveBusyPercentFromDeltas) {
  ProcFixture proc;
  proc.Write("stat", Stat(100, 100, 800, 0, 100));
  CpuSource cpu(Options(proc, nullptr));
  ASSERT_TRUE(cpu.Open().ok());
  // +100 user, +100 system, +600 idle: 200 of 800 ticks busy.
  proc.Write("stat", Stat(200, 200, 1400, 0, 100));
  std::vector<monitor::Sample> out;
  ASSERT_TRUE(cpu.Sample(1000, &out).ok());
  auto m = ToMap(out);
  ASSERT_EQ(m.count("cpu"), 1u);
  EXPECT_DOUBLE_EQ(m["cpu"], 25.0);
  EXPECT_EQ(m.count("cpu.0"), 0u);     // per_cpu is off
  EXPECT_EQ(m.count("proc.cpu"), 0u);  // no pids
  // Next sample measures against the previous one, not against Open(): all 800 busy.
  proc.Write("stat", Stat(600, 600, 1400, 0, 100));
  out.clear();
  ASSERT_TRUE(cpu.Sample(2000, &out).ok());
  EXPECT_DOUBLE_EQ(ToMap(out)["cpu"], 100.0);
}

TEST(CpuSource, PerCpuKeysWhenEnabled) {
  ProcFixture proc;
  proc.Write("stat", Stat(0, 0, 100, 0, 100));
  auto options = Options(proc, nullptr);
  options.per_cpu = true;
  CpuSource cpu(options);
  ASSERT_TRUE(cpu.Open().ok());
  proc.Write("stat", Stat(0, 50, 250, 75, 125));
  std::vector<monitor::Sample> out;
  ASSERT_TRUE(cpu.Sample(1000, &out).ok());
  auto m = ToMap(out);
  ASSERT_EQ(m.count("cpu.0"), 1u);
  EXPECT_DOUBLE_EQ(m["cpu.0"], 75.0);  // +75 busy, +25 idle
  EXPECT_EQ(m.count("cpu.1"), 0u);     // no time passed on cpu1
  EXPECT_DOUBLE_EQ(m["cpu"], 25.0);
}

TEST(CpuSource, ProcessTreeShareCountsDescendantsAndNewChildren) {
  ProcFixture proc;
  proc.Write("stat", Stat(100, 100, 800, 0, 100));
  proc.Write("uptime", "50.00 80.00\n");       // 5000 ticks since boot
  proc.WriteProcess(100, 1, 10, 10, 1000, 0);  // root
  proc.WriteProcess(101, 100, 5, 5, 1100, 0);  // child
  proc.WriteProcess(200, 1, 50, 0, 1200, 0);   // unrelated
  auto pids = std::make_shared<RootPids>(std::vector<int>{100});
  CpuSource cpu(Options(proc, pids));
  ASSERT_TRUE(cpu.Open().ok());

  proc.Write("stat", Stat(200, 200, 1400, 0, 100));  // 800 ticks passed
  proc.Write("uptime", "58.00 90.00\n");
  proc.WriteProcess(100, 1, 50, 10, 1000, 0);   // +40
  proc.WriteProcess(101, 100, 25, 5, 1100, 0);  // +20
  proc.WriteProcess(102, 101, 15, 5, 5200, 0);  // started after Open: all 20 count
  proc.WriteProcess(200, 1, 350, 0, 1200, 0);   // +300, not ours
  std::vector<monitor::Sample> out;
  ASSERT_TRUE(cpu.Sample(1000, &out).ok());
  auto m = ToMap(out);
  ASSERT_EQ(m.count("proc.cpu"), 1u);
  EXPECT_DOUBLE_EQ(m["proc.cpu"], 10.0);  // 80 of 800
}

TEST(CpuSource, NewlyAddedOldRootSetsBaselineWithoutSpike) {
  ProcFixture proc;
  proc.Write("stat", Stat(100, 100, 800, 0, 100));
  proc.Write("uptime", "50.00 80.00\n");
  proc.WriteProcess(300, 1, 4000, 1000, 100, 0);  // long-running, lots of CPU already
  auto pids = std::make_shared<RootPids>();
  CpuSource cpu(Options(proc, pids));
  ASSERT_TRUE(cpu.Open().ok());

  pids->Add(300);
  proc.Write("stat", Stat(200, 200, 1400, 0, 100));
  std::vector<monitor::Sample> out;
  ASSERT_TRUE(cpu.Sample(1000, &out).ok());
  EXPECT_DOUBLE_EQ(ToMap(out)["proc.cpu"], 0.0);

  proc.Write("stat", Stat(400, 200, 2000, 0, 100));  // 800 more ticks
  proc.WriteProcess(300, 1, 4100, 1100, 100, 0);     // +200
  out.clear();
  ASSERT_TRUE(cpu.Sample(2000, &out).ok());
  EXPECT_DOUBLE_EQ(ToMap(out)["proc.cpu"], 25.0);
}

TEST(CpuSource, VanishedRootsOmitProcKey) {
  ProcFixture proc;
  proc.Write("stat", Stat(100, 100, 800, 0, 100));
  proc.WriteProcess(100, 1, 10, 10, 1000, 0);
  CpuSource cpu(Options(proc, std::make_shared<RootPids>(std::vector<int>{100})));
  ASSERT_TRUE(cpu.Open().ok());
  proc.Remove("100");
  proc.Write("stat", Stat(200, 200, 1400, 0, 100));
  std::vector<monitor::Sample> out;
  ASSERT_TRUE(cpu.Sample(1000, &out).ok());
  auto m = ToMap(out);
  EXPECT_EQ(m.count("proc.cpu"), 0u);
  EXPECT_EQ(m.count("cpu"), 1u);
}

TEST(CpuSource, MissingProcStatIsUnavailable) {
  ProcFixture proc;
  CpuSource cpu(Options(proc, nullptr));
  Status s = cpu.Open();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

}  // namespace
}  // namespace cohort::monitor
