#include "store/run_update.h"

#include "store/record_json.h"
#include "store/run_state.h"

namespace cohort::store {

Status ApplyRunUpsert(const RunUpsert& upsert, const std::string& metadata, RunRecord* run) {
  if (upsert.name) run->name = *upsert.name;
  if (upsert.group) run->group = *upsert.group;
  if (upsert.job_type) run->job_type = *upsert.job_type;
  if (upsert.notes) run->notes = *upsert.notes;
  if (upsert.host) run->host = *upsert.host;
  if (upsert.tags) run->tags = *upsert.tags;
  if (upsert.config_json) {
    COHORT_ASSIGN_OR_RETURN(run->config_json, MergeJsonObject(run->config_json, *upsert.config_json,
                                                              "config", PatchNull::kIsValue));
  }
  if (upsert.metadata_json) run->metadata_json = metadata;
  return Status::Ok();
}

Status ApplyRunPatch(const RunPatch& patch, RunRecord* run) {
  if (patch.name) run->name = *patch.name;
  if (patch.group) run->group = *patch.group;
  if (patch.job_type) run->job_type = *patch.job_type;
  if (patch.notes) run->notes = *patch.notes;
  if (patch.tags) run->tags = *patch.tags;
  if (patch.config_json || !patch.config_unset.empty()) {
    COHORT_ASSIGN_OR_RETURN(run->config_json,
                            MergeJsonObject(run->config_json, patch.config_json.value_or("{}"),
                                            "config", PatchNull::kIsValue, patch.config_unset));
  }
  if (patch.summary_json) {
    COHORT_ASSIGN_OR_RETURN(run->summary_json,
                            MergeJsonObject(run->summary_json, *patch.summary_json, "summary"));
  }
  return Status::Ok();
}

void RederiveRunState(const std::vector<WriterRecord>& writers, RunRecord* run) {
  const DerivedRunState derived = DeriveRunState(writers, run->state);
  run->state = derived.state;
  if (!IsTerminal(derived.state)) {
    run->exit_code.reset();
    run->finished_ms.reset();
  } else if (derived.finished_ms) {  // a controlling writer ended the run
    run->exit_code = derived.exit_code;
    run->finished_ms = derived.finished_ms;
  }
}

}  // namespace cohort::store
