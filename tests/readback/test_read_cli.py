"""The real `cohort` binary's read commands (`runs ls`, `runs show`, `runs export`, `logs`)
against a real server holding runs written by the real SDK (rb_data)."""
import csv
import io
import json
import os
import pty
import select
import subprocess
import threading
import time

import pytest

import rb_data
from rb_data import api, dataset, rb_client, rb_server  # noqa: F401 (fixtures)
from conftest import COHORT_BIN
from rb_data import PLAIN_STEPS, PROJECT, SHARED_RANKS, SHARED_STEPS, shared_loss


def cli_env(server, **extra):
    """The server's HOME (its config.json holds URL and key), no colour overrides."""
    env = {k: v for k, v in server.env.items()
           if k not in ("NO_COLOR", "COHORT_BASE_URL", "COHORT_API_KEY")}
    env.update(extra)
    return env


def cohort(server, *args, env=None, timeout=60):
    return subprocess.run([str(COHORT_BIN), *args], env=env or cli_env(server),
                          capture_output=True, text=True, timeout=timeout)


def run_in_pty(server, args, env):
    """Runs the binary with stdout and stderr on a pseudo-terminal; returns what it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(COHORT_BIN), *args], env=env, stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(master)
    return proc.returncode, b"".join(chunks).decode()


def table(stdout):
    """Parses an aligned table: column starts from the header, cells cut at those offsets."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    rows = []
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        # Aligned: every cell starts at its header's column (the text before it ends in spaces).
        for a in starts[1:]:
            assert line[a - 1] == " ", (line, a)
        rows.append(dict(zip(names, cells)))
    return rows


def test_runs_ls_prints_an_aligned_table_of_a_project(rb_server, dataset):
    out = cohort(rb_server, "runs", "ls", "--project", PROJECT)
    assert out.returncode == 0, out.stderr
    rows = table(out.stdout)
    assert {r["ID"] for r in rows} == {"plain1", "failed1", "ddp1", "ddp2"}
    by_id = {r["ID"]: r for r in rows}
    assert by_id["failed1"]["STATE"] == "failed"
    assert by_id["ddp1"]["WRITERS"] == str(SHARED_RANKS)
    assert by_id["ddp1"]["GROUP"] == "DDP" and by_id["plain1"]["JOB_TYPE"] == "train"
    assert "\x1b[" not in out.stdout  # not a terminal: no colour


@pytest.mark.parametrize("args,expected", [
    (["--group", "G1"], {"plain1", "failed1"}),
    (["--job-type", "ddp"], {"ddp1", "ddp2"}),
    (["--state", "failed,crashed"], {"failed1"}),
    (["--group", "G1", "--state", "finished"], {"plain1"}),
])
def test_runs_ls_filters(rb_server, dataset, args, expected):
    out = cohort(rb_server, "runs", "ls", "-p", PROJECT, *args)
    assert out.returncode == 0, out.stderr
    assert {r["ID"] for r in table(out.stdout)} == expected


def test_runs_ls_without_project_lists_every_project_with_a_project_column(rb_server, dataset):
    out = cohort(rb_server, "runs", "ls", "--group", "DDP")
    assert out.returncode == 0, out.stderr
    rows = table(out.stdout)
    assert {(r["PROJECT"], r["ID"]) for r in rows} == {(PROJECT, "ddp1"), (PROJECT, "ddp2")}


def test_runs_ls_colours_states_on_a_terminal_unless_no_color(rb_server, dataset):
    rc, text = run_in_pty(rb_server, ["runs", "ls", "-p", PROJECT, "--group", "G1"],
                          cli_env(rb_server, TERM="xterm"))
    assert rc == 0, text
    assert "\x1b[31mfailed\x1b[0m" in text and "\x1b[32mfinished\x1b[0m" in text
    rc, text = run_in_pty(rb_server, ["runs", "ls", "-p", PROJECT, "--group", "G1"],
                          cli_env(rb_server, TERM="xterm", NO_COLOR="1"))
    assert rc == 0 and "failed" in text and "\x1b[" not in text


