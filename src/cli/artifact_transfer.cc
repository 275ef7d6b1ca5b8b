#include "cli/artifact_transfer.h"

#include <algorithm>
#include <deque>
#include <set>
#include <thread>

#include "core/limits.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "core/text_encoding.h"

namespace cohort::cli {
namespace bj = boost::json;

namespace {

constexpr size_t kReadBlockBytes = 1 << 20;
constexpr int kRangeRetries = 5;
// The download's writer syncs every this many bytes, so that the disk writes while the next
// ranges are fetched and hashed instead of all at the end.
constexpr uint64_t kSyncEveryBytes = 64 << 20;
constexpr size_t kQueuedRanges = 1;  // a range received and not written yet (8 MiB)

// Appends what a download receives to its file on a thread of its own (syncing as it goes):
// fetching and hashing the next range overlaps writing this one.
class BackgroundWriter {
 public:
  explicit BackgroundWriter(wal::WritableFile* out) : out_(out) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~BackgroundWriter() { (void)Finish(); }
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Queues `bytes` (waits while kQueuedRanges are queued); the writer's first error, if any.
  Status Push(std::string bytes) COHORT_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (error_.ok() && queue_.size() >= kQueuedRanges) cv_.Wait(mu_);
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(bytes));
    cv_.SignalAll();
    return Status::Ok();
  }
  // Writes what is queued, syncs, and ends the thread; the first error.
  Status Finish() COHORT_EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      done_ = true;
      cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
    MutexLock lock(&mu_);
    return error_;
  }

 private:
  void Loop() COHORT_EXCLUDES(mu_) {
    uint64_t unsynced = 0;
    MutexLock lock(&mu_);
    while (error_.ok()) {
      if (queue_.empty()) {
        if (done_) break;
        cv_.Wait(mu_);
        continue;
      }
      std::string bytes = std::move(queue_.front());
      queue_.pop_front();
      cv_.SignalAll();
      lock.Unlock();
      Status st = out_->Append(bytes);
      unsynced += bytes.size();
      if (st.ok() && unsynced >= kSyncEveryBytes) {
        st = out_->Sync();
        unsynced = 0;
      }
      lock.Lock();
      if (!st.ok()) error_ = st;
    }
    if (error_.ok()) {
      lock.Unlock();
      Status st = out_->Sync();
      lock.Lock();
      if (!st.ok()) error_ = st;
    }
    cv_.SignalAll();
  }

  wal::WritableFile* const out_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ COHORT_GUARDED_BY(mu_);
  bool done_ COHORT_GUARDED_BY(mu_) = false;
  Status error_ COHORT_GUARDED_BY(mu_);
  std::thread thread_;
};

std::vector<std::string> SplitSlash(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t slash = text.find('/', start);
    parts.emplace_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Status CollectDir(wal::FileSystem* fs, const std::string& dir, const std::string& prefix, int depth,
                  std::vector<LocalFile>* out) {
  if (depth > 64) return Status::InvalidArgument(dir + ": directories nested more than 64 deep");
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    std::string disk = wal::JoinPath(dir, n);
    std::string name = prefix;
    if (!name.empty()) name += '/';
    name += n;
    if (fs->ListDir(disk).ok()) {
      COHORT_RETURN_IF_ERROR(CollectDir(fs, disk, name, depth + 1, out));
      continue;
    }
    COHORT_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(disk));
    out->push_back({name, disk, size, ""});
  }
  return Status::Ok();
}

// Bytes [offset, offset + n) of a file opened for reading, read from its current position
// `*pos` (moved forward).
Result<std::string> ReadAt(wal::SequentialFile& file, uint64_t* pos, uint64_t offset, size_t n,
                           const std::string& path) {
  if (offset < *pos) return Status::Internal(path + ": parts must be read in order");
  COHORT_RETURN_IF_ERROR(file.Skip(offset - *pos));
  std::string buf(n, '\0');
  COHORT_ASSIGN_OR_RETURN(std::string_view got, file.Read(n, buf.data()));
  *pos = offset + got.size();
  if (got.size() != n) {
    return Status::FailedPrecondition(path + ": the file is shorter than when it was hashed (" +
                                      std::to_string(offset + got.size()) +
                                      " bytes): it changed; run the command again");
  }
  return buf;
}

}  // namespace

std::string ArtifactRef::CollectionPath() const {
  return "/api/v1/artifacts/" + PercentEncode(entity) + "/" + PercentEncode(project) + "/" +
         PercentEncode(name);
}

std::string ArtifactRef::VersionPath() const {
  return CollectionPath() + "/" + PercentEncode(version);
}

