"""Artifact uploads through the node agent (docs/artifacts.md, issue 14): a real training process
(the Python SDK) logs a multi-part artifact against a real `cohort server`, its real agent is
killed with SIGKILL in the middle of the upload, a new agent resumes it from its WAL (the parts
the server holds are not sent again), and the version is committed with the digest of its
manifest; logging the unchanged file again answers the same version with no part uploaded.
"""
import hashlib
import json
import os
import pathlib
import signal
import subprocess
import sys

import art_helpers  # noqa: F401  (paths: tests/, tests/python, tests/distributed)
from conftest import wait_for
from dist_helpers import client  # noqa: F401  (fixture)

PART = 8 << 20


def manifest_digest(entries):
    """docs/artifacts.md "Digests": the version digest of blob entries [(path, sha, size)]."""
    h = hashlib.sha256(b"cohort-artifact-manifest-v1\n")
    for path, sha, size in sorted(entries):
        h.update(f"{path}\t{sha}\t{size}\n".encode())
    return h.hexdigest()


SCRIPT = r"""
import json, sys
import cohort

path = sys.argv[1]
run = cohort.init(project="arts", settings=cohort.Settings(finish_timeout=120))
art = cohort.Artifact("ckpt", "model", metadata={"epoch": 1})
art.add_file(path, "model.bin")
run.log_artifact(art, aliases=["best"])
print("LOGGED", flush=True)
art.wait(timeout=120)
print("COMMITTED", json.dumps({"version": art.version, "digest": art.digest, "size": art.size,
                               "state": art._state}), flush=True)
again = run.log_artifact(path, name="ckpt", type="model")  # the same file, as model.bin
again.wait(timeout=60)
print("RELOGGED", json.dumps({"version": again.version, "digest": again.digest,
                              "state": again._state}), flush=True)
run.finish()
print("FINISHED", flush=True)
"""


def read_line(proc, prefix):
    while True:
        line = proc.stdout.readline()
        assert line, f"the script ended before {prefix}: {proc.stderr.read()[-4000:]}"
        if line.startswith(prefix):
            return line[len(prefix):].strip()


def test_artifact_upload_survives_agent_sigkill_and_relog_uploads_nothing(client, tmp_path):
    data = os.urandom(20 << 20)  # 3 parts: 8 + 8 + 4 MiB
    src = tmp_path / "model.bin"
    src.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    script = tmp_path / "log_artifact.py"
    script.write_text(SCRIPT)
    # One part at a time, slowly: the agent is killed with parts stored and parts missing.
    proc = client.popen([script, src], env={"COHORT_ARTIFACT_PARTS": "1",
                                            "COHORT_ARTIFACT_PART_DELAY_MS": "500",
                                            "COHORT_BACKOFF_MAX_S": "1"})
    try:
        read_line(proc, "LOGGED")
        blob = f"/api/v1/blobs/{client.entity}/{sha}?size={len(data)}"

        def some_parts():
            status, body = client.api.get(blob)
            return status == 200 and not body["stored"] and len(body["parts"]) >= 1 and body
        held = wait_for(some_parts, timeout=60)
        assert held, client.api.get(blob)
        pids = client.agent_pids()
        assert pids, "no agent serves the training process"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        status, body = client.api.get(blob)
        assert not body["stored"] and len(body["parts"]) < 3, body

        committed = json.loads(read_line(proc, "COMMITTED"))
        expected = manifest_digest([("model.bin", sha, len(data))])
        assert committed["version"] == "v0", committed
        assert committed["digest"] == expected, committed
        assert committed["size"] == len(data), committed
        # The new agent sent only what the server did not hold.
        assert committed["state"]["parts_uploaded"] < 3, committed
        assert client.agent_pids() and not set(client.agent_pids()) & set(pids)

        relogged = json.loads(read_line(proc, "RELOGGED"))
        assert relogged["version"] == "v0" and relogged["digest"] == expected, relogged
        assert relogged["state"]["created"] is False, relogged
        assert relogged["state"]["parts_uploaded"] == 0, relogged
        read_line(proc, "FINISHED")
        assert proc.wait(timeout=60) == 0, proc.stderr.read()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # The server's view: the version, its alias, its file, the bytes.
    path = f"/api/v1/artifacts/{client.entity}/arts/ckpt"
    version = client.get(f"{path}/v0")
    assert version["digest"] == expected and version["size"] == len(data), version
    assert set(version["aliases"]) >= {"best", "latest"}, version
    assert [(f["path"], f["sha256"], f["size"]) for f in version["files"]] == [
        ("model.bin", sha, len(data))], version
    status, listing = client.api.get(f"{path}/versions")
    assert status == 200 and len(listing["versions"]) == 1, listing
    # The staged copies are gone once committed (what stays: the lock file of the process that
    # claimed them, under .clients, removed by the agent an hour after that process ended).
    staging = [p for p in client.server.home.rglob("%artifacts/staging/*") if p.name != ".clients"]
    assert staging == [], staging


