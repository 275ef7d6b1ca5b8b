"""watch's hooks without a server: when the gradient hooks are put on the parameters and when
they go (python/cohort/_watch.py), against a recording stand-in for the run (the seam is the
run's `log`, which the distributed tests exercise for real: tests/distributed/test_histograms.py).
"""
import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
from cohort import _watch

torch = pytest.importorskip("torch")


class Recorder:
    """The run as watch sees it: `log(values, commit=False)`; keeps the keys of each call."""

    def __init__(self):
        self.calls = []

    def log(self, values, commit=True):
        self.calls.append(sorted(values))


def model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    return model, torch.randn(8, 4)


def hooked(model):
    return [p._backward_hooks is not None for p in model.parameters()]


def test_a_step_of_several_forward_passes_keeps_its_hooks_until_its_backward_pass():
    # Two forward passes a step (as the replicas of nn.DataParallel share the forward hook), due
    # at the first of them (call 5 of log_freq 5: the third step's first pass): the second, not
    # due, must not take the hooks away before the step's backward pass.
    run, (model, x) = Recorder(), model_and_data()
    watch = _watch._Watch(run, model, "", "gradients", 5, 8)
    grads = []
    for step in range(4):
        run.calls.clear()
        loss = model(x).sum() + model(x * 2).sum()
        loss.backward()
        grads.append([k for call in run.calls for k in call])
    assert grads[0] == [] and grads[1] == [] and grads[3] == []
    assert sorted(grads[2]) == ["gradients/0.bias", "gradients/0.weight", "gradients/2.bias",
                                "gradients/2.weight"], grads
    # Gone at the first forward pass after that backward pass: None, not an empty dict.
    assert hooked(model) == [False] * 4
    watch.remove()


def test_no_hooks_for_a_forward_pass_without_grad_and_none_left_after_remove():
    run, (model, x) = Recorder(), model_and_data()
    watch = _watch._Watch(run, model, "", "all", 1, 8)
    with torch.no_grad():
        model(x)  # due, but no backward pass can follow
    assert hooked(model) == [False] * 4
    assert run.calls and all(k.startswith("parameters/") for k in run.calls[-1])
    model(x).sum().backward()
    assert hooked(model) == [True] * 4
    watch.remove()
    assert hooked(model) == [False] * 4
    run.calls.clear()
    model(x).sum().backward()
    assert run.calls == []  # removed: nothing logged any more


def test_a_users_own_hook_stays():
    run, (model, x) = Recorder(), model_and_data()
    seen = []
    first = next(model.parameters())
    first.register_hook(lambda g: seen.append(1))
    watch = _watch._Watch(run, model, "", "gradients", 2, 8)
    for _ in range(4):
        model(x).sum().backward()
    watch.remove()
    model(x).sum().backward()
    assert len(seen) == 5 and first._backward_hooks


def test_bad_num_bins_is_refused_at_the_call_with_no_hooks_put():
    # It passed the call and raised from inside the training's forward pass, log_freq steps on.
    model, _ = model_and_data()
    for bins in (0, 1000, True, 2.5):
        with pytest.raises(ValueError, match="num_bins"):
            _watch.watch(Recorder(), model, log="all", num_bins=bins)
    assert not any(hooked(model))


def test_a_sparse_gradient_is_logged_and_backward_goes_on():
    # nn.Embedding(sparse=True) gives a sparse gradient: Histogram's reshape raised inside the
    # gradient hook, and loss.backward() failed.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 8, sparse=True), torch.nn.Flatten(),
                                torch.nn.Linear(32, 1))
    run = Recorder()
    run.values = {}
    run.log = lambda values, commit=True: run.values.update(values)
    watch = _watch._Watch(run, model, "", "all", 1, 8)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(torch.randint(0, 100, (2, 4))).sum().backward()
    assert sorted(run.values) == ["gradients/0.weight", "gradients/2.bias", "gradients/2.weight",
                                  "parameters/0.weight", "parameters/2.bias",
                                  "parameters/2.weight"]
    assert sum(run.values["gradients/0.weight"].histogram) == 800
    assert watch.failures == {}
    watch.remove()


class _Complex(torch.nn.Module):
    """A parameter whose gradient Histogram refuses (complex), beside a plain one."""

    def __init__(self):
        super().__init__()
        self.z = torch.nn.Parameter(torch.ones(3, dtype=torch.complex64))
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.lin(x * self.z.real)


def test_a_histogram_that_fails_warns_once_per_key_and_never_stops_the_training():
    run, model, x = Recorder(), _Complex(), torch.randn(4, 3)
    watch = _watch._Watch(run, model, "", "all", 1, 8)
    with pytest.warns(RuntimeWarning) as caught:
        for _ in range(3):
            model(x).sum().backward()  # raised TypeError out of backward() before
    texts = [str(w.message) for w in caught if "cohort watch" in str(w.message)]
    assert len(texts) == 2, texts  # once for parameters/z, once for gradients/z
    assert any("gradients/z" in t and "complex" in t for t in texts), texts
    assert any("parameters/z" in t and "TypeError" in t for t in texts), texts
    assert watch.failures == {"parameters/z": 3, "gradients/z": 3}
    logged = {k for call in run.calls for k in call}
    assert logged == {"parameters/lin.weight", "parameters/lin.bias", "gradients/lin.weight",
                      "gradients/lin.bias"}
    watch.remove()


def test_a_run_that_refuses_the_values_does_not_stop_the_training():
    class Refusing(Recorder):
        def log(self, values, commit=True):
            raise ValueError("refused")

    run, (model, x) = Refusing(), model_and_data()
    watch = _watch._Watch(run, model, "", "gradients", 1, 8)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning made an error is not raised either
        for _ in range(2):
            model(x).sum().backward()
    assert watch.failures == {k: 2 for k in ("gradients/0.weight", "gradients/0.bias",
                                             "gradients/2.weight", "gradients/2.bias")}
    watch.remove()
