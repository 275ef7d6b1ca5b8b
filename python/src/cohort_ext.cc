// cohort._cohort: the nanobind extension under the Python package `cohort`.
//
// It binds cohort::Settings and a Run handle over cohort::Run (include/cohort/cohort.h). The
// Python package subclasses the Run handle (cohort.Run), so `run.log(...)` dispatches straight
// to the C++ method below: no Python frame between the user's call and the client library.
//
// Run.log converts a dict to cohort::Values in one pass over the dict (PyDict_Next), reusing a
// thread-local vector whose strings keep their capacity, so a steady training loop allocates
// nothing. Python floats and ints (and their subclasses: numpy.float64, bool) are read inline;
// nested dicts are flattened as "a/b"; anything else goes to a Python converter registered by the
// package (numpy scalars, 0-d arrays and tensors), which returns a float or a dict, or raises the
// TypeError naming the key. A call that raises logs nothing.
//
// Blocking calls (init, finish, setup) release the GIL; log does not (it never blocks on I/O).
//
// Only the limited C API is used where a build targets the stable ABI (Python >= 3.12 with
// nanobind's STABLE_ABI, see python/CMakeLists.txt): the macros below pick the function forms.
#include "cohort_ext.h"

#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cohort/cohort.h"
#include "core/crc32c.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "core/thread_signals.h"
#include "core/version.h"

#ifdef Py_LIMITED_API
#define COHORT_FLOAT_VALUE(o) PyFloat_AsDouble(o)
#else
#define COHORT_FLOAT_VALUE(o) PyFloat_AS_DOUBLE(o)
#endif

namespace {

// The name of o's type, for error messages (PyTypeObject is opaque in the limited API).
std::string TypeName(PyObject* o) {
#ifdef Py_LIMITED_API
  PyObject* name = PyType_GetName(Py_TYPE(o));
  if (name == nullptr) {
    PyErr_Clear();
    return "?";
  }
  Py_ssize_t n = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &n);
  std::string out = text != nullptr ? std::string(text, size_t(n)) : "?";
  Py_DECREF(name);
  return out;
#else
  return Py_TYPE(o)->tp_name;
#endif
}

}  // namespace

namespace nb = nanobind;
using namespace nb::literals;

namespace {

constexpr size_t kMaxKeyBytes = cohort::limits::kMaxKeyBytes;
constexpr int kMaxDepth = 32;  // nested dicts in one log call

// Python objects the package registers at import (module state; never freed).
PyObject* g_converter = nullptr;    // converter(key: str, value) -> float | dict
// media_sink(run, key: str, media_set, step: int): hands one key's media set of a log call to
// the package's encoding worker (cohort/media.py); media sets are what the converter returns
// for cohort.Image & co. (objects with a `_cohort_media_type` str attribute).
PyObject* g_media_sink = nullptr;
PyObject* g_error_types = nullptr;  // dict: status code name -> exception type
PyObject* g_default_error = nullptr;

}  // namespace

namespace cohort::pyext {

PyObject* ErrorTypeFor(cohort::StatusCode code) {
  if (g_error_types != nullptr) {
    std::string name(cohort::StatusCodeName(code));
    PyObject* t = PyDict_GetItemString(g_error_types, name.c_str());  // borrowed
    if (t != nullptr) return t;
    t = PyDict_GetItemString(g_error_types, "default");
    if (t != nullptr) return t;
  }
  return g_default_error != nullptr ? g_default_error : PyExc_RuntimeError;
}

// Raises the Python exception registered for `status` (GIL held).
[[noreturn]] void Raise(const cohort::Status& status, std::string_view context) {
  std::string message(context);
  message += ": ";
  message += status.message().empty() ? std::string(cohort::StatusCodeName(status.code()))
                                      : status.message();
  PyObject* type = ErrorTypeFor(status.code());
  PyObject* text = PyUnicode_FromStringAndSize(message.data(), Py_ssize_t(message.size()));
  if (text == nullptr) throw nb::python_error();
  PyObject* exc = PyObject_CallFunctionObjArgs(type, text, nullptr);
  Py_DECREF(text);
  if (exc == nullptr) throw nb::python_error();
  std::string code(cohort::StatusCodeName(status.code()));
  PyObject* code_obj = PyUnicode_FromStringAndSize(code.data(), Py_ssize_t(code.size()));
  if (code_obj != nullptr) {
    (void)PyObject_SetAttrString(exc, "code", code_obj);
    Py_DECREF(code_obj);
  }
  PyErr_Clear();
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  throw nb::python_error();
}

}  // namespace cohort::pyext

