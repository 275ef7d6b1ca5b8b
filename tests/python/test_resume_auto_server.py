"""`cohort.init(resume="auto")` (or `resume=True`) without an id resumes the last run of the data
directory that did not finish with exit code 0, through its resume file, as the vendor SDK's
`wandb-resume.json` does (docs/python.md, `cohort.init`, `resume`). Real training processes,
real node agent, real `cohort server`.
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import client, wait_until  # noqa: E402,F401

PROJECT = "autoresume"

# A process of a job that may crash: exit status from argv[1]; what it saw, on stdout.
AUTO = """
import json, sys, cohort
run = cohort.init(project='autoresume', resume=%r)
start = run.step
for i in range(3):
    run.log({'loss': float(start + i)})
print(json.dumps({'id': run.id, 'start': start}))
sys.exit(%d)
"""


def _out(proc, status=0):
    assert proc.returncode == status, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _resume_file(client, name="cohort-resume.json"):
    """The resume file in the default data directory of the test's HOME."""
    return client.server.home / ".local" / "share" / "cohort" / "agent" / name


def test_auto_resumes_the_run_that_crashed_and_a_clean_end_removes_the_file(client):
    crashed = _out(client.python(AUTO % ("auto", 1)), status=1)
    path = _resume_file(client)
    assert json.loads(path.read_text())["run_id"] == crashed["id"]

    # The next process of the job resumes it: same run, its steps go on.
    resumed = _out(client.python(AUTO % (True, 0)))
    assert resumed["id"] == crashed["id"]
    assert resumed["start"] == 3, resumed
    assert not path.exists()  # finished with exit code 0
    view = client.run_view(crashed["id"], project=PROJECT)
    view.wait_state(("finished",))  # (the crashed process left it failed)

    # A run that ended well is not resumed: the next one is a new run.
    fresh = _out(client.python(AUTO % ("auto", 0)))
    assert fresh["id"] != crashed["id"] and fresh["start"] == 0
    assert not path.exists()


def test_auto_resumes_a_killed_run(client):
    killed = client.python(AUTO.replace("sys.exit(%d)", "import os\nos.kill(os.getpid(), 9)")
                           % "auto")
    assert killed.returncode == -9, killed.stderr[-3000:]
    # (Its stdout went down with it: the console capture's pipe.) The run it left:
    run_id = json.loads(_resume_file(client).read_text())["run_id"]
    # On the server (running, or crashed once the agent saw its client die):
    view = client.run_view(run_id, project=PROJECT)
    wait_until(lambda: view.get()["state"] != "absent", what="the killed process's run")
    resumed = _out(client.python(AUTO % ("auto", 0)))
    assert resumed["id"] == run_id


def test_without_auto_no_resume_file_is_written_or_read(client):
    _out(client.python(AUTO % ("allow", 1)), status=1)
    assert not _resume_file(client).exists()
    crashed = _out(client.python(AUTO % ("auto", 1)), status=1)
    # resume="allow" without an id: a new run, as before (the file is the "auto" mode's).
    other = _out(client.python(AUTO % ("allow", 0)))
    assert other["id"] != crashed["id"]
    assert json.loads(_resume_file(client).read_text())["run_id"] == crashed["id"]


def test_an_explicit_id_wins_over_the_resume_file(client):
    crashed = _out(client.python(AUTO % ("auto", 1)), status=1)
    given = client.python("""
import json, cohort, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    run = cohort.init(project='autoresume', id='given-id', resume='auto')
print(json.dumps({'id': run.id, 'warnings': [str(w.message) for w in caught]}))
run.finish()
""")
    out = _out(given)
    assert out["id"] == "given-id"
    assert any(crashed["id"] in w and "given-id" in w for w in out["warnings"]), out
    # It finished with 0: the file (which named it) is gone.
    assert not _resume_file(client).exists()


def test_a_shared_run_writes_no_resume_file_and_ranks_have_their_own(client):
    shared = client.python("""
import cohort
run = cohort.init(project='autoresume', id='shared-auto', mode='shared', resume='auto',
                  settings=cohort.Settings(x_label='node_a'))
run.log({'loss': 1.0})
raise SystemExit(1)
""")
    assert shared.returncode == 1, shared.stderr[-3000:]
    agent_dir = _resume_file(client).parent
    assert not list(agent_dir.glob("cohort-resume*.json"))

    # Under torchrun each rank (a run of its own) has a file of its own.
    ranks = {}
    for rank in ("0", "1"):
        ranks[rank] = _out(client.python(AUTO % ("auto", 1), env={"RANK": rank}), status=1)
    assert ranks["0"]["id"] != ranks["1"]["id"]
    for rank in ("1", "0"):
        again = _out(client.python(AUTO % ("auto", 0), env={"RANK": rank}))
        assert again["id"] == ranks[rank]["id"], (rank, again)
    assert not list(agent_dir.glob("cohort-resume*.json"))
