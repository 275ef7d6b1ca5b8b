// Run's field and summary functions of the extension module (cohort_ext.h): config and
// summary updates, run.name & co., run.alert, and the last logged values run.summary reads.
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cohort_ext.h"

namespace cohort::pyext {

// Raises the package's error for kFailedPrecondition ("<what>: this run is finished") when the
// run is finished: what changes a run needs it open.
void RequireOpen(const PyRun& self, std::string_view what) {
  if (!self.finished) return;
  // Built here: PyErr_Format has no "%.*s" (the message was that format string itself).
  const std::string message = std::string(what) + ": this run is finished";
  PyErr_SetString(ErrorTypeFor(cohort::StatusCode::kFailedPrecondition), message.c_str());
  throw nb::python_error();
}

void UpdateJson(PyRun& self, std::string_view json, bool summary) {
  RequireOpen(self, summary ? "summary" : "config");
  cohort::Status st = summary ? self.run.UpdateSummary(json) : self.run.UpdateConfig(json);
  if (!st.ok()) Raise(st, summary ? "summary" : "config");
}

// run.name / group / job_type / notes / tags = ... (Run::SetName & co.).
void SetField(PyRun& self, std::string_view field, std::string_view value) {
  RequireOpen(self, field);
  cohort::Status st;
  if (field == "name") {
    st = self.run.SetName(value);
  } else if (field == "group") {
    st = self.run.SetGroup(value);
  } else if (field == "job_type") {
    st = self.run.SetJobType(value);
  } else if (field == "notes") {
    st = self.run.SetNotes(value);
  } else {
    st = cohort::Status::InvalidArgument("no such run field");
  }
  if (!st.ok()) Raise(st, "run");
}

void SetTags(PyRun& self, const std::vector<std::string>& tags) {
  RequireOpen(self, "tags");
  cohort::Status st = self.run.SetTags(tags);
  if (!st.ok()) Raise(st, "run");
}

// run.alert (cohort/_run.py normalised the level and the wait to "INFO"/"WARN"/"ERROR" and
// seconds): Run::Alert.
void RunAlert(PyRun& self, std::string_view title, std::string_view text, std::string_view level,
              double wait_duration_s) {
  RequireOpen(self, "alert");
  cohort::Status st = self.run.Alert(title, text, level, wait_duration_s);
  if (!st.ok()) Raise(st, "run.alert");
}

nb::dict LastLogged(PyRun& self) {
  // run.summary's reads (cohort/_synced.py): Run::LastLoggedValues, under the run's lock (which
  // the flush thread takes too: not with the GIL held).
  std::map<std::string, double> values;
  {
    nb::gil_scoped_release release;
    values = self.run.LastLoggedValues();
  }
  nb::dict out;
  for (const auto& [key, value] : values) {
    out[nb::str(key.data(), key.size())] = nb::float_(value);
  }
  return out;
}

}  // namespace cohort::pyext
