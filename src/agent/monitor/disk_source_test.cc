#include "agent/monitor/disk_source.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/monitor/proc_fixture.h"

namespace cohort::monitor {
namespace {

std::map<std::string, double> SampleMap(DiskSource* source) {
  std::vector<monitor::Sample> out;
  Status s = source->Sample(1000, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, double> m;
  for (const auto& x : out) m[x.key] = x.value;
  return m;
}

// One /proc/diskstats line: sectors read and written (fields 6 and 10).
std::string Line(const std::string& name, uint64_t read, uint64_t written) {
  return "   8       0 " + name + " 100 0 " + std::to_string(read) + " 50 200 0 " +
         std::to_string(written) + " 70 0 80 120 0 0 0 0\n";
}

TEST(IsWholeDisk, PartitionsAndVirtualDevicesAreExcluded) {
  std::vector<std::string_view> all = {"sda",     "sda1",      "nvme0n1", "nvme0n1p2",
                                       "mmcblk0", "mmcblk0p1", "loop0",   "dm-0",
                                       "md0",     "sdaa",      "vda"};
  EXPECT_TRUE(IsWholeDisk("sda", all));
  EXPECT_TRUE(IsWholeDisk("nvme0n1", all));
  EXPECT_TRUE(IsWholeDisk("mmcblk0", all));
  EXPECT_TRUE(IsWholeDisk("sdaa", all));
  EXPECT_TRUE(IsWholeDisk("vda", all));
  EXPECT_FALSE(IsWholeDisk("sda1", all));
  EXPECT_FALSE(IsWholeDisk("nvme0n1p2", all));
  EXPECT_FALSE(IsWholeDisk("mmcblk0p1", all));
  EXPECT_FALSE(IsWholeDisk("loop0", all));
  EXPECT_FALSE(IsWholeDisk("dm-0", all));
  EXPECT_FALSE(IsWholeDisk("md0", all));
}

TEST(DiskSource, DiskstatsGiveCumulativeMbSinceOpenFromWholeDisks) {
  ProcFixture proc;
  proc.Write("diskstats", Line("sda", 1000, 5000) + Line("sda1", 1000, 5000) +
                              Line("loop0", 10, 10) + Line("nvme0n1", 0, 0));
  DiskSourceOptions options;
  options.proc_root = proc.root();
  DiskSource disk(options);
  ASSERT_TRUE(disk.Open().ok());
  // sda: +2048 sectors read (1 MiB); the partition and the loop device must not count.
  proc.Write("diskstats", Line("sda", 3048, 5000) + Line("sda1", 3048, 5000) +
                              Line("loop0", 999999, 999999) + Line("nvme0n1", 0, 4096));
  auto m = SampleMap(&disk);
  EXPECT_DOUBLE_EQ(m["disk.read_mb"], 1.0);
  EXPECT_DOUBLE_EQ(m["disk.write_mb"], 2.0);
  EXPECT_EQ(m.count("disk"), 0u);  // no data path configured
  // Cumulative since Open(); a counter that went backwards adds nothing.
  proc.Write("diskstats", Line("sda", 4072, 5000) + Line("nvme0n1", 0, 0));
  m = SampleMap(&disk);
  EXPECT_DOUBLE_EQ(m["disk.read_mb"], 1.5);
  EXPECT_DOUBLE_EQ(m["disk.write_mb"], 2.0);
}

TEST(DiskSource, StatfsGivesUsedPercentOfDataDirAndMounts) {
  ProcFixture proc;  // no diskstats: space keys only
  DiskSourceOptions options;
  options.proc_root = proc.root();
  options.data_path = "/data/cohort";
  options.mount_paths = {"/", "/gone"};
  options.statfs = [](const std::string& path, FsUsage* out) {
    if (path == "/gone") return Status::IOError("statvfs /gone: No such file or directory");
    out->used_bytes = path == "/" ? 10 : 30;
    out->avail_bytes = path == "/" ? 30 : 70;
    return Status::Ok();
  };
  DiskSource disk(options);
  ASSERT_TRUE(disk.Open().ok());
  auto m = SampleMap(&disk);
  EXPECT_DOUBLE_EQ(m["disk"], 30.0);
  EXPECT_DOUBLE_EQ(m["disk./.used_percent"], 25.0);
  EXPECT_EQ(m.count("disk./gone.used_percent"), 0u);
  EXPECT_EQ(m.count("disk.read_mb"), 0u);
}

TEST(DiskSource, RealStatvfsOfTempDirIsAPercentage) {
  ProcFixture proc;
  DiskSourceOptions options;
  options.proc_root = proc.root();
  options.data_path = proc.root();
  DiskSource disk(options);
  ASSERT_TRUE(disk.Open().ok());
  auto m = SampleMap(&disk);
  ASSERT_EQ(m.count("disk"), 1u);
  EXPECT_GE(m["disk"], 0.0);
  EXPECT_LE(m["disk"], 100.0);
}

TEST(DiskSource, NothingReadableIsUnavailable) {
  ProcFixture proc;
  DiskSourceOptions options;
  options.proc_root = proc.root();
  options.data_path = proc.root() + "/does/not/exist";
  DiskSource disk(options);
  EXPECT_EQ(disk.Open().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace cohort::monitor
