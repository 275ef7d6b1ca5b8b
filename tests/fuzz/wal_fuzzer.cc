// Fuzz target: the WAL readers (src/wal/segment_reader.h, src/wal/reader.h) on arbitrary
// segment files, as a crash or a bad disk may leave them. Input layout:
//   byte 0: flags. bits 0-1: mode (0 raw, 1 raw with checksums repaired, 2 built, 3 built then
//           damaged); bits 2-3: number of segments - 1;
//   byte 1: how the growing reader advances its limit;
//   rest:   raw modes: the segment files, split at "\xFF\xFESEG"; built modes: record payloads
//           split at "\n" (a payload starting with '*' is repeated to 40 KB so that it spans
//           blocks), and in mode 3 the last 64 bytes are (offset, xor) damage pairs.
// Properties checked, on every input:
//  - reading terminates, never crashes, and reports records in increasing positions, each
//    record's `next` being the position of the one after it within a segment;
//  - a SegmentReader that follows the segment as it grows (unsealed limits rising in steps, then
//    sealed) returns exactly the records of one that reads it sealed at once;
//  - a Reader started at any record's position returns exactly the suffix from that record;
//  - built segments without damage read back exactly the payloads written, with no damage.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/crc32c.h"
#include "fuzz_check.h"
#include "wal/file.h"
#include "wal/format.h"
#include "wal/reader.h"
#include "wal/segment_reader.h"

namespace {

namespace wal = cohort::wal;
using cohort::Result;
using cohort::Status;

constexpr std::string_view kDir = "/wal";

// A read-only in-memory directory of segment files (a fake below the FileSystem seam).
class MemoryFileSystem final : public wal::FileSystem {
 public:
  explicit MemoryFileSystem(std::map<std::string, std::string> files) : files_(std::move(files)) {}

  Result<std::unique_ptr<wal::WritableFile>> NewWritableFile(const std::string&,
                                                             wal::WriteMode) override {
    return Status::IOError("read-only");
  }
  Result<std::unique_ptr<wal::SequentialFile>> NewSequentialFile(const std::string& p) override {
    auto it = files_.find(p);
    if (it == files_.end()) return Status::NotFound(p);
    return wal::NewStringSequentialFile(it->second);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    std::vector<std::string> names;
    for (const auto& [path, contents] : files_) {
      if (path.rfind(dir + "/", 0) == 0) names.push_back(path.substr(dir.size() + 1));
    }
    return names;
  }
  Result<uint64_t> FileSize(const std::string& p) override {
    auto it = files_.find(p);
    if (it == files_.end()) return Status::NotFound(p);
    return uint64_t(it->second.size());
  }
  Result<wal::FileStat> Stat(const std::string& p) override {
    auto it = files_.find(p);
    if (it == files_.end()) return Status::NotFound(p);
    return wal::FileStat{.size = uint64_t(it->second.size())};
  }
  Result<wal::FileMode> Mode(const std::string& p) override {
    if (files_.count(p) == 0) return Status::NotFound(p);
    return wal::FileMode{.type = wal::FileMode::Type::kRegular, .permissions = 0600};
  }
  Status Rename(const std::string&, const std::string&) override { return ReadOnly(); }
  Status Link(const std::string&, const std::string&) override { return ReadOnly(); }
  Status Remove(const std::string&) override { return ReadOnly(); }
  Status Truncate(const std::string&, uint64_t) override { return ReadOnly(); }
  Status CreateDir(const std::string&) override { return ReadOnly(); }
  Result<bool> Exists(const std::string& p) override { return files_.count(p) > 0; }
  Status RemoveAll(const std::string&) override { return ReadOnly(); }
  Status SetPermissions(const std::string&, uint32_t) override { return ReadOnly(); }
  Status SyncDir(const std::string&) override { return ReadOnly(); }
  Result<std::unique_ptr<wal::FileLock>> LockFile(const std::string&) override {
    return ReadOnly();
  }

 private:
  static Status ReadOnly() { return Status::IOError("read-only"); }
  std::map<std::string, std::string> files_;
};

std::vector<std::string> Split(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  while (true) {
    size_t at = s.find(sep);
    out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + sep.size());
  }
}

void PutFixed32At(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}

