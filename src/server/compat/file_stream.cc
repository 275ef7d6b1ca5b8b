// Route: POST /files/{entity}/{project}/{run}/file_stream — the vendor's stream of history rows,
// system metrics, console lines, summary and run end (docs/compat.md, "file_stream").
//
// Exactly once: every file's lines are numbered by their offsets, kept per (run, client, file)
// as stream positions in the store and checked-and-advanced in the same transaction as the
// data (types.h StreamPosition). Lines below a file's position were stored before and are
// skipped (retries, overlapping resends); console lines below it replace the stored line at
// that position (progress bars). A race lost to a concurrent request of the same client is
// retried with fresh positions.
//
// Answers: only conditions a retry cannot fix get 4xx (bad key, another entity, a body that is
// not JSON); back-pressure and transient store errors get 429 with Retry-After and RateLimit
// headers, which the clients honour; lines or values that cannot be stored are skipped, never
// refused.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <span>

#include "core/clock.h"
#include "core/json.h"
#include "server/alerts/alert_engine.h"
#include "server/api/throttle.h"
#include "server/compat/client_writers.h"
#include "server/compat/compat.h"
#include "server/compat/compat_context.h"
#include "server/compat/wandb_lines.h"
#include "store/run_state.h"

namespace cohort::compat {
namespace {

constexpr std::string_view kHistory = "wandb-history.jsonl";
constexpr std::string_view kEvents = "wandb-events.jsonl";
constexpr std::string_view kSummary = "wandb-summary.json";
constexpr std::string_view kConsole = "output.log";
constexpr int kMaxAttempts = 6;

struct FileChunk {
  bool present = false;
  int64_t offset = 0;
  std::vector<std::string> lines;
};

struct StreamRequest {
  FileChunk history, events, summary, console;
  std::vector<std::string> uploaded;
  bool preempting = false;
  bool complete = false;
  std::optional<int64_t> exitcode;
};

// The request body; unknown files and fields are ignored, malformed file entries skipped.
Result<StreamRequest> DecodeRequest(const std::string& body) {
  StreamRequest out;
  if (body.empty()) return out;
  COHORT_ASSIGN_OR_RETURN(bj::value root, json::Parse(body));
  if (!root.is_object()) return Status::InvalidArgument("body: expected a JSON object");
  const bj::object& obj = root.get_object();
  if (const bj::value* files = obj.if_contains("files"); files && files->is_object()) {
    for (const auto& kv : files->get_object()) {
      FileChunk* chunk = kv.key() == kHistory   ? &out.history
                         : kv.key() == kEvents  ? &out.events
                         : kv.key() == kSummary ? &out.summary
                         : kv.key() == kConsole ? &out.console
                                                : nullptr;
      if (chunk == nullptr || !kv.value().is_object()) continue;
      const bj::object& f = kv.value().get_object();
      const bj::value* offset = f.if_contains("offset");
      const bj::value* content = f.if_contains("content");
      if (!content || !content->is_array()) continue;
      chunk->present = true;
      if (offset && offset->is_int64() && offset->get_int64() >= 0) {
        chunk->offset = offset->get_int64();
      } else if (offset && offset->is_uint64()) {
        chunk->offset = int64_t(std::min<uint64_t>(offset->get_uint64(), INT64_MAX / 2));
      }
      chunk->offset = std::min<int64_t>(chunk->offset, INT64_MAX / 2);
      for (const bj::value& line : content->get_array()) {
        chunk->lines.push_back(line.is_string() ? std::string(line.get_string()) : std::string());
      }
    }
  }
  if (const bj::value* up = obj.if_contains("uploaded"); up && up->is_array()) {
    for (const bj::value& name : up->get_array()) {
      if (name.is_string()) out.uploaded.emplace_back(name.get_string());
    }
  }
  if (const bj::value* p = obj.if_contains("preempting"); p && p->is_bool()) {
    out.preempting = p->get_bool();
  }
  if (const bj::value* c = obj.if_contains("complete"); c && c->is_bool()) {
    out.complete = c->get_bool();
  }
  if (const bj::value* code = obj.if_contains("exitcode"); code && code->is_int64()) {
    out.exitcode = code->get_int64();
  }
  return out;
}

// The lines of a request turned into records, each with its offset.
struct Decoded {
  std::vector<std::pair<int64_t, MetricRow>> history;
  std::vector<std::pair<int64_t, MetricRow>> events;
  std::vector<std::pair<int64_t, store::ConsoleLine>> console;
  std::optional<bj::object> summary;
  std::string label_hint;
  int64_t skipped = 0;
};

Decoded DecodeLines(const StreamRequest& req, bool shared, const api::ApiLimits& limits,
                    int64_t now_ms) {
  Decoded d;
  KeyLimits keys{limits.max_key_bytes};
  for (size_t i = 0; i < req.history.lines.size(); ++i) {
    auto line = ParseLine(req.history.lines[i]);
    if (!line.ok()) {
      ++d.skipped;
      continue;
    }
    d.history.emplace_back(req.history.offset + int64_t(i),
                           HistoryRowFromLine(*line, now_ms, keys, &d.skipped));
  }
  for (size_t i = 0; i < req.events.lines.size(); ++i) {
    auto line = ParseLine(req.events.lines[i]);
    if (!line.ok()) {
      ++d.skipped;
      continue;
    }
    SystemLine s = SystemRowFromLine(*line, now_ms, keys);
    if (d.label_hint.empty() && shared) d.label_hint = s.label;
    if (!s.row.values.empty()) d.events.emplace_back(req.events.offset + int64_t(i), std::move(s.row));
  }
  for (size_t i = 0; i < req.console.lines.size(); ++i) {
    ConsoleEntry c = ConsoleFromLine(req.console.lines[i], shared, now_ms);
    if (d.label_hint.empty() && shared) d.label_hint = c.label;
    if (c.line.text.size() > limits.max_console_line_bytes) {
      // Cut at a character's first byte: a cut character would be invalid UTF-8.
      size_t cut = limits.max_console_line_bytes;
      while (cut > 0 && (static_cast<unsigned char>(c.line.text[cut]) & 0xC0) == 0x80) --cut;
      c.line.text.resize(cut);
    }
    c.line.line = req.console.offset + int64_t(i);
    d.console.emplace_back(c.line.line, std::move(c.line));
  }
  if (!req.summary.lines.empty()) {
    auto line = ParseLine(req.summary.lines.back());
    if (line.ok()) {
      d.summary = CleanSummary(std::move(line).value());
    } else {
      ++d.skipped;
    }
  }
  return d;
}

// A stock client's summary line holds its whole summary (the last line wins): a key the run's
// summary has and the line lacks was deleted by the client (`del run.summary[k]`), so the patch
// deletes it (null). A series' key too (it follows its last point until then,
// store/run_summary.h): the client leaves a logged key out when `define_metric` says so
// (`summary="none"`, or `summary="max"`, which sends {"acc": {"max": ...}}, flattened to
// "acc.max"), and a line that merely lags behind the history is followed by one that has the key
// again (which makes it follow its last point again). A shared run whose summary comes from more than one writer (its primary
// and workers with x_update_finish_state) merges their lines key by key instead: each line holds
// its own writer's summary, and one writer must not delete another's keys (docs/compat.md).
Status DeleteKeysMissingFromSummary(store::Store* store, const store::RunRef& ref, bool shared,
                                    bj::object* summary) {
  COHORT_ASSIGN_OR_RETURN(store::RunRecord run, store->GetRun(ref));
  auto stored = json::Parse(run.summary_json);
  if (!stored.ok() || !stored->is_object()) return Status::Ok();
  std::vector<std::string> missing;
  for (const auto& kv : stored->get_object()) {
    if (!summary->contains(kv.key())) missing.emplace_back(kv.key());
  }
  // A series' key enters the stored summary only when a writer ends (store/run_summary.h): the
  // line must also take out the logged keys it leaves out before that.
  COHORT_ASSIGN_OR_RETURN(auto series, store->ListSeries(ref));
  for (const store::SeriesInfo& s : series) {
    if (!s.key.starts_with("system/") && !summary->contains(s.key) &&
        !stored->get_object().contains(s.key)) {
      missing.push_back(s.key);
    }
  }
  if (missing.empty()) return Status::Ok();
  if (shared) {
    COHORT_ASSIGN_OR_RETURN(auto writers, store->ListWriters(ref));
    if (std::count_if(writers.begin(), writers.end(), [](const store::WriterRecord& w) {
          return w.primary || w.update_finish_state;
        }) > 1) {
      return Status::Ok();
    }
  }
  for (const std::string& key : missing) (*summary)[key] = nullptr;
  return Status::Ok();
}

// A key's type in a run: "scalar", "histogram" or a media type (store/ingest_batch.h).
using KeyTypes = std::map<std::string, std::string>;

// The type each key of the run has in the store, read when the store refused a batch.
Result<KeyTypes> StoredKeyTypes(store::Store* store, const store::RunRef& ref) {
  KeyTypes types;
  COHORT_ASSIGN_OR_RETURN(auto series, store->ListSeries(ref));
  for (const store::SeriesInfo& s : series) types.emplace(s.key, store::kScalarKeyType);
  COHORT_ASSIGN_OR_RETURN(auto histograms, store->ListHistograms(ref));
  for (const store::SeriesInfo& h : histograms) types.emplace(h.key, store::kHistogramKeyType);
  COHORT_ASSIGN_OR_RETURN(auto media, store->ListMedia(ref));
  for (const store::MediaKeyInfo& m : media) types.emplace(m.key, m.type);
  return types;
}

// Drops from `d`'s history the values whose key has another type than `types` gives it (keys
// it lacks take the type they first have in this request; with `only_known` their values, and
// the system values of keys it lacks, are dropped instead), counting each in d->skipped.
// Returns how many were dropped.
int64_t DropValuesOfOtherTypes(Decoded* d, KeyTypes types, bool only_known) {
  int64_t dropped = 0;
  auto keeps = [&](const std::string& key, const std::string& type) {
    auto it = types.find(key);
    const bool keep = it == types.end() ? !only_known : it->second == type;
    if (it == types.end() && keep) types.emplace(key, type);
    if (!keep) ++dropped;
    return keep;
  };
  for (auto& [index, row] : d->history) {
    std::erase_if(row.values,
                  [&](const auto& v) { return !keeps(v.first, store::kScalarKeyType); });
    std::erase_if(row.histograms,
                  [&](const auto& h) { return !keeps(h.first, store::kHistogramKeyType); });
    std::erase_if(row.media, [&](const store::MediaPoint& m) { return !keeps(m.key, m.type); });
  }
  if (only_known) {  // system keys count against the run's key limit too ("system/<key>")
    for (auto& [index, row] : d->events) {
      std::erase_if(row.values, [&](const auto& v) {
        const bool keep = types.contains(std::string(store::kSystemKeyPrefix) + v.first);
        if (!keep) ++dropped;
        return !keep;
      });
    }
  }
  d->skipped += dropped;
  return dropped;
}

bool CarriesHistogramsOrMedia(const Decoded& d) {
  return std::any_of(d.history.begin(), d.history.end(), [](const auto& r) {
    return !r.second.histograms.empty() || !r.second.media.empty();
  });
}

// Everything of `lines` dropped and counted in d->skipped: the history lines (`all`: the system
// and console lines too).
void DropLines(Decoded* d, bool all) {
  d->skipped += int64_t(d->history.size());
  d->history.clear();
  if (!all) return;
  d->skipped += int64_t(d->events.size() + d->console.size());
  d->events.clear();
  d->console.clear();
}

// The batch of what `cw`'s positions have not seen yet (console lines below the position are
// re-sent lines that replace the stored ones). Empty positions: nothing offset-based to store.
store::IngestBatch BuildBatch(const StreamRequest& req, const Decoded& d, const ClientWriter& cw,
                              bool* advances, int64_t* unplaced) {
  store::IngestBatchBuilder builder;
  store::IngestBatch& b = builder.batch();
  *advances = false;
  auto position = [&](const FileChunk& chunk, std::string_view file) {
    int64_t pos = cw.Position(file);
    if (!chunk.present) return pos;
    int64_t next = std::max(pos, chunk.offset + int64_t(chunk.lines.size()));
    *advances = *advances || next > pos;
    b.positions.push_back(store::StreamPosition{cw.Stream(file), pos, next});
    return pos;
  };
  std::vector<store::IngestBatchBuilder::Cell> cells;
  auto cells_of = [&cells](const MetricRow& row) {
    cells.clear();
    for (const auto& [key, value] : row.values) cells.emplace_back(key, value);
    return std::span<const store::IngestBatchBuilder::Cell>(cells);
  };
  int64_t hist_pos = position(req.history, kHistory);
  // Histograms and media need their line's step. Shared-mode clients send none (the server
  // numbers their lines): when such a line carries histograms or media, the batch's lines are
  // numbered here as the store would number them (from the writer's next step; an explicit step
  // moves it on), so that they share the step of their line's scalars.
  std::optional<int64_t> next_step;
  if (cw.bound() && std::any_of(d.history.begin(), d.history.end(), [&](const auto& r) {
        return r.first >= hist_pos && r.second.step < 0 &&
               (!r.second.histograms.empty() || !r.second.media.empty());
      })) {
    next_step = cw.writer().next_step;
  }
  *unplaced = 0;
  for (const auto& [index, row] : d.history) {
    if (index < hist_pos) continue;
    int64_t step = row.step;
    if (next_step && step < 0) {
      step = (*next_step)++;
    } else if (next_step && step >= *next_step && step < INT64_MAX) {
      *next_step = step + 1;
    }
    builder.AddHistoryRow(step, row.time_ms, cells_of(row));
    if (step < 0) {  // no writer to number it (not bound): nowhere to put them
      *unplaced += int64_t(row.histograms.size() + row.media.size());
      continue;
    }
    for (const auto& [key, h] : row.histograms) {
      builder.AddHistogram(store::HistogramPoint{key, step, row.time_ms, h});
    }
    for (store::MediaPoint m : row.media) {
      m.step = step;
      m.time_ms = row.time_ms;
      builder.AddMedia(std::move(m));
    }
  }
  int64_t events_pos = position(req.events, kEvents);
  for (const auto& [index, row] : d.events) {
    if (index >= events_pos) builder.AddSystemRow(row.time_ms, cells_of(row));
  }
  position(req.console, kConsole);
  for (const auto& [index, line] : d.console) b.console.push_back(line);
  return builder.Finish();
}

bool Transient(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kResourceExhausted ||
         code == StatusCode::kDeadlineExceeded || code == StatusCode::kFailedPrecondition ||
         code == StatusCode::kNotFound;
}

http::HttpResponse StoreError(const Status& s, std::string_view what) {
  if (Transient(s.code())) return Backpressure(1, std::string(what) + ": " + s.message());
  std::fprintf(stderr, "cohort: compat file_stream: %s: %s\n", std::string(what).c_str(),
               s.ToString().c_str());
  return api::ErrorResponse(Status::Internal(std::string(what) + ": " + s.message()));
}

// The console log a worker uploads as it exits ("output.log", or "output_<label>.log").
bool UploadsConsoleLog(const std::vector<std::string>& uploaded) {
  for (const std::string& name : uploaded) {
    if (name == kConsole || (name.starts_with("output_") && name.ends_with(".log"))) return true;
  }
  return false;
}

http::HttpResponse HandleFileStream(api::ApiContext* ctx, http::HttpRequest& req,
                                    const api::AuthContext& who) {
  const int64_t t0 = MonoNanos();
  auto ref = CompatRunRef(who, req.PathParam("entity"), req.PathParam("project"),
                          req.PathParam("run"));
  if (!ref.ok()) return api::ErrorResponse(ref.status());
  if (ref->run_id.empty()) return api::ErrorResponse(Status::InvalidArgument("run: empty id"));
  auto request = DecodeRequest(req.body);
  if (!request.ok()) return api::ErrorResponse(request.status());
  const ClientId client = ClientFromRequest(req);
  const int64_t now = NowMillis();
  const StreamRequest& sr = *request;
  Decoded decoded = DecodeLines(sr, client.shared, ctx->limits, now);
  // One type per key within the request too: the first one counts (the store would refuse the
  // whole batch).
  if (CarriesHistogramsOrMedia(decoded)) DropValuesOfOtherTypes(&decoded, {}, false);
  int64_t offered = 0;
  for (const auto& [index, row] : decoded.history) offered += int64_t(row.values.size());
  for (const auto& [index, row] : decoded.events) offered += int64_t(row.values.size());
  if (auto refused = api::ThrottlePoints(ctx, who.entity, offered)) return std::move(*refused);

  const bool has_content = sr.history.present || sr.events.present || sr.console.present ||
                           decoded.summary || sr.complete || sr.preempting;
  auto run = has_content ? EnsureRun(ctx->store, *ref) : ctx->store->GetRun(*ref);
  if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
    return api::JsonResponse(200, bj::object{});  // a heartbeat of a run that is gone
  }
  if (!run.ok()) return StoreError(run.status(), "run");
  ClientWriter cw(ctx->store, *run, client);
  if (Status s = cw.Load(); !s.ok()) return StoreError(s, "positions");

