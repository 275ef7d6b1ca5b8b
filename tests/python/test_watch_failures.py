"""watch's histograms that fail, at every log_freq-th step, for many parameters: each key is
warned about once per kind of error (with the note that further failures are counted, not
printed), and the watch's end or the run's finish warns once with the counts, instead of a
warning per failure (a model of 200 parameters printed 200 warnings every log_freq steps).

Two places fail: at the call (a tensor Histogram refuses: complex parameters here;
python/cohort/_watch.py) and in the histogram worker, for tensors binned off the training
thread (python/cohort/_histogram_worker.py), whose log of the computed histogram the run
refuses. The run is a stand-in at its seam with watch and the worker (``log`` and
``_log_histogram``, as tests/python/test_watch_hooks.py's), the refusal the error the extension
raises when the agent falls behind (``resource_exhausted``); the real run's path is
tests/distributed/test_histograms_deferred.py."""
import threading
import warnings

import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
from cohort import _histogram_worker, _watch
from cohort.errors import CommError, UsageError
from cohort.histogram import _DEFER_CPU_MIN

torch = pytest.importorskip("torch")


def watch_warnings(caught):
    return [str(w.message) for w in caught if "cohort watch" in str(w.message)]


class _ComplexParams(torch.nn.Module):
    """`n` complex parameters (Histogram refuses them at the call) beside a plain layer."""

    def __init__(self, n):
        super().__init__()
        self.zs = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.ones(3, dtype=torch.complex64)) for _ in range(n)])
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        for z in self.zs:
            x = x * z.real
        return self.lin(x)


class Recorder:
    def __init__(self):
        self.calls = []

    def log(self, values, commit=True):
        self.calls.append(sorted(values))


