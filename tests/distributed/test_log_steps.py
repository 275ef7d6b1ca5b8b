"""Explicit steps in run.log as the seed's SDK has them, from a Python training process through
the real agent and server, read back through the API: with `step`, commit defaults to False, so
more calls at that step merge into its row; a step below the current one is dropped, with one
warning per run."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

SCRIPT = """
import warnings
import cohort
warnings.simplefilter("always")
run = cohort.init(project="steps")
run.log({"loss": 1.0}, step=0)
run.log({"acc": 0.5}, step=0)               # the same step: merged into its row
print("after step 0:", run.step)
run.log({"loss": 0.9}, step=1)              # a higher step: step 0 is done
run.log({"acc": 0.6}, step=1, commit=True)  # merged, then the step moves on to 2
run.log({"loss": 0.1}, step=1)              # below the current step: dropped, with a warning
run.log({"loss": 0.2}, step=0)              # dropped too, without a second warning
run.log({"loss": 0.8})                      # no step: the current one (2), then 3
run.log({"loss": 0.7}, step=5)
run.log({"acc": 0.7})                       # no step: merged into step 5, which it commits
print("at the end:", run.step, "dropped:", run.dropped)
run.finish()
"""


def test_logs_at_an_explicit_step_merge_into_its_row_and_a_past_step_is_dropped(client):
    proc = assert_ok(client.python(SCRIPT))
    assert "after step 0: 0" in proc.stdout, proc.stdout
    assert "at the end: 6 dropped: 2" in proc.stdout, proc.stdout
    assert proc.stderr.count("below the run's current step") == 1, proc.stderr
    assert "log at step 1, below the run's current step 2" in proc.stderr, proc.stderr
    runs = wait_until(lambda: client.runs(project="steps"), what="a run")
    view = client.run_view(runs[0]["id"], project="steps")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    history = wait_until(lambda: (h := view.history(keys=["loss", "acc"])) and len(h) == 2 and h,
                         what="both series")
    by_key = {key: points for (key, _writer), points in history.items()}
    assert by_key == {"loss": [(0, 1.0), (1, 0.9), (2, 0.8), (5, 0.7)],
                      "acc": [(0, 0.5), (1, 0.6), (5, 0.7)]}, history
