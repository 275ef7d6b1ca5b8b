#include "server/compat/client_writers.h"

#include <array>
#include <functional>

#include "core/clock.h"
#include "core/mutex.h"
#include "server/compat/wandb_lines.h"

namespace cohort::compat {

std::string ClientWriter::DefaultLabel(const ClientId& client, const store::RunRecord& run) {
  if (!client.shared) {
    return IsValidLabel(run.host) && run.host.size() <= 64 ? run.host : std::string("main");
  }
  std::string_view key = client.key;
  return "client-" + std::string(key.substr(key.size() > 8 ? key.size() - 8 : 0));
}

Status ClientWriter::Load() {
  COHORT_ASSIGN_OR_RETURN(positions_, store_->ListStreamPositions(
                                          store::RunRef{run_.entity, run_.project, run_.run_id}));
  COHORT_ASSIGN_OR_RETURN(writers_, store_->ListWriters(
                                        store::RunRef{run_.entity, run_.project, run_.run_id}));
  // The writer bound to the client. Should two servers have bound it twice at once, the
  // writer with more streams (the one with data) wins, deterministically.
  label_.clear();
  size_t best = 0;
  for (const auto& [label, streams] : positions_) {
    if (streams.count(client_.key) && streams.size() > best) {
      label_ = label;
      best = streams.size();
    }
  }
  writer_ = store::WriterRecord{};
  for (const store::WriterRecord& w : writers_) {
    if (w.label == label_) writer_ = w;
  }
  return Status::Ok();
}

int64_t ClientWriter::Position(std::string_view file) const {
  auto w = positions_.find(label_);
  if (w == positions_.end()) return 0;
  auto s = w->second.find(Stream(file));
  return s == w->second.end() ? 0 : s->second;
}

bool ClientWriter::LabelTaken(std::string_view label) const {
  for (const store::WriterRecord& w : writers_) {
    if (w.label == label) return true;
  }
  return false;
}

Status ClientWriter::Bind() {
  store::RunRef ref{run_.entity, run_.project, run_.run_id};
  std::string label = DefaultLabel(client_, run_);
  // A default label held by a writer bound to another client is not ours: disambiguate it. A
  // writer without any stream (left by an earlier attempt that joined but did not bind) is.
  bool foreign = false;
  if (LabelTaken(label)) {
    auto it = positions_.find(label);
    foreign = it != positions_.end() && !it->second.empty() && !it->second.count(client_.key);
  }
  if (foreign) label += "~" + client_.key.substr(client_.key.size() > 6 ? client_.key.size() - 6 : 0);
  store::WriterJoin join;
  join.label = label;
  join.primary = !client_.shared;
  join.update_finish_state = !client_.shared;
  join.host = run_.host;
  if (!LabelTaken(label)) {
    COHORT_RETURN_IF_ERROR(store_->JoinWriter(ref, join).status());
  }
  store::IngestBatch marker;
  marker.positions.push_back(store::StreamPosition{client_.key, 0, 1});
  auto r = store_->Ingest(ref, label, marker, NowMillis());
  // Lost a race with a concurrent first request of the same client: the binding is there.
  if (!r.ok() && r.status().code() != StatusCode::kFailedPrecondition) return r.status();
  return Load();
}

Status ClientWriter::RenameTo(std::string_view hint) {
  store::RunRef ref{run_.entity, run_.project, run_.run_id};
  std::string target(hint);
  if (LabelTaken(target)) {
    target += "~" + client_.key.substr(client_.key.size() > 6 ? client_.key.size() - 6 : 0);
    if (LabelTaken(target)) return Status::Ok();
  }
  auto renamed = store_->RenameWriter(ref, label_, target);
  if (!renamed.ok() && renamed.status().code() != StatusCode::kAlreadyExists &&
      renamed.status().code() != StatusCode::kNotFound) {
    return renamed.status();
  }
  return Load();  // a concurrent rename may have won: take what the store says
}

namespace {

// Binding and renaming of one client are serialised within the process, so that concurrent
// first requests of a client (its GraphQL and file_stream goroutines, retries) never bind it
// twice. Striped by (run, client).
Mutex& BindMutex(const store::RunRecord& run, const ClientId& client) {
  static std::array<Mutex, 64> stripes;
  size_t h = std::hash<std::string>{}(run.entity + "/" + run.project + "/" + run.run_id + "/" +
                                      client.key);
  return stripes[h % stripes.size()];
}

}  // namespace

Status ClientWriter::Ensure(std::string_view label_hint) {
  bool want_rename = client_.shared && !label_hint.empty() && label_hint != label_ &&
                     IsValidLabel(label_hint);
  if (bound() && !(want_rename && label_ == DefaultLabel(client_, run_))) return Status::Ok();
  MutexLock lock(&BindMutex(run_, client_));
  COHORT_RETURN_IF_ERROR(Load());  // what other requests did before we held the lock
  if (!bound()) COHORT_RETURN_IF_ERROR(Bind());
  if (!bound()) return Status::Unavailable("could not bind client '" + client_.key + "'");
  if (client_.shared && !label_hint.empty() && label_hint != label_ &&
      IsValidLabel(label_hint) && label_ == DefaultLabel(client_, run_)) {
    COHORT_RETURN_IF_ERROR(RenameTo(label_hint));
  }
  return Status::Ok();
}

Result<bool> ClientWriter::Rejoin(bool primary, bool update_finish_state, bool only_if_ended) {
  // Under the client's lock and on fresh state: joining a label that a concurrent request has
  // just renamed would create a stray writer.
  MutexLock lock(&BindMutex(run_, client_));
  COHORT_RETURN_IF_ERROR(Load());
  if (!bound()) return Status::FailedPrecondition("client is not bound to a writer");
  if (only_if_ended && !store::IsTerminal(writer_.state)) return false;
  store::WriterJoin join;
  join.label = label_;
  join.primary = primary || writer_.primary;  // flags are only ever raised
  join.update_finish_state = update_finish_state || writer_.update_finish_state;
  join.host = writer_.host;
  join.pid = writer_.pid;
  join.gpu_ids = writer_.gpu_ids;
  COHORT_ASSIGN_OR_RETURN(writer_, store_->JoinWriter(
                                       store::RunRef{run_.entity, run_.project, run_.run_id},
                                       join));
  return true;
}

Status ClientWriter::Promote(bool primary, bool update_finish_state) {
  if (bound() && (!primary || writer_.primary) &&
      (!update_finish_state || writer_.update_finish_state)) {
    return Status::Ok();
  }
  return Rejoin(primary, update_finish_state, /*only_if_ended=*/false).status();
}

Result<bool> ClientWriter::Revive() {
  if (!bound() || !store::IsTerminal(writer_.state)) return false;
  return Rejoin(false, false, /*only_if_ended=*/true);
}

}  // namespace cohort::compat