namespace {

using cohort::pyext::ArtifactState;
using cohort::pyext::ErrorTypeFor;
using cohort::pyext::LastLogged;
using cohort::pyext::LogArtifactIntent;
using cohort::pyext::LogMediaRows;
using cohort::pyext::PyRun;
using cohort::pyext::Raise;
using cohort::pyext::RequireOpen;
using cohort::pyext::RunAlert;
using cohort::pyext::SetField;
using cohort::pyext::SetTags;
using cohort::pyext::UpdateJson;
using cohort::pyext::WaitArtifact;

// Per-thread conversion buffer of Run.log. `values` keeps its strings between calls, and a
// slot already holding the right key (a training loop logs the same keys every step) is not
// rewritten.
struct LogScratch {
  cohort::Values values;
  size_t n = 0;
  cohort::Histograms histograms;  // the first nh are this call's
  size_t nh = 0;
  std::vector<std::pair<std::string, PyObject*>> media;  // owned references; this call's
  std::string prefix;  // "a/b/" inside nested dicts, else empty
  bool busy = false;
};

LogScratch& ThreadScratch() {
  thread_local LogScratch scratch;
  return scratch;
}

std::string FullKey(const LogScratch& s, const char* k, size_t kl) {
  std::string key = s.prefix;
  key.append(k, kl);
  return key;
}

void SetKeyError(PyObject* type, const std::string& key, const char* what) {
  PyErr_Format(type, "log: key '%s': %s", key.c_str(), what);
}

inline bool SameBytes(const std::string& a, size_t offset, const char* b, size_t n) {
  return n == 0 || std::memcmp(a.data() + offset, b, n) == 0;
}

// Adds (prefix + key, v). False with a Python error set (ValueError naming the key) for a key
// that breaks the key rule (core/metric_key.h): the server would refuse it, and it must be
// refused here, before the agent acknowledges the batch it would be in.
inline bool AppendScalar(LogScratch& s, const char* k, size_t kl, double v) {
  const size_t pl = s.prefix.size();
  if (kl == 0 || pl + kl > kMaxKeyBytes) [[unlikely]] {
    static_assert(kMaxKeyBytes == 256, "the message names the limit");
    SetKeyError(PyExc_ValueError, FullKey(s, k, kl),
                kl == 0 ? "keys must not be empty" : "keys must be at most 256 bytes (UTF-8)");
    return false;
  }
  if (s.n == s.values.size()) s.values.emplace_back();
  auto& slot = s.values[s.n];
  std::string& dst = slot.first;
  // A slot holding this key already holds a key that passed the rule: a training loop that
  // logs the same keys every step checks each key once.
  if (dst.size() != pl + kl || !SameBytes(dst, pl, k, kl) ||
      !SameBytes(dst, 0, s.prefix.data(), pl)) {
    std::string key = FullKey(s, k, kl);
    if (std::string_view why = cohort::InvalidKeyReason(key); !why.empty()) [[unlikely]] {
      SetKeyError(PyExc_ValueError, key, std::string(why).c_str());
      return false;
    }
    dst.swap(key);
  }
  ++s.n;
  slot.second = v;
  return true;
}

bool CollectDict(LogScratch& s, PyObject* dict, int depth);

// Reads `n` float64 values (native byte order) from a bytes object.
bool ReadDoubles(PyObject* bytes, std::vector<double>* out, const std::string& key) {
  char* data = nullptr;
  Py_ssize_t len = 0;
  if (!PyBytes_Check(bytes) || PyBytes_AsStringAndSize(bytes, &data, &len) != 0 || len % 8 != 0) {
    PyErr_Clear();
    SetKeyError(PyExc_TypeError, key, "histogram: counts and edges must be float64 bytes");
    return false;
  }
  out->resize(size_t(len) / 8);
  if (len > 0) std::memcpy(out->data(), data, size_t(len));
  return true;
}

// A histogram from the converter: (lo: float, hi: float, counts: bytes, edges: bytes | None),
// counts and edges float64 in native byte order (cohort.Histogram).
bool AppendHistogram(LogScratch& s, const std::string& key, PyObject* t) {
  // PyTuple_Size/GetItem, not the _GET_ macros: the cp312-abi3 wheel uses the limited API.
  if (!PyTuple_Check(t) || PyTuple_Size(t) != 4) {
    SetKeyError(PyExc_TypeError, key, "histogram: the converter must return a 4-tuple");
    return false;
  }
  if (s.nh == s.histograms.size()) s.histograms.emplace_back();
  auto& [k, h] = s.histograms[s.nh];
  k = key;
  h.lo = PyFloat_AsDouble(PyTuple_GetItem(t, 0));
  h.hi = PyFloat_AsDouble(PyTuple_GetItem(t, 1));
  if (PyErr_Occurred()) return false;
  if (!ReadDoubles(PyTuple_GetItem(t, 2), &h.counts, key)) return false;
  PyObject* edges = PyTuple_GetItem(t, 3);
  if (edges == Py_None) {
    h.edges.clear();
  } else if (!ReadDoubles(edges, &h.edges, key)) {
    return false;
  }
  ++s.nh;
  return true;
}

// Recurses into `dict` under prefix + key + "/".
bool CollectNested(LogScratch& s, const char* k, size_t kl, PyObject* dict, int depth) {
  if (depth >= kMaxDepth) {
    SetKeyError(PyExc_ValueError, FullKey(s, k, kl), "dicts nested too deeply");
    return false;
  }
  const size_t pl = s.prefix.size();
  s.prefix.append(k, kl);
  s.prefix.push_back('/');
  bool ok = CollectDict(s, dict, depth + 1);
  s.prefix.resize(pl);
  return ok;
}

// Converts one value under prefix + key; recurses into dicts. False with a Python error set.
bool CollectValue(LogScratch& s, const char* k, size_t kl, PyObject* v, int depth) {
  if (PyFloat_Check(v)) return AppendScalar(s, k, kl, COHORT_FLOAT_VALUE(v));  // numpy.float64
  if (PyLong_Check(v)) {                                                       // int, bool
    double d = PyLong_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) [[unlikely]] {
      PyErr_Clear();
      SetKeyError(PyExc_OverflowError, FullKey(s, k, kl), "int too large to log as a float");
      return false;
    }
    // From 2^53 on a double may not hold it (2^53 + 1 rounds to 2^53): the converter says so,
    // once per key, when it rounds.
    if (std::fabs(d) < 9007199254740992.0 || g_converter == nullptr) {
      return AppendScalar(s, k, kl, d);
    }
  } else if (PyDict_Check(v)) {
    return CollectNested(s, k, kl, v, depth);
  }
  // Everything else: the package's converter (numpy, tensors, other numbers, mappings).
  std::string full = FullKey(s, k, kl);
  if (g_converter == nullptr) {
    SetKeyError(PyExc_TypeError, full, "unsupported value type");
    return false;
  }
  PyObject* key = PyUnicode_DecodeUTF8(full.data(), Py_ssize_t(full.size()), "surrogatepass");
  if (key == nullptr) return false;
  PyObject* r = PyObject_CallFunctionObjArgs(g_converter, key, v, nullptr);
  Py_DECREF(key);
  if (r == nullptr) return false;
  bool ok;
  if (PyFloat_Check(r)) {
    ok = AppendScalar(s, k, kl, COHORT_FLOAT_VALUE(r));
  } else if (PyTuple_Check(r)) {
    ok = AppendHistogram(s, full, r);
  } else if (PyDict_Check(r)) {
    ok = CollectNested(s, k, kl, r, depth);  // `r` stays alive (owned here) during the recursion
  } else if (PyObject_HasAttrString(r, "_cohort_media_type")) {
    s.media.emplace_back(std::move(full), r);  // the reference moves into the scratch
    return true;
  } else {
    SetKeyError(PyExc_TypeError, full,
                "the value converter returned neither float, histogram tuple nor dict");
    ok = false;
  }
  Py_DECREF(r);
  return ok;
}