def test_log_artifact_refuses_bad_names_at_the_call(client, tmp_path):
    code = r"""
import cohort
for bad in ["", ".hidden", "a/b", "x" * 129, "sp ace"]:
    try:
        cohort.Artifact(bad, "model")
    except ValueError as e:
        print("REFUSED", repr(bad)[:20], e)
    else:
        print("ACCEPTED", repr(bad))
art = cohort.Artifact("ok", "model")
for bad in ["../x", "/abs", "a//b", "a\\b"]:
    try:
        art.add_reference("s3://bucket/key", name=bad)
    except ValueError as e:
        print("REFUSED", e)
    else:
        print("ACCEPTED", repr(bad))
run = cohort.init(project="arts")
for alias in ["latest2", "v3", "versions", "bad alias"]:
    try:
        run.log_artifact(cohort.Artifact("x", "model").add_reference("s3://b/k"), aliases=[alias])
    except ValueError as e:
        print("REFUSED", e)
    else:
        print("ACCEPTED", alias)
run.finish()
"""
    out = client.python(code, timeout=60)
    assert out.returncode == 0, out.stderr[-4000:]
    lines = out.stdout.splitlines()
    accepted = [l for l in lines if l.startswith("ACCEPTED")]
    assert accepted == ["ACCEPTED latest2"], lines
    assert sum(l.startswith("REFUSED") for l in lines) == 5 + 4 + 3, lines
    assert any("reserved" in l for l in lines), lines
    assert any("'..' segments" in l for l in lines), lines


FINISH_SCRIPT = r"""
import sys
import cohort

path, timeout = sys.argv[1], float(sys.argv[2])
run = cohort.init(project="arts", settings=cohort.Settings(finish_timeout=timeout))
art = cohort.Artifact("fin", "dataset")
art.add_file(path, "data.bin")
art.add_reference("s3://bucket/extra.csv", digest="etag", size=5)
run.log_artifact(art)
run.finish()  # no wait(): finish waits for the upload (within its timeout)
print("FINISHED", flush=True)
"""


def test_finish_waits_for_the_upload_and_shows_a_line_per_file(client, tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom((8 << 20) + 100))
    script = tmp_path / "finish.py"
    script.write_text(FINISH_SCRIPT)
    out = client.run([script, src, "60"], timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "FINISHED" in out.stdout
    # Not a terminal: lines, and the outcome.
    assert "cohort: artifact fin committed as v0" in out.stderr, out.stderr[-4000:]
    # Committed when finish returned: no waiting here.
    version = client.get(f"/api/v1/artifacts/{client.entity}/arts/fin/v0")
    assert version["file_count"] == 2 and version["size"] == (8 << 20) + 100 + 5, version


def test_finish_past_its_timeout_says_what_is_left_and_the_agent_finishes_it(client, tmp_path):
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(3 << 20))
    script = tmp_path / "finish.py"
    script.write_text(FINISH_SCRIPT)
    # Slow parts: the upload outlives the 2 s finish timeout and the training process.
    out = client.run([script, src, "2"], timeout=120,
                     env={"COHORT_ARTIFACT_PART_DELAY_MS": "8000"})
    assert out.returncode == 0, out.stderr[-4000:]
    assert "not uploaded within finish_timeout; the agent goes on uploading it" in out.stderr, \
        out.stderr[-4000:]
    path = f"/api/v1/artifacts/{client.entity}/arts/fin/v0"
    assert client.get(path, missing=True) is None  # not yet: the process has gone
    assert wait_for(lambda: client.get(path, missing=True), timeout=60), "the agent did not " \
        "finish the upload"


OFFLINE_SCRIPT = r"""
import sys
import cohort

run = cohort.init(project="arts", mode="offline")
art = cohort.Artifact("off", "model")
art.add_file(sys.argv[1], "w.bin")
run.log_artifact(art, aliases=["best"])
run.finish()
print("FINISHED", run.id, flush=True)
"""


