"""The resume file of `cohort.init(resume="auto")` without an id (python/cohort/_resume_file.py):
which run id init picks from it, and that a file it cannot use is a warning and a new run, never
an error. In-process, disabled runs (sdk_helpers): they read the file, never write it; the
real-server tests (test_resume_auto_server.py) cover writing and removing it.
"""
import json
import warnings

import pytest

import sdk_helpers  # noqa: F401  (imports cohort from the source tree, disabled mode)
import cohort
from cohort import _resume_file


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("COHORT_RUN_ID", "WANDB_RUN_ID", "COHORT_PROJECT", "WANDB_PROJECT", "RANK",
                 "COHORT_DIR"):
        monkeypatch.delenv(name, raising=False)


def _write(tmp_path, content, name="cohort-resume.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _init(tmp_path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = cohort.init(dir=str(tmp_path), **kw)
    run.finish()
    return run, [str(w.message) for w in caught if w.category is RuntimeWarning]


@pytest.mark.parametrize("resume", ["auto", True])
def test_auto_without_an_id_takes_the_run_id_of_the_resume_file(tmp_path, resume):
    _write(tmp_path, {"run_id": "crashed1", "project": "p"})
    run, caught = _init(tmp_path, project="p", resume=resume)
    assert run.id == "crashed1" and caught == []


def test_a_file_of_an_older_format_without_project_is_taken(tmp_path):
    _write(tmp_path, {"run_id": "crashed2"})
    assert _init(tmp_path, resume="auto")[0].id == "crashed2"


@pytest.mark.parametrize("resume", ["allow", "must", "never", None, False])
def test_other_resume_modes_never_read_it(tmp_path, resume):
    _write(tmp_path, {"run_id": "crashed3", "project": "p"})
    kw = {"id": "mine"} if resume == "must" else {}
    run, _ = _init(tmp_path, project="p", resume=resume, **kw)
    assert run.id != "crashed3"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", {"run_id": 7},
                                     {"run_id": "bad/id"}, {"project": "p"}, ""])
def test_a_file_it_cannot_use_is_a_warning_and_a_new_run(tmp_path, content):
    _write(tmp_path, content)
    run, caught = _init(tmp_path, project="p", resume="auto")
    assert run.id not in ("7", "bad/id", "")
    assert len(caught) == 1 and "starting a new run" in caught[0], caught


def test_an_unreadable_file_is_a_warning_and_a_new_run(tmp_path):
    (tmp_path / "cohort-resume.json").mkdir()  # reading it fails with an OSError
    run, caught = _init(tmp_path, resume="auto")
    assert run.id and len(caught) == 1 and "cannot be read" in caught[0], caught


def test_a_run_of_another_project_is_not_resumed(tmp_path, monkeypatch):
    _write(tmp_path, {"run_id": "crashed4", "project": "other"})
    run, caught = _init(tmp_path, project="p", resume="auto")
    assert run.id != "crashed4"
    assert any("'other'" in w and "'p'" in w for w in caught), caught
    # The project as the client library resolves it: COHORT_PROJECT here.
    monkeypatch.setenv("COHORT_PROJECT", "other")
    assert _init(tmp_path, resume="auto")[0].id == "crashed4"


def test_an_explicit_id_wins_with_a_warning(tmp_path, monkeypatch):
    _write(tmp_path, {"run_id": "crashed5", "project": "p"})
    run, caught = _init(tmp_path, project="p", id="given", resume="auto")
    assert run.id == "given"
    assert any("crashed5" in w and "given" in w for w in caught), caught
    # An id from the environment is given too (a disabled run does not take it as its id).
    monkeypatch.setenv("COHORT_RUN_ID", "fromenv")
    run, caught = _init(tmp_path, project="p", resume="auto")
    assert run.id != "crashed5"
    assert any("crashed5" in w and "fromenv" in w for w in caught), caught


def test_shared_mode_never_reads_it(tmp_path):
    _write(tmp_path, {"run_id": "crashed6", "project": "p"})
    run, _ = _init(tmp_path, project="p", id="shared1", resume="auto",
                   settings=cohort.Settings(mode="shared", x_label="a"))
    assert run.id == "shared1"
    assert json.loads((tmp_path / "cohort-resume.json").read_text())["run_id"] == "crashed6"


def test_each_rank_and_label_has_a_file_of_its_own(tmp_path, monkeypatch):
    _write(tmp_path, {"run_id": "plain"})
    _write(tmp_path, {"run_id": "rank1"}, name="cohort-resume-rank_1.json")
    _write(tmp_path, {"run_id": "labelled"}, name="cohort-resume-node_a_x.json")
    assert _init(tmp_path, resume="auto")[0].id == "plain"
    assert _init(tmp_path, resume="auto",
                 settings=cohort.Settings(x_label="node a:x"))[0].id == "labelled"
    monkeypatch.setenv("RANK", "1")
    assert _init(tmp_path, resume="auto")[0].id == "rank1"


def test_the_directory_is_the_client_librarys(tmp_path, monkeypatch):
    s = cohort.Settings()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert _resume_file.data_dir(None, s) == str(tmp_path / "home/.local/share/cohort/agent")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert _resume_file.data_dir(None, s) == str(tmp_path / "xdg/cohort/agent")
    monkeypatch.setenv("COHORT_DIR", str(tmp_path / "env"))
    assert _resume_file.data_dir(None, s) == str(tmp_path / "env")
    assert _resume_file.data_dir(None, cohort.Settings(root_dir=str(tmp_path / "s"))) == \
        str(tmp_path / "s")
    assert _resume_file.data_dir(str(tmp_path / "arg"), s) == str(tmp_path / "arg")


def test_writing_is_atomic_and_a_failure_is_a_warning(tmp_path):
    path = tmp_path / "sub" / "cohort-resume.json"
    _resume_file.write(str(path), "r1", "p")
    import os
    import socket
    assert json.loads(path.read_text()) == {"run_id": "r1", "project": "p", "pid": os.getpid(),
                                            "host": socket.gethostname()}
    assert [p.name for p in path.parent.iterdir()] == ["cohort-resume.json"]
    _resume_file.remove(str(path), "another")  # names another run: kept
    assert path.exists()
    _resume_file.remove(str(path), "r1")
    assert not path.exists()

    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.warns(RuntimeWarning, match="not written"):
        _resume_file.write(str(blocked / "cohort-resume.json"), "r2", "p")


def test_a_run_whose_process_still_runs_is_not_joined(tmp_path):
    """Two scripts of one data directory: the second, started while the first runs, joined the
    first's run (the file is removed only at its end). A file naming a live process of this host
    is not resumed; one whose process is gone is."""
    import socket
    import subprocess
    live = subprocess.Popen(["sleep", "30"])
    try:
        _write(tmp_path, {"run_id": "running1", "project": "p", "pid": live.pid,
                          "host": socket.gethostname()})
        run, caught = _init(tmp_path, project="p", resume="auto")
        assert run.id != "running1" and caught == []
    finally:
        live.kill()
        live.wait()
    _write(tmp_path, {"run_id": "crashed3", "project": "p", "pid": live.pid,
                      "host": socket.gethostname()})
    assert _init(tmp_path, project="p", resume="auto")[0].id == "crashed3"
    # Another host's process cannot be checked: the run is resumed, as the vendor's file is.
    _write(tmp_path, {"run_id": "crashed4", "project": "p", "pid": 1, "host": "elsewhere"})
    assert _init(tmp_path, project="p", resume="auto")[0].id == "crashed4"