bool CollectDict(LogScratch& s, PyObject* dict, int depth) {
  PyObject* k;
  PyObject* v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    if (!PyUnicode_Check(k)) [[unlikely]] {
      PyErr_Format(PyExc_TypeError, "log: keys must be str, got %.100s %R%s%s", TypeName(k).c_str(),
                   k, s.prefix.empty() ? "" : " under ", s.prefix.c_str());
      return false;
    }
    Py_ssize_t len = 0;
    const char* p = PyUnicode_AsUTF8AndSize(k, &len);
    if (p == nullptr) return false;
    if (!CollectValue(s, p, size_t(len), v, depth)) return false;
  }
  return true;
}

// Claims the media keys of a call (a key has one type: cohort::Run::ClaimMediaKey), and the keys
// of its histograms still being computed (`_cohort_media_type` "histogram": ClaimHistogramKey),
// before anything of the call is logged. False with a Python error set.
bool ClaimMedia(PyRun& self, const LogScratch& s,
                const std::vector<std::pair<std::string, nb::object>>& media) {
  // Every set is checked before any key is claimed: a claim fixes the key's type for the run,
  // and a call refused for its limits logs nothing, claims included.
  std::vector<std::string> types;
  for (const auto& [key, obj] : media) {
    PyObject* t = PyObject_GetAttrString(obj.ptr(), "_cohort_media_type");
    if (t == nullptr) return false;
    Py_ssize_t len = 0;
    const char* type = PyUnicode_Check(t) ? PyUnicode_AsUTF8AndSize(t, &len) : nullptr;
    std::string type_name = type != nullptr ? std::string(type, size_t(len)) : std::string();
    Py_DECREF(t);
    if (type == nullptr) {
      PyErr_Clear();
      SetKeyError(PyExc_TypeError, key, "media: _cohort_media_type must be a str");
      return false;
    }
    for (size_t i = 0; i < s.n; ++i) {
      if (s.values[i].first == key) {
        SetKeyError(PyExc_ValueError, key, ("logged as a scalar and as " + type_name +
                                            " in one call (a key has one type)").c_str());
        return false;
      }
    }
    for (size_t i = 0; i < s.nh; ++i) {
      if (s.histograms[i].first == key) {
        SetKeyError(PyExc_ValueError, key, ("logged as a histogram and as " + type_name +
                                            " in one call (a key has one type)").c_str());
        return false;
      }
    }
    if (type_name == "histogram") {  // a histogram computed off this thread (cohort.Histogram)
      types.push_back(std::move(type_name));
      continue;
    }
    // (count, largest file known now or -1): media._MediaSet.sizes, checked against the
    // server's limits (Run::CheckMediaSet).
    long long sizes[2] = {0, -1};
    PyObject* t2 = PyObject_GetAttrString(obj.ptr(), "sizes");
    bool read = t2 != nullptr && PyTuple_Check(t2) && PyTuple_Size(t2) == 2;
    for (Py_ssize_t i = 0; read && i < 2; ++i) {
      sizes[i] = PyLong_AsLongLong(PyTuple_GetItem(t2, i));
      read = !(sizes[i] == -1 && PyErr_Occurred());
    }
    Py_XDECREF(t2);
    if (!read) {
      PyErr_Clear();
      SetKeyError(PyExc_TypeError, key, "media: sizes must be (count, largest file bytes)");
      return false;
    }
    cohort::Status st = self.run.CheckMediaSet(key, sizes[0], sizes[1]);
    if (!st.ok()) {  // the type the histogram path raises (cohort.UsageError, a ValueError)
      PyErr_SetString(ErrorTypeFor(st.code()), ("log: " + st.message()).c_str());
      return false;
    }
    types.push_back(std::move(type_name));
  }
  for (size_t i = 0; i < media.size(); ++i) {
    cohort::Status st = types[i] == "histogram" ? self.run.ClaimHistogramKey(media[i].first)
                                                : self.run.ClaimMediaKey(media[i].first, types[i]);
    if (!st.ok()) {
      PyErr_SetString(ErrorTypeFor(st.code()), ("log: " + st.message()).c_str());
      return false;
    }
  }
  return true;
}