def test_runs_ls_limit_says_how_many_are_hidden(rb_server, dataset):
    out = cohort(rb_server, "runs", "ls", "-p", PROJECT, "--limit", "1")
    assert out.returncode == 0 and len(table(out.stdout)) == 1
    assert "(1 of 4 runs" in out.stderr


def test_runs_show_prints_writers_states_and_last_values(rb_server, dataset):
    out = cohort(rb_server, "runs", "show", f"{PROJECT}/ddp1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"run       {dataset['entity']}/{PROJECT}/ddp1" in text
    assert "state     finished (exit code 0)" in text
    assert f"writers ({SHARED_RANKS})" in text
    writers_block = text.split("writers (")[1].split("\n\n")[0]
    wrows = table("\n".join(writers_block.splitlines()[1:]))
    assert [w["LABEL"] for w in wrows] == [f"rank_{r}" for r in range(SHARED_RANKS)]
    assert [w["PRIMARY"] for w in wrows] == ["yes", "", "", ""]
    assert all(w["STATE"] == "finished" for w in wrows)
    last_block = text.split("last values")[1].split("\n\n")[0]
    lrows = table("\n".join(last_block.splitlines()[1:]))
    got = {(r["KEY"], r["WRITER"]): r for r in lrows}
    for r in range(SHARED_RANKS):
        row = got[("loss", f"rank_{r}")]
        assert row["LAST"] == str(shared_loss(r, SHARED_STEPS - 1))
        assert row["STEP"] == str(SHARED_STEPS - 1) and row["POINTS"] == str(SHARED_STEPS)
    assert got[("val", "rank_0")]["LAST"] == str(-(SHARED_STEPS - 10))
    assert '"world_size":4' in text


def test_runs_show_with_full_path_and_missing_run(rb_server, dataset):
    out = cohort(rb_server, "runs", "show", f"{dataset['entity']}/{PROJECT}/failed1")
    assert out.returncode == 0 and "failed (exit code 3)" in out.stdout
    out = cohort(rb_server, "runs", "show", f"{PROJECT}/nosuch")
    assert out.returncode == 1 and "nosuch" in out.stderr and "not found" in out.stderr.lower()
    out = cohort(rb_server, "runs", "show", "justarun")
    assert out.returncode == 2 and "project/run_id" in out.stderr


def test_cli_with_a_bad_key_says_so(rb_server, dataset):
    out = cohort(rb_server, "runs", "ls", "-p", PROJECT,
                 env=cli_env(rb_server, COHORT_API_KEY="ck_" + "1" * 40))
    assert out.returncode == 1 and "cohort login" in out.stderr


def _api_rows(api, run_id):
    return list(api.run(f"{PROJECT}/{run_id}").scan_history())


def test_runs_export_csv_matches_the_api(rb_server, api, dataset, tmp_path):
    path = tmp_path / "ddp1.csv"
    out = cohort(rb_server, "runs", "export", f"{PROJECT}/ddp1", "--format", "csv", "-o",
                 str(path))
    assert out.returncode == 0, out.stderr
    assert f"exported {SHARED_RANKS * SHARED_STEPS} rows" in out.stderr
    assert "exporting [" not in out.stderr  # no bar when stderr is not a terminal
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == ["writer", "step", "time", "acc", "loss", "val"]
    expected = _api_rows(api, "ddp1")
    assert len(rows) == len(expected)
    for got, want in zip(rows, expected):
        assert (got["writer"], int(got["step"]), int(got["time"])) == (
            want["writer"], want["step"], want["time"])
        for k in ("acc", "loss", "val"):
            assert (float(got[k]) if got[k] else None) == want.get(k)
    assert not os.path.exists(str(path) + ".part")


def test_runs_export_jsonl_matches_the_api(rb_server, api, dataset, tmp_path):
    path = tmp_path / "plain.jsonl"
    out = cohort(rb_server, "runs", "export", f"{PROJECT}/plain1", "-f", "jsonl", "-o",
                 str(path), "--keys", "loss")
    assert out.returncode == 0, out.stderr
    got = [json.loads(l) for l in path.read_text().splitlines()]
    expected = list(api.run(f"{PROJECT}/plain1").scan_history(keys=["loss"]))
    assert len(got) == PLAIN_STEPS
    assert [(g["step"], g["time"], g["loss"]) for g in got] == [
        (e["step"], e["time"], e["loss"]) for e in expected]
    assert got[3]["loss"] == 0.25 and "acc" not in got[3]


def test_runs_export_to_stdout(rb_server, dataset):
    out = cohort(rb_server, "runs", "export", f"{PROJECT}/failed1", "-o", "-")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == 'writer,step,time,loss,"odd,key"'
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [float(r["loss"]) for r in rows] == [2.0 + s for s in range(10)]
    assert [float(r["odd,key"]) for r in rows] == [-s for s in range(10)]


def test_runs_export_draws_a_progress_bar_on_a_terminal(rb_server, dataset, tmp_path):
    rc, text = run_in_pty(rb_server, ["runs", "export", f"{PROJECT}/ddp1", "-o",
                                      str(tmp_path / "x.csv")], cli_env(rb_server))
    assert rc == 0, text
    total = SHARED_RANKS * SHARED_STEPS * 2 + SHARED_STEPS // 10
    assert f"exporting [{'#' * 30}] 100% {total}/{total} points" in text


def test_runs_export_missing_run_writes_nothing(rb_server, dataset, tmp_path):
    out = cohort(rb_server, "runs", "export", f"{PROJECT}/nosuch", "-o", str(tmp_path / "n.csv"))
    assert out.returncode == 1 and "nosuch" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_logs_prints_console_lines_with_labels_for_shared_runs(rb_server, dataset):
    out = cohort(rb_server, "logs", f"{PROJECT}/ddp1", "--label", "rank_1")
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if "step" in l]
    assert lines == [f"[rank_1] rank 1 step {s}" for s in range(0, SHARED_STEPS, 100)]
    out = cohort(rb_server, "logs", f"{PROJECT}/plain1", "--grep", "plain line")
    assert out.stdout.splitlines() == [f"plain line {s}" for s in range(0, PLAIN_STEPS, 10)]


