#include "store/run_ref.h"

#include "core/ids.h"

namespace cohort::store {

std::string RunName(const RunRef& ref) { return ref.entity + "/" + ref.project + "/" + ref.run_id; }

Status RunNotFound(const RunRef& ref) {
  return Status::NotFound("run '" + RunName(ref) + "' not found");
}

Status WriterNotFound(const RunRef& ref, const std::string& label) {
  return Status::NotFound("writer '" + label + "' of run '" + RunName(ref) + "' not found");
}

Status ValidateRunRef(const RunRef& ref, bool allow_empty_id) {
  if (ref.entity.empty()) return Status::InvalidArgument("run: entity is empty");
  if (ref.project.empty()) return Status::InvalidArgument("run: project is empty");
  if (ref.run_id.empty() && allow_empty_id) return Status::Ok();
  if (!ids::IsValidId(ref.run_id)) {
    return Status::InvalidArgument("run: id '" + ref.run_id +
                                   "' is not 1-64 characters of [A-Za-z0-9_.-]");
  }
  return Status::Ok();
}

}  // namespace cohort::store
