#include "agent/monitor/network_source.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/monitor/proc_fixture.h"

namespace cohort::monitor {
namespace {

constexpr uint64_t kMb = uint64_t{1} << 20;

std::string NetDev(uint64_t lo, uint64_t eth_rx, uint64_t eth_tx, uint64_t ib_rx, uint64_t ib_tx) {
  auto row = [](const std::string& name, uint64_t rx, uint64_t tx) {
    // Large counters run into the colon, as the kernel prints them.
    return name + ":" + std::to_string(rx) + "    10    0    0    0     0          0         0 " +
           std::to_string(tx) + "    12    0    0    0     0       0          0\n";
  };
  return "Inter-|   Receive                                                |  Transmit\n"
         " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
         "errs drop fifo colls carrier compressed\n" +
         row("    lo", lo, lo) + row("  eth0", eth_rx, eth_tx) + row("   ib0", ib_rx, ib_tx);
}

std::map<std::string, double> SampleMap(NetworkSource* source) {
  std::vector<monitor::Sample> out;
  Status s = source->Sample(1000, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, double> m;
  for (const auto& x : out) m[x.key] = x.value;
  return m;
}

TEST(NetworkSource, SumsInterfacesExceptLoopbackSinceOpen) {
  ProcFixture proc;
  proc.Write("net/dev", NetDev(5000, 1000, 2000, 0, 0));
  NetworkSourceOptions options;
  options.proc_root = proc.root();
  NetworkSource net(options);
  ASSERT_TRUE(net.Open().ok());
  proc.Write("net/dev", NetDev(999999999, 1000 + 1 * kMb, 2000 + 2 * kMb, 3 * kMb, 4 * kMb));
  auto m = SampleMap(&net);
  EXPECT_DOUBLE_EQ(m["network.recv_mb"], 4.0);
  EXPECT_DOUBLE_EQ(m["network.sent_mb"], 6.0);
}

TEST(NetworkSource, CounterResetNeverGoesBackwards) {
  ProcFixture proc;
  proc.Write("net/dev", NetDev(0, 0, 0, 0, 0));
  NetworkSourceOptions options;
  options.proc_root = proc.root();
  NetworkSource net(options);
  ASSERT_TRUE(net.Open().ok());
  proc.Write("net/dev", NetDev(0, 8 * kMb, 8 * kMb, 0, 0));
  EXPECT_DOUBLE_EQ(SampleMap(&net)["network.recv_mb"], 8.0);
  proc.Write("net/dev", NetDev(0, 1 * kMb, 1 * kMb, 0, 0));  // eth0 reset
  EXPECT_DOUBLE_EQ(SampleMap(&net)["network.recv_mb"], 8.0);
  proc.Write("net/dev", NetDev(0, 3 * kMb, 1 * kMb, 0, 0));  // counts from the reset value
  auto m = SampleMap(&net);
  EXPECT_DOUBLE_EQ(m["network.recv_mb"], 10.0);
  EXPECT_DOUBLE_EQ(m["network.sent_mb"], 8.0);
}

TEST(NetworkSource, MissingNetDevIsUnavailable) {
  ProcFixture proc;
  NetworkSourceOptions options;
  options.proc_root = proc.root();
  NetworkSource net(options);
  EXPECT_EQ(net.Open().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace cohort::monitor