  const bool has_lines = !sr.history.lines.empty() || !sr.events.lines.empty() ||
                         !sr.console.lines.empty();
  const bool needs_writer = has_lines || sr.complete || sr.preempting ||
                            (cw.bound() && !decoded.label_hint.empty());
  bool ingested = false, advanced = false;
  int64_t points = 0;
  store::IngestBatch stored;  // what was ingested, for the alert rules
  store::IngestResult stored_result;
  int64_t unplaced = 0;
  // What a batch the store refused for its values gives up, one stage at a time: the values of
  // keys with another type than the run has (or, past the run's key limit, of keys it has
  // not), then the history lines, then every line (the positions still advance).
  int refused_stage = 0;
  for (int attempt = 0; needs_writer; ++attempt) {
    if (attempt == kMaxAttempts) {
      return Backpressure(1, "file_stream: concurrent updates of this client; retry");
    }
    if (attempt > 0) {
      if (Status s = cw.Load(); !s.ok()) return StoreError(s, "positions");
    }
    if (Status s = cw.Ensure(decoded.label_hint); !s.ok()) return StoreError(s, "writer");
    store::IngestBatch batch = BuildBatch(sr, decoded, cw, &advanced, &unplaced);
    if (batch.positions.empty()) break;
    batch.max_run_keys = api::RunKeyLimit(ctx, who.entity);
    api::SetMediaLimits(ctx->limits, &batch);
    const int64_t t_store = MonoNanos();
    auto r = ctx->store->Ingest(*ref, cw.label(), batch, now);
    if (ctx->metrics) ctx->metrics->ObserveStore("compat_ingest", MonoNanos() - t_store);
    if (r.ok()) {
      ingested = true;
      points = r->points;
      stored = std::move(batch);
      stored_result = *r;
      break;
    }
    StatusCode code = r.status().code();
    if (code == StatusCode::kFailedPrecondition || code == StatusCode::kNotFound) continue;
    if (code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge) {
      // Values the store cannot take: dropped and counted, the rest stored; never kill the
      // stream (a 4xx or 5xx would be retried with the same lines for ever).
      std::fprintf(stderr, "cohort: compat file_stream %s/%s/%s: %s: %s\n", ref->entity.c_str(),
                   ref->project.c_str(), ref->run_id.c_str(),
                   refused_stage == 0   ? "dropping the values the run cannot take"
                   : refused_stage == 1 ? "dropping the request's history lines"
                                        : "dropping the request's lines",
                   r.status().message().c_str());
      if (refused_stage == 0) {
        refused_stage = 1;
        auto types = StoredKeyTypes(ctx->store, *ref);
        if (!types.ok()) return StoreError(types.status(), "keys");
        if (DropValuesOfOtherTypes(&decoded, std::move(types).value(),
                                   code == StatusCode::kPayloadTooLarge) > 0) {
          continue;
        }
      }
      if (refused_stage == 1) {
        refused_stage = 2;
        DropLines(&decoded, false);
        continue;
      }
      if (refused_stage == 2) {
        refused_stage = 3;
        DropLines(&decoded, true);
        continue;
      }
      break;
    }
    return StoreError(r.status(), "ingest");
  }
  if (ctx->metrics && ingested) ctx->metrics->AddIngest(points, false);
  // Images of a list are named by path: those whose file was uploaded before this line was
  // stored get their blob now; the others when their upload comes (run_files.cc). Checked after
  // the commit, so that one of the two always sees the other.
  // Over the run's media budget they stay without their files: the line itself is stored.
  const bool awaits_upload = std::any_of(
      stored.media.begin(), stored.media.end(),
      [](const store::MediaPoint& m) { return m.sha256.empty() && !m.path.empty(); });
  if (awaits_upload) {
    auto a = ctx->store->AttachUploadedMedia(*ref, "", int64_t(ctx->limits.max_run_media_bytes));
    if (!a.ok() && a.status().code() == StatusCode::kPayloadTooLarge) {
      std::fprintf(stderr, "cohort: compat file_stream %s/%s/%s: images not attached: %s\n",
                   ref->entity.c_str(), ref->project.c_str(), ref->run_id.c_str(),
                   a.status().message().c_str());
    } else if (!a.ok()) {
      return StoreError(a.status(), "media");
    }
  }