LIVE = f'''
import os, sys, time, cohort
run = cohort.init(project="{PROJECT}", id="live1",
                  settings=cohort.Settings(x_stats_sampling_interval=0))
flag = sys.argv[1]
i = 0
while not os.path.exists(flag):
    print(f"tick {{i}}", flush=True)
    run.log({{"i": i}})
    i += 1
    time.sleep(0.1)
print("last words", flush=True)
run.finish()
'''


def test_logs_follow_tails_a_live_run_and_exits_when_it_finishes(rb_server, rb_client,
                                                                  dataset, tmp_path):
    script = tmp_path / "live.py"
    script.write_text(LIVE)
    flag = tmp_path / "stop"
    writer = rb_client.popen([script, flag])
    try:
        rb_data.dist_helpers.wait_until(
            lambda: rb_client.run_view("live1", PROJECT).get()["state"] == "running", timeout=60,
            what="the live run")
        follow = subprocess.Popen([str(COHORT_BIN), "logs", f"{PROJECT}/live1", "--follow",
                                   "--interval", "0.1"], env=cli_env(rb_server),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < 3 and time.monotonic() < deadline:  # lines keep arriving
            seen.append(follow.stdout.readline().rstrip("\n"))
        assert all(l.startswith("tick ") for l in seen), seen
        assert follow.poll() is None  # still following the live run
        flag.write_text("stop")
        # Not communicate(): it reads the pipe's fd directly and would drop lines already in
        # stdout's buffer from the readline() calls above.
        watchdog = threading.Timer(60, follow.kill)
        watchdog.start()
        try:
            out = follow.stdout.read()
            err = follow.stderr.read()
            follow.wait()
        finally:
            watchdog.cancel()
        assert follow.returncode == 0, err
        lines = seen + out.splitlines()
        assert lines[-1] == "last words"
        ticks = [int(l.split()[1]) for l in lines if l.startswith("tick ")]
        assert ticks == list(range(ticks[0], ticks[0] + len(ticks)))  # none lost or repeated
        assert "finished" in err
    finally:
        flag.write_text("stop")
        writer.communicate(timeout=60)
