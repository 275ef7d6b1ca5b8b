"""The scale-out deployment as docs/operations.md describes it: the shipped nginx configuration
(deploy/nginx/cohort.conf, only its "site:" lines replaced) run by Debian's nginx on loopback
with TLS in front of two `cohort server` processes sharing a real PostgreSQL database.

Checked through nginx: browser sessions and login links work on every server (they live in the
store), a shared run written by real training processes through the node agent loses and
duplicates nothing while one server is killed with SIGKILL mid-job and restarted, /metrics is
not served to the public, plain HTTP redirects, and PostgreSQL logs no error (the one-round-trip
ingest path never fails on purpose)."""
import json
import os
import pathlib
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, wait_for
from .pg_cluster import PgCluster
from .pg_servers import server_log

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fault"))
from fault_helpers import (FaultServer, Writers, assert_exactly_once, free_port,  # noqa: E402
                           key_counts, random_run_id, run_state, writer_states)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CONF = ROOT / "deploy" / "nginx" / "cohort.conf"
SIGNING_KEYS = "k" * 48  # shared by the servers of the deployment


def site_config(tmp, servers, https_port, http_port, cert, key):
    """The shipped file with its "site:" lines pointed at this test; fails when a "site:" line
    is not where the test expects it, so the shipped file cannot drift from what is tested."""
    text = CONF.read_text()
    replacements = [
        (r"^user www-data;", "user root;" if os.geteuid() == 0 else "# user: not root"),
        (r"/run/cohort-nginx\.pid", str(tmp / "nginx.pid")),
        (r"/var/log/nginx/cohort-error\.log", str(tmp / "error.log")),
        (r"/var/log/nginx/cohort-access\.log", str(tmp / "access.log")),
        (r"/var/lib/nginx/body", str(tmp / "body")),
        (r"/var/lib/nginx/proxy", str(tmp / "proxy")),
        (r"listen 80;", f"listen 127.0.0.1:{http_port};"),
        (r"listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;"),
        (r"/etc/ssl/certs/cohort\.example\.com\.pem", str(cert)),
        (r"/etc/ssl/private/cohort\.example\.com\.key", str(key)),
    ]
    for pattern, new in replacements:
        text, n = re.subn(pattern, new, text, flags=re.M)
        assert n >= 1, f"{pattern!r} is not in {CONF}"
    upstream = "\n".join(f"        server 127.0.0.1:{s.port} max_fails=1 fail_timeout=2s;"
                         for s in servers)
    text, n = re.subn(r"^\s*server 10\.0\.0\.11:8787 [^\n]*\n\s*server 10\.0\.0\.12:8787 [^\n]*",
                      upstream, text, flags=re.M)
    assert n == 2, "the two upstream blocks changed shape"
    assert "site:" not in re.sub(r"#.*", "", text)
    return text


