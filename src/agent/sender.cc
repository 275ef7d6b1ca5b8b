#include "agent/sender.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "agent/agent_log.h"
#include "agent/artifact_uploader.h"
#include "agent/protocol.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/text_encoding.h"

namespace cohort::agent {
namespace {

namespace bj = boost::json;

std::string RunsPath(const std::string& entity, const WriterTarget& t) {
  return "/api/v1/runs/" + PercentEncode(entity) + "/" + PercentEncode(t.project);
}

std::string RunPath(const std::string& entity, const WriterTarget& t) {
  return RunsPath(entity, t) + "/" + PercentEncode(t.run_id);
}

std::string WriterPath(const std::string& entity, const WriterTarget& t) {
  return RunPath(entity, t) + "/writers/" + PercentEncode(t.label);
}

// An ingest answer ({"duplicate", "points", "next_step"}, and "media_refused",
// "media_refused_reason" when some of the batch's media rows were not stored): its "points" (0
// when absent); refused media are a warning in the agent's log.
int64_t ReadIngestAnswer(const HttpResponse& r, const std::string& dir) {
  auto v = json::Parse(r.body);
  if (!v.ok() || !v->is_object()) return 0;
  const bj::object& o = v->as_object();
  const bj::value* refused = o.if_contains("media_refused");
  if (refused != nullptr && refused->is_int64() && refused->as_int64() > 0) {
    const bj::value* why = o.if_contains("media_refused_reason");
    Logf(LogLevel::kWarning, "{}: {} media value(s) not stored (the rest of the batch was): {}",
         dir, refused->as_int64(),
         why && why->is_string() ? std::string(why->as_string()) : std::string());
  }
  const bj::value* p = o.if_contains("points");
  return p && p->is_int64() ? p->as_int64() : 0;
}

// The "error.code" of an error answer ({"error": {"code", "message"}}), or "".
std::string ErrorCodeOf(const HttpResponse& r) {
  auto v = json::Parse(r.body);
  if (!v.ok() || !v->is_object()) return "";
  const bj::value* e = v->as_object().if_contains("error");
  if (e == nullptr || !e->is_object()) return "";
  const bj::value* code = e->as_object().if_contains("code");
  return code && code->is_string() ? std::string(code->as_string()) : "";
}

StatusCode CodeForHttp(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kAlreadyExists;
    case 413:
      return StatusCode::kPayloadTooLarge;
    case 429:
      return StatusCode::kResourceExhausted;
    default:
      return status >= 500 ? StatusCode::kUnavailable : StatusCode::kFailedPrecondition;
  }
}

}  // namespace

namespace {

// The Sender's timers (backoff, pauses, heartbeats) run on the monotonic clock: a wall clock
// that jumps back (NTP, a resumed VM, a user) must not postpone uploads by the jump, nor one
// that jumps ahead make every wait expire (tests/fault/test_clock_jumps.py).
int64_t MonoMillis() { return MonoNanos() / 1000000; }

SenderOptions WithEnvironment(SenderOptions options) {
  // COHORT_BACKOFF_MAX_S caps the retry backoff (default 30 s): how soon after a server outage
  // the uploads resume at the latest. For operators, and for the fault tests (tests/fault).
  options.backoff = BackoffOptionsFromEnvironment(options.backoff);
  return options;
}

}  // namespace

Sender::Sender(std::string base_url, SenderOptions options)
    : base_url_(std::move(base_url)),
      options_(WithEnvironment(options)),
      http_(base_url_, options.http),
      backoff_(options_.backoff) {}

Sender::~Sender() { Stop(); }

void Sender::Start() {
  MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Sender::Stop() {
  {
    MutexLock lock(&mu_);
    if (!started_) return;
    stop_ = true;
  }
  http_.Abort();
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&mu_);
  started_ = false;
  for (auto& e : entries_) (void)e->stream->FlushAcks(true);
}

void Sender::Add(std::shared_ptr<WriterStream> stream) {
  auto e = std::make_unique<Entry>();
  e->stream = std::move(stream);
  {
    MutexLock lock(&mu_);
    entries_.push_back(std::move(e));
  }
  cv_.SignalAll();
}

void Sender::Remove(const WriterStream* stream) {
  MutexLock lock(&mu_);
  while (busy_ != nullptr && busy_->stream.get() == stream) cv_.Wait(mu_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i]->stream.get() == stream) {
      (void)entries_[i]->stream->FlushAcks(true);
      entries_.erase(entries_.begin() + long(i));
      if (next_ > i) --next_;
      break;
    }
  }
}

