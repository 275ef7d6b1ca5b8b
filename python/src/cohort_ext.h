// Internal to the extension module (python/src): what its source files share. The handle
// behind cohort.Run, the Python exception of a status, and the artifact and media-row
// functions (cohort_ext_artifacts.cc) and the run's field functions (cohort_ext_fields.cc) that
// cohort_ext.cc binds.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::pyext {

namespace nb = nanobind;

// The handle behind cohort.Run: a cohort::Run plus what Python needs to know about it.
struct PyRun {
  cohort::Run run;  // default: disabled (every call a no-op)
  bool finished = false;
  int owner_pid = 0;              // the process that created (or unpickled) it
  bool warned_past_step = false;  // a log at a step below the current one was reported
  // Media values dropped with their call (a step below the current one): run.dropped counts
  // them with the scalars the client library dropped.
  std::atomic<int64_t> media_dropped{0};
};

// The exception type registered for `code` (GIL held).
PyObject* ErrorTypeFor(cohort::StatusCode code);
// Raises the Python exception registered for `status` (GIL held).
[[noreturn]] void Raise(const cohort::Status& status, std::string_view context);

// An ArtifactVersion as a dict (the Python SDK's Artifact reads it).
nb::dict ArtifactDict(const cohort::ArtifactVersion& v);
std::string LogArtifactIntent(PyRun& self, std::string_view json);
// One key's media set at `step` (rows: (sha256, size, mime, width, height, duration_ms,
// caption, cell_bytes)) after its blobs were handed over.
void LogMediaRows(PyRun& self, const std::string& key, const std::string& type, int64_t step,
                  const std::vector<std::tuple<std::string, int64_t, std::string, int64_t, int64_t,
                                               int64_t, std::string, int64_t>>& rows);
nb::dict ArtifactState(PyRun& self, const std::string& id);

// Run's fields and summary (cohort_ext_fields.cc). RequireOpen raises the package's error for
// kFailedPrecondition ("<what>: this run is finished") when the run is finished.
void RequireOpen(const PyRun& self, std::string_view what);
void UpdateJson(PyRun& self, std::string_view json, bool summary);
void SetField(PyRun& self, std::string_view field, std::string_view value);
void SetTags(PyRun& self, const std::vector<std::string>& tags);
void RunAlert(PyRun& self, std::string_view title, std::string_view text, std::string_view level,
              double wait_duration_s);
// The last logged value of each key whose last write was a log (Run::LastLoggedValues).
nb::dict LastLogged(PyRun& self);
nb::dict WaitArtifact(PyRun& self, const std::string& id, double timeout_s);

}  // namespace cohort::pyext
