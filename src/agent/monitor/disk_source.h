// DiskSource: file-system fullness by statvfs(3) ("disk" for the data directory,
// "disk.<path>.used_percent" for extra paths) and disk traffic since Open() from
// /proc/diskstats ("disk.read_mb", "disk.write_mb", whole disks only, so partitions and
// device-mapper/md/loop devices are not counted twice).
//
// "% used" is used / (used + available to unprivileged users), as df(1) shows it.
// Threading: as MonitorSource.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/monitor/proc_util.h"
#include "agent/monitor/source.h"

namespace cohort::monitor {

// File-system space in bytes.
struct FsUsage {
  uint64_t used_bytes = 0;
  uint64_t avail_bytes = 0;  // free space usable without privileges
};
// Fills `out` for the file system holding `path`.
using StatFsFn = std::function<Status(const std::string& path, FsUsage* out)>;

// The statvfs(3)-based StatFsFn.
Status StatFs(const std::string& path, FsUsage* out);

// True when a /proc/diskstats device name is a whole disk: not a partition of another listed
// device (sda1 of sda, nvme0n1p2 of nvme0n1) and not a virtual device (loop, ram, zram, dm-,
// md, sr).
bool IsWholeDisk(std::string_view name, const std::vector<std::string_view>& all_names);

struct DiskSourceOptions {
  std::string proc_root = kDefaultProcRoot;
  std::string data_path;                 // "disk"; empty: no "disk" key
  std::vector<std::string> mount_paths;  // "disk.<path>.used_percent" each
  StatFsFn statfs;                       // null: StatFs (statvfs(3))
};

class DiskSource : public MonitorSource {
 public:
  explicit DiskSource(DiskSourceOptions options);

  std::string_view name() const override { return "disk"; }
  Status Open() override;
  Status Sample(int64_t now_ms, std::vector<monitor::Sample>* out) override;

 private:
  struct Sectors {
    uint64_t read = 0;
    uint64_t written = 0;
  };
  // Reads the whole disks' sector counters from /proc/diskstats.
  Status ReadDiskstats(std::map<std::string, Sectors>* out) const;
  // Adds the growth since `prev_` to the totals and makes `now` the new baseline.
  void Accumulate(std::map<std::string, Sectors> now);

  const DiskSourceOptions options_;
  StatFsFn statfs_;
  std::vector<std::pair<std::string, std::string>> paths_;  // (key, path) that statfs'd at Open
  bool has_io_ = false;
  std::map<std::string, Sectors> prev_;
  Sectors total_;  // since Open()
};

}  // namespace cohort::monitor
