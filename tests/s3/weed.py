"""A real S3-compatible server for cross-process tests and benchmarks: SeaweedFS's `weed server
-s3` on probed free ports (each with its gRPC twin at port + 10000 free too), in a fresh
temporary directory, with one identity (ACCESS_KEY / SECRET_KEY).

The Python twin of src/blob/weed_test_server.h. The binary: $COHORT_WEED, else
${COHORT_CACHE_DIR:-~/.cache/cohort}/weed/weed, built by scripts/build-weed.sh. Without it,
`weed_binary()` returns None and `why_no_weed()` says how to build it (tests skip, saying so).

As a library:
    with Weed() as w:
        w.endpoint               # http://127.0.0.1:PORT
        w.s3_env("bucket")       # COHORT_BLOB_S3_* and COHORT_S3_* for `cohort server` / `cohort gc`

From a shell (bench/artifact_s3_bench.sh):
    python3 tests/s3/weed.py start DIR    -> prints the endpoint; weed's pid in DIR/weed.pid
    python3 tests/s3/weed.py stop DIR
"""
import datetime
import hashlib
import hmac
import json
import os
import pathlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ACCESS_KEY = "cohort-test"
SECRET_KEY = "cohort-test-secret"
REGION = "us-east-1"


def weed_binary():
    env = os.environ.get("COHORT_WEED")
    if env:
        return env if os.access(env, os.X_OK) else None
    cache = os.environ.get("COHORT_CACHE_DIR") or os.path.expanduser("~/.cache/cohort")
    path = os.path.join(cache, "weed", "weed")
    return path if os.access(path, os.X_OK) else None


def why_no_weed():
    return ("SeaweedFS weed is not built: run scripts/build-weed.sh (about 7 minutes, needs Go), "
            "or set COHORT_WEED")


def _port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(n=4):
    ports = []
    while len(ports) < n:
        p = random.randint(20000, 45000)
        if p not in ports and _port_free(p) and _port_free(p + 10000):
            ports.append(p)
    return ports


def _sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def presign(endpoint, bucket, key, method="PUT", expires=3600, access_key=ACCESS_KEY,
            secret_key=SECRET_KEY, region=REGION, now=None):
    """A SigV4 query-string presigned URL (what a server would hand a client to PUT or GET an
    object directly)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    host = urllib.parse.urlparse(endpoint).netloc
    scope = f"{date}/{region}/s3/aws4_request"
    uri = "/" + urllib.parse.quote(bucket, safe="")
    if key:
        uri += "/" + urllib.parse.quote(key, safe="/~")
    q = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": f"{access_key}/{scope}",
         "X-Amz-Date": amz_date, "X-Amz-Expires": str(expires), "X-Amz-SignedHeaders": "host"}
    query = "&".join(f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}"
                     for k, v in sorted(q.items()))
    canonical = f"{method}\n{uri}\n{query}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD"
    to_sign = ("AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" +
               hashlib.sha256(canonical.encode()).hexdigest())
    k = _sign(("AWS4" + secret_key).encode(), date)
    k = _sign(_sign(_sign(k, region), "s3"), "aws4_request")
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"{endpoint}{uri}?{query}&X-Amz-Signature={sig}"


class Weed:
    def __init__(self, directory=None):
        self.binary = weed_binary()
        self.own_dir = directory is None
        self.dir = pathlib.Path(directory or tempfile.mkdtemp(prefix="cohort_weed_"))
        self.proc = None
        self.pid = None
        self.endpoint = None

    def start(self, timeout=90):
        if not self.binary:
            raise RuntimeError(why_no_weed())
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        (self.dir / "s3.json").write_text(json.dumps({"identities": [{
            "name": "test", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        p = free_ports()
        self.endpoint = f"http://127.0.0.1:{p[3]}"
        log = open(self.dir / "weed.log", "ab")
        self.proc = subprocess.Popen(
            [self.binary, "server", f"-dir={self.dir / 'data'}", "-ip=127.0.0.1",
             "-ip.bind=127.0.0.1", f"-master.port={p[0]}", "-master.volumeSizeLimitMB=1024",
             "-volume.max=0",
             f"-volume.port={p[1]}", f"-filer.port={p[2]}", "-s3", f"-s3.port={p[3]}",
             f"-s3.config={self.dir / 's3.json'}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        (self.dir / "weed.pid").write_text(str(self.pid))
        (self.dir / "endpoint").write_text(self.endpoint)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited at start: {self.log_tail()}")
            if self._answers():
                return self
            time.sleep(0.2)  # polling a condition (weed's S3 API answering)
        self.stop()
        raise RuntimeError(f"weed did not answer within {timeout} s: {self.log_tail()}")

    def _answers(self):
        # Creating a bucket through a presigned PUT: answers once the filer is up.
        try:
            req = urllib.request.Request(presign(self.endpoint, "weed-probe", "", "PUT"),
                                         method="PUT")
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status == 200
        except urllib.error.HTTPError as e:
            return e.code == 409  # exists already
        except OSError:
            return False

    def log_tail(self):
        try:
            return (self.dir / "weed.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def s3_env(self, bucket, prefix=""):
        env = {"COHORT_BLOB_S3_ENDPOINT": self.endpoint, "COHORT_BLOB_S3_BUCKET": bucket,
               "COHORT_S3_ACCESS_KEY": ACCESS_KEY, "COHORT_S3_SECRET_KEY": SECRET_KEY}
        if prefix:
            env["COHORT_BLOB_S3_PREFIX"] = prefix
        return env

    def url(self, bucket, key, method="GET"):
        return presign(self.endpoint, bucket, key, method)

    def get(self, bucket, key):
        """The object's bytes, or None when there is none."""
        try:
            with urllib.request.urlopen(self.url(bucket, key), timeout=60) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def stop(self):
        pid = self.pid
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pid = None
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            elif pid:
                for _ in range(100):
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.1)
                else:
                    os.kill(pid, signal.SIGKILL)
            self.pid = None
        if self.own_dir and not os.environ.get("COHORT_KEEP_WEED_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv):
    if len(argv) != 3 or argv[1] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    d = pathlib.Path(argv[2])
    if argv[1] == "start":
        if not weed_binary():
            print(why_no_weed(), file=sys.stderr)
            return 1
        w = Weed(d)
        w.start()
        print(w.endpoint)
        return 0
    w = Weed(d)
    w.own_dir = False
    w.pid = int((d / "weed.pid").read_text())
    w.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
