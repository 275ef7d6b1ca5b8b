#include "agent/part_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/json.h"

namespace cohort::agent {

namespace bj = boost::json;

namespace {
constexpr size_t kReadChunk = 1 << 20;
}  // namespace

Status AnswerStatus(const Result<HttpResponse>& r, const std::string& what) {
  if (!r.ok()) return Status::Unavailable(what + ": " + r.status().message());
  const int code = r->status;
  if (code >= 200 && code < 300) return Status::Ok();
  const std::string text = what + ": " + AnswerErrorText(*r);
  if (code == 401) return Status::Unauthenticated(text);
  if (code == 403) return Status::PermissionDenied(text);
  if (code >= 400 && code < 500 && code != 408 && code != 429) {
    return Status::FailedPrecondition(text);  // refused for good
  }
  // 5xx, 408, 429, and what no Cohort server answers (a proxy's redirect): worth retrying.
  return Status::ResourceExhausted(text);
}

int ParallelPartsFromEnvironment(int fallback) {
  const char* v = std::getenv("COHORT_ARTIFACT_PARTS");
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end == nullptr || *end != '\0' || n <= 0) return fallback;
  return int(std::min<long long>(n, 64));
}

int64_t PartDelayFromEnvironment(int64_t fallback) {
  const char* v = std::getenv("COHORT_ARTIFACT_PART_DELAY_MS");
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end == nullptr || *end != '\0' || n < 0) return fallback;
  return int64_t(n);
}

PartPool::PartPool(int threads, HttpClientOptions http, wal::FileSystem* fs, int64_t delay_ms)
    : http_(std::move(http)), fs_(fs), delay_ms_(delay_ms) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { Work(); });
}

PartPool::~PartPool() {
  Abort();
  for (auto& t : workers_) t.join();
}

Status PartPool::Run(std::vector<PartJob> jobs, std::function<void(const PartJob&)> on_done,
                     std::function<bool()> skip_rest) {
  MutexLock lock(&mu_);
  on_done_ = std::move(on_done);
  skip_rest_ = std::move(skip_rest);
  first_error_ = Status::Ok();
  left_ = jobs.size();
  for (auto& j : jobs) queue_.push_back(std::move(j));
  cv_.SignalAll();
  while (left_ > 0 && !aborted_) cv_.Wait(mu_);
  queue_.clear();
  if (aborted_) return Status::Unavailable("the uploader is stopping");
  return first_error_;
}

void PartPool::Abort() {
  MutexLock lock(&mu_);
  aborted_ = true;
  for (HttpClient* c : clients_) c->Abort();
  cv_.SignalAll();
}

void PartPool::Work() {
  std::map<std::string, std::unique_ptr<HttpClient>> clients;  // by base URL
  std::string buf;
  MutexLock lock(&mu_);
  while (!aborted_) {
    if (queue_.empty()) {
      cv_.Wait(mu_);
      continue;
    }
    PartJob job = std::move(queue_.front());
    queue_.pop_front();
    const std::function<bool()> skip_rest = skip_rest_;
    bool skip = !first_error_.ok();
    const std::function<void(const PartJob&)> on_done = on_done_;
    HttpClient* client = nullptr;
    if (!skip) {
      auto& c = clients[job.base_url];
      if (!c) {
        c = std::make_unique<HttpClient>(job.base_url, http_);
        clients_.push_back(c.get());
      }
      client = c.get();
    }
    lock.Unlock();
    // Asked without the pool's lock: the caller's predicate may take locks of its own.
    skip = skip || (skip_rest && skip_rest());
    Status st = skip ? Status::Ok() : Put(client, job, &buf);
    if (st.ok() && !skip && on_done) on_done(job);
    lock.Lock();
    if (!st.ok() && first_error_.ok()) first_error_ = st;
    if (--left_ == 0) cv_.SignalAll();
  }
  for (auto& [url, c] : clients) {
    clients_.erase(std::remove(clients_.begin(), clients_.end(), c.get()), clients_.end());
  }
}

Status PartPool::Put(HttpClient* client, const PartJob& job, std::string* buf) {
  auto in = fs_->NewSequentialFile(job.source);
  if (!in.ok()) {
    return Status::FailedPrecondition(job.source +
                                      ": cannot read the file: " + in.status().message());
  }
  buf->resize(size_t(job.length));
  COHORT_RETURN_IF_ERROR((*in)->Skip(uint64_t(job.offset)));
  size_t have = 0;
  while (have < buf->size()) {
    const size_t want = std::min(kReadChunk, buf->size() - have);
    auto got = (*in)->Read(want, buf->data() + have);
    if (!got.ok()) return Status::FailedPrecondition(job.source + ": " + got.status().message());
    if (got->data() != buf->data() + have) std::copy(got->begin(), got->end(), buf->data() + have);
    have += got->size();
    if (got->size() < want) break;
  }
  if (have != buf->size()) {
    return Status::FailedPrecondition(job.source +
                                      ": the file is shorter than when its upload began: "
                                      "it changed since; log or put it again");
  }
  if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
  auto r = client->Request("PUT", job.path, *buf, job.api_key, "application/octet-stream");
  return AnswerStatus(r, "PUT part");
}

}  // namespace cohort::agent