void Sender::Wake() {
  {
    MutexLock lock(&mu_);
    ++wake_generation_;
  }
  cv_.SignalAll();
}

bool Sender::BackingOff() const {
  return retry_at_ms_.load(std::memory_order_relaxed) > MonoMillis();
}

size_t Sender::stream_count() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

SenderStats Sender::stats() const {
  MutexLock lock(&mu_);
  SenderStats s = stats_;
  s.backoff_s = std::max(0.0, double(retry_at_ms_.load() - MonoMillis()) / 1000.0);
  return s;
}

void Sender::Loop() {
  MutexLock lock(&mu_);
  while (!stop_) {
    int64_t now = MonoMillis();
    if (int64_t retry_at = retry_at_ms_.load(); now < retry_at) {
      cv_.WaitFor(mu_, std::chrono::milliseconds(retry_at - now));
      continue;
    }
    // Pick the next entry with work, round robin.
    Entry* pick = nullptr;
    int64_t next_event = now + 1000;
    const int64_t hb_ms = int64_t(options_.heartbeat_interval_s * 1000);
    for (size_t k = 0; k < entries_.size() && !pick; ++k) {
      size_t i = (next_ + k) % entries_.size();
      Entry* e = entries_[i].get();
      if (e->paused_until_ms > now) {
        next_event = std::min(next_event, e->paused_until_ms);
        continue;
      }
      UploadProgress p = e->stream->progress();
      bool has_records = p.done_seq < p.appended_seq && e->idle_generation < wake_generation_;
      bool heartbeat_due = e->stream->attached() > 0 && p.joined &&
                           (!e->had_contact || now - e->last_contact_ms >= hb_ms);
      if (has_records || heartbeat_due) {
        pick = e;
        next_ = (i + 1) % entries_.size();
      } else if (e->had_contact && e->stream->attached() > 0 && p.joined) {
        next_event = std::min(next_event, e->last_contact_ms + hb_ms);
      }
    }
    if (!pick) {
      cv_.WaitFor(mu_, std::chrono::milliseconds(std::max<int64_t>(1, next_event - now)));
      continue;
    }
    busy_ = pick;
    uint64_t generation = wake_generation_;
    lock.Unlock();
    Turn(pick);
    lock.Lock();
    if (pick->idle_generation == UINT64_MAX) pick->idle_generation = generation;
    busy_ = nullptr;
    cv_.SignalAll();
  }
}

