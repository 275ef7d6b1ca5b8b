"""What `cohort server` does at start besides serving: it writes the user's config only when it
made the admin key (a server joining a store with keys, or a restart, leaves it alone; with
--no-user-config the key is shown instead), and its connection limit fits the open-file limit
by default."""
import json
import os
import resource
import socket
import subprocess
import time

from conftest import COHORT_BIN, Api, ServerProcess


def config_path(home):
    return home / ".config" / "cohort" / "config.json"


def test_servers_joining_a_store_with_keys_leave_the_user_config_alone(tmp_path):
    store = f"sqlite://{tmp_path / 'shared.db'}"
    home = tmp_path / "home"
    first = ServerProcess(home, ["--store", store]).start()
    try:
        cfg = json.loads(config_path(home).read_text())
        assert cfg["base_url"] == first.url  # it made the key: it says where it is
        # The operator points clients at the load balancer.
        r = subprocess.run([str(COHORT_BIN), "login", "--host", "https://lb.example.com",
                            cfg["api_key"]], env=first.env, capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0, r.stderr
        pointed = config_path(home).read_text()
        # A second server of the same store on this account, on another port.
        second = ServerProcess(home, ["--store", store]).start()
        try:
            assert Api(second.url, cfg["api_key"]).get("/api/v1/viewer")[0] == 200
        finally:
            second.stop()
    finally:
        first.stop()
    restarted = ServerProcess(home, ["--store", store]).start()
    restarted.stop()
    assert config_path(home).read_text() == pointed
    assert json.loads(pointed)["base_url"] == "https://lb.example.com"


def test_no_user_config_shows_the_key_it_made(tmp_path):
    server = ServerProcess(tmp_path, ["--no-user-config"]).start()
    try:
        assert not config_path(tmp_path).exists()
        server.stop()
        err = server.proc.stderr.read()
        key_file = server.data_dir / "admin-key"
        assert f"created the admin key in {key_file} (mode 0600)" in err, err
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        key = key_file.read_text().strip()
        assert key.startswith("ck_") and key not in err
    finally:
        server.stop()
    again = ServerProcess(tmp_path, ["--no-user-config"]).start()
    try:
        assert Api(again.url, key).get("/api/v1/viewer")[0] == 200
    finally:
        again.stop()


def limited_server(tmp_path, limit, extra=()):
    def preexec():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
    proc = subprocess.Popen([str(COHORT_BIN), "server", "--port", "0", "--data-dir",
                             str(tmp_path / "data"), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://"), proc.stderr.read()
    return proc, url


def stop(proc):
    proc.terminate()
    proc.wait(timeout=10)
    return proc.stderr.read()


def test_default_connection_limit_fits_the_open_file_limit(tmp_path):
    limit = 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard == resource.RLIM_INFINITY or hard >= 400
    proc, url = limited_server(tmp_path, limit)
    host, port = url.split("//")[1].split(":")
    conns = []
    try:
        # 200 descriptors minus the 64 kept for the store, logs and listeners.
        for _ in range(limit - 64):
            conns.append(socket.create_connection((host, int(port)), timeout=10))
        time.sleep(0.5)
        extra = socket.create_connection((host, int(port)), timeout=10)
        extra.settimeout(10)
        answer = extra.recv(4096)
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
    finally:
        for c in conns:
            c.close()
        err = stop(proc)
    assert "warning" not in err, err
    # An explicit limit above what the descriptors allow is kept, with a warning.
    proc, url = limited_server(tmp_path, limit, ["--max-connections", "5000"])
    err = stop(proc)
    assert "open-file limit (200) is below --max-connections (5000) + 64" in err, err


def test_a_first_start_keeps_the_accounts_login_to_another_server(tmp_path):
    """A scratch server (`--port 0`, a new data directory) made its admin key and wrote it over
    the account's `cohort login` config: every client of the account followed it to a random
    port. The login to another server is kept and the new key shown instead."""
    home = tmp_path / "home"
    config_path(home).parent.mkdir(parents=True)
    team = '{"base_url":"https://cohort.example.com","api_key":"ck_teamkey123"}\n'
    config_path(home).write_text(team)
    server = ServerProcess(home).start()
    try:
        assert config_path(home).read_text() == team
    finally:
        server.stop()
    err = server.proc.stderr.read()
    assert "holds this account's login to https://cohort.example.com, kept" in err, err
    assert f"cohort login --host {server.url} KEY" in err, err
    key = (server.data_dir / "admin-key").read_text().strip()
    assert key.startswith("ck_") and key not in err
    # A login to this very address (a restart on a new data directory) is replaced, as before.
    other = tmp_path / "home2"
    first = ServerProcess(other).start()
    first.stop()
    url = json.loads(config_path(other).read_text())["base_url"]
    port = int(url.rsplit(":", 1)[1])
    again = ServerProcess(other, port=port)
    again.data_dir = tmp_path / "fresh"  # a new store: a new admin key
    again.start()
    try:
        cfg = json.loads(config_path(other).read_text())
        assert cfg["base_url"] == url
        assert Api(url, cfg["api_key"]).get("/api/v1/viewer")[0] == 200  # the new store's key
    finally:
        again.stop()


def test_login_checks_the_key_and_keeps_the_saved_server(tmp_path):
    """`cohort login KEY` wrote the default localhost URL over the saved one, and saved a key the
    server refuses with exit 0."""
    home = tmp_path / "home"
    server = ServerProcess(home, ["--no-user-config"]).start()
    try:
        # Written after the server printed its URL (with the line that names the file): waited
        # for, not read at once (a clean CI run found it not there yet).
        key_file = server.data_dir / "admin-key"
        deadline = time.time() + 30
        while not (key_file.exists() and key_file.read_text().endswith("\n")):
            assert time.time() < deadline, "no admin-key file"
            time.sleep(0.05)
        key = key_file.read_text().strip()

        def login(*args):
            return subprocess.run([str(COHORT_BIN), "login", *args], env=server.env,
                                  capture_output=True, text=True, timeout=30)

        hostport = server.url.removeprefix("http://")
        bare = login("--host", hostport, key)  # saved as it was: links were not clickable
        assert bare.returncode == 2, bare
        assert f"--host {hostport} is not a URL" in bare.stderr, bare.stderr
        assert f"e.g. --host http://{hostport}" in bare.stderr, bare.stderr
        assert not config_path(home).exists()
        refused = login("--host", server.url, "ck_not_a_key_of_this_server")
        assert refused.returncode == 1, refused
        assert "refused this key" in refused.stderr and "nothing saved" in refused.stderr
        assert not config_path(home).exists()
        ok = login("--host", server.url, key)
        assert ok.returncode == 0, ok.stderr
        assert f"Logged in to {server.url}" in ok.stdout
        rotated = login(key)  # a new key for the saved server: --host not given
        assert rotated.returncode == 0, rotated.stderr
        assert json.loads(config_path(home).read_text())["base_url"] == server.url
    finally:
        server.stop()


def test_export_refuses_the_stores_own_file_and_an_existing_file(tmp_path):
    """`cohort export --store X.db --out X.db` renamed the dump over the live database (exit 0);
    any other existing file was replaced without a word."""
    server = ServerProcess(tmp_path).start()
    server.stop()
    db = server.data_dir / "cohort.db"
    before = db.read_bytes()

    def export(*args):
        return subprocess.run([str(COHORT_BIN), "export", "--store", str(db), *args],
                              capture_output=True, text=True, timeout=60)

    own = export("--out", str(db))
    assert own.returncode != 0 and "is the store's own file" in own.stderr, own
    assert db.read_bytes() == before
    dump = tmp_path / "x.cdump"
    dump.write_text("keep me")
    exists = export("--out", str(dump))
    assert exists.returncode != 0 and "--force" in exists.stderr, exists
    assert dump.read_text() == "keep me"
    forced = export("--out", str(dump), "--force")
    assert forced.returncode == 0, forced.stderr
    assert dump.read_bytes()[:4] != b"keep"


def test_a_port_in_use_is_named_with_what_to_do(tmp_path):
    """The bind error is reported as it was (it was read after the acceptor's close had replaced
    it: "bind 127.0.0.1:P: Success")."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([str(COHORT_BIN), "server", "--port", str(port), "--data-dir",
                            str(tmp_path / "data")], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME="",
                                    XDG_DATA_HOME=""))
    assert r.returncode != 0
    assert f"bind 127.0.0.1:{port}: address already in use: is another server on this port? " \
           "choose another with --port (or --port 0 for any free one)" in r.stderr, r.stderr
    assert "Success" not in r.stderr, r.stderr


def test_the_login_link_is_at_the_public_url(tmp_path):
    """A server listening on 0.0.0.0 behind a name: the login link (the file and the printed
    line) is at --public-url, not at 127.0.0.1."""
    server = ServerProcess(tmp_path, extra_args=["--address", "0.0.0.0", "--public-url",
                                                 "http://myhost:8787/"]).start()
    try:
        assert server.url.startswith("http://127.0.0.1:"), server.url
        assert server.ui_line.startswith("Open the web UI: http://myhost:8787/ "), server.ui_line
        link = (server.data_dir / "login-link").read_text().strip()
        assert link.startswith("http://myhost:8787/?token="), link
        assert server.ui_url == link
    finally:
        server.stop()
