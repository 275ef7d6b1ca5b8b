#include "cli/artifact_transfer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <set>
#include <thread>

#include "agent/hash_cache.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "core/text_encoding.h"
#include "wal/background_appender.h"

namespace cohort::cli {
namespace bj = boost::json;

namespace {

constexpr size_t kReadBlockBytes = 1 << 20;
constexpr int kRangeRetries = 5;
constexpr int kUploadRetries = 7;  // UploadBlob's attempts after the first
// The download's writer syncs every this many bytes, so that the disk writes while the next
// ranges are fetched and hashed instead of all at the end.
constexpr uint64_t kSyncEveryBytes = 64 << 20;
constexpr size_t kQueuedRanges = 1;  // a range received and not written yet (8 MiB)

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

namespace {

// No answer, or 408/429/5xx (ReadClient's codes for them), or what agent::AnswerStatus finds
// worth retrying (a part's answer: those, and a proxy's redirect).
bool Transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kResourceExhausted;
}

// Whether a blob route's answer says `"stored": true`.
bool SaysStored(const bj::value& v) {
  const bj::value* stored = v.is_object() ? v.as_object().if_contains("stored") : nullptr;
  return stored != nullptr && stored->is_bool() && stored->get_bool();
}

}  // namespace

namespace {

// What the completion of an upload sends, or nullopt when the entity turned out to hold the blob
// (nothing more to send).
using CompletionBody = std::function<Result<std::optional<bj::object>>()>;

// UploadBlob's work for the upload at `base` (.../{sha256} or .../uploads/{id}): `completion`
// is asked once every part is stored; `held_meanwhile` (on this thread) before each attempt and
// after each run of parts (true: the entity holds the blob, nothing more is needed);
// `skip_parts` (on the pool's threads) before each part (true: the parts not started are not
// needed).
Result<UploadResult> UploadAt(ReadClient& client, agent::PartPool* parts, const std::string& base,
                              const LocalFile& file, const ProgressFn& progress,
                              const CompletionBody& completion,
                              const std::function<bool()>& held_meanwhile,
                              const std::function<bool()>& skip_parts) {
  const std::string size_q = "size=" + std::to_string(file.size);
  UploadResult result;
  Mutex mu;                     // progress and the counts, from the pool's threads
  std::set<uint64_t> reported;  // parts counted in `progress` (an attempt after a failure)
  uint64_t reported_bytes = 0;
  const auto held = [&] {
    // Held already (or completed by an attempt whose answer was lost).
    result.already_stored = result.parts_sent == 0 && result.parts_skipped == 0;
    MutexLock lock(&mu);
    if (progress && file.size > reported_bytes) progress(file.size - reported_bytes);
    reported_bytes = file.size;
    return result;
  };
  Status last;
  for (int attempt = 0; attempt <= kUploadRetries; ++attempt) {
    // 0.25 s, then twice as long each time: 32 s in all, enough for a server to restart.
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(250 << (attempt - 1)));
    last = Status::Ok();
    if (held_meanwhile()) return held();
    Result<bj::value> st = client.Get(base, {{"size", std::to_string(file.size)}});
    if (!st.ok()) {
      last = st.status();
      if (Transient(last)) continue;
      return last;
    }
    if (SaysStored(*st)) return held();
    uint64_t part_bytes = uint64_t(IntField(*st, "part_bytes", int64_t(limits::kBlobPartBytes)));
    if (part_bytes == 0) return Status::Internal("GET " + base + ": part_bytes is 0");
    std::set<uint64_t> have;
    if (const bj::value* p = st->as_object().if_contains("parts"); p && p->is_array()) {
      for (const bj::value& n : p->as_array()) {
        if (n.is_int64() && n.get_int64() >= 0) have.insert(uint64_t(n.get_int64()));
        if (n.is_uint64()) have.insert(n.get_uint64());
      }
    }
    const uint64_t count = (file.size + part_bytes - 1) / part_bytes;
    // Counted once, whichever attempt stored or found it.
    const auto report = [&](uint64_t n, uint64_t len) {  // with `mu` held
      if (!reported.insert(n).second) return;
      reported_bytes += len;
      if (progress) progress(len);
    };
    std::vector<agent::PartJob> jobs;
    for (uint64_t n = 0; n < count; ++n) {
      const uint64_t offset = n * part_bytes;
      const uint64_t len = std::min(part_bytes, file.size - offset);
      if (have.count(n)) {
        MutexLock lock(&mu);
        if (!reported.count(n)) ++result.parts_skipped;
        report(n, len);
        continue;
      }
      agent::PartJob job;
      job.base_url = client.base_url();
      job.api_key = client.api_key();
      job.path = base + "/parts/" + std::to_string(n) + "?" + size_q;
      job.source = file.disk_path;
      job.offset = int64_t(offset);
      job.length = int64_t(len);
      jobs.push_back(std::move(job));
    }
    const auto done = [&](const agent::PartJob& job) {
      MutexLock lock(&mu);
      ++result.parts_sent;
      result.bytes_sent += uint64_t(job.length);
      report(uint64_t(job.offset) / part_bytes, uint64_t(job.length));
    };
    if (have.empty() && jobs.size() > 1) {
      // A new upload starts with one part (the server sets the upload up with its first part),
      // then the others go in parallel.
      last = parts->Run({jobs.front()}, done, skip_parts);
      if (last.ok()) jobs.erase(jobs.begin());
    }
    if (last.ok() && !jobs.empty() && !held_meanwhile()) {
      last = parts->Run(std::move(jobs), done, skip_parts);
    }
    if (held_meanwhile()) return held();
    if (!last.ok()) {
      if (Transient(last)) continue;  // ask again what is stored
      return last;
    }
    Result<std::optional<bj::object>> body = completion();
    if (!body.ok()) return body.status();
    if (!body->has_value()) return held();
    auto completed = client.Post(base + "/complete", **body);
    if (!completed.ok()) {
      last = completed.status();
      // 409: a part went missing meanwhile (a server restart lost its mark) or is being
      // written by another request: ask again.
      if (Transient(last) || last.code() == StatusCode::kFailedPrecondition) continue;
      return last;
    }
    if (!SaysStored(*completed)) {
      return Status::Internal("POST " + base + "/complete: the server did not say it stored " +
                              file.name);
    }
    return result;
  }
  return last;
}

std::string BlobsPath(std::string_view entity) {
  return "/api/v1/blobs/" + PercentEncode(entity) + "/";
}

}  // namespace

