#include "wal/background_appender.h"

#include <algorithm>
#include <utility>

namespace cohort::wal {

BackgroundAppender::BackgroundAppender(WritableFile* out, Options options)
    : out_(out), options_(std::move(options)) {
  if (options_.on_chunk) hook_thread_ = std::thread([this] { HookLoop(); });
  thread_ = std::thread([this] { Loop(); });
}

BackgroundAppender::~BackgroundAppender() { (void)Finish(); }

Status BackgroundAppender::Push(std::string chunk) {
  MutexLock lock(&mu_);
  while (error_.ok() && queue_.size() >= std::max<size_t>(1, options_.queued_chunks)) {
    cv_.Wait(mu_);
  }
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(chunk));
  cv_.SignalAll();
  return Status::Ok();
}

Status BackgroundAppender::Finish() {
  {
    MutexLock lock(&mu_);
    done_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  if (hook_thread_.joinable()) {
    {
      MutexLock lock(&hook_mu_);
      hook_stop_ = true;
      hook_cv_.SignalAll();
    }
    hook_thread_.join();
  }
  MutexLock lock(&mu_);
  return error_;
}

void BackgroundAppender::HookLoop() {
  MutexLock lock(&hook_mu_);
  while (true) {
    if (hook_chunk_ == nullptr) {
      if (hook_stop_) break;
      hook_cv_.Wait(hook_mu_);
      continue;
    }
    const std::string* chunk = hook_chunk_;
    lock.Unlock();
    options_.on_chunk(*chunk);  // Loop does not touch the chunk but to write it meanwhile
    lock.Lock();
    hook_chunk_ = nullptr;
    hook_cv_.SignalAll();
  }
}

Status BackgroundAppender::WriteChunk(const std::string& chunk) {
  if (!options_.on_chunk) return out_->Append(chunk);
  {
    MutexLock lock(&hook_mu_);
    hook_chunk_ = &chunk;
    hook_cv_.SignalAll();
  }
  Status st = out_->Append(chunk);
  MutexLock lock(&hook_mu_);
  while (hook_chunk_ != nullptr) hook_cv_.Wait(hook_mu_);  // the chunk outlives the hook's call
  return st;
}

void BackgroundAppender::Loop() {
  uint64_t unsynced = 0;
  MutexLock lock(&mu_);
  while (error_.ok()) {
    if (queue_.empty()) {
      if (done_) break;
      cv_.Wait(mu_);
      continue;
    }
    std::string chunk = std::move(queue_.front());
    queue_.pop_front();
    cv_.SignalAll();
    lock.Unlock();
    Status st = WriteChunk(chunk);
    unsynced += chunk.size();
    if (st.ok() && options_.sync_every_bytes > 0 && unsynced >= options_.sync_every_bytes) {
      st = out_->Sync();
      unsynced = 0;
    }
    lock.Lock();
    if (!st.ok()) error_ = st;
  }
  if (error_.ok() && options_.sync_at_finish) {
    lock.Unlock();
    Status st = out_->Sync();
    lock.Lock();
    if (!st.ok()) error_ = st;
  }
  cv_.SignalAll();
}

}  // namespace cohort::wal
