"""Runs handed to other processes: pickling, and what a child gets in disabled mode."""
import multiprocessing as mp
import pickle

import pytest

import sdk_helpers  # noqa: F401
import cohort


def child_logs(run, queue):
    with cohort.init() as r:
        queue.put((type(r).__name__, r.id, r.disabled, r is run))
        r.log({"x": 1})


def test_run_unpickled_in_its_own_process_is_the_same_object():
    run = cohort.init(mode="disabled", reinit="create_new")
    try:
        assert pickle.loads(pickle.dumps(run)) is run
    finally:
        run.finish()


def test_config_and_summary_pickle_as_plain_copies():
    run = cohort.init(mode="disabled", config={"a": 1}, reinit="create_new")
    run.summary["s"] = 2
    try:
        cfg = pickle.loads(pickle.dumps(run.config))
        assert cfg.as_dict() == {"a": 1}
        cfg["b"] = 3  # a copy: not attached to any run
        assert "b" not in run.config
        assert dict(pickle.loads(pickle.dumps(run.summary))) == {"s": 2}
    finally:
        run.finish()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_disabled_run_passed_to_a_child_is_returned_by_init_there(method):
    ctx = mp.get_context(method)
    run = cohort.init(mode="disabled", reinit="create_new")
    queue = ctx.Queue()
    try:
        p = ctx.Process(target=child_logs, args=(run, queue))
        p.start()
        kind, run_id, disabled, _ = queue.get(timeout=60)
        p.join(timeout=60)
        assert p.exitcode == 0
        assert (kind, run_id, disabled) == ("Run", run.id, True)
    finally:
        run.finish()


def child_inits_with_config(queue):
    parent = cohort.run
    with cohort.init(config={"n": 1}) as r:
        queue.put((r is parent, parent is not None and not parent.finished))


def test_forked_child_init_with_its_own_config_starts_a_new_run(monkeypatch):
    monkeypatch.setenv("COHORT_MODE", "disabled")  # the child's own run too
    ctx = mp.get_context("fork")
    run = cohort.init(mode="disabled", reinit="create_new")
    queue = ctx.Queue()
    try:
        p = ctx.Process(target=child_inits_with_config, args=(queue,))
        p.start()
        same, parent_alive = queue.get(timeout=60)
        p.join(timeout=60)
        assert p.exitcode == 0
        assert not same and parent_alive  # a run of its own; the parent's run untouched
    finally:
        run.finish()


def test_an_offline_run_hands_its_mode_to_a_child_whichever_name_init_had(tmp_path, monkeypatch):
    # init(mode="dryrun") is offline; the state a child gets said None (the raw argument was
    # compared with "offline"), so the child joined online under an id only the offline run has.
    monkeypatch.setenv("COHORT_DIR", str(tmp_path))
    for mode in ("offline", "dryrun"):
        run = cohort.init(project="p", mode=mode)
        try:
            assert run._handoff_state()["mode"] == "offline", mode
        finally:
            run.finish()
    # An online run buffering locally (no server confirmed it yet) is not handed over as
    # offline: its children would never upload (a review found the first fix did that).
    run = cohort.init(project="p")
    try:
        monkeypatch.setattr(type(run), "offline", property(lambda self: True))  # not confirmed
        assert run._handoff_state()["mode"] is None
    finally:
        monkeypatch.undo()
        run.finish()