// Hands the call's media sets to the package's worker (media_sink), which encodes and hashes
// them off this thread and logs their rows at `step`.
void HandMedia(PyRun& self, const std::vector<std::pair<std::string, nb::object>>& media,
               int64_t step) {
  if (g_media_sink == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "log: media given but no media worker is registered");
    throw nb::python_error();
  }
  nb::object run = nb::find(&self);
  for (const auto& [key, obj] : media) {
    nb::str k(key.data(), key.size());
    nb::object step_obj = nb::int_(step);
    PyObject* r = PyObject_CallFunctionObjArgs(g_media_sink, run.ptr(), k.ptr(), obj.ptr(),
                                               step_obj.ptr(), nullptr);
    if (r == nullptr) throw nb::python_error();
    Py_DECREF(r);
  }
}

// The hot path: run.log(data, step=None, commit=None).
void RunLog(PyRun& self, nb::handle data, nb::handle step, nb::handle commit) {
  PyObject* d = data.ptr();
  nb::object holder;  // a dict made from a non-dict mapping
  if (!PyDict_Check(d)) {
    if (d == Py_None || !PyObject_HasAttrString(d, "keys")) {
      PyErr_Format(PyExc_TypeError, "log: expected a dict of key -> value, got %.100s",
                   TypeName(d).c_str());
      throw nb::python_error();
    }
    PyObject* copy = PyDict_New();
    if (copy == nullptr || PyDict_Update(copy, d) != 0) {
      Py_XDECREF(copy);
      throw nb::python_error();
    }
    holder = nb::steal(copy);
    d = copy;
  }
  std::optional<int64_t> step_value;
  if (!step.is_none()) {
    if (PyBool_Check(step.ptr())) {
      PyErr_SetString(PyExc_TypeError, "log: step must be an int, got bool");
      throw nb::python_error();
    }
    PyObject* index = PyNumber_Index(step.ptr());  // int, numpy integers
    if (index == nullptr) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "log: step must be an int, got %.100s",
                   TypeName(step.ptr()).c_str());
      throw nb::python_error();
    }
    long long v = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    if (v < 0) {
      PyErr_SetString(PyExc_ValueError, "log: step must be >= 0");
      throw nb::python_error();
    }
    step_value = int64_t(v);
  }
  // As in the seed's SDK: with an explicit step, commit defaults to false, so that more calls at
  // that step merge into its row; the step moves on when a higher one is logged (or commit).
  bool do_commit = step.is_none();
  if (!commit.is_none()) {
    int t = PyObject_IsTrue(commit.ptr());
    if (t < 0) throw nb::python_error();
    do_commit = t != 0;
  }
  if (self.finished) {
    PyObject* type = ErrorTypeFor(cohort::StatusCode::kFailedPrecondition);
    PyErr_SetString(type, "log: this run is finished; call cohort.init() to start a new one");
    throw nb::python_error();
  }

  LogScratch local;
  LogScratch& shared = ThreadScratch();
  LogScratch& s = shared.busy ? local : shared;  // a converter that logs (re-entrant call)
  s.busy = true;
  s.n = 0;
  s.nh = 0;
  s.prefix.clear();
  bool ok = CollectDict(s, d, 0);
  int64_t current = 0;
  cohort::Status logged;
  // The media of the call (owned here until handed to the sink).
  std::vector<std::pair<std::string, nb::object>> media;
  media.reserve(s.media.size());
  for (auto& [key, obj] : s.media) media.emplace_back(std::move(key), nb::steal(obj));
  s.media.clear();
  if (ok && !media.empty()) {
    ok = ClaimMedia(self, s, media);
  }
  if (ok) {
    if (s.values.size() != s.n) s.values.resize(s.n);
    if (s.histograms.size() != s.nh) s.histograms.resize(s.nh);
    if (step_value || !media.empty()) current = self.run.step();
    logged = self.run.Log(s.values, s.histograms, step_value, do_commit);
  }
  s.busy = false;
  if (!ok) throw nb::python_error();
  if (!logged.ok()) Raise(logged, "log");
  if (!media.empty()) {
    if (step_value && *step_value < current) {
      int64_t values = 0;  // a key's media set (media._MediaSet) is one value per item
      for (const auto& [key, obj] : media) {
        PyObject* items = PyObject_GetAttrString(obj.ptr(), "items");
        const Py_ssize_t n = items != nullptr ? PyObject_Length(items) : -1;
        Py_XDECREF(items);
        if (n < 0) PyErr_Clear();
        values += n < 0 ? 1 : int64_t(n);
      }
      self.media_dropped.fetch_add(values, std::memory_order_relaxed);
    } else {
      HandMedia(self, media, step_value.value_or(current));
    }
  }
  if (step_value && *step_value < current && !self.warned_past_step) {
    // Once per run, as the seed's SDK does; run.dropped counts every value dropped.
    self.warned_past_step = true;
    if (PyErr_WarnFormat(PyExc_UserWarning, 1,
                         "cohort: log at step %lld, below the run's current step %lld: dropped "
                         "(steps only increase; run.dropped counts the values dropped)",
                         static_cast<long long>(*step_value),
                         static_cast<long long>(current)) != 0) {
      throw nb::python_error();
    }
  }
}

