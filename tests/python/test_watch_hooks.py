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
