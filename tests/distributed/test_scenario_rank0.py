"""Seed scenario 1: only rank 0 tracks (examples/ddp_rank0.py on 2 gloo ranks)."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

STEPS = 2 * 5  # --epochs 2 --batches 5


def test_only_rank0_logs_and_the_run_has_machine_system_metrics(client):
    assert_ok(client.launch("ddp_rank0.py", 2, "--epochs", 2, "--batches", 5,
                            "--stats-interval", 0.1, "--step-time", 0.05))
    runs = client.runs()
    assert len(runs) == 1, runs  # rank 1 created nothing
    view = client.run_view(runs[0]["id"])

    # The script never calls finish(): the exit hook finished it with exit code 0.
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["exit_code"] == 0
    assert run["config"]["world_size"] == 2
    writers = view.writers()
    assert list(writers) == ["rank_0"]
    assert writers["rank_0"]["state"] == "finished"
    assert writers["rank_0"]["primary"] is True

    hist = wait_until(lambda: (h := view.history(keys=["loss", "epoch", "batch"])) and
                      len(h.get(("batch", "rank_0"), [])) == STEPS and h, what="history")
    assert {w for _, w in hist} == {"rank_0"}
    assert [s for s, _ in hist[("loss", "rank_0")]] == list(range(STEPS))
    assert [v for _, v in hist[("epoch", "rank_0")]] == [0.0] * 5 + [1.0] * 5
    assert [v for _, v in hist[("batch", "rank_0")]] == [float(b) for b in range(5)] * 2
    assert all(v > 0 for _, v in hist[("loss", "rank_0")])

    # System metrics of the machine, tagged with the tracking process's label.
    system = wait_until(lambda: view.system(), what="system metrics")
    assert ("cpu", "rank_0") in system, sorted(system)
    assert system[("cpu", "rank_0")] >= 1

    # Console lines of rank 0 (what it printed), filterable by its label.
    lines = wait_until(lambda: view.console(labels=["rank_0"], q="final loss"), what="console")
    assert all(line["label"] == "rank_0" for line in lines)
