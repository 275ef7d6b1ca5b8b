"""The key rule at the call (docs/formats.md, "Batch v3"): a key the server would refuse (the
reserved system/ prefix, a NUL byte, an empty key) is refused by the SDK when it is logged, before
the agent acknowledges anything, so that the rest of the batch is stored. Before this rule a
`system/...` key passed the SDK and the agent, was acknowledged, and the server then refused the
whole batch (400), which the agent skipped as a permanent error: every other key of the batch was
lost. A Python training process, the real agent and the real server, read back through the API."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

SCRIPT = r"""
import cohort
run = cohort.init(project="keyrule")
for step in range(100):
    run.log({"loss": 1.0 / (step + 1), "acc": step / 100})
for bad in ("system/cpu", "a\x00b", ""):
    try:
        run.log({"loss": 5.0, bad: 1.0})
        print("accepted", repr(bad))
    except ValueError as e:
        print("refused", e)
for step in range(100):
    run.log({"loss": 2.0, "acc": 0.5})
run.finish()
"""


def test_a_key_the_server_refuses_is_refused_at_the_call_and_the_rest_of_the_batch_stored(client):
    r = client.python(SCRIPT)
    assert_ok(r)
    refused = [line for line in r.stdout.splitlines() if line.startswith("refused")]
    assert len(refused) == 3, r.stdout
    assert "'system/cpu'" in refused[0] and "reserved for system metrics" in refused[0], refused
    assert "NUL" in refused[1], refused
    assert "empty" in refused[2], refused
    runs = wait_until(lambda: client.runs(project="keyrule"), what="a run")
    view = client.run_view(runs[0]["id"], project="keyrule")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    history = {key: points for (key, _writer), points in view.history().items()}
    # Every step of both keys arrived, none of the refused calls' values did.
    assert sorted(history) == ["acc", "loss"], sorted(history)
    assert len(history["loss"]) == 200
    assert len(history["acc"]) == 200
    assert all(v != 5.0 for _, v in history["loss"])