def test_an_offline_run_keeps_its_versions_for_cohort_sync(client, tmp_path):
    src = tmp_path / "w.bin"
    data = os.urandom((8 << 20) + 7)
    src.write_bytes(data)
    script = tmp_path / "offline.py"
    script.write_text(OFFLINE_SCRIPT)
    out = client.run([script, src], timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "`cohort sync` uploads them" in out.stderr, out.stderr[-4000:]
    path = f"/api/v1/artifacts/{client.entity}/arts/off/v0"
    assert client.get(path, missing=True) is None
    client.stop_agents()  # sync takes what no live agent holds
    sync = subprocess.run([str(client.env["COHORT_BIN"]), "sync"], env=client.env,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 0, sync.stderr[-4000:]
    version = client.get(path)
    sha = hashlib.sha256(data).hexdigest()
    assert version["digest"] == manifest_digest([("w.bin", sha, len(data))]), version
    assert "best" in version["aliases"], version


def test_finish_on_a_terminal_draws_a_progress_bar(client, tmp_path):
    import pty
    import threading
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom((16 << 20) + 1))
    script = tmp_path / "finish.py"
    script.write_text(FINISH_SCRIPT)
    master, slave = pty.openpty()
    chunks = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    # Slow parts, so that the bar is drawn while the upload goes on.
    env = client._env({"COHORT_ARTIFACT_PARTS": "1", "COHORT_ARTIFACT_PART_DELAY_MS": "500"})
    proc = subprocess.Popen([sys.executable, str(script), str(src), "60"], env=env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=10)
    os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    assert "FINISHED" in out
    assert "\rcohort: uploading artifacts [" in text, text[-2000:]
    assert "cohort: artifact fin committed as v0" in text, text[-2000:]


def test_artifact_upload_survives_a_server_sigkill(tmp_path):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fault"))
    from fault_helpers import FaultServer
    from dist_helpers import Client
    server = FaultServer(tmp_path / "srv").start()
    c = Client(server, tmp_path)
    data = os.urandom(20 << 20)
    src = tmp_path / "model.bin"
    src.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    script = tmp_path / "log_artifact.py"
    script.write_text(SCRIPT)
    proc = c.popen([script, src], env={"COHORT_ARTIFACT_PARTS": "1",
                                       "COHORT_ARTIFACT_PART_DELAY_MS": "500",
                                       "COHORT_BACKOFF_MAX_S": "1"})
    try:
        read_line(proc, "LOGGED")
        blob = f"/api/v1/blobs/{c.entity}/{sha}?size={len(data)}"

        def some_parts():
            status, body = c.api.get(blob)
            return status == 200 and not body["stored"] and len(body["parts"]) >= 1 and body
        assert wait_for(some_parts, timeout=60), c.api.get(blob)
        server.kill9()
        server.start()  # same port, same data directory
        committed = json.loads(read_line(proc, "COMMITTED"))
        assert committed["digest"] == manifest_digest([("model.bin", sha, len(data))]), committed
        assert committed["version"] == "v0", committed
        read_line(proc, "FINISHED")
        assert proc.wait(timeout=60) == 0, proc.stderr.read()[-4000:]
        version = c.get(f"/api/v1/artifacts/{c.entity}/arts/ckpt/v0")
        assert version["size"] == len(data), version
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        c.stop_agents()
        server.stop()


OVERWRITE_SCRIPT = r"""
import json, sys
import cohort

path = sys.argv[1]
run = cohort.init(project="arts", settings=cohort.Settings(finish_timeout=120))
art = cohort.Artifact("mutable", "model")
art.add_file(path, "model.bin")  # the default policy: copied while hashed (not synced)
run.log_artifact(art)
art._thread.join()  # hashed, copied and handed to the agent
print("STAGED", flush=True)
sys.stdin.readline()  # the test rewrites the file in place meanwhile
art.wait(timeout=120)
print("COMMITTED", json.dumps({"version": art.version, "digest": art.digest}), flush=True)
run.finish()
"""


def test_a_file_rewritten_in_place_after_logging_does_not_change_the_version(client, tmp_path):
    # What a job that saves its checkpoint again does (same inode, truncated and rewritten) while
    # the agent still uploads the version: the version keeps the bytes that were logged.
    data = os.urandom((8 << 20) + 4096)  # 2 parts
    src = tmp_path / "model.bin"
    src.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    script = tmp_path / "overwrite.py"
    script.write_text(OVERWRITE_SCRIPT)
    proc = client.popen([script, src], env={"COHORT_ARTIFACT_PARTS": "1",
                                            "COHORT_ARTIFACT_PART_DELAY_MS": "300"},
                        stdin=subprocess.PIPE)
    try:
        read_line(proc, "STAGED")
        inode = src.stat().st_ino
        with open(src, "wb") as f:  # in place: the same inode
            f.write(os.urandom(len(data)))
        assert src.stat().st_ino == inode
        proc.stdin.write("\n")
        proc.stdin.flush()
        committed = json.loads(read_line(proc, "COMMITTED"))
        assert committed["version"] == "v0", committed
        assert committed["digest"] == manifest_digest([("model.bin", sha, len(data))]), committed
        status, body = client.api.get(f"/api/v1/blobs/{client.entity}/{sha}?size={len(data)}")
        assert status == 200 and body["stored"], body  # the server checked the logged bytes
        assert proc.wait(timeout=60) == 0, proc.stderr.read()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_cohort_sync_of_a_version_the_server_refuses_fails_naming_it(client, tmp_path):
    # The collection is a dataset; the offline job logs a model under its name: the commit is
    # refused for good (409). The sync said "1 uploaded" and exited 0, the copies deleted.
    status, body = client.api.post(f"/api/v1/artifacts/{client.entity}/arts/off",
                                   {"type": "dataset", "files": []})
    assert status == 201, body
    src = tmp_path / "w.bin"
    src.write_bytes(os.urandom(1 << 20))
    script = tmp_path / "offline.py"
    script.write_text(OFFLINE_SCRIPT)
    out = client.run([script, src], timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    client.stop_agents()
    sync = subprocess.run([str(client.env["COHORT_BIN"]), "sync"], env=client.env,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode != 0, sync.stderr[-4000:]
    assert "artifact off" in sync.stderr and "refused for good" in sync.stderr, sync.stderr[-4000:]