Result<ArtifactRef> ParseArtifactRef(ReadClient& client, std::string_view text) {
  std::vector<std::string> parts = SplitSlash(text);
  bool empty_part = std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); });
  if (empty_part || parts.size() < 2 || parts.size() > 3) {
    return Status::InvalidArgument(
        "ARTIFACT: expected entity/project/name[:alias] or project/name[:alias], got '" +
        std::string(text) + "'");
  }
  ArtifactRef r;
  std::string last = parts.back();
  if (size_t colon = last.find(':'); colon != std::string::npos) {
    r.version = last.substr(colon + 1);
    last.resize(colon);
    if (r.version.empty()) {
      return Status::InvalidArgument("ARTIFACT '" + std::string(text) +
                                     "': nothing after ':' (give an alias or v<N>)");
    }
  }
  if (!ValidName(last)) {
    return Status::InvalidArgument("ARTIFACT '" + std::string(text) + "': the name '" + last +
                                   "' must be 1-128 characters of A-Z a-z 0-9 . _ - not "
                                   "starting with '.'");
  }
  r.name = last;
  r.project = parts[parts.size() - 2];
  if (parts.size() == 3) {
    r.entity = parts[0];
  } else {
    COHORT_ASSIGN_OR_RETURN(r.entity, client.Entity());
  }
  return r;
}

Result<std::pair<std::string, std::string>> ParseProject(ReadClient& client,
                                                         std::string_view text) {
  std::vector<std::string> parts = SplitSlash(text);
  bool empty_part = std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); });
  if (empty_part || parts.size() > 2) {
    return Status::InvalidArgument("PROJECT: expected entity/project or project, got '" +
                                   std::string(text) + "'");
  }
  if (parts.size() == 2) return std::make_pair(parts[0], parts[1]);
  COHORT_ASSIGN_OR_RETURN(std::string entity, client.Entity());
  return std::make_pair(entity, parts[0]);
}

Result<std::vector<LocalFile>> CollectFiles(wal::FileSystem* fs, const std::string& path) {
  std::string clean = path;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  COHORT_ASSIGN_OR_RETURN(bool exists, fs->Exists(clean));
  if (!exists) return Status::NotFound(path + ": no such file or directory");
  std::vector<LocalFile> out;
  if (fs->ListDir(clean).ok()) {
    COHORT_RETURN_IF_ERROR(CollectDir(fs, clean, "", 0, &out));
    if (out.empty()) return Status::InvalidArgument(path + ": the directory holds no file");
    return out;
  }
  COHORT_ASSIGN_OR_RETURN(uint64_t size, fs->FileSize(clean));
  size_t slash = clean.rfind('/');
  out.push_back({slash == std::string::npos ? clean : clean.substr(slash + 1), clean, size, ""});
  return out;
}

Result<UploadResult> UploadBlob(ReadClient& client, wal::FileSystem* fs, std::string_view entity,
                                const LocalFile& file, const ProgressFn& progress) {
  const std::string base = "/api/v1/blobs/" + PercentEncode(entity) + "/" + file.sha256;
  const std::string size_q = "size=" + std::to_string(file.size);
  COHORT_ASSIGN_OR_RETURN(bj::value st, client.Get(base, {{"size", std::to_string(file.size)}}));
  UploadResult result;
  const bj::value* stored = st.is_object() ? st.as_object().if_contains("stored") : nullptr;
  if (stored && stored->is_bool() && stored->get_bool()) {
    result.already_stored = true;
    if (progress) progress(file.size);
    return result;
  }
  uint64_t part_bytes = uint64_t(IntField(st, "part_bytes", int64_t(limits::kBlobPartBytes)));
  if (part_bytes == 0) return Status::Internal("GET " + base + ": part_bytes is 0");
  std::set<uint64_t> have;
  if (const bj::value* parts = st.as_object().if_contains("parts"); parts && parts->is_array()) {
    for (const bj::value& p : parts->as_array()) {
      if (p.is_int64() && p.get_int64() >= 0) have.insert(uint64_t(p.get_int64()));
      if (p.is_uint64()) have.insert(p.get_uint64());
    }
  }
  uint64_t count = (file.size + part_bytes - 1) / part_bytes;
  std::unique_ptr<wal::SequentialFile> reader;
  uint64_t pos = 0;
  for (uint64_t n = 0; n < count; ++n) {
    uint64_t offset = n * part_bytes;
    size_t len = size_t(std::min(part_bytes, file.size - offset));
    if (have.count(n)) {
      ++result.parts_skipped;
      if (progress) progress(len);
      continue;
    }
    if (!reader) {
      COHORT_ASSIGN_OR_RETURN(reader, fs->NewSequentialFile(file.disk_path));
    }
    COHORT_ASSIGN_OR_RETURN(std::string bytes, ReadAt(*reader, &pos, offset, len, file.disk_path));
    std::string path = base;
    path += "/parts/";
    path += std::to_string(n);
    path += '?';
    path += size_q;
    Status sent;
    for (int attempt = 0; attempt <= kRangeRetries; ++attempt) {
      auto res = client.Send("PUT", path, bytes, "application/octet-stream");
      sent = res.status();
      if (sent.ok() || sent.code() != StatusCode::kUnavailable) break;
    }
    COHORT_RETURN_IF_ERROR(sent);
    ++result.parts_sent;
    result.bytes_sent += len;
    if (progress) progress(len);
  }
  bj::object body{{"size", file.size}};
  COHORT_ASSIGN_OR_RETURN(bj::value done, client.Post(base + "/complete", body));
  const bj::value* ok = done.is_object() ? done.as_object().if_contains("stored") : nullptr;
  if (!ok || !ok->is_bool() || !ok->get_bool()) {
    return Status::Internal("POST " + base + "/complete: the server did not say it stored " +
                            file.name);
  }
  return result;
}