Result<UploadResult> UploadBlob(ReadClient& client, agent::PartPool* parts, std::string_view entity,
                                const LocalFile& file, const ProgressFn& progress) {
  const bj::object body{{"size", file.size}};
  return UploadAt(
      client, parts, BlobsPath(entity) + file.sha256, file, progress,
      [&body]() -> Result<std::optional<bj::object>> { return std::optional<bj::object>(body); },
      [] { return false; }, {});
}

namespace {

// Whether the entity holds the blob `sha256` of `size` bytes (GET of its status).
Result<bool> HeldByEntityOnce(ReadClient& client, const std::string& blobs,
                              const std::string& sha256, uint64_t size) {
  Result<bj::value> st = client.Get(blobs + sha256, {{"size", std::to_string(size)}});
  if (!st.ok()) return st.status();
  return SaysStored(*st);
}

// The same, a transient failure retried as UploadAt retries.
Result<bool> HeldByEntity(ReadClient& client, const std::string& blobs, const std::string& sha256,
                          uint64_t size) {
  Result<bool> held = false;
  for (int attempt = 0; attempt <= kUploadRetries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(250 << (attempt - 1)));
    held = HeldByEntityOnce(client, blobs, sha256, size);
    if (held.ok() || !Transient(held.status())) return held;
  }
  return held;
}

}  // namespace

