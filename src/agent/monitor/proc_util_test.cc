#include "agent/monitor/proc_util.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/monitor/proc_fixture.h"

namespace cohort::monitor {
namespace {

std::vector<int> Pids(const std::vector<ProcStat>& tree) {
  std::vector<int> pids;
  for (const ProcStat& p : tree) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

TEST(ParseProcStat, CommandWithSpacesAndParenthesesParses) {
  ProcStat st;
  ASSERT_TRUE(ParseProcStat(
      "4242 (pt_main (thread) 1) R 17 4242 4242 0 -1 4194560 1 0 0 0 321 45 0 0 20 0 8 0 "
      "98765 1000 200 18446744073709551615\n",
      &st));
  EXPECT_EQ(st.pid, 4242);
  EXPECT_EQ(st.ppid, 17);
  EXPECT_EQ(st.utime_ticks, 321u);
  EXPECT_EQ(st.stime_ticks, 45u);
  EXPECT_EQ(st.start_ticks, 98765u);
}

TEST(ParseProcStat, TruncatedLineFails) {
  ProcStat st;
  EXPECT_FALSE(ParseProcStat("12 (bash) S 1 12 12 0 -1 0 0 0 0 0 5 6", &st));
  EXPECT_FALSE(ParseProcStat("garbage", &st));
}

TEST(ParseU64, RejectsSignsJunkAndOverflow) {
  uint64_t v = 7;
  EXPECT_TRUE(ParseU64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseU64("18446744073709551616", &v));
  EXPECT_FALSE(ParseU64("-1", &v));
  EXPECT_FALSE(ParseU64("12a", &v));
  EXPECT_FALSE(ParseU64("", &v));
}

TEST(FindKeyedNumber, MatchesWholeKeyOnly) {
  const char* text = "MemTotal:  100 kB\nMemAvailableX: 5 kB\nMemAvailable:    42 kB\n";
  uint64_t v = 0;
  ASSERT_TRUE(FindKeyedNumber(text, "MemAvailable", &v));
  EXPECT_EQ(v, 42u);
  EXPECT_FALSE(FindKeyedNumber(text, "Mem", &v));
  EXPECT_FALSE(FindKeyedNumber(text, "SwapTotal", &v));
}

TEST(ReadWholeFile, MissingFileIsNotFound) {
  ProcFixture proc;
  auto r = ReadWholeFile(proc.root() + "/nope");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(FindProcessTree, IncludesDescendantsButNotOtherProcesses) {
  ProcFixture proc;
  proc.WriteProcess(1, 0, 0, 0, 1, 0);
  proc.WriteProcess(100, 1, 0, 0, 10, 0);
  proc.WriteProcess(101, 100, 0, 0, 11, 0);
  proc.WriteProcess(102, 101, 0, 0, 12, 0);  // grandchild
  proc.WriteProcess(200, 1, 0, 0, 13, 0);    // unrelated
  proc.WriteProcess(201, 200, 0, 0, 14, 0);
  proc.Write("self/stat", "not a pid directory");
  EXPECT_EQ(Pids(FindProcessTree(proc.root(), {100})), (std::vector<int>{100, 101, 102}));
  EXPECT_EQ(Pids(FindProcessTree(proc.root(), {101, 200, 999})),
            (std::vector<int>{101, 102, 200, 201}));
}

TEST(FindProcessTree, NoRootsGivesEmptyTree) {
  ProcFixture proc;
  proc.WriteProcess(100, 1, 0, 0, 10, 0);
  EXPECT_TRUE(FindProcessTree(proc.root(), {}).empty());
}

TEST(RootPids, AddIgnoresDuplicatesAndRemoveDeletes) {
  RootPids pids({5});
  pids.Add(7);
  pids.Add(5);
  EXPECT_EQ(pids.Get(), (std::vector<int>{5, 7}));
  pids.Remove(5);
  pids.Remove(99);
  EXPECT_EQ(pids.Get(), (std::vector<int>{7}));
  pids.Set({1, 2});
  EXPECT_EQ(pids.Get(), (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace cohort::monitor
