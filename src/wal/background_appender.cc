#include "wal/background_appender.h"

#include <algorithm>
#include <utility>

namespace cohort::wal {

BackgroundAppender::BackgroundAppender(WritableFile* out, Options options)
    : out_(out), options_(std::move(options)) {
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
  MutexLock lock(&mu_);
  return error_;
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
    if (options_.on_chunk) options_.on_chunk(chunk);
    Status st = out_->Append(chunk);
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