Status DownloadVerified(ReadClient& client, wal::FileSystem* fs, const std::string& url_path,
                        const std::string& dest, std::string_view sha256, uint64_t size,
                        const ProgressFn& progress) {
  if (!IsSha256Hex(sha256)) {
    return Status::InvalidArgument(dest + ": the manifest's sha256 '" + std::string(sha256) +
                                   "' is not 64 hex digits");
  }
  std::string parent = ParentDir(dest);
  if (!parent.empty()) COHORT_RETURN_IF_ERROR(fs->CreateDir(parent));
  const std::string part = dest + ".part";
  Sha256 h;
  uint64_t have = 0, resumed = 0;
  if (auto existing = fs->FileSize(part); existing.ok()) {
    if (*existing > size) {
      COHORT_RETURN_IF_ERROR(fs->Truncate(part, 0));
    } else {  // an earlier download stopped here: hash what it kept, fetch the rest
      COHORT_ASSIGN_OR_RETURN(auto file, fs->NewSequentialFile(part));
      std::string buf(kReadBlockBytes, '\0');
      while (true) {
        COHORT_ASSIGN_OR_RETURN(std::string_view got, file->Read(buf.size(), buf.data()));
        if (got.empty()) break;
        h.Update(got);
        have += got.size();
      }
      resumed = have;
      if (progress && have > 0) progress(have);
    }
  }
  COHORT_ASSIGN_OR_RETURN(auto out, fs->NewWritableFile(part, wal::WriteMode::kAppend));
  int failures = 0;
  BackgroundWriter writer(out.get());
  while (have < size) {
    uint64_t end = std::min<uint64_t>(size, have + limits::kBlobPartBytes) - 1;
    std::string range = "Range: bytes=" + std::to_string(have) + "-" + std::to_string(end);
    auto res = client.Send("GET", url_path, {}, "application/json", range);
    if (!res.ok()) {
      if (res.status().code() == StatusCode::kUnavailable && ++failures <= kRangeRetries) continue;
      return res.status();  // the part file stays: the next `get` continues from it
    }
    uint64_t want = end - have + 1;
    bool whole = res->status == 200 && have == 0 && res->body.size() == size;
    if (!whole && (res->status != 206 || res->body.size() != want)) {
      return Status::Internal("GET " + url_path + ": asked for " + std::to_string(want) +
                              " bytes from " + std::to_string(have) + ", got " +
                              std::to_string(res->body.size()) + " (HTTP " +
                              std::to_string(res->status) + ")");
    }
    h.Update(res->body);
    const size_t got = res->body.size();
    COHORT_RETURN_IF_ERROR(writer.Push(std::move(res->body)));
    have += got;
    failures = 0;
    if (progress) progress(got);
  }
  COHORT_RETURN_IF_ERROR(writer.Finish());  // written and synced
  COHORT_RETURN_IF_ERROR(out->Close());
  std::string digest = h.FinishHex();
  if (digest != sha256) {
    COHORT_RETURN_IF_ERROR(fs->Remove(part));
    if (resumed > 0) {  // the bytes an earlier download left were bad: once more, afresh
      return DownloadVerified(client, fs, url_path, dest, sha256, size, progress);
    }
    return Status::Corruption(dest + ": the downloaded bytes have SHA-256 " + digest + ", not " +
                              std::string(sha256) +
                              " as the manifest says: the file was not kept (the server's copy "
                              "may be damaged)");
  }
  COHORT_RETURN_IF_ERROR(fs->Rename(part, dest));
  return fs->SyncDir(parent.empty() ? "." : parent);
}

std::string ParentDir(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace cohort::cli
