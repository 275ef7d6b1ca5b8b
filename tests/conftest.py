"""Shared fixtures for the cross-process test suites: the real `cohort` binary on a free port."""
import hashlib
import io
import json
import os
import pathlib
import re
import select
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build")).resolve()
COHORT_BIN = BUILD / "src" / "cli" / "cohort"


def _sanitizer_of(build):
    """The sanitizers the build was configured with (COHORT_SANITIZE), '' for a plain build."""
    try:
        text = (build / "CMakeCache.txt").read_text()
    except OSError:
        return ""
    match = re.search(r"^COHORT_SANITIZE:STRING=(.*)$", text, re.M)
    return match.group(1).strip() if match else ""


# A sanitizer's shadow memory and ASan's quarantine of freed blocks multiply what a buffer costs
# in resident memory: tests bounding the server's memory assert it on plain builds only.
SANITIZER = _sanitizer_of(BUILD)
# The first line of an ASan/LSan/TSan/UBSan report; a plain build never prints these.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                     ": runtime error: ")


def project_version():
    """The version in the top CMakeLists.txt (project(cohort VERSION ...)): the one place it is
    written; the binaries, the Python package and the User-Agents take it from there."""
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(cohort VERSION ([0-9][0-9A-Za-z.+-]*)", text)
    assert match, "no project version in CMakeLists.txt"
    return match.group(1)


class Api:
    """A tiny JSON client for the server's HTTP API."""

    def __init__(self, url, key):
        self.url = url.rstrip("/")
        self.key = key

    def call(self, method, path, body=None, key=None, raw=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        k = self.key if key is None else key
        if k:
            req.add_header("Authorization", "Bearer " + k)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            status = e.code
        try:
            payload = json.loads(text) if text else None
        except ValueError:
            payload = text
        return status, payload

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def patch(self, path, body=None, **kw):
        return self.call("PATCH", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.call("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("DELETE", path, **kw)


def login_link(ui_line):
    """The one-time login link of `cohort server`'s second line ("Open the web UI: ..."): on a
    terminal the link itself, otherwise the name of the 0600 file that holds it."""
    m = re.search(r"(https?://\S+\?token=\S+)", ui_line)
    if m:
        return m.group(1)
    m = re.search(r"login link in (\S+)", ui_line)
    if m:
        return pathlib.Path(m.group(1)).read_text().strip()
    return None


class ServerProcess:
    """`cohort server --port 0` in a private HOME and data directory."""

    def __init__(self, home, extra_args=(), env=None, port=0):
        self.home = pathlib.Path(home)
        self.port = port  # 0: any free one; a restart on the port a client knows names it
        self.data_dir = self.home / "data"
        self.extra_args = list(extra_args)
        self.env = dict(os.environ, HOME=str(self.home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                        XDG_RUNTIME_DIR=str(self.home / "run"))
        self.env.update(env or {})
        # A real session's runtime directory exists (the agent's socket lives there).
        (self.home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.proc = None
        self.url = None

    def start(self):
        assert COHORT_BIN.exists(), f"build the project first: {COHORT_BIN} is missing"
        self.proc = subprocess.Popen(
            [str(COHORT_BIN), "server", "--port", str(self.port), "--data-dir", str(self.data_dir)]
            + self.extra_args,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            # An empty line: stdout closed, the server is exiting (its error is on stderr; it
            # may not be reaped yet, so wait for it rather than ask poll() once).
            try:
                self.proc.wait(timeout=10 if not line else 0.1)
            except subprocess.TimeoutExpired:
                pass
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            raise RuntimeError(f"server did not print its URL: {line!r} {err}")
        self.url = line
        self.ui_line = self.proc.stdout.readline().strip()
        self.ui_url = login_link(self.ui_line)
        return self

    @property
    def config(self):
        return json.loads((self.home / ".config" / "cohort" / "config.json").read_text())

    def api(self, key=None):
        return Api(self.url, key if key is not None else self.config["api_key"])

    def stop(self, sig=None):
        if self.proc and self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._check_sanitizer_reports()
        return self.proc.returncode if self.proc else None

    def _check_sanitizer_reports(self):
        """Fails the test when the stopped server printed a sanitizer report (a build-asan or
        build-tsan binary): under ASan, g++'s UBSan writes its reports to stderr only, never to
        log_path (scripts/test-sanitizers.sh). What was read stays readable via proc.stderr."""
        if (not self.proc or self.proc.poll() is None or self.proc.stderr is None
                or isinstance(self.proc.stderr, io.StringIO)):  # no pipe, or already read
            return
        # What the exited server wrote is in the pipe; a child that inherited the pipe could hold
        # it open, so read what is there without waiting for the end of the file.
        fd, chunks = self.proc.stderr.fileno(), []
        while select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        text = b"".join(chunks).decode(errors="replace")
        self.proc.stderr.close()
        self.proc.stderr = io.StringIO(text)
        for marker in SANITIZER_MARKERS:
            if marker in text:
                raise AssertionError(f"the server printed a sanitizer report:\n{text[-8000:]}")


@pytest.fixture
def home(tmp_path):
    return tmp_path


@pytest.fixture
def server(tmp_path):
    s = ServerProcess(tmp_path).start()
    yield s
    s.stop()


@pytest.fixture
def api(server):
    return server.api()


def byte_pattern(size, seed):
    """`size` bytes that differ from 64 KiB block to block (so that an 8 MiB part or range sent
    in another's place shows) and from seed to seed."""
    block = hashlib.sha256(f"{seed}".encode()).digest() * 2048  # 64 KiB
    out = bytearray()
    i = 0
    while len(out) < size:
        out += bytes([i % 251]) + block
        i += 1
    return bytes(out[:size])


def wait_for(predicate, timeout=10.0, interval=0.05):
    """Polls predicate() until it returns a truthy value or the timeout elapses."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