class Deployment:
    def __init__(self, tmp):
        self.tmp = tmp
        self.cluster = PgCluster().start()
        self.cluster.create_database("cohort")
        self.store = self.cluster.url("cohort", "pool_size=8")
        env = {"COHORT_SIGNING_KEYS": SIGNING_KEYS}
        # One account on one machine runs both servers (as the operator in issue 18 did): the
        # first makes the admin key and the user config, the second joins.
        # One blob directory, as a shared file system would be (a PostgreSQL store needs one).
        self.a, self.b = (FaultServer(tmp / "home", ["--store", self.store,
                                                     "--blob-dir", str(tmp / "blobs")])
                          for _ in range(2))
        for server, name in ((self.a, "a"), (self.b, "b")):
            server.data_dir = tmp / name
            server.env.update(env)
            server.start()
        ngx = tmp / "nginx"
        ngx.mkdir()
        self.cert, self.key = ngx / "cert.pem", ngx / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", str(self.key), "-out", str(self.cert), "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True,
                       capture_output=True)
        self.https_port, self.http_port = free_port(), free_port()
        conf = ngx / "nginx.conf"
        conf.write_text(site_config(ngx, [self.a, self.b], self.https_port, self.http_port,
                                    self.cert, self.key))
        check = subprocess.run([NGINX, "-t", "-c", str(conf), "-e", str(ngx / "error.log")],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        self.nginx = subprocess.Popen([NGINX, "-c", str(conf), "-e", str(ngx / "error.log"), "-g",
                                       "daemon off;"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        self.url = f"https://127.0.0.1:{self.https_port}"
        self.ssl = ssl.create_default_context(cafile=str(self.cert))
        assert wait_for(lambda: self.get("/healthz")[0] == 200, timeout=20), "nginx did not start"

    def call(self, method, path, body=None, key=None, base=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request((base or self.url) + path, data=data, method=method)
        if key:
            req.add_header("Authorization", "Bearer " + key)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ssl) as r:
                status, text, headers = r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, text, headers = e.code, e.read().decode(), dict(e.headers)
        except OSError:
            return 0, None, {}
        try:
            return status, json.loads(text), headers
        except ValueError:
            return status, text, headers

    def get(self, path, key=None, base=None):
        return self.call("GET", path, key=key, base=base)

    def pg_errors(self):
        return server_log(self.cluster, "ERROR:")

    def close(self):
        if self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGQUIT)
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait()
        for s in (self.a, self.b):
            s.stop()
        self.cluster.stop()


@pytest.fixture
def deployment(tmp_path):
    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed: scripts/install-deps.sh installs it")
    d = Deployment(tmp_path)
    yield d
    d.close()


def test_sessions_and_login_links_work_on_every_server_behind_nginx(deployment):
    d = deployment
    admin = d.a.config["api_key"]
    # The login link the first server printed, used through nginx.
    token = re.search(r"token=(\w+)", (d.a.data_dir / "login-link").read_text()).group(1)
    status, session, _ = d.call("POST", "/api/v1/sessions", {"token": token})
    assert status == 201, session
    session = session["key"]
    for _ in range(20):  # least_conn spreads these over both servers
        assert d.get("/api/v1/viewer", key=session)[0] == 200
    for server in (d.a, d.b):  # and each server knows the session itself
        assert d.get("/api/v1/viewer", key=session, base=server.url)[0] == 200
    # A link made on one server opens a session on the other.
    made = d.call("POST", "/api/v1/login-tokens", {}, key=admin, base=d.a.url)[1]
    status, other, _ = d.call("POST", "/api/v1/sessions", {"token": made["token"]}, base=d.b.url)
    assert status == 201, other
    assert d.call("POST", "/api/v1/sessions", {"token": made["token"]}, base=d.a.url)[0] == 401
    # Logout through nginx ends the session on both servers (at once on the one that ended it,
    # within the few seconds of the key cache on the other).
    assert d.call("DELETE", "/api/v1/sessions", key=session)[0] == 200
    assert wait_for(lambda: all(d.get("/api/v1/viewer", key=session, base=s.url)[0] == 401
                                for s in (d.a, d.b)), timeout=10)
    # The servers' user config was written once, by the server that made the key.
    cfg = (d.tmp / "home" / ".config" / "cohort" / "config.json").read_text()
    assert d.a.url in cfg


def test_public_surface_of_the_deployment(deployment):
    d = deployment
    status, body, headers = d.get("/healthz")
    assert status == 200 and body["status"] == "ok"
    status, _, _ = d.get("/metrics")
    assert status == 403
    assert d.get("/metrics", base=d.a.url)[0] == 200  # scraped on each server's own address
    status, _, headers = d.get("/")
    assert status == 200 and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["Strict-Transport-Security"].startswith("max-age=")
    # Plain HTTP redirects to HTTPS.
    req = urllib.request.Request(f"http://127.0.0.1:{d.http_port}/api/v1/viewer")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kw):
            return None

    try:
        urllib.request.build_opener(NoRedirect).open(req, timeout=10)
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 308 and e.headers["Location"].startswith("https://"), e.headers


def test_shared_run_through_nginx_survives_a_server_killed_mid_job(deployment):
    d = deployment
    errors_before = len(d.pg_errors())
    writers = Writers(d.a, COHORT_BASE_URL=d.url, COHORT_CA_BUNDLE=str(d.cert))
    run_id = random_run_id("lb")
    steps = 1500
    specs = {"rank_0": dict(writer=1, steps=steps, keys=4),
             "rank_1": dict(writer=2, steps=steps, keys=4),
             "rank_2": dict(writer=3, steps=steps, keys=4)}
    try:
        writers.start(run_id, 1, steps, label="rank_0", shared=True, primary=True, sleep_ms=4)
        writers.start(run_id, 2, steps, label="rank_1", shared=True, primary=False, sleep_ms=4)
        writers.start(run_id, 3, steps, label="rank_2", shared=True, primary=False, sleep_ms=4)
        api = d.a.api()
        assert wait_for(lambda: sum(c for c in _counts(api, run_id)) > 200, timeout=60)
        d.b.kill9()  # mid-job: nginx moves its traffic to the other server
        stored_at_kill = sum(_counts(api, run_id))
        assert all(p.poll() is None for p, _ in writers.procs), "the job ended before the kill"
        time.sleep(1.5)
        d.b.start()
        results = writers.wait_all(timeout=180)
        for spec, rc, out, err in results:
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
            assert "finish ok" in out, (spec, out[-2000:])
        checked = assert_exactly_once(api, run_id, specs, timeout=90)
        assert checked == 3 * 4 * steps
        assert stored_at_kill < checked
        print(f"nginx deployment: {stored_at_kill} of {checked} points stored when a server was "
              f"killed; every point stored once")
        assert wait_for(lambda: set(writer_states(api, run_id).values()) == {"finished"},
                        timeout=30), writer_states(api, run_id)
        assert run_state(api, run_id) == "finished"
        # Both servers answer alike.
        run_path = api.get("/api/v1/viewer")[1]["entity"] + "/fault/" + run_id
        for path in (f"/api/v1/runs/{run_path}/keys", f"/api/v1/runs/{run_path}/writers"):
            via_a = d.get(path, key=d.a.config["api_key"], base=d.a.url)
            via_b = d.get(path, key=d.a.config["api_key"], base=d.b.url)
            assert via_a[0] == 200 and via_a[1] == via_b[1], path
    finally:
        writers.stop()
    new_errors = d.pg_errors()[errors_before:]
    assert not [e for e in new_errors if "division by zero" in e], new_errors[:5]
    assert not new_errors, new_errors[:5]


def _counts(api, run_id):
    return key_counts(api, run_id).values()


def _anonymous_get(url):
    """(status, JSON) of a GET without any key."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_healthz_tells_when_a_server_cannot_reach_the_database(tmp_path):
    with PgCluster() as cluster:
        cluster.create_database("cohort")
        server = FaultServer(tmp_path, ["--store", cluster.url("cohort"),
                                        "--blob-dir", str(tmp_path / "blobs")])
        server.start()
        try:
            api = server.api()
            assert api.get("/healthz")[0] == 200
            cluster._run("pg_ctl", "-D", os.path.join(cluster.dir, "data"), "-w", "-m", "fast",
                         "stop")
            got = wait_for(lambda: (r := api.get("/healthz"))[0] == 503 and r, timeout=15)
            assert got, api.get("/healthz")
            assert got[1]["status"] == "unavailable" and "store" in got[1]["reason"], got
            # Anyone may ask (no key): the database's address stays in the server's log.
            anonymous = _anonymous_get(server.url + "/healthz")
            assert anonymous[0] == 503, anonymous
            assert anonymous[1]["reason"] == "the store does not answer", anonymous
            assert str(cluster.port) not in json.dumps(anonymous[1]), anonymous
            cluster.started = False
            cluster._run("pg_ctl", "-D", os.path.join(cluster.dir, "data"), "-w", "-t", "60",
                         "-l", os.path.join(cluster.dir, "server.log"), "-o",
                         f"-k {cluster.dir} -p {cluster.port} -c listen_addresses=''", "start")
            cluster.started = True
            assert wait_for(lambda: api.get("/healthz")[0] == 200, timeout=30)
            time.sleep(3)  # the webhook loops' next passes (every second) work again
            server.stop()
            log = server.proc.stderr.read()
            # The outage is said once, not at every probe and every poll of every thread.
            failures = [line for line in log.splitlines()
                        if line.startswith("cohort: alert webhooks:") and "working again" not in line]
            assert 1 <= len(failures) <= 2, log
            assert "cohort: alert webhooks: working again" in log, log
            assert 1 <= log.count("cohort server: not ready:") <= 3, log
            assert log.count("cohort server: ready again") == 1, log
        finally:
            server.stop()
