"""Helpers of the security and limits suites: raw HTTP with headers, keys made by the CLI, and
reading values out of /metrics."""
import base64
import json
import re
import subprocess
import urllib.error
import urllib.request

from conftest import COHORT_BIN


def http(url, method="GET", body=None, key=None, raw=None, headers=None, basic=False,
         timeout=30):
    """One request; returns (status, payload (JSON when it parses), headers dict)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    if key:
        if basic:
            req.add_header("Authorization",
                           "Basic " + base64.b64encode(f"api:{key}".encode()).decode())
        else:
            req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, text, hdrs = resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as e:
        status, text, hdrs = e.code, e.read(), dict(e.headers)
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = text.decode(errors="replace")
    return status, payload, hdrs


def create_key(server, entity, role="admin"):
    """A new key for `entity` made with `cohort keys create` on the server's store."""
    out = subprocess.run([str(COHORT_BIN), "keys", "create", "--entity", entity, "--role", role,
                          "--data-dir", str(server.data_dir)],
                         capture_output=True, text=True, env=server.env, check=True)
    return out.stdout.strip()


def metric(text, name, **labels):
    """Sum of the samples of `name` in Prometheus `text` whose labels include `labels`."""
    total = 0.0
    found = False
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(have.get(k) == str(v) for k, v in labels.items()):
            total += float(m.group(4))
            found = True
    return total if found else None


def rss_bytes(pid):
    """Resident memory of process `pid` (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")
