"""Seed scenario 3: all ranks in one shared run (examples/ddp_shared.py), including a rank
killed with SIGKILL and torchrun's defaults (labels, primary and run id from the environment).
"""
import os
import time

from dist_helpers import assert_ok, client, wait_until  # noqa: F401

STEPS = 2 * 4  # --epochs 2 --batches 4
EVAL = 5


def _single_run(client):
    runs = wait_until(lambda: client.runs(), what="a run")
    assert len(runs) == 1, [r["id"] for r in runs]
    return client.run_view(runs[0]["id"])


def _assert_rank_data(view, labels, eval_steps=EVAL):
    """Every label has its full loss curve and eval points, as separate series."""
    def complete():
        h = view.history(keys=["loss", "eval/score"])
        return all(len(h.get(("loss", l), [])) == STEPS and
                   len(h.get(("eval/score", l), [])) == eval_steps for l in labels) and h
    hist = wait_until(complete, what=f"history of {labels}")
    for label in labels:
        rank = int(label.split("_")[1])
        assert [s for s, _ in hist[("loss", label)]] == list(range(STEPS))
        assert [v for _, v in hist[("eval/score", label)]] == \
            [float(rank * 100 + i) for i in range(eval_steps)]
    return hist


def test_shared_run_has_one_writer_per_rank_with_labels_and_states(client):
    assert_ok(client.launch("ddp_shared.py", 3, "--epochs", 2, "--batches", 4,
                            "--stats-interval", 0.1, "--step-time", 0.05))
    view = _single_run(client)
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["config"] == {"world_size": 3, "lr": 0.05}  # the primary's config only
    assert run["summary"]["final_loss"] > 0

    writers = wait_until(lambda: (w := view.writers()) and
                         all(x["state"] == "finished" for x in w.values()) and w,
                         what="writers finished")
    assert sorted(writers) == ["rank_0", "rank_1", "rank_2"]
    assert writers["rank_0"]["primary"] and writers["rank_0"]["update_finish_state"]
    for label in ("rank_1", "rank_2"):
        assert not writers[label]["primary"]
        assert not writers[label]["update_finish_state"]
    assert len({w["pid"] for w in writers.values()}) == 3

    _assert_rank_data(view, ["rank_0", "rank_1", "rank_2"])

    # System metrics of every rank, each series tagged by its label.
    system = wait_until(lambda: (s := view.system()) and
                        {l for (k, l) in s if k == "cpu"} == {"rank_0", "rank_1", "rank_2"} and s,
                        what="system metrics of 3 labels")
    only_1 = view.system(labels=["rank_1"])
    assert only_1 and {label for _, label in only_1} == {"rank_1"}

    # Console lines of all ranks, filterable by label.
    lines = wait_until(lambda: (c := view.console()) and
                       {l["label"] for l in c if "final loss" in l["text"]} ==
                       {"rank_0", "rank_1", "rank_2"} and c, what="console of 3 ranks")
    rank_2 = view.console(labels=["rank_2"])
    assert rank_2 and all(l["label"] == "rank_2" for l in rank_2)
    assert any("rank 2: final loss" in l["text"] for l in rank_2)
    assert not any("rank 1:" in l["text"] for l in rank_2)


def test_sigkilled_rank_is_crashed_while_the_run_goes_on(client, tmp_path):
    hold = tmp_path / "hold"
    hold.write_text("")
    proc = client.launch_popen("ddp_shared.py", 3, "--epochs", 2, "--batches", 4,
                               "--crash-rank", 2, "--hold-file", hold, keep_going=True)
    try:
        view = _single_run(client)
        # rank_2 died without finish(): the agent saw its connection drop and reported it.
        writers = wait_until(lambda: (w := view.writers()) and
                             w.get("rank_2", {}).get("state") == "crashed" and w,
                             timeout=60, what="rank_2 crashed")
        # ... while the run and the other ranks go on.
        assert view.get()["state"] == "running"
        assert writers["rank_0"]["state"] == "running"
        assert writers["rank_1"]["state"] == "running"
        time.sleep(0.5)
        assert view.get()["state"] == "running"
    finally:
        hold.unlink()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + 9, (proc.returncode, err[-3000:])  # rank 2's SIGKILL

    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["exit_code"] == 0
    writers = view.writers()
    assert writers["rank_2"]["state"] == "crashed"
    assert writers["rank_0"]["state"] == writers["rank_1"]["state"] == "finished"
    _assert_rank_data(view, ["rank_0", "rank_1"])
    # What rank 2 logged before it died arrived too (it paused before the kill).
    hist = view.history(keys=["loss"], writers=["rank_2"])
    assert len(hist[("loss", "rank_2")]) == STEPS

    # The saved-view filter "debug: crashed workers" sees the crashed writer's run state only
    # through writers; the run itself is finished.
    assert client.runs(state="crashed") == []


def test_torchrun_defaults_give_labels_primary_and_one_run_id(client):
    assert_ok(client.launch("ddp_shared.py", 2, "--auto", "--epochs", 2, "--batches", 4))
    view = _single_run(client)
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    writers = view.writers()
    assert sorted(writers) == ["rank_0", "rank_1"]
    assert writers["rank_0"]["primary"] and not writers["rank_1"]["primary"]
    assert run["config"] == {"world_size": 2}
    _assert_rank_data(view, ["rank_0", "rank_1"])


def test_the_bundled_examples_histograms_and_images_reach_every_ranks_writer(client):
    # scripts/run.sh's example flags (--watch-freq, --log-images), on fewer steps and ranks.
    assert_ok(client.launch("ddp_shared.py", 2, "--epochs", 2, "--batches", 4,
                            "--watch-freq", 2, "--log-images"))
    view = _single_run(client)
    wait_until(lambda: view.get()["state"] == "finished", what="finished")
    media = wait_until(lambda: (m := client.get(view.path + "/media", keys="weights/layer1")
                                ["media"]) and len(m) == 4 and m, what="4 images")
    assert sorted((m["writer"], m["step"]) for m in media) == \
        [("rank_0", 3), ("rank_0", 7), ("rank_1", 3), ("rank_1", 7)]
    assert {m["caption"] for m in media} == {"epoch 0", "epoch 1"}
    assert all(m["mime"] == "image/png" and m["width"] == 96 and m["height"] == 192
               for m in media), media
    hist = client.get(view.path + "/histograms")["histograms"]
    keys = {(h["key"], h["writer"]) for h in hist}
    for label in ("rank_0", "rank_1"):
        assert any(k.startswith("gradients/") and w == label for k, w in keys), keys
        assert any(k.startswith("parameters/") and w == label for k, w in keys), keys
