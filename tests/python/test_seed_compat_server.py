"""What a script written for the seed's SDK sees against a real `cohort server` (real training
process, real node agent): the seed's environment variables name the run, a str among the
logged numbers loses none of them, and a server the run cannot reach is said on stderr."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import assert_ok, client, free_port, wait_until  # noqa: E402,F401

PROJECT = "compat"
HEADER = "import cohort\n"
UNCONFIRMED = "not confirmed by the server at"


def _ended_run(client):
    """The view of the project's one run and the run once it finished."""
    view = client.only_run(project=PROJECT)
    return view, view.wait_state(("finished",))


def test_the_seed_sdks_environment_names_the_run(client):
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r})\n"
        "run.log({'a': 1})\n"
        "run.finish()\n"), env={"WANDB_NAME": "env-name", "WANDB_RUN_GROUP": "env-group",
                               "WANDB_JOB_TYPE": "eval", "WANDB_TAGS": "x,y",
                               "WANDB_NOTES": "from the environment"}))
    assert UNCONFIRMED not in proc.stderr  # a reachable server: nothing said
    _, run = _ended_run(client)
    assert (run["name"], run["group"], run["job_type"], run["tags"], run["notes"]) == (
        "env-name", "env-group", "eval", ["x", "y"], "from the environment")


def test_a_str_or_none_value_loses_none_of_the_calls_numbers(client):
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r})\n"
        "for i in range(3):\n"
        "    run.log({'loss': 3.0 - i, 'label': 'cat', 'lr': None})\n"
        "run.finish()\n")))
    assert proc.stderr.count("'label': a str is not stored as a chart series; the last value "
                             "logged is kept in the run's summary") == 1, proc.stderr
    assert proc.stderr.count("'lr': None is not stored as a metric") == 1, proc.stderr
    view, run = _ended_run(client)
    assert run["summary"]["loss"] == 1.0
    assert run["summary"]["label"] == "cat"  # as the vendor SDK's summary keeps it
    assert "lr" not in run["summary"]
    hist = wait_until(lambda: view.history(keys=["loss"]), what="loss history")
    assert [v for _, v in next(iter(hist.values()))] == [3.0, 2.0, 1.0]


def test_an_unreachable_server_is_said_on_stderr_at_init(client):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r}, settings=cohort.Settings(init_timeout=5, "
        "finish_timeout=2))\n"
        "print('offline', run.offline, flush=True)\n"
        "run.log({'a': 1})\n"
        "run.finish()\n"), env={"COHORT_BASE_URL": url}))
    assert "offline True" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("cohort: run ")]
    # Once: finish hands everything to the agent, which keeps it (nothing more to say then).
    assert len(lines) == 1, proc.stderr
    assert f"{UNCONFIRMED} {url}" in lines[0]
    assert "kept by the agent, which uploads it when the server answers" in lines[0]
    assert "cohort sync" in lines[0]


def test_an_unconfirmed_run_without_any_api_key_says_so_at_init(client, tmp_path):
    """No key given, none in the environment or saved by `cohort login`, the server not
    answering: init names the missing key and what to do, not only "not confirmed" (the agent
    would meet 401s the user never sees)."""
    url = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "xdg").mkdir()
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r}, settings=cohort.Settings(init_timeout=5, "
        "finish_timeout=2))\n"
        "run.log({'a': 1})\n"
        "run.finish()\n"), env={"COHORT_BASE_URL": url, "COHORT_API_KEY": "",
                                "XDG_CONFIG_HOME": str(tmp_path / "xdg")}))
    lines = [line for line in proc.stderr.splitlines() if line.startswith("cohort: run ")]
    assert len(lines) == 1, proc.stderr
    assert "no API key" in lines[0] and "cohort login" in lines[0], lines[0]
    assert "cohort sync" in lines[0] and url in lines[0], lines[0]


def test_an_offline_run_by_choice_says_nothing(client):
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r}, mode='offline')\n"
        "run.log({'a': 1})\n"
        "run.finish()\n"), env={"COHORT_BASE_URL": f"http://127.0.0.1:{free_port()}"}))
    assert UNCONFIRMED not in proc.stderr and "finished before the server" not in proc.stderr


def test_config_values_of_none_are_kept_and_deleted_keys_removed(client):
    # An argparse Namespace's None defaults were dropped from the run (a null deleted the key).
    assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r}, config={{'seed': None, 'lr': 0.1, 'tmp': 1}})\n"
        "run.config.update({'resume_from': None, 'warmup': 5})\n"
        "run.config['warmup'] = None\n"
        "del run.config['tmp']\n"
        "run.summary['note'] = 'x'\n"
        "del run.summary['note']\n"
        "run.finish()\n")))
    _, run = _ended_run(client)
    assert run["config"] == {"seed": None, "lr": 0.1, "resume_from": None, "warmup": None}, \
        run["config"]
    assert "note" not in run["summary"], run["summary"]


def test_a_project_name_the_server_refuses_fails_init_offline_too(client):
    # An offline run kept its data under "My Project", which `cohort sync` then could not store.
    proc = client.python(HEADER + (
        "try:\n"
        "    cohort.init(project='My Project', mode='offline')\n"
        "except cohort.UsageError as e:\n"
        "    print('refused:', e, flush=True)\n"))
    assert proc.returncode == 0, proc.stderr
    assert "refused: init: project: invalid name 'My Project' (1-64 characters" in proc.stdout, \
        (proc.stdout, proc.stderr)


def test_a_fixed_id_run_again_without_resume_says_it_continues_the_run(client):
    """wandb users rerun a job with the same id= and no resume=: Cohort continues the run (as
    resume="allow"), so init says so once, with the step it goes on from; explicit steps below it
    would be dropped. An explicit resume= says nothing."""
    def once(resume_arg):
        return assert_ok(client.python(HEADER + (
            f"run = cohort.init(project={PROJECT!r}, id='fixedrerun'{resume_arg})\n"
            "for i in range(3):\n"
            "    run.log({'loss': 1.0 / (i + 1)})\n"
            "run.finish()\n")))
    first = once("")
    assert "exists: continuing it" not in first.stderr, first.stderr
    again = once("")
    assert "cohort: run fixedrerun exists: continuing it at step 3" in again.stderr, again.stderr
    assert "resume='never'" in again.stderr
    explicit = once(", resume='allow'")
    assert "exists: continuing it" not in explicit.stderr, explicit.stderr

