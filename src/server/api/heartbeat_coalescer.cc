#include "server/api/heartbeat_coalescer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace cohort::api {

HeartbeatCoalescer::~HeartbeatCoalescer() { Stop(); }

std::string HeartbeatCoalescer::Key(const store::RunRef& ref, const std::string& label) {
  std::string key;
  key.reserve(ref.entity.size() + ref.project.size() + ref.run_id.size() + label.size() + 3);
  key.append(ref.entity).push_back('\0');
  key.append(ref.project).push_back('\0');
  key.append(ref.run_id).push_back('\0');
  key.append(label);
  return key;
}

void HeartbeatCoalescer::Start() {
  MutexLock lock(&loop_mu_);
  if (flusher_.joinable() || stopping_) return;
  flusher_ = std::thread([this] { FlushLoop(); });
}

void HeartbeatCoalescer::Stop() {
  {
    MutexLock lock(&loop_mu_);
    stopping_ = true;
  }
  loop_cv_.SignalAll();
  if (flusher_.joinable()) flusher_.join();
  if (Status s = Flush(); !s.ok()) {
    std::fprintf(stderr, "cohort: writing heartbeats failed: %s\n", s.ToString().c_str());
  }
}

void HeartbeatCoalescer::FlushLoop() {
  MutexLock lock(&loop_mu_);
  while (!stopping_) {
    loop_cv_.WaitFor(loop_mu_, std::chrono::milliseconds(flush_interval_ms_));
    if (stopping_) break;
    lock.Unlock();
    if (Status s = Flush(); !s.ok()) {
      std::fprintf(stderr, "cohort: writing heartbeats failed (kept for the next try): %s\n",
                   s.ToString().c_str());
    }
    lock.Lock();
  }
}

Status HeartbeatCoalescer::Record(const store::RunRef& ref, const std::string& label,
                                  int64_t now_ms) {
  std::string key = Key(ref, label);
  {
    MutexLock lock(&mu_);
    if (known_.contains(key)) {
      auto [it, fresh] =
          pending_.try_emplace(std::move(key), store::HeartbeatUpdate{ref, label, now_ms});
      if (!fresh) it->second.now_ms = std::max(it->second.now_ms, now_ms);
      return Status::Ok();
    }
  }
  // Not known: read the run's writers (a read connection; never waits for writes).
  COHORT_ASSIGN_OR_RETURN(std::vector<store::WriterRecord> writers, store_->ListWriters(ref));
  bool exists = false;
  MutexLock lock(&mu_);
  if (known_.size() + writers.size() > kMaxKnown) known_.clear();
  for (const store::WriterRecord& w : writers) {
    exists = exists || w.label == label;
    known_.insert(Key(ref, w.label));
  }
  if (!exists) {
    return Status::NotFound("writer '" + label + "' of run " + ref.entity + "/" + ref.project +
                            "/" + ref.run_id + " not found");
  }
  auto [it, fresh] =
      pending_.try_emplace(std::move(key), store::HeartbeatUpdate{ref, label, now_ms});
  if (!fresh) it->second.now_ms = std::max(it->second.now_ms, now_ms);
  return Status::Ok();
}

Status HeartbeatCoalescer::Flush() {
  MutexLock flush_lock(&flush_mu_);
  std::unordered_map<std::string, store::HeartbeatUpdate> batch;
  {
    MutexLock lock(&mu_);
    batch.swap(pending_);
  }
  if (batch.empty()) return Status::Ok();
  std::vector<store::HeartbeatUpdate> updates;
  updates.reserve(batch.size());
  for (const auto& [key, u] : batch) updates.push_back(u);
  Result<store::HeartbeatsApplied> applied = store_->Heartbeats(updates);
  if (applied.ok() && on_revived_) {
    for (const store::HeartbeatUpdate& u : applied->revived) on_revived_(u);
  }
  MutexLock lock(&mu_);
  ++flushes_;
  if (!applied.ok()) {
    // Keep them for the next flush (a newer heartbeat recorded meanwhile wins).
    for (auto& [key, u] : batch) {
      auto [it, fresh] = pending_.try_emplace(key, u);
      if (!fresh) it->second.now_ms = std::max(it->second.now_ms, u.now_ms);
    }
    return applied.status();
  }
  // Some writers are gone (their run was deleted): forget what is known, so that their next
  // heartbeat reads the store again and gets its 404.
  if (applied->updated < int64_t(updates.size())) known_.clear();
  return Status::Ok();
}

size_t HeartbeatCoalescer::pending() const {
  MutexLock lock(&mu_);
  return pending_.size();
}

int64_t HeartbeatCoalescer::flushes() const {
  MutexLock lock(&mu_);
  return flushes_;
}

}  // namespace cohort::api