  if (cw.bound()) {
    Status revive_failed;
    if (advanced) {  // new data from a writer that had ended: it is back
      auto revived = cw.Revive();
      // What its earlier process left open is resolved, as on the native join route.
      if (revived.ok() && *revived && ctx->alerts) {
        ctx->alerts->OnWriterRejoined(*ref, cw.label(), now);
      }
      if (!revived.ok()) revive_failed = revived.status();
    }
    // After the rejoin, which resolves what the writer's earlier process left open, not this
    // batch's conditions. Also when the rejoin failed: the batch is stored, and its retry, seen
    // already, would not be evaluated again.
    if (ingested && ctx->alerts) ctx->alerts->OnBatch(*ref, cw.label(), stored, stored_result, now);
    if (!revive_failed.ok()) return StoreError(revive_failed, "writer");
    if (sr.complete) {  // a writer that ends the run controls it
      if (Status s = cw.Promote(false, true); !s.ok()) return StoreError(s, "writer");
    }
  }
  // Summary: a plain client's, or the shared run's primary (workers' summaries are their own
  // and would overwrite it).
  if (decoded.summary && (!client.shared || (cw.bound() && (cw.writer().primary ||
                                                            cw.writer().update_finish_state)))) {
    if (Status s = DeleteKeysMissingFromSummary(ctx->store, *ref, client.shared, &*decoded.summary);
        !s.ok()) {
      return StoreError(s, "summary");
    }
    store::RunPatch patch;
    patch.summary_json = bj::serialize(*decoded.summary);
    if (auto p = ctx->store->PatchRun(*ref, patch); !p.ok()) {
      const StatusCode code = p.status().code();
      if (code != StatusCode::kInvalidArgument && code != StatusCode::kPayloadTooLarge) {
        return StoreError(p.status(), "summary");
      }
      // A summary the run cannot take (over its size limit): skipped, never retried for ever.
      std::fprintf(stderr, "cohort: compat file_stream %s/%s/%s: summary skipped: %s\n",
                   ref->entity.c_str(), ref->project.c_str(), ref->run_id.c_str(),
                   p.status().message().c_str());
      ++decoded.skipped;
    }
  }
  if (cw.bound()) {
    const store::WriterRecord& w = cw.writer();
    std::optional<std::pair<store::RunState, std::optional<int>>> end;
    if (sr.complete) {
      int code = int(sr.exitcode.value_or(0));
      end = std::make_pair(store::StateForExitCode(code), std::optional<int>(code));
    } else if (sr.preempting) {
      end = std::make_pair(store::RunState::kPreempted, std::optional<int>());
    } else if (client.shared && !w.primary && !w.update_finish_state &&
               UploadsConsoleLog(sr.uploaded)) {
      // A worker that never sends `complete` uploads its console log as it exits.
      end = std::make_pair(store::RunState::kFinished, std::optional<int>());
    }
    if (end && !(w.state == end->first && w.exit_code == end->second)) {
      auto f = ctx->store->FinishWriter(*ref, cw.label(), end->first, end->second, now);
      if (!f.ok()) return StoreError(f.status(), "finish");
      if (ctx->alerts) ctx->alerts->HandleWriterEnds(now);
    } else if (!end && (!ingested || w.state == store::RunState::kCrashed)) {
      // A post is a heartbeat (ingest moves the time too); one from a writer marked crashed
      // brings it back (store::WriterStore::Heartbeat).
      auto revived = ctx->store->Heartbeat(*ref, cw.label(), now);
      if (!revived.ok()) return StoreError(revived.status(), "heartbeat");
      if (*revived && ctx->alerts) ctx->alerts->OnWriterRevived(*ref, cw.label(), now);
    }
  }
  if (ctx->metrics) ctx->metrics->ObserveStore("compat_file_stream", MonoNanos() - t0);
  bj::object answer;
  decoded.skipped += unplaced;
  if (decoded.skipped > 0) answer["skipped"] = decoded.skipped;
  if (stored_result.media_refused > 0) {
    // Stored without those rows (over a media limit), as the native route says it.
    answer["media_refused"] = stored_result.media_refused;
    answer["media_refused_reason"] = stored_result.media_refused_reason;
    if (ctx->metrics) ctx->metrics->AddRejected("media_limits");
  }
  return api::JsonResponse(200, answer);
}

}  // namespace

void RegisterFileStreamRoute(http::Router& r, api::ApiContext* ctx) {
  r.Add("POST", "/files/{entity}/{project}/{run}/file_stream",
        Guarded("file_stream",
                api::Authed(ctx, [ctx](http::HttpRequest& req, const api::AuthContext& who) {
                  return HandleFileStream(ctx, req, who);
                })));
}

}  // namespace cohort::compat
