// Run::Impl's summary (docs/api.md, "Summary"): the last logged value of each key, the keys the
// user set, and the updates that carry them to the agent.
#include <boost/json/serialize.hpp>
#include <cmath>

#include "agent/agent_log.h"
#include "agent/socket_io.h"
#include "client/run_impl.h"

namespace cohort {

namespace bj = boost::json;

Status Run::Impl::EnqueueSummary(bj::object summary) {
  if (finished.load()) return Status::FailedPrecondition("run already finished");
  // A worker of a shared run keeps what it sets (its reads see it) and sends nothing: the run's
  // summary is its primary's, which a worker's later write would otherwise overwrite.
  const Settings& s = rs.settings;
  const bool sends = !s.shared || s.primary.value_or(true);
  {
    MutexLock lock(&mu);
    DrainBufferLocked();  // what was logged before the update goes first
    for (const auto& kv : summary) {
      // Set now: the value set wins until the key is logged again (NoteLastValuesLocked).
      const std::string key(kv.key());
      summary_dirty.erase(key);
      last_values.erase(key);
    }
    if (!sends) {
      if (!worker_summary_warned) {
        worker_summary_warned = true;
        agent::Logf(agent::LogLevel::kWarning,
                    "cohort: run {}: summary values set by writer {} stay in this process: it is "
                    "a worker of a shared run, whose summary is the primary's",
                    rs.settings.run_id, rs.settings.label);
      }
      return Status::Ok();
    }
    bj::object body;
    body["summary"] = std::move(summary);
    PendingFrame f{next_frame++, agent::MessageType::kUpdate, bj::serialize(body)};
    frame_bytes += f.body.size();
    frames.push_back(std::move(f));
  }
  RequestFlush();
  return Status::Ok();
}

std::map<std::string, double> Run::Impl::LastLoggedValues() {
  MutexLock lock(&mu);
  DrainBufferLocked();  // what Log buffered counts as logged
  return std::map<std::string, double>(last_values.begin(), last_values.end());
}

void Run::Impl::NoteLastValuesLocked(const batch::Batch& batch) {
  // The last cell of each key in the batch (cells are in logging order), then one map write
  // per distinct key. A key set through EnqueueSummary before is logged again: the last write
  // wins, so its logged value is the summary's again (and is sent as such).
  last_cell_of_key.assign(batch.keys.size(), UINT32_MAX);
  for (uint32_t i = 0; i < batch.cells.size(); ++i) last_cell_of_key[batch.cells[i].key] = i;
  for (size_t k = 0; k < batch.keys.size(); ++k) {
    if (last_cell_of_key[k] == UINT32_MAX) continue;
    const double value = batch.cells[last_cell_of_key[k]].value;
    last_values[batch.keys[k]] = value;
    if (auto_summary) summary_dirty[batch.keys[k]] = value;
  }
}

void Run::Impl::EnqueueLastValuesLocked() {
  bj::object values;
  for (const auto& [key, value] : summary_dirty) {
    // JSON has no NaN or infinities (and null would delete the key): they go as the strings
    // the vendor's SDK shows, so that a diverged run does not show its last finite value.
    if (std::isfinite(value)) {
      values[key] = value;
    } else if (std::isnan(value)) {
      values[key] = "NaN";
    } else {
      values[key] = value > 0 ? "Infinity" : "-Infinity";
    }
  }
  summary_dirty.clear();
  summary_sent_ms = agent::MonoMillis();
  if (values.empty()) return;
  bj::object body;
  body["summary"] = std::move(values);
  PendingFrame f{next_frame++, agent::MessageType::kUpdate, bj::serialize(body)};
  frame_bytes += f.body.size();
  frames.push_back(std::move(f));
}

}  // namespace cohort