Result<UploadResult> UploadBlobById(ReadClient& client, agent::PartPool* parts,
                                    std::string_view entity, LocalFile* file,
                                    const std::string& upload_id, const HashFn& hash,
                                    const ProgressFn& progress) {
  const std::string blobs = BlobsPath(entity);
  if (!file->sha256.empty()) {
    // A digest known already: a blob the entity holds is not sent again.
    COHORT_ASSIGN_OR_RETURN(bool held, HeldByEntity(client, blobs, file->sha256, file->size));
    if (held) {
      if (progress) progress(file->size);
      return UploadResult{.already_stored = true};
    }
  }
  struct Aside {
    Mutex mu;
    std::optional<Result<std::string>> digest COHORT_GUARDED_BY(mu);
    bool held COHORT_GUARDED_BY(mu) = false;
  } aside;
  std::atomic<bool> stop_hashing{false};
  const std::string base_url = client.base_url(), api_key = client.api_key();
  const uint64_t size = file->size;
  const std::string known = file->sha256;
  std::thread hashing([&aside, &hash, &stop_hashing, blobs, base_url, api_key, size, known] {
    Result<std::string> digest = known.empty()
                                     ? hash([&stop_hashing] { return stop_hashing.load(); })
                                     : Result<std::string>(known);
    bool held = false;
    if (digest.ok() && known.empty()) {
      // Held by the entity already (the same bytes put from another path, or by someone else of
      // the entity): the parts not sent yet are not needed. The client of the caller's thread is
      // busy: a connection of this thread's. No answer: not known to be held.
      agent::HttpClient http(base_url, {});
      auto r = http.Request("GET", blobs + *digest + "?size=" + std::to_string(size), {}, api_key,
                            "application/json");
      if (r.ok() && r->status == 200) {
        auto v = json::Parse(r->body);
        held = v.ok() && SaysStored(*v);
      }
    }
    MutexLock lock(&aside.mu);
    aside.digest = std::move(digest);
    aside.held = held;
  });
  const auto join = [&hashing] {
    if (hashing.joinable()) hashing.join();
  };
  // The digest, once the hash ended (waiting for it).
  const auto digest = [&]() -> Result<std::string> {
    join();
    MutexLock lock(&aside.mu);
    return *aside.digest;
  };
  const auto held_found = [&aside] {
    MutexLock lock(&aside.mu);
    return aside.held;
  };
  bool completing = false;  // a completion was sent: its answer may have been lost
  auto result = UploadAt(
      client, parts, blobs + "uploads/" + upload_id, *file, progress,
      [&]() -> Result<std::optional<bj::object>> {
        Result<std::string> sha = digest();
        if (!sha.ok()) return sha.status();
        file->sha256 = *sha;
        if (held_found()) return std::optional<bj::object>();
        completing = true;
        return std::optional<bj::object>(
            bj::object{{"size", file->size}, {"sha256", file->sha256}});
      },
      [&]() -> bool {
        if (held_found()) return true;
        // After a completion whose answer was lost (or one refused while another put of the
        // same file completed it), the upload by id is gone: the blob may be held.
        if (!completing) return false;
        auto held = HeldByEntityOnce(client, blobs, file->sha256, file->size);
        return held.ok() && *held;
      },
      held_found);
  // An early failure does not wait for the rest of the hash (unless the digest is needed for
  // an upload by digest: below).
  if (!result.ok() && result.status().code() != StatusCode::kNotFound) stop_hashing = true;
  join();
  Result<std::string> hashed = digest();
  if (result.ok()) {
    // A failure of the hash (the file changed, could not be read) was the upload's failure too.
    if (!hashed.ok()) return hashed.status();
    file->sha256 = *hashed;
    return result;
  }
  if (result.status().code() == StatusCode::kNotFound && hashed.ok()) {
    // A server without uploads by id (older than this client): by digest, as it knows.
    file->sha256 = *hashed;
    return UploadBlob(client, parts, entity, *file, progress);
  }
  if (!hashed.ok() && hashed.status().message().find(": stopped") == std::string::npos) {
    return hashed.status();
  }
  return result;
}

std::string PutUploadId(std::string_view entity, const std::string& path, const wal::FileStat& st) {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) absolute = path;
  std::string text = "cohort put v1\n";
  for (std::string_view part : {entity, std::string_view(host), std::string_view(absolute)}) {
    text += part;
    text += '\n';
  }
  text += agent::HashCacheKey(st);
  return Sha256::Hex(text).substr(0, 32);
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
  COHORT_ASSIGN_OR_RETURN(auto out, fs->NewStreamingWriter(part, have));
  int failures = 0;
  // Hashed and written on a thread of its own (syncing as it goes): fetching the next range
  // overlaps hashing and writing this one. `h` is the appender's until it finished.
  wal::BackgroundAppender writer(out.get(),
                                 {.queued_chunks = kQueuedRanges,
                                  .sync_every_bytes = kSyncEveryBytes,
                                  .sync_at_finish = true,
                                  .on_chunk = [&h](std::string_view chunk) { h.Update(chunk); }});
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
