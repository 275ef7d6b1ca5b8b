"""Secrets and exposure: the server binds loopback by default, keys never reach its logs (not
even a failed one), key files are private (0600), keys are stored hashed, and the key CLI
creates, lists and revokes keys without printing anything but the new secret."""
import hashlib
import os
import pathlib
import stat
import subprocess

from conftest import COHORT_BIN, ServerProcess
from security_helpers import create_key, http


def listening_addresses(port):
    """Local addresses of TCP sockets listening on `port` (from /proc/net/tcp and tcp6)."""
    out = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = pathlib.Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # LISTEN
                out.append(addr)
    return out


def test_server_binds_loopback_by_default(server):
    assert server.url.startswith("http://127.0.0.1:")
    port = int(server.url.rsplit(":", 1)[1])
    assert listening_addresses(port) == ["0100007F"]  # 127.0.0.1, nothing else


def test_key_files_are_private(server, tmp_path):
    config = server.home / ".config" / "cohort" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    # `cohort login` on a client machine writes the same file the same way, even when an
    # existing file was world-readable.
    home = tmp_path / "client"
    target = home / ".config" / "cohort" / "config.json"
    target.parent.mkdir(parents=True)
    target.write_text("{}")
    target.chmod(0o644)
    key = create_key(server, "carol")
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="")
    r = subprocess.run([str(COHORT_BIN), "login", "--host", server.url, key], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert key not in r.stdout + r.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert key in target.read_text()


def test_no_key_in_server_logs_after_requests_and_failed_auth(tmp_path):
    s = ServerProcess(tmp_path).start()
    admin = s.config["api_key"]
    bob = create_key(s, "bob", role="member")
    wrong = "ck_" + "0" * 40
    revoked_name = "temp"
    try:
        url = s.url
        e = http(url + "/api/v1/viewer", key=admin)[1]["entity"]
        status, created, _ = http(url + "/api/v1/keys", "POST", {"name": revoked_name}, key=admin)
        assert status == 201
        temp = created["key"]
        assert http(url + f"/api/v1/keys/{created['id']}", "DELETE", key=admin)[0] == 200
        calls = [
            ("GET", "/api/v1/viewer", None, bob, False),
            ("GET", "/api/v1/viewer", None, wrong, False),                    # unknown key
            ("GET", "/api/v1/viewer", None, wrong, True),                     # unknown, Basic
            ("GET", "/api/v1/viewer", None, temp, False),                     # revoked key
            ("GET", "/api/v1/keys", None, bob, False),                        # member: 403
            ("POST", f"/api/v1/runs/{e}/proj", {"bad": 1}, admin, False),     # 400
            ("POST", f"/api/v1/runs/{e}/proj", {"name": "r"}, admin, False),
            ("GET", f"/api/v1/runs/{e}/proj/nope", None, admin, False),       # 404
            ("POST", "/graphql", {"query": "{ viewer { entity } }"}, admin, True),
            ("POST", "/graphql", {"query": "{ viewer"}, wrong, True),         # 401 + parse error
            ("POST", f"/files/{e}/proj/r1/file_stream", {"files": 1}, admin, True),
            ("POST", f"/files/{e}/proj/r1/file_stream", "not json", wrong, True),
        ]
        for method, path, body, key, basic in calls:
            raw = body.encode() if isinstance(body, str) else None
            http(url + path, method, None if raw else body, key=key, raw=raw, basic=basic)
        # A key in the query string or a header other than Authorization is still not logged.
        http(url + f"/api/v1/viewer?api_key={wrong}", headers={"X-Api-Key": wrong})
    finally:
        s.stop()
    logs = s.proc.stdout.read() + s.proc.stderr.read()
    assert "cohort server" in logs  # the log was captured
    for secret in (admin, bob, wrong, temp):
        assert secret not in logs
        assert secret[3:] not in logs
        assert hashlib.sha256(secret.encode()).hexdigest() not in logs


def test_keys_are_hashed_at_rest_and_cli_manages_them(server):
    import sqlite3
    key = create_key(server, "dave", role="member")
    assert key.startswith("ck_") and len(key) == 43
    db = sqlite3.connect(server.data_dir / "cohort.db")
    dump = "\n".join(db.iterdump())
    db.close()
    assert key not in dump and key[3:] not in dump
    assert hashlib.sha256(key.encode()).hexdigest() in dump
    assert http(server.url + "/api/v1/viewer", key=key)[1]["role"] == "member"
    env = server.env
    out = subprocess.run([str(COHORT_BIN), "keys", "list", "--entity", "dave", "--data-dir",
                          str(server.data_dir)], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert key not in out and key[:7] in out and "active" in out
    key_id = out.splitlines()[1].split()[0]
    subprocess.run([str(COHORT_BIN), "keys", "revoke", "--entity", "dave", key_id,
                    "--data-dir", str(server.data_dir)], capture_output=True, text=True,
                   env=env, check=True)
    # Revocation reaches the running server within its key cache time (a few seconds).
    import time
    deadline = time.monotonic() + 15
    while http(server.url + "/api/v1/viewer", key=key)[0] != 401:
        assert time.monotonic() < deadline, "revoked key still accepted"
        time.sleep(0.5)
    # Another entity's key id cannot be revoked from the CLI either.
    r = subprocess.run([str(COHORT_BIN), "keys", "revoke", "--entity", "eve", key_id,
                        "--data-dir", str(server.data_dir)], capture_output=True, text=True,
                       env=env)
    assert r.returncode != 0