// Gives the segment a valid header for `segment` and valid checksums on every fragment whose
// header and data lie within one block, so that the fuzzer gets past the checksums.
void RepairChecksums(std::string* s, uint64_t segment) {
  if (s->size() < wal::kSegmentHeaderSize) return;
  std::string header = wal::EncodeSegmentHeader(segment);
  s->replace(0, wal::kSegmentHeaderSize, header);
  uint64_t pos = wal::kSegmentHeaderSize;
  while (pos + wal::kFragmentHeaderSize <= s->size()) {
    uint64_t left = wal::kBlockSize - pos % wal::kBlockSize;
    if (left < wal::kFragmentHeaderSize) {
      pos += left;
      continue;
    }
    uint64_t len = uint32_t(uint8_t((*s)[pos + 4])) | uint32_t(uint8_t((*s)[pos + 5])) << 8 |
                   uint32_t(uint8_t((*s)[pos + 6])) << 16 | uint32_t(uint8_t((*s)[pos + 7])) << 24;
    if (len > left - wal::kFragmentHeaderSize || pos + wal::kFragmentHeaderSize + len > s->size()) {
      pos += left;  // a bad length: the reader skips the block
      continue;
    }
    PutFixed32At(s, pos, wal::FragmentChecksum(s->data() + pos + 4, len));
    pos += wal::kFragmentHeaderSize + len;
  }
}

struct Read {
  std::vector<wal::Record> records;
  uint64_t damaged_bytes = 0;
};

bool SameRecords(const std::vector<wal::Record>& a, const std::vector<wal::Record>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].position != b[i].position || a[i].next != b[i].next || a[i].payload != b[i].payload) {
      return false;
    }
  }
  return true;
}

// Every segment through a Reader over the directory, from `from`.
Read ReadDirectory(MemoryFileSystem* fs, wal::Position from, uint64_t total_bytes) {
  auto reader = wal::Reader::OpenDirectory(fs, std::string(kDir), from);
  FUZZ_CHECK(reader.ok(), "%s", reader.status().ToString().c_str());
  Read out;
  // A record takes at least one fragment header, so this bounds the loop on any input.
  for (uint64_t i = 0; i <= total_bytes / wal::kFragmentHeaderSize + 2; ++i) {
    wal::Record record;
    auto next = (*reader)->Next(&record);
    if (!next.ok()) {
      // Only an unsupported format version stops a reader; raw inputs can claim one.
      FUZZ_CHECK(next.status().code() == cohort::StatusCode::kFailedPrecondition, "%s",
                 next.status().ToString().c_str());
      break;
    }
    if (!*next) {
      for (const auto& d : (*reader)->TakeDamage()) out.damaged_bytes += d.bytes;
      return out;
    }
    FUZZ_CHECK(record.position < record.next, "record at %s ends at %s",
               record.position.ToString().c_str(), record.next.ToString().c_str());
    if (!out.records.empty()) {
      const wal::Record& prev = out.records.back();
      FUZZ_CHECK(prev.next <= record.position, "record at %s overlaps the one before (%s)",
                 record.position.ToString().c_str(), prev.next.ToString().c_str());
    }
    out.records.push_back(std::move(record));
  }
  for (const auto& d : (*reader)->TakeDamage()) out.damaged_bytes += d.bytes;
  return out;
}