void Sender::Turn(Entry* e) {
  WriterStream* s = e->stream.get();
  for (int i = 0; i < options_.records_per_turn; ++i) {
    const Record* rec = nullptr;
    auto peeked = s->Peek(&rec);
    if (!peeked.ok()) {
      Logf(LogLevel::kError, "{}: reading the WAL failed: {}", s->dir(),
           peeked.status().ToString());
      e->paused_until_ms = MonoMillis() + 5000;
      return;
    }
    if (!*peeked) {
      e->idle_generation = UINT64_MAX;  // Loop() stamps the generation it started with
      break;
    }
    if (!s->progress().stopped.ok()) {  // stopped in this process: nothing more, nothing dropped
      e->paused_until_ms = INT64_MAX / 4;
      return;
    }
    if (!s->progress().rejected.ok() && options_.keep_rejected) {  // kept: nothing more here
      e->paused_until_ms = INT64_MAX / 4;
      return;
    }
    if (!s->progress().rejected.ok()) {  // the server refused this writer: drop its records
      s->Pop();
      MutexLock lock(&mu_);
      ++stats_.records_skipped;
      continue;
    }
    Attempt a = Upload(e, *rec);
    {
      MutexLock lock(&mu_);
      ++stats_.requests;
      if (a.outcome == Outcome::kDone) {
        ++stats_.records_done;
        stats_.points += a.points;
      } else if (a.outcome == Outcome::kSkip || a.outcome == Outcome::kReject) {
        ++stats_.records_skipped;
      } else {
        ++stats_.retries;
      }
    }
    switch (a.outcome) {
      case Outcome::kDone:
        backoff_.Reset();
        e->had_contact = true;
        e->last_contact_ms = MonoMillis();
        if (e->key_refused) {
          e->key_refused = false;
          s->Update([](UploadProgress* p) { p->key_refused = false; });
        }
        s->Pop();
        break;
      case Outcome::kSkip:
        backoff_.Reset();
        Logf(LogLevel::kWarning, "{}: {} seq {} refused for good, skipped: {}", s->dir(),
             RecordKindName(rec->kind), rec->seq, a.status.ToString());
        if (!a.rate_limited) {  // an alert over the project's rate is dropped by design
          if (Status kept = s->NoteRefused(a.status); !kept.ok()) {
            Logf(LogLevel::kError, "{}: the refusal of seq {} not recorded in {}: {}", s->dir(),
                 rec->seq, WriterStream::kSeqFile, kept.ToString());
          }
        }
        s->Pop();
        break;
      case Outcome::kReject:
        backoff_.Reset();
        Logf(LogLevel::kError, "{}: the server refused the {}; {}: {}", s->dir(),
             RecordKindName(rec->kind),
             options_.keep_rejected ? "this writer's uploads stop, its records kept"
                                    : "dropping this writer",
             a.status.ToString());
        s->Update([&](UploadProgress* p) { p->rejected = a.status; });
        if (options_.keep_rejected) {
          e->paused_until_ms = INT64_MAX / 4;
          (void)s->FlushAcks(false);
          return;
        }
        s->Pop();
        break;
      case Outcome::kRetry: {
        ++failure_epoch_;
        s->Update([&](UploadProgress* p) {
          ++p->failures;
          p->last_failure = a.status;
        });
        Logf(LogLevel::kInfo, "{}: upload failed, retrying in {:.2f}s: {}", s->dir(), a.delay_s,
             a.status.ToString());
        MutexLock lock(&mu_);
        retry_at_ms_ = MonoMillis() + int64_t(a.delay_s * 1000);
        (void)s->FlushAcks(false);
        return;
      }
      case Outcome::kStop:
        Logf(LogLevel::kError, "{}: {}; this writer's uploads stop, its records kept", s->dir(),
             a.status.ToString());
        s->Update([&](UploadProgress* p) {
          ++p->failures;
          p->last_failure = a.status;
          p->stopped = a.status;
          p->key_refused = true;
        });
        e->key_refused = true;
        e->paused_until_ms = INT64_MAX / 4;
        (void)s->FlushAcks(false);
        return;
      case Outcome::kPause:
        ++failure_epoch_;
        s->Update([&](UploadProgress* p) {
          ++p->failures;
          p->last_failure = a.status;
          p->key_refused = true;
        });
        e->key_refused = true;
        Logf(LogLevel::kWarning, "{}: {}; pausing this writer for {:.0f}s", s->dir(),
             a.status.ToString(), a.delay_s);
        e->paused_until_ms = MonoMillis() + int64_t(a.delay_s * 1000);
        (void)s->FlushAcks(false);
        return;
    }
  }
  UploadProgress p = s->progress();
  Status st = s->FlushAcks(p.complete || p.done_seq >= p.appended_seq);
  if (!st.ok()) Logf(LogLevel::kWarning, "{}: writing the ack failed: {}", s->dir(), st.ToString());
  const int64_t hb_ms = int64_t(options_.heartbeat_interval_s * 1000);
  if (s->attached() > 0 && p.joined && p.rejected.ok() &&
      (!e->had_contact || MonoMillis() - e->last_contact_ms >= hb_ms ||
       e->heartbeat_epoch != failure_epoch_)) {
    Heartbeat(e);
  }
}

Result<HttpResponse> Sender::Call(std::string_view method, const std::string& path,
                                  std::string_view body, const std::string& api_key,
                                  std::string_view content_type, std::string_view extra_header) {
  return http_.Request(method, path, body, api_key, content_type, extra_header);
}

Result<std::string> Sender::EntityFor(WriterStream* s) {
  if (!s->target().entity.empty()) return s->target().entity;
  const std::string& key = s->target().api_key;
  if (auto it = entities_.find(key); it != entities_.end()) return it->second;
  auto r = Call("GET", "/api/v1/viewer", "", key);
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status(CodeForHttp(r->status), "viewer: " + AnswerErrorText(*r));
  auto v = json::Parse(r->body);
  if (v.ok() && v->is_object()) {
    if (auto* e = v->as_object().if_contains("entity");
        e && e->is_string() && !e->as_string().empty()) {
      std::string entity(e->as_string());
      entities_[key] = entity;
      s->Update([&](UploadProgress* p) { p->entity = entity; });
      return entity;
    }
  }
  return Status::Unavailable("viewer: answer without an entity");
}