std::optional<std::string> RunFinish(PyRun& self, int exit_code, std::string_view state) {
  self.finished = true;
  cohort::Status st;
  {
    nb::gil_scoped_release release;
    st = self.run.Finish(exit_code, state);
  }
  if (st.ok()) return std::nullopt;
  return st.ToString();
}

void InitRun(PyRun* self, const cohort::Settings& settings) {
  std::optional<cohort::Result<cohort::Run>> r;
  {
    nb::gil_scoped_release release;
    r.emplace(cohort::Init(settings));
  }
  if (!r->ok()) Raise(r->status(), "init");
  new (self) PyRun{std::move(r->value()), false, int(getpid())};
}

// Py_XSETREF without the macro (not in the limited API).
void ReplaceRef(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  *slot = value;
  Py_XDECREF(old);
}

}  // namespace

NB_MODULE(_cohort, m) {
  m.doc() = "Native core of the cohort package (C++ client library bindings).";
  m.attr("VERSION") = std::string(cohort::kVersion);  // the project version (core/version.h)
  nb::list async_signals;  // what the package's threads block (core/thread_signals.h)
  for (int sig : cohort::kAsyncSignals) async_signals.append(sig);
  m.attr("ASYNC_SIGNALS") = nb::tuple(async_signals);

  nb::class_<cohort::Settings>(m, "Settings",
                               "cohort::Settings: every field of the C++ client's init settings.")
      .def(nb::init<>())
      .def_rw("base_url", &cohort::Settings::base_url)
      .def_rw("api_key", &cohort::Settings::api_key)
      .def_rw("entity", &cohort::Settings::entity)
      .def_rw("project", &cohort::Settings::project)
      .def_rw("run_id", &cohort::Settings::run_id)
      .def_rw("name", &cohort::Settings::name)
      .def_rw("group", &cohort::Settings::group)
      .def_rw("job_type", &cohort::Settings::job_type)
      .def_rw("notes", &cohort::Settings::notes)
      .def_rw("tags", &cohort::Settings::tags)
      .def_rw("config_json", &cohort::Settings::config_json)
      .def_rw("resume", &cohort::Settings::resume)
      .def_rw("mode", &cohort::Settings::mode)
      .def_rw("dir", &cohort::Settings::dir)
      .def_rw("shared", &cohort::Settings::shared)
      .def_rw("label", &cohort::Settings::label)
      .def_rw("primary", &cohort::Settings::primary)
      .def_rw("update_finish_state", &cohort::Settings::update_finish_state)
      .def_rw("stats_gpu_device_ids", &cohort::Settings::stats_gpu_device_ids)
      .def_rw("stats_sampling_interval_s", &cohort::Settings::stats_sampling_interval_s)
      .def_rw("capture_console", &cohort::Settings::capture_console)
      .def_rw("init_timeout_s", &cohort::Settings::init_timeout_s)
      .def_rw("finish_timeout_s", &cohort::Settings::finish_timeout_s)
      .def_rw("transport", &cohort::Settings::transport)
      .def_rw("handle_sigterm", &cohort::Settings::handle_sigterm);

  nb::class_<PyRun>(m, "Run",
                    "Handle of a cohort::Run. cohort.Run subclasses it; use cohort.init().")
      .def(
          "__init__",
          [](PyRun* self) {
            new (self) PyRun{cohort::Run(), false, int(getpid())};
          },
          "A disabled run: every call is a no-op.")
      .def("__init__", &InitRun, "settings"_a,
           "Starts or joins a run (cohort::Init); returns within settings.init_timeout_s.")
      .def("log", &RunLog, "data"_a.none(), "step"_a.none() = nb::none(),
           "commit"_a.none() = nb::none(),
           "Logs a dict of key -> number at the writer's current step (or `step`); commit "
           "(default: True without `step`, False with it) then moves on to the next step.")
      .def(
          "_update_config",
          [](PyRun& self, std::string_view json) { UpdateJson(self, json, false); }, "json"_a)
      .def(
          "_update_summary",
          [](PyRun& self, std::string_view json) { UpdateJson(self, json, true); }, "json"_a)
      .def("_last_logged", &LastLogged,
           "The last logged value of each key whose last write was a log, not a summary "
           "assignment after it (Run::LastLoggedValues).")
      .def(
          "_remove_config",
          [](PyRun& self, const std::vector<std::string>& keys) {
            RequireOpen(self, "config");
            cohort::Status st = self.run.RemoveConfigKeys(keys);
            if (!st.ok()) Raise(st, "config");
          },
          "keys"_a)
      .def("_set_field", &SetField, "field"_a, "value"_a)
      .def("_set_tags", &SetTags, "tags"_a)
      .def(
          "_print",
          [](PyRun& self, std::string_view text, bool is_stderr) {
            self.run.Print(text, is_stderr);
          },
          "text"_a, "is_stderr"_a = false)
      .def("_finish", &RunFinish, "exit_code"_a = 0, "state"_a = "",
           "Ends this writer; returns None, or the error text when the agent did not confirm "
           "within finish_timeout_s.")
      .def("_alert", &RunAlert, "title"_a, "text"_a, "level"_a, "wait_duration_s"_a,
           "Raises an alert (Run::Alert): level INFO/WARN/ERROR, wait in seconds (0: none).")
      .def("_log_artifact_intent", &LogArtifactIntent, "json"_a,
           "Hands an artifact intent (hashed, staged) to the agent; returns its id at once.")
      .def("_log_media", &LogMediaRows, "key"_a, "type"_a, "step"_a, "rows"_a,
           "Logs one key's media set at `step` (rows: (sha256, size, mime, width, height, "
           "duration_ms, caption, cell_bytes) tuples) after its blobs were handed over "
           "(cohort/media.py).")
      .def(
          "_log_histogram",
          [](PyRun& self, const std::string& key, int64_t step, nb::handle value) {
            LogScratch local;  // AppendHistogram's checks and conversion, for one key
            if (!AppendHistogram(local, key, value.ptr())) throw nb::python_error();
            cohort::Status st = self.run.LogHistogram(key, step, local.histograms[0].second);
            if (!st.ok()) Raise(st, "log");
          },
          "key"_a, "step"_a, "value"_a,
          "Logs one histogram at `step` (value: (lo, hi, counts, edges or None) as "
          "cohort.Histogram._for_log gives) once computed off the training thread "
          "(cohort/histogram.py); the key was claimed by the log call.")
      .def("_artifact_state", &ArtifactState, "id"_a,
           "The state of a version this run logged (a dict; asks the agent).")
      .def("_wait_artifact", &WaitArtifact, "id"_a, "timeout_s"_a = -1.0,
           "Waits until the version is committed (a dict), raising when it failed or the "
           "timeout (seconds; < 0: none) passed.")
      .def_prop_ro("_artifact_staging_dir",
                   [](const PyRun& self) { return self.run.artifact_staging_dir(); })
      .def_prop_ro("_media_limits",  // (max file bytes, max per step); 0: not known
                   [](const PyRun& self) {
                     return std::tuple(self.run.max_media_file_bytes(),
                                       self.run.max_media_per_step());
                   })
      .def_prop_ro("_native_finished", [](const PyRun& self) { return self.finished; })
      .def_prop_ro("_owner_pid", [](const PyRun& self) { return self.owner_pid; })
      .def_prop_ro("disabled", [](const PyRun& self) { return self.run.disabled(); })
      .def_prop_ro("id", [](const PyRun& self) { return self.run.id(); })
      .def_prop_ro("_name", [](const PyRun& self) { return self.run.name(); })
      .def_prop_ro("entity", [](const PyRun& self) { return self.run.entity(); })
      .def_prop_ro("project", [](const PyRun& self) { return self.run.project(); })
      .def_prop_ro("label", [](const PyRun& self) { return self.run.label(); })
      .def_prop_ro("_run_fields", [](const PyRun& self) { return self.run.run_fields(); })
      .def_prop_ro("url", [](const PyRun& self) { return self.run.url(); })
      .def_prop_ro("step", [](const PyRun& self) { return self.run.step(); })
      .def_prop_ro("dropped",
                   [](const PyRun& self) {
                     return self.run.dropped() + self.media_dropped.load(std::memory_order_relaxed);
                   })
      .def_prop_ro("offline", [](const PyRun& self) { return self.run.offline(); });

  m.def(
      "_flatten",
      [](nb::handle data) {
        // The conversion run.log does, without a run: [(key, value), ...] (tests, tools).
        if (!PyDict_Check(data.ptr())) {
          PyErr_SetString(PyExc_TypeError, "_flatten: expected a dict");
          throw nb::python_error();
        }
        LogScratch s;
        s.busy = true;
        const bool collected = CollectDict(s, data.ptr(), 0);
        std::vector<std::pair<std::string, nb::object>> media;
        for (auto& [key, obj] : s.media) media.emplace_back(std::move(key), nb::steal(obj));
        s.media.clear();
        if (!collected) throw nb::python_error();
        nb::list out;
        for (size_t i = 0; i < s.n; ++i) {
          out.append(nb::make_tuple(nb::str(s.values[i].first.data(), s.values[i].first.size()),
                                    s.values[i].second));
        }
        for (size_t i = 0; i < s.nh; ++i) {  // histograms: (key, ("histogram", bins, lo, hi))
          const auto& [k, h] = s.histograms[i];
          out.append(nb::make_tuple(
              nb::str(k.data(), k.size()),
              nb::make_tuple("histogram", h.counts.size(), h.low(), h.high())));
        }
        for (const auto& [key, obj] : media) {  // media: (key, media set)
          out.append(nb::make_tuple(nb::str(key.data(), key.size()), obj));
        }
        return out;
      },
      "data"_a);

  m.def(
      "_crc32c",
      [](nb::bytes data, size_t offset) {
        // CRC-32C of data[offset:] (the checksum of the history columns, docs/formats.md).
        if (offset > data.size()) {
          PyErr_SetString(PyExc_ValueError, "_crc32c: offset past the end");
          throw nb::python_error();
        }
        const char* p = data.c_str() + offset;
        const size_t n = data.size() - offset;
        uint32_t crc;
        {
          nb::gil_scoped_release release;  // `data` stays referenced by the caller's frame
          crc = cohort::crc32c::Value(p, n);
        }
        return crc;
      },
      "data"_a, "offset"_a = 0);

  m.def(
      "setup",
      [](const cohort::Settings& settings) {
        cohort::Status st;
        {
          nb::gil_scoped_release release;
          st = cohort::Setup(settings);
        }
        if (!st.ok()) Raise(st, "setup");
      },
      "settings"_a, "Makes sure a node agent runs (cohort::Setup).");

  m.def(
      "_set_hooks",
      [](nb::object converter, nb::dict error_types, nb::object default_error,
         nb::object media_sink) {
        ReplaceRef(&g_converter, converter.is_none() ? nullptr : converter.release().ptr());
        ReplaceRef(&g_error_types, error_types.release().ptr());
        ReplaceRef(&g_default_error, default_error.release().ptr());
        ReplaceRef(&g_media_sink, media_sink.is_none() ? nullptr : media_sink.release().ptr());
      },
      "converter"_a.none(), "error_types"_a, "default_error"_a,
      "media_sink"_a.none() = nb::none(),
      "Registers the value converter and the exception types (by status code name).");
}
