"""Flags of the `cohort` terminal commands that are refused at parse time (a reviewer's list):
values that made them behave as something else (a negative --limit listed everything, a negative
--give-up-after never gave up, --prefix with --no-prefix silently took one) and a directory
`export` cannot create (it died in std::terminate, exit 134, without a word). Exit code 2 for
any command line that does not parse (CLI11's own codes leaked) and for arguments that cannot
work. A `sync` of a path with nothing to upload is an error."""
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
        assert r.returncode == 2 and flag in r.stderr, (args, r.returncode, r.stderr)
        assert len(r.stderr) < 300, r.stderr  # the message, not a range of 300 digits


def test_a_command_line_that_does_not_parse_is_exit_2(tmp_path):
    """docs/cli.md "Exit codes": CLI11's own codes leaked (105 to 109)."""
    env = dict(os.environ, HOME=str(tmp_path), COHORT_BASE_URL="http://127.0.0.1:1",
               COHORT_API_KEY="ck_" + "0" * 40)
    for args, said in ((["runs", "export"], "run"),  # RUN missing: was 106
                       (["runs", "export", "p/r", "--format", "xml"], "xml"),  # was 105
                       (["runs", "ls", "--no-such-flag"], "--no-such-flag"),  # was 109
                       (["no-such-command"], "subcommand"),
                       ([], "subcommand")):
        r = cohort(*args, env=env)
        assert r.returncode == 2 and said in r.stderr, (args, r.returncode, r.stderr)
    for args in (["--help"], ["runs", "export", "--help"], ["--version"]):
        r = cohort(*args, env=env)
        assert r.returncode == 0 and r.stdout, (args, r.returncode, r.stderr)


def test_migrate_between_the_same_store_is_a_bad_argument(tmp_path):
    db = str(tmp_path / "cohort.db")
    r = cohort("migrate", "--from", db, "--to", "sqlite:" + db)
    assert r.returncode == 2 and "same store" in r.stderr, (r.returncode, r.stderr)


def test_sync_of_a_path_without_writer_directories_is_an_error(tmp_path):
    """`cohort sync PATH` of the wrong directory said "0 writer(s), 0 uploaded" and exited 0."""
    env = dict(os.environ, HOME=str(tmp_path), COHORT_DIR="")
    empty = tmp_path / "empty"
    empty.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    for path in (empty, afile):
        r = cohort("sync", "--give-up-after", "1", str(path), env=env)
        assert r.returncode == 1, (path, r.returncode, r.stderr)
        assert f"no writer directories under {path}" in r.stderr and "meta.json" in r.stderr, \
            r.stderr
        assert "uploaded" not in r.stderr, r.stderr
    assert list(empty.iterdir()) == []


def test_export_into_a_directory_it_cannot_make_is_an_error_not_a_crash(server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cohort("export", "--store", str(server.data_dir / "cohort.db"), "--out",
               str(blocker / "sub") + "/")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "cannot create the directory" in r.stderr, r.stderr
