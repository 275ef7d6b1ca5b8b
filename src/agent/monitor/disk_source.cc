#include "agent/monitor/disk_source.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace cohort::monitor {
namespace {

constexpr double kSectorBytes = 512.0;  // /proc/diskstats counts 512-byte sectors
constexpr std::string_view kVirtualPrefixes[] = {"loop", "ram", "zram", "dm-", "md", "sr"};

double UsedPercent(const FsUsage& u) {
  uint64_t denom = u.used_bytes + u.avail_bytes;
  if (denom == 0) return 0;
  return static_cast<double>(u.used_bytes) / static_cast<double>(denom) * 100.0;
}

}  // namespace

Status StatFs(const std::string& path, FsUsage* out) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) {
    return Status::IOError("statvfs " + path + ": " + std::strerror(errno));
  }
  uint64_t frsize = st.f_frsize != 0 ? st.f_frsize : st.f_bsize;
  uint64_t blocks = st.f_blocks;
  uint64_t bfree = st.f_bfree <= blocks ? st.f_bfree : blocks;
  out->used_bytes = (blocks - bfree) * frsize;
  out->avail_bytes = static_cast<uint64_t>(st.f_bavail) * frsize;
  return Status::Ok();
}

bool IsWholeDisk(std::string_view name, const std::vector<std::string_view>& all_names) {
  for (std::string_view prefix : kVirtualPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return false;
  }
  for (std::string_view other : all_names) {
    if (other.size() >= name.size() || name.substr(0, other.size()) != other) continue;
    std::string_view rest = name.substr(other.size());
    if (rest.front() == 'p') rest.remove_prefix(1);
    uint64_t n = 0;
    if (ParseU64(rest, &n)) return false;  // a partition of `other`
  }
  return true;
}

DiskSource::DiskSource(DiskSourceOptions options) : options_(std::move(options)) {
  statfs_ = options_.statfs ? options_.statfs : StatFsFn(&StatFs);
}

Status DiskSource::ReadDiskstats(std::map<std::string, Sectors>* out) const {
  auto text = ReadWholeFile(options_.proc_root + "/diskstats");
  if (!text.ok()) return text.status();
  // major minor name reads merged sectors_read ms writes merged sectors_written ...
  std::vector<std::vector<std::string_view>> rows;
  std::vector<std::string_view> names;
  std::string_view rest(*text);
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    auto f = SplitFields(line);
    if (f.size() < 10) continue;
    names.push_back(f[2]);
    rows.push_back(std::move(f));
  }
  for (const auto& f : rows) {
    Sectors s;
    if (!IsWholeDisk(f[2], names) || !ParseU64(f[5], &s.read) || !ParseU64(f[9], &s.written)) {
      continue;
    }
    (*out)[std::string(f[2])] = s;
  }
  return Status::Ok();
}

void DiskSource::Accumulate(std::map<std::string, Sectors> now) {
  for (const auto& [name, s] : now) {
    auto it = prev_.find(name);
    if (it == prev_.end()) continue;  // a new device starts from its first reading
    if (s.read >= it->second.read) total_.read += s.read - it->second.read;
    if (s.written >= it->second.written) total_.written += s.written - it->second.written;
  }
  prev_ = std::move(now);
}

Status DiskSource::Open() {
  std::string why;
  auto try_path = [&](std::string key, const std::string& path) {
    FsUsage u;
    Status s = statfs_(path, &u);
    if (s.ok()) {
      paths_.emplace_back(std::move(key), path);
    } else {
      why += s.ToString() + "; ";
    }
  };
  if (!options_.data_path.empty()) try_path("disk", options_.data_path);
  for (const std::string& p : options_.mount_paths) try_path("disk." + p + ".used_percent", p);
  std::map<std::string, Sectors> now;
  Status io = ReadDiskstats(&now);
  has_io_ = io.ok();
  if (has_io_) {
    prev_ = std::move(now);
  } else {
    why += io.ToString();
  }
  if (paths_.empty() && !has_io_) return Status::Unavailable("disk: " + why);
  return Status::Ok();
}

Status DiskSource::Sample(int64_t /*now_ms*/, std::vector<monitor::Sample>* out) {
  Status last;
  size_t before = out->size();
  for (const auto& [key, path] : paths_) {
    FsUsage u;
    Status s = statfs_(path, &u);
    if (s.ok()) {
      out->push_back({key, UsedPercent(u)});
    } else {
      last = s;
    }
  }
  if (has_io_) {
    std::map<std::string, Sectors> now;
    Status s = ReadDiskstats(&now);
    if (s.ok()) {
      Accumulate(std::move(now));
      out->push_back(
          {"disk.read_mb", static_cast<double>(total_.read) * kSectorBytes / kBytesPerMb});
      out->push_back(
          {"disk.write_mb", static_cast<double>(total_.written) * kSectorBytes / kBytesPerMb});
    } else {
      last = s;
    }
  }
  return out->size() > before ? Status::Ok() : last;
}

}  // namespace cohort::monitor
