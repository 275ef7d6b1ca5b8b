#include "blob/upload_hash.h"

namespace cohort::blob {

Status UploadHashes::BeginPart(const std::string& upload, int64_t part, Sha256** hash) {
  *hash = nullptr;
  MutexLock lock(&mu_);
  if (completing_.count(upload)) {
    return Status::Unavailable("part " + std::to_string(part) +
                               ": the upload is being completed; ask its status again");
  }
  std::unique_ptr<State>& s = states_[upload];
  if (!s) s = std::make_unique<State>();
  // Bytes that may already be in the hash (or are being fed into it), or two PUTs of one part
  // at once (which one's bytes stay is the file system's call): the state cannot be trusted.
  if (part < s->next || (s->hashing && part == s->next) || s->writing[part] > 0) s->spoiled = true;
  ++s->writing[part];
  if (s->spoiled || s->hashing || part != s->next) return Status::Ok();
  s->hashing = true;  // this PUT's, until its EndPart
  *hash = s->hash.get();
  return Status::Ok();
}

Status UploadHashes::BeginCompletion(const std::string& upload) {
  MutexLock lock(&mu_);
  if (completing_.count(upload)) {
    return Status::FailedPrecondition("the upload is being completed by another request");
  }
  auto it = states_.find(upload);
  if (it != states_.end() && !it->second->writing.empty()) {
    return Status::FailedPrecondition("part " + std::to_string(it->second->writing.begin()->first) +
                                      " is being written; complete again once it is stored");
  }
  completing_.insert(upload);
  return Status::Ok();
}

void UploadHashes::EndCompletion(const std::string& upload) {
  MutexLock lock(&mu_);
  completing_.erase(upload);
}

void UploadHashes::EndPart(const std::string& upload, int64_t part, bool durable, bool hashed,
                           int64_t part_count, const StoredFn& stored,
                           const HashStoredFn& hash_stored) {
  MutexLock lock(&mu_);
  auto it = states_.find(upload);
  if (it == states_.end()) return;  // forgotten meanwhile (completed or dropped)
  State* s = it->second.get();
  if (--s->writing[part] == 0) s->writing.erase(part);
  if (hashed) {
    s->hashing = false;
    if (!durable) {
      s->spoiled = true;  // the hash has bytes that are not the part's
    } else if (!s->spoiled) {
      ++s->next;
    }
  }
  if (s->spoiled) {
    if (s->writing.empty() && !s->hashing) states_.erase(it);
    return;
  }
  if (!durable || s->hashing) return;
  s->hashing = true;
  // The parts whose turn it is, durable and written by nobody (this one too when it was not
  // hashed as it was written).
  while (!s->spoiled && s->next < part_count && !s->writing.count(s->next)) {
    const int64_t n = s->next;
    lock.Unlock();
    // A failed read may have fed part of the part: the state is spoiled then.
    Status fed = stored(n) ? hash_stored(n, s->hash.get()) : Status::NotFound("not stored yet");
    lock.Lock();
    if (!fed.ok() && fed.code() != StatusCode::kNotFound) s->spoiled = true;
    if (!fed.ok() || s->spoiled) break;
    ++s->next;
  }
  s->hashing = false;
  if (s->spoiled && s->writing.empty()) {
    // `it` may be stale: the map changed while the lock was released (never this entry: only
    // Take/Forget erase it, and they leave a state that is being hashed alone).
    states_.erase(upload);
  }
}

std::optional<UploadHashes::Prefix> UploadHashes::Take(const std::string& upload) {
  MutexLock lock(&mu_);
  auto it = states_.find(upload);
  if (it == states_.end()) return std::nullopt;
  State* s = it->second.get();
  if (s->hashing || !s->writing.empty()) {
    s->spoiled = true;  // dropped by the thread that ends last
    return std::nullopt;
  }
  std::optional<Prefix> out;
  if (!s->spoiled && s->next > 0) {
    out.emplace();
    out->hash = std::move(s->hash);
    out->parts = s->next;
  }
  states_.erase(it);
  return out;
}

void UploadHashes::Forget(const std::string& upload) {
  MutexLock lock(&mu_);
  auto it = states_.find(upload);
  if (it == states_.end()) return;
  // A thread hashing it, or a PUT in flight, finds it spoiled and drops it.
  if (it->second->hashing || !it->second->writing.empty()) {
    it->second->spoiled = true;
  } else {
    states_.erase(it);
  }
}

size_t UploadHashes::size() const {
  MutexLock lock(&mu_);
  return states_.size();
}

}  // namespace cohort::blob
