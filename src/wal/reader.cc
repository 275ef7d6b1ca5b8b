#include "wal/reader.h"

#include <map>
#include <utility>

namespace cohort::wal {
namespace {

// The segment files of a directory as listed once; every segment sealed at its listed size.
class DirectorySnapshot final : public SegmentSource {
 public:
  explicit DirectorySnapshot(std::map<uint64_t, uint64_t> sizes) : sizes_(std::move(sizes)) {}

  std::optional<Extent> GetExtent(uint64_t segment) override {
    auto it = sizes_.find(segment);
    if (it == sizes_.end()) return std::nullopt;
    return Extent{it->second, true};
  }

  std::optional<uint64_t> NextSegment(uint64_t after) override {
    auto it = sizes_.upper_bound(after);
    if (it == sizes_.end()) return std::nullopt;
    return it->first;
  }

 private:
  std::map<uint64_t, uint64_t> sizes_;
};

}  // namespace

Reader::Reader(FileSystem* fs, std::string dir, SegmentSource* source, Position from)
    : fs_(fs), dir_(std::move(dir)), source_(source), from_(from) {}

Reader::~Reader() = default;

Result<std::unique_ptr<Reader>> Reader::OpenDirectory(FileSystem* fs, const std::string& dir,
                                                      Position from) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::map<uint64_t, uint64_t> sizes;
  for (const std::string& name : names) {
    uint64_t segment = 0;
    if (!ParseSegmentFileName(name, &segment)) continue;
    COHORT_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(JoinPath(dir, name)));
    sizes[segment] = size;
  }
  auto source = std::make_unique<DirectorySnapshot>(std::move(sizes));
  auto reader = std::make_unique<Reader>(fs, dir, source.get(), from);
  reader->owned_source_ = std::move(source);
  return reader;
}

Result<bool> Reader::Next(Record* record) {
  while (true) {
    if (current_ == nullptr) {
      std::optional<uint64_t> segment;
      uint64_t start = 0;
      if (!started_ && source_->GetExtent(from_.segment).has_value()) {
        segment = from_.segment;
        start = from_.offset;
      } else {
        segment = source_->NextSegment(started_ ? current_segment_ : from_.segment);
      }
      if (!segment) return false;
      started_ = true;
      current_segment_ = *segment;
      Result<std::unique_ptr<SequentialFile>> file =
          fs_->NewSequentialFile(JoinPath(dir_, SegmentFileName(*segment)));
      if (file.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      if (!file.ok()) return file.status();
      current_ = std::make_unique<SegmentReader>(*segment, std::move(file).value(), start);
    }
    std::optional<SegmentSource::Extent> extent = source_->GetExtent(current_segment_);
    if (!extent) {  // deleted (wholly acknowledged) under us: go on with the next one
      current_.reset();
      continue;
    }
    COHORT_ASSIGN_OR_RETURN(bool got,
                            current_->Next(extent->limit, extent->sealed, record, &damage_));
    if (got) return true;
    if (!extent->sealed) return false;
    if (!source_->NextSegment(current_segment_)) return false;  // a next one may come later
    current_.reset();
  }
}

Position Reader::position() const {
  if (current_ != nullptr) return current_->position();
  if (!started_) return from_;
  return Position{current_segment_ + 1, 0};
}

std::vector<Damage> Reader::TakeDamage() {
  std::vector<Damage> out;
  out.swap(damage_);
  return out;
}

}  // namespace cohort::wal