// One segment through a SegmentReader whose limit grows by `step` bytes at a time.
std::vector<wal::Record> ReadGrowing(const std::string& contents, uint64_t segment, uint64_t step,
                                     bool* failed) {
  wal::SegmentReader reader(segment, wal::NewStringSequentialFile(contents), 0);
  std::vector<wal::Record> records;
  std::vector<wal::Damage> damage;
  const uint64_t size = contents.size();
  for (uint64_t limit = std::min(step, size);; limit = std::min(limit + step, size)) {
    const bool sealed = limit == size;
    while (true) {
      wal::Record record;
      auto next = reader.Next(limit, sealed, &record, &damage);
      if (!next.ok()) {
        *failed = true;
        return records;
      }
      if (!*next) break;
      FUZZ_CHECK(record.next.offset <= limit, "a record past the limit %llu",
                 static_cast<unsigned long long>(limit));
      records.push_back(std::move(record));
    }
    if (sealed) break;
  }
  *failed = false;
  return records;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] & 3;
  const int segments = 1 + ((data[0] >> 2) & 3);
  // At least 7 bytes per step, so that a 128 KiB input is followed in at most ~19,000 steps.
  const uint64_t step = 7 + uint64_t(data[1]) * 131;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::vector<std::string> files;
  std::vector<std::string> payloads;
  if (mode <= 1) {
    files = Split(rest, "\xFF\xFESEG");
    if (files.size() > 4) files.resize(4);
    if (mode == 1) {
      for (size_t i = 0; i < files.size(); ++i) RepairChecksums(&files[i], wal::kFirstSegment + i);
    }
  } else {
    std::string_view damage_spec;
    if (mode == 3) {
      size_t n = std::min<size_t>(64, rest.size());
      damage_spec = rest.substr(rest.size() - n);
      rest.remove_suffix(n);
    }
    payloads = Split(rest, "\n");
    for (auto& p : payloads) {
      if (!p.empty() && p[0] == '*') {
        std::string big;
        while (big.size() < 40000) big += p;
        p = big.substr(0, 40000);
      }
    }
    // Distribute the payloads over `segments` files in order.
    files.assign(segments, std::string());
    std::vector<uint64_t> offsets(segments);
    for (int i = 0; i < segments; ++i) {
      files[i] = wal::EncodeSegmentHeader(wal::kFirstSegment + i);
      offsets[i] = wal::kSegmentHeaderSize;
    }
    const size_t per = (payloads.size() + segments - 1) / segments;
    for (size_t i = 0; i < payloads.size(); ++i) {
      size_t s = std::min<size_t>(i / std::max<size_t>(per, 1), segments - 1);
      offsets[s] = wal::EncodeRecord(&files[s], offsets[s], payloads[i]);
      FUZZ_CHECK(offsets[s] == files[s].size(), "EncodeRecord's offset is off");
    }
    for (size_t i = 0; i + 2 < damage_spec.size(); i += 3) {
      std::string& f = files[uint8_t(damage_spec[i]) % files.size()];
      if (f.empty()) continue;
      size_t at = (uint8_t(damage_spec[i + 1]) * 257u + uint8_t(damage_spec[i + 2])) % f.size();
      f[at] = static_cast<char>(f[at] ^ (damage_spec[i + 2] | 1));
    }
  }

  std::map<std::string, std::string> by_path;
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    by_path[std::string(kDir) + "/" + wal::SegmentFileName(wal::kFirstSegment + i)] = files[i];
    total += files[i].size();
  }
  MemoryFileSystem fs(by_path);

  Read all = ReadDirectory(&fs, wal::Position{}, total);
  FUZZ_CHECK(all.damaged_bytes <= total, "more damage than bytes");

  if (mode == 2) {
    FUZZ_CHECK(all.damaged_bytes == 0, "an undamaged log reports %llu damaged bytes",
               static_cast<unsigned long long>(all.damaged_bytes));
    FUZZ_CHECK(all.records.size() == payloads.size(), "wrote %zu records, read %zu",
               payloads.size(), all.records.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      FUZZ_CHECK(all.records[i].payload == payloads[i], "record %zu differs", i);
    }
  }

  // Each segment followed as it grows reads the same records as the whole directory.
  std::vector<wal::Record> growing;
  bool any_failed = false;
  for (size_t i = 0; i < files.size(); ++i) {
    bool failed = false;
    auto records = ReadGrowing(files[i], wal::kFirstSegment + i, step, &failed);
    any_failed = any_failed || failed;
    if (failed) break;
    growing.insert(growing.end(), records.begin(), records.end());
  }
  if (!any_failed) {
    FUZZ_CHECK(SameRecords(all.records, growing),
               "a growing segment read %zu records, a sealed one %zu", growing.size(),
               all.records.size());
  }

  // Starting at a record's position yields the suffix from it.
  if (!all.records.empty()) {
    size_t k = step % all.records.size();
    Read suffix = ReadDirectory(&fs, all.records[k].position, total);
    std::vector<wal::Record> expected(all.records.begin() + k, all.records.end());
    FUZZ_CHECK(SameRecords(expected, suffix.records),
               "reading from record %zu (%s) gave %zu records, expected %zu", k,
               all.records[k].position.ToString().c_str(), suffix.records.size(), expected.size());
  }
  return 0;
}