def test_failing_parameters_warn_once_per_key_and_kind_and_the_end_counts_them():
    n, passes = 30, 10
    run, model, x = Recorder(), _ComplexParams(n), torch.randn(4, 3)
    watch = _watch._Watch(run, model, "", "parameters", 2, 8)  # due every 2nd pass: 5 times
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(passes):
            model(x).sum().backward()
    texts = watch_warnings(caught)
    assert len(texts) == n, texts[:3]  # one per key, at its first failure; not 5 per key
    keys = {f"parameters/zs.{i}" for i in range(n)}
    assert {t.split("not logged: ")[1].split(" (")[0] for t in texts} == keys
    for t in texts:
        assert "TypeError" in t and "complex" in t, t
        assert "further failures of this key with TypeError are counted, not printed" in t, t
    assert watch.failures == {k: passes // 2 for k in keys}
    assert {k for call in run.calls for k in call} == {"parameters/lin.weight",
                                                      "parameters/lin.bias"}
    # The end of the watch (unwatch, or the run's finish) says how many, once.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        watch.remove()
        watch.remove()
    texts = watch_warnings(caught)
    assert len(texts) == 1, texts
    assert [w.filename for w in caught] == [__file__]  # at the caller's line
    total = n * passes // 2
    assert f"{total} histogram(s) were not logged" in texts[0], texts[0]
    assert "'parameters/zs.0' 5 times (TypeError)" in texts[0], texts[0]
    assert f"and {(n - 10) * 5} more of {n - 10} other key(s)" in texts[0], texts[0]


def test_a_key_failing_with_another_kind_of_error_is_warned_about_again():
    class Refusing(Recorder):
        error = None

        def log(self, values, commit=True):
            if self.error is not None:
                raise self.error
            super().log(values, commit)

    behind = CommError("log: too many histograms waiting for the agent")
    behind.code = "resource_exhausted"
    finished = UsageError("log: the run is finished")
    finished.code = "failed_precondition"
    run = Refusing()
    model = torch.nn.Linear(3, 1)
    watch = _watch._Watch(run, model, "", "parameters", 1, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for error in (None, behind, behind, behind, finished, finished):
            run.error = error
            model(torch.randn(4, 3))
    texts = watch_warnings(caught)
    # One warning per kind of error, each naming both keys (they fail in one log call).
    assert len(texts) == 2, texts
    assert "parameters/weight, parameters/bias" in texts[0], texts[0]
    assert "CommError (resource_exhausted)" in texts[0] and "these keys" in texts[0], texts[0]
    assert "UsageError (failed_precondition)" in texts[1], texts[1]
    assert watch.failures == {"parameters/weight": 5, "parameters/bias": 5}
    assert watch.failure_kinds == {
        ("parameters/weight", "CommError (resource_exhausted)"): 3,
        ("parameters/bias", "CommError (resource_exhausted)"): 3,
        ("parameters/weight", "UsageError (failed_precondition)"): 2,
        ("parameters/bias", "UsageError (failed_precondition)"): 2}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        watch.remove()
    texts = watch_warnings(caught)
    assert len(texts) == 1 and "10 histogram(s) were not logged" in texts[0], texts
    assert "'parameters/bias' 3 times (CommError (resource_exhausted))" in texts[0], texts[0]


class BehindRun:
    """The run as the histogram worker sees it, with an agent that fell behind: the worker's
    ``_log_histogram`` of the keys in `refused` raises what the extension raises then; `log`
    hands a histogram still to be computed to the worker, as the extension's media sink does."""

    def __init__(self, run_id, refused):
        self.id = run_id
        self.refused = refused
        self.logged = []
        self.lock = threading.Lock()

    def log(self, values, commit=True):
        for key, h in values.items():
            if h._pending:  # binned off the training thread: by the worker
                _histogram_worker.put(self, key, h._log_value(), 0)
            else:  # computed at the call (small tensors)
                self._log_histogram(key, 0, h._for_log())

    def _log_histogram(self, key, step, value):
        if key in self.refused:
            e = CommError(f"log: histogram '{key}': too many histograms waiting for the agent")
            e.code = "resource_exhausted"
            raise e
        with self.lock:
            self.logged.append(key)


def test_histograms_that_fail_in_the_worker_warn_once_per_key_and_finish_counts_them():
    # 20 parameters of 65,536 elements (binned by the worker), every one refused, 6 times.
    layers, steps = 10, 6
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(layers)])
    weights = {f"parameters/{i}.weight" for i in range(layers)}
    assert model[0].weight.numel() >= _DEFER_CPU_MIN
    run = BehindRun("behind1", refused=weights)
    watch = _watch._Watch(run, model, "", "parameters", 1, 8)
    before = _histogram_worker.stats()
    x = torch.randn(2, 256)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            for _ in range(steps):
                model(x)
        watch.remove()
        assert _histogram_worker.drain(run, 30)  # what the run's finish does
    texts = [str(w.message) for w in caught if "histogram" in str(w.message)]
    per_key = [t for t in texts if "was not logged" in t]
    assert len(per_key) == layers, per_key[:3]  # once per key, not once per failure (60)
    assert {t.split("histogram ")[1].split(" at step")[0].strip("'") for t in per_key} == weights
    for t in per_key:
        assert "CommError (resource_exhausted)" in t and "too many histograms" in t, t
        assert "further failures of this key with CommError are counted, not printed" in t, t
    summary = [w for w in caught if "were not logged" in str(w.message)]
    assert len(summary) == 1, texts
    assert summary[0].filename == __file__  # at the caller's drain (the run's finish)
    summary = [str(summary[0].message)]
    assert f"run behind1: {layers * steps} histogram(s) were not logged" in summary[0], summary
    assert f"'parameters/0.weight' {steps} times (CommError (resource_exhausted))" in summary[0]
    # Counted all the same; the biases (small: binned at the call) and nothing else logged.
    after = _histogram_worker.stats()
    assert after["failures"] - before["failures"] == layers * steps, (before, after)
    assert watch.failures == {}  # the worker's failures, not the call's
    assert sorted(run.logged) == sorted(f"parameters/{i}.bias" for i in range(layers)
                                        for _ in range(steps))
    # Forgotten at finish: a later run starts from none.
    assert _histogram_worker._histograms.current().take_failures(run) == {}
