"""Flags of the `cohort` terminal commands that are refused at parse time (a reviewer's list):
values that made them behave as something else (a negative --limit listed everything, a
negative --give-up-after never gave up, --prefix with --no-prefix silently took one) and a
directory `export` cannot create (it died in std::terminate, exit 134, without a word)."""
import os
import subprocess

from conftest import COHORT_BIN


def cohort(*args, env=None):
    return subprocess.run([str(COHORT_BIN), *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_bad_flag_values_are_refused_naming_the_flag(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), COHORT_BASE_URL="http://127.0.0.1:1",
               COHORT_API_KEY="ck_" + "0" * 40)
    for args, flag in ((["runs", "ls", "--limit", "-5"], "--limit"),
                       (["alerts", "ls", "--project", "p", "--limit", "-5"], "--limit"),
                       (["agent", "--idle-exit", "-1"], "--idle-exit"),
                       (["sync", "--give-up-after", "-5"], "--give-up-after"),
                       (["logs", "p/r", "--prefix", "--no-prefix"], "prefix")):
        r = cohort(*args, env=env)
        assert r.returncode not in (0, 1) and flag in r.stderr, (args, r.returncode, r.stderr)
        assert len(r.stderr) < 300, r.stderr  # the message, not a range of 300 digits


def test_export_into_a_directory_it_cannot_make_is_an_error_not_a_crash(server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cohort("export", "--store", str(server.data_dir / "cohort.db"), "--out",
               str(blocker / "sub") + "/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "cannot create the directory" in r.stderr, r.stderr