Sender::Attempt Sender::Classify(const Result<HttpResponse>& r, std::string_view what) {
  Attempt a;
  if (!r.ok()) {
    a.outcome = Outcome::kRetry;
    a.status = r.status();
    a.delay_s = backoff_.NextDelay();
    return a;
  }
  int code = r->status;
  if (code >= 200 && code < 300) return a;
  a.status = Status(CodeForHttp(code), std::string(what) + ": " + AnswerErrorText(*r));
  if (code == 401 || code == 403) {
    // The key, not the record: never a reason to drop anything.
    a.outcome = options_.stop_on_auth_error ? Outcome::kStop : Outcome::kPause;
    a.delay_s = options_.auth_pause_s;
  } else if (code >= 400 && code < 500 && code != 408 && code != 429) {
    a.outcome = Outcome::kSkip;  // this record refused for good
  } else {
    // 5xx, 408, 429, and what no Cohort server answers (a redirect of a proxy in front of it,
    // 1xx): retried with backoff, never taken for a refusal that drops records.
    a.outcome = Outcome::kRetry;
    double backoff = backoff_.NextDelay();
    a.delay_s = r->retry_after_s ? *r->retry_after_s : backoff;
  }
  return a;
}

Sender::Attempt Sender::Upload(Entry* e, const Record& rec) {
  WriterStream* s = e->stream.get();
  const WriterTarget& t = s->target();
  auto entity = EntityFor(s);
  if (!entity.ok()) {
    Attempt a;
    a.status = entity.status();
    StatusCode c = entity.status().code();
    if (c == StatusCode::kUnauthenticated || c == StatusCode::kPermissionDenied) {
      a.outcome = options_.stop_on_auth_error ? Outcome::kStop : Outcome::kPause;
      a.delay_s = options_.auth_pause_s;
    } else {
      a.outcome = Outcome::kRetry;
      a.delay_s = backoff_.NextDelay();
    }
    return a;
  }
  std::string what(RecordKindName(rec.kind));
  switch (rec.kind) {
    case RecordKind::kRunUpsert: {
      auto r = Call("POST", RunsPath(*entity, t), rec.body, t.api_key);
      Attempt a = Classify(r, what);
      if (a.outcome == Outcome::kSkip) a.outcome = Outcome::kReject;
      if (a.outcome == Outcome::kDone) {
        auto v = json::Parse(r->body);
        if (v.ok() && v->is_object()) {
          std::string name;
          if (auto* n = v->as_object().if_contains("name"); n && n->is_string()) {
            name = std::string(n->as_string());
          }
          auto fields = std::make_shared<const std::string>(RunFieldsOfAnswer(r->body));
          s->Update([&](UploadProgress* p) {
            p->run_name = name;
            p->run_fields = std::move(fields);
            p->entity = *entity;
          });
        }
      }
      return a;
    }
    case RecordKind::kWriterJoin: {
      auto r = Call("POST", RunPath(*entity, t) + "/writers", rec.body, t.api_key);
      Attempt a = Classify(r, what);
      if (a.outcome == Outcome::kSkip) a.outcome = Outcome::kReject;
      if (a.outcome == Outcome::kDone) {
        int64_t next_step = 0;
        int64_t last_seq = 0;
        int64_t media_file_bytes = 0, media_per_step = 0;
        auto v = json::Parse(r->body);
        if (v.ok() && v->is_object()) {
          const bj::object& o = v->as_object();
          const auto number = [](const bj::object& in, std::string_view name) -> int64_t {
            const bj::value* n = in.if_contains(name);
            return n && n->is_int64() ? n->as_int64() : 0;
          };
          next_step = number(o, "next_step");
          last_seq = number(o, "last_seq");
          if (const bj::value* m = o.if_contains("media_limits"); m && m->is_object()) {
            media_file_bytes = number(m->as_object(), "max_media_file_bytes");
            media_per_step = number(m->as_object(), "max_media_per_step");
          }
        }
        // The batches after the join must upload above what the server holds (writer_stream.h).
        if (Status st = s->NoteJoined(rec.seq, uint64_t(std::max<int64_t>(0, last_seq)));
            !st.ok()) {
          a.outcome = Outcome::kRetry;
          a.status = st;
          a.delay_s = backoff_.NextDelay();
          return a;
        }
        s->Update([&](UploadProgress* p) {
          p->joined = true;
          p->next_step = next_step;
          p->max_media_file_bytes = media_file_bytes;
          p->max_media_per_step = media_per_step;
          p->entity = *entity;
        });
      }
      return a;
    }
    case RecordKind::kBatch: {
      // The WAL bytes as they are: the batch v4 the client encoded; its seq travels outside.
      const uint64_t seq = s->UploadSeq(rec.seq);
      if (Status saved = s->SaveStreamId(); !saved.ok()) {
        Attempt a;
        a.outcome = Outcome::kRetry;
        a.status = saved;
        a.delay_s = backoff_.NextDelay();
        return a;
      }
      // In seq order, one at a time, each once every lower record of the stream is settled: the
      // server keeps the stream's highest seq for the writer instead of a record per batch.
      std::string seq_header(limits::kBatchSeqHeader);
      seq_header += ": " + std::to_string(seq) + "\r\n";
      seq_header += limits::kBatchOrderedHeader;
      seq_header += ": " + s->stream_id();
      auto r = Call("POST", WriterPath(*entity, t) + "/batches", rec.body, t.api_key,
                    limits::kBatchMediaType, seq_header);
      if (r.ok() && r->status == 415) {
        // A server that does not read batch v4 (an older build): nothing else to send it; the
        // records wait in the WAL and go again after the longest backoff.
        Attempt a;
        a.outcome = Outcome::kRetry;
        a.delay_s = options_.backoff.max_s;
        a.status = Status::FailedPrecondition(
            "batch seq " + std::to_string(seq) + ": the server does not read " +
            std::string(limits::kBatchFormatName) + " (" + AnswerErrorText(*r) +
            "); upgrade the server: the records stay in the WAL and are sent again");
        Logf(LogLevel::kWarning, "{}: {}", s->dir(), a.status.message());
        return a;
      }
      Attempt a = Classify(r, what);
      if (a.outcome == Outcome::kDone) a.points = ReadIngestAnswer(*r, s->dir());
      return a;
    }
    case RecordKind::kRunPatch:
      return Classify(Call("PATCH", RunPath(*entity, t), rec.body, t.api_key), what);
    case RecordKind::kWriterFinish:
      return Classify(Call("POST", WriterPath(*entity, t) + "/finish", rec.body, t.api_key), what);
    case RecordKind::kArtifact:
      return HandArtifact(t, *entity, rec);
    case RecordKind::kAlert: {
      // The body as the client wrote it (alert_body.h). A retry of an alert the server took
      // already finds it open and only bumps its count (one open alert per writer and title).
      auto r = Call("POST", WriterPath(*entity, t) + "/alerts", rec.body, t.api_key);
      Attempt a = Classify(r, what);
      if (r.ok() && r->status == 429 && ErrorCodeOf(*r) == "resource_exhausted") {
        // The project opened as many alerts as the server allows per minute: this one is
        // refused, not late. Waiting would hold up every record of the writer behind it. Any
        // other 429 (the entity's request rate, a proxy's) is retried as for every record.
        a.outcome = Outcome::kSkip;
        a.rate_limited = true;
      }
      return a;
    }
  }
  Attempt a;
  a.outcome = Outcome::kSkip;
  a.status = Status::Internal("unknown record kind");
  return a;
}

