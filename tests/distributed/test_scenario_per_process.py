"""Seed scenario 2: one run per process, grouped (examples/ddp_per_process.py, 3 ranks)."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

STEPS = 2 * 4


def test_each_rank_has_its_own_finished_run_in_group_ddp_with_job_types(client):
    assert_ok(client.launch("ddp_per_process.py", 3, "--epochs", 2, "--batches", 4))
    runs = wait_until(lambda: (r := client.runs(group="DDP")) and len(r) == 3 and
                      all(x["state"] == "finished" for x in r) and r, what="3 finished runs")
    by_rank = {r["config"]["rank"]: r for r in runs}
    assert sorted(by_rank) == [0, 1, 2]
    assert by_rank[0]["job_type"] == "main"
    assert {by_rank[i]["job_type"] for i in (1, 2)} == {"worker"}
    assert all(r["exit_code"] == 0 for r in runs)
    assert by_rank[1]["name"] == "DDP-rank1"

    # The group page's summary: 3 runs, all finished, 1 main and 2 workers.
    groups = {g["group"]: g for g in client.get(
        f"/api/v1/groups/{client.entity}/scenarios")["groups"]}
    assert groups["DDP"]["runs"] == 3
    assert groups["DDP"]["states"] == {"finished": 3}
    assert groups["DDP"]["job_types"] == {"main": 1, "worker": 2}

    # The saved-view filter "hide workers" (job_type != worker) leaves the main run.
    main_only = client.runs(filters='[{"field": "job_type", "op": "!=", "value": "worker"}]')
    assert [r["id"] for r in main_only] == [by_rank[0]["id"]]

    # Each process's metrics are separate: its own run, its own writer, its own loss curve.
    curves = {}
    for rank, run in by_rank.items():
        view = client.run_view(run["id"])
        writers = view.writers()
        assert list(writers) == [f"rank_{rank}"] and writers[f"rank_{rank}"]["primary"]
        hist = wait_until(lambda: (h := view.history(keys=["loss"])) and
                          len(h.get(("loss", f"rank_{rank}"), [])) == STEPS and h,
                          what=f"rank {rank} loss")
        curves[rank] = [v for _, v in hist[("loss", f"rank_{rank}")]]
        assert view.get()["summary"]["final_loss"] > 0
    assert curves[0] != curves[1] != curves[2]  # different data on every rank
