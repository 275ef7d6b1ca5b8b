// Run's artifact and media-row functions of the extension module (cohort_ext.h).
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <optional>

#include "cohort_ext.h"

namespace cohort::pyext {

nb::dict ArtifactDict(const cohort::ArtifactVersion& v) {
  nb::dict d;
  d["id"] = v.id;
  d["state"] = v.state;
  d["name"] = v.name;
  d["version"] = v.version;
  d["digest"] = v.digest;
  d["size"] = v.size;
  d["created"] = v.created;
  d["files_done"] = v.files_done;
  d["files_total"] = v.files_total;
  d["bytes_done"] = v.bytes_done;
  d["bytes_total"] = v.bytes_total;
  d["parts_uploaded"] = v.parts_uploaded;
  d["error"] = v.error;
  return d;
}

std::string LogArtifactIntent(PyRun& self, std::string_view json) {
  if (self.finished) {
    PyErr_SetString(ErrorTypeFor(cohort::StatusCode::kFailedPrecondition),
                    "log_artifact: this run is finished");
    throw nb::python_error();
  }
  auto id = self.run.LogArtifactIntent(json);
  if (!id.ok()) Raise(id.status(), "log_artifact");
  return *id;
}

void LogMediaRows(PyRun& self, const std::string& key, const std::string& type, int64_t step,
                  const std::vector<std::tuple<std::string, int64_t, std::string, int64_t, int64_t,
                                               int64_t, std::string, int64_t>>& rows) {
  std::vector<cohort::MediaValue> set(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& v = set[i];
    std::tie(v.sha256, v.size, v.mime, v.width, v.height, v.duration_ms, v.caption, v.cell_bytes) =
        rows[i];
  }
  cohort::Status st = self.run.LogMedia(key, type, step, set);
  if (!st.ok()) Raise(st, "log");
}

nb::dict ArtifactState(PyRun& self, const std::string& id) {
  std::optional<cohort::Result<cohort::ArtifactVersion>> r;
  {
    nb::gil_scoped_release release;
    r.emplace(self.run.ArtifactState(id));
  }
  if (!r->ok()) Raise(r->status(), "artifact");
  return ArtifactDict(r->value());
}

nb::dict WaitArtifact(PyRun& self, const std::string& id, double timeout_s) {
  std::optional<cohort::Result<cohort::ArtifactVersion>> r;
  {
    nb::gil_scoped_release release;
    r.emplace(self.run.WaitArtifact(id, timeout_s));
  }
  if (!r->ok()) Raise(r->status(), "artifact");
  return ArtifactDict(r->value());
}

}  // namespace cohort::pyext