Sender::Attempt Sender::HandArtifact(const WriterTarget& t, const std::string& entity,
                                     const Record& rec) {
  Attempt a;
  if (!options_.artifacts) {
    // Kept in the WAL, never dropped: an agent with an uploader takes it later.
    a.outcome = Outcome::kRetry;
    a.delay_s = options_.backoff.max_s;
    a.status = Status::FailedPrecondition(
        "artifact seq " + std::to_string(rec.seq) +
        ": this process does not upload artifacts; the intent stays in the WAL for the agent");
    return a;
  }
  Status st = options_.artifacts->Accept(ArtifactTarget{t.base_url, t.api_key, entity, t.project},
                                         rec.body);
  if (st.ok()) return a;
  a.status = st;
  if (st.code() == StatusCode::kInvalidArgument) {
    a.outcome = Outcome::kSkip;  // the agent checked it when it took the frame: not expected
  } else {
    a.outcome = Outcome::kRetry;  // the disk: try again
    a.delay_s = backoff_.NextDelay();
  }
  return a;
}

void Sender::Heartbeat(Entry* e) {
  WriterStream* s = e->stream.get();
  auto entity = EntityFor(s);
  if (!entity.ok()) return;
  auto r = Call("POST", WriterPath(*entity, s->target()) + "/heartbeat", "{}", s->target().api_key);
  // A missed heartbeat is not retried on its own: the next one is due an interval later.
  e->had_contact = true;
  e->heartbeat_epoch = failure_epoch_;
  e->last_contact_ms = MonoMillis();
  if (!r.ok() || r->status >= 300) {
    Logf(LogLevel::kDebug, "{}: heartbeat failed: {}", s->dir(),
         r.ok() ? AnswerErrorText(*r) : r.status().ToString());
  }
}

}  // namespace cohort::agent
