"""One entity's key can neither read nor write another entity's projects, runs, writers, series,
console, files, views or keys, through every route the server has, compat routes included.

The routes come from the server itself (`cohort server --list-routes`); a route that this file
does not probe fails test_every_route_has_an_isolation_probe, so a new route cannot ship
without its isolation check."""
import hashlib
import json
import subprocess
import urllib.parse

import pytest

from conftest import COHORT_BIN
from security_helpers import create_key, http

# Routes without tenant data (health, metrics, the web UI's files, discarded telemetry, the API's
# JSON 404) and how each is still checked below.
PUBLIC = {
    ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/{path...}"),
    ("GET", "/api/{rest...}"), ("POST", "/sdk/otel/{rest...}"),
}

# Routes whose path names an entity: bob must get 404 for alice's entity on each of them.
SCOPED = {
    ("GET", "/api/v1/runs/{entity}/{project}"): None,
    ("POST", "/api/v1/runs/{entity}/{project}"): {"name": "x"},
    ("GET", "/api/v1/runs/{entity}/{project}/{run}"): None,
    ("PATCH", "/api/v1/runs/{entity}/{project}/{run}"): {"name": "pwned"},
    ("DELETE", "/api/v1/runs/{entity}/{project}/{run}"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/writers"): None,
    ("POST", "/api/v1/runs/{entity}/{project}/{run}/writers"): {"label": "evil"},
    ("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/heartbeat"): {},
    ("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/finish"): {"exit_code": 1},
    ("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/batches"): {
        "seq": 99, "history": [{"step": 5, "time": 1, "values": {"x": 666}}]},
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/keys"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/media"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/media/{sha256}"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/tables/{key...}"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/history"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/histograms"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/system"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/console"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/console/index"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/files"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/files/{name...}"): None,
    ("GET", "/api/v1/groups/{entity}/{project}"): None,
    ("GET", "/api/v1/views/{entity}/{project}"): None,
    ("POST", "/api/v1/views/{entity}/{project}"): {"name": "evil", "spec": {}},
    ("PUT", "/api/v1/views/{entity}/{project}/{id}"): {"name": "evil", "spec": {}},
    ("DELETE", "/api/v1/views/{entity}/{project}/{id}"): None,
    ("POST", "/files/{entity}/{project}/{run}/file_stream"): {
        "files": {"wandb-history.jsonl": {"offset": 0, "content": [
            json.dumps({"x": 666, "_step": 0, "_timestamp": 1700000000.0})]}},
        "complete": True, "exitcode": 1},
    ("PUT", "/files/{entity}/{project}/{run}/upload/{name...}"): b"overwritten",
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/ranks/aggregate"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/ranks/stragglers"): None,
    ("GET", "/api/v1/groups/{entity}/{project}/ranks/aggregate"): None,
    ("GET", "/api/v1/groups/{entity}/{project}/ranks/stragglers"): None,
    ("GET", "/api/v1/series/{entity}/{project}"): None,
    ("GET", "/api/v1/history/{entity}/{project}"): None,
    ("GET", "/api/v1/system/{entity}/{project}"): None,
    ("GET", "/api/v1/blobs/{entity}/{sha256}"): None,
    ("PUT", "/api/v1/blobs/{entity}/{sha256}/parts/{part}"): b"private",
    ("POST", "/api/v1/blobs/{entity}/{sha256}/complete"): {"size": 7},
    ("GET", "/api/v1/blobs/{entity}/uploads/{upload}"): None,
    ("PUT", "/api/v1/blobs/{entity}/uploads/{upload}/parts/{part}"): b"spoilt!",
    ("POST", "/api/v1/blobs/{entity}/uploads/{upload}/complete"): {
        "size": 7, "sha256": hashlib.sha256(b"spoilt!").hexdigest()},
    ("GET", "/api/v1/artifacts/{entity}/{project}"): None,
    ("POST", "/api/v1/artifacts/{entity}/{project}/{name}"): {"type": "model", "files": []},
    ("GET", "/api/v1/artifacts/{entity}/{project}/{name}/versions"): None,
    ("GET", "/api/v1/artifacts/{entity}/{project}/{name}/{version}"): None,
    ("DELETE", "/api/v1/artifacts/{entity}/{project}/{name}/{version}"): None,
    ("GET", "/api/v1/artifacts/{entity}/{project}/{name}/{version}/files/{path...}"): None,
    ("POST", "/api/v1/artifacts/{entity}/{project}/{name}/{version}/use"): {"run": "x"},
    ("PUT", "/api/v1/artifacts/{entity}/{project}/{name}/aliases/{alias}"): {"version": "v0"},
    ("DELETE", "/api/v1/artifacts/{entity}/{project}/{name}/aliases/{alias}"): None,
    ("GET", "/api/v1/runs/{entity}/{project}/{run}/artifacts"): None,
    ("POST", "/api/v1/runs/{entity}/{project}/{run}/writers/{label}/alerts"): {"title": "evil"},
    ("GET", "/api/v1/alerts/{entity}/{project}"): None,
    ("GET", "/api/v1/alerts/{entity}/{project}/{id}"): None,
    ("POST", "/api/v1/alerts/{entity}/{project}/{id}/ack"): {},
    ("GET", "/api/v1/alert-rules/{entity}/{project}"): None,
    ("POST", "/api/v1/alert-rules/{entity}/{project}"): {
        "name": "evil", "kind": "metric_nonfinite", "spec": {"key": "*"}},
    ("GET", "/api/v1/alert-rules/{entity}/{project}/{id}"): None,
    ("PUT", "/api/v1/alert-rules/{entity}/{project}/{id}"): {
        "name": "evil", "kind": "metric_nonfinite", "spec": {"key": "*"}, "enabled": False},
    ("DELETE", "/api/v1/alert-rules/{entity}/{project}/{id}"): None,
    ("GET", "/api/v1/alert-webhooks/{entity}/{project}"): None,
    ("POST", "/api/v1/alert-webhooks/{entity}/{project}"): {
        "name": "evil", "url": "http://127.0.0.1:9/evil"},
    ("GET", "/api/v1/alert-webhooks/{entity}/{project}/{id}"): None,
    ("PUT", "/api/v1/alert-webhooks/{entity}/{project}/{id}"): {
        "name": "evil", "url": "http://127.0.0.1:9/evil", "secret": "bob's"},
    ("DELETE", "/api/v1/alert-webhooks/{entity}/{project}/{id}"): None,
    ("POST", "/api/v1/alert-webhooks/{entity}/{project}/{id}/test"): {},
    ("GET", "/api/v1/alert-webhooks/{entity}/{project}/{id}/deliveries"): None,
    ("GET", "/api/v1/alert-webhooks/{entity}/{project}/deliveries"): None,
}

# Query parameters a probe needs so that the route gets past parameter checks to its data.
QUERY = {
    "/api/v1/runs/{entity}/{project}/{run}/ranks/aggregate": "?key=x",
    "/api/v1/runs/{entity}/{project}/{run}/ranks/stragglers": "?key=x",
    "/api/v1/groups/{entity}/{project}/ranks/aggregate": "?group=G&key=x",
    "/api/v1/groups/{entity}/{project}/ranks/stragglers": "?group=G&key=x",
    "/api/v1/series/{entity}/{project}": "?runs={run}",
    "/api/v1/history/{entity}/{project}": "?runs={run}",
    "/api/v1/system/{entity}/{project}": "?runs={run}",
    "/api/v1/blobs/{entity}/{sha256}": "?size=7",
    "/api/v1/runs/{entity}/{project}/{run}/histograms": "?keys=x",
    "/api/v1/blobs/{entity}/{sha256}/parts/{part}": "?size=7",
    "/api/v1/blobs/{entity}/uploads/{upload}": "?size=7",
    "/api/v1/blobs/{entity}/uploads/{upload}/parts/{part}": "?size=7",
}

# Routes scoped by the key itself; each has its own check in test_key_scoped_routes.
KEY_SCOPED = {
    ("GET", "/api/v1/viewer"), ("GET", "/api/v1/projects"), ("GET", "/api/v1/keys"),
    ("POST", "/api/v1/keys"), ("DELETE", "/api/v1/keys/{id}"), ("POST", "/graphql"),
    ("POST", "/api/v1/sessions"), ("DELETE", "/api/v1/sessions"), ("POST", "/api/v1/login-tokens"),
}


# Routes authorised by a signed URL alone (the W&B clients' artifact uploads and downloads):
# no key opens them, and a signature opens only what it signs (test_signed_artifact_routes).
SIGNED = {
    ("PUT", "/artifacts-upload/{entity}/{draft}/{kind}/{md5}"),
    ("GET", "/artifacts-download/{entity}/{sha256}"),
    ("GET", "/artifacts-manifest/{entity}/{version}"),
}


def server_routes():
    out = subprocess.run([str(COHORT_BIN), "server", "--list-routes"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    return {tuple(line.split(" ", 1)) for line in out.splitlines() if line.strip()}


def test_every_route_has_an_isolation_probe():
    routes = server_routes()
    assert len(routes) >= 30, routes
    known = PUBLIC | set(SCOPED) | KEY_SCOPED | SIGNED
    assert routes - known == set(), "routes without an isolation probe in this file"
    assert known - routes == set(), "probes of routes the server no longer has"


class Victim:
    """Alice's data: a run with a writer, points, system metrics, console lines, a file and a
    saved view."""

    def __init__(self, server):
        self.url = server.url
        self.key = server.config["api_key"]
        self.entity = self.get("/api/v1/viewer")["entity"]
        base = f"/api/v1/runs/{self.entity}/proj"
        run = self.call("POST", base, {"name": "secret", "config": {"lr": 0.1}}, 201)
        self.run = run["id"]
        self.call("PATCH", f"{base}/{self.run}", {"group": "G"}, 200)
        self.call("POST", f"{base}/{self.run}/writers", {"label": "w"}, 201)
        self.call("POST", f"{base}/{self.run}/writers/w/batches", {
            "seq": 1, "history": [{"step": 0, "time": 1, "values": {"x": 1}}],
            "system": [{"time": 1, "values": {"cpu": 5}}],
            "console": [{"time": 1, "text": "hello"}]}, 200)
        self.view = self.call("POST", f"/api/v1/views/{self.entity}/proj",
                              {"name": "mine", "spec": {}}, 201)["id"]
        status, body, _ = http(f"{self.url}/files/{self.entity}/proj/{self.run}/upload/notes.txt",
                               "PUT", raw=b"private", key=self.key)
        assert status == 200, body
        # A model checkpoint: its blob, a version with an alias, a use.
        self.sha = hashlib.sha256(b"private").hexdigest()
        blob = f"/api/v1/blobs/{self.entity}/{self.sha}"
        status, body, _ = http(f"{self.url}{blob}/parts/0?size=7", "PUT", raw=b"private",
                               key=self.key)
        assert status == 200, body
        self.call("POST", f"{blob}/complete", {"size": 7}, 200)
        # An upload by id under way (a put hashing its file while it sends it): its first part.
        self.upload = "0123456789abcdef0123456789abcdef"
        status, body, _ = http(f"{self.url}/api/v1/blobs/{self.entity}/uploads/{self.upload}"
                               "/parts/0?size=7", "PUT", raw=b"privat!", key=self.key)
        assert status == 200, body
        arts = f"/api/v1/artifacts/{self.entity}/proj/model"
        self.call("POST", arts, {"type": "model", "run": self.run, "aliases": ["best"],
                                 "files": [{"path": "w.pt", "sha256": self.sha, "size": 7}]}, 201)
        self.call("POST", f"{arts}/v0/use", {"run": self.run}, 200)
        self.key_id = self.get("/api/v1/keys")["keys"][0]["id"]
        # An alert raised by code, and the project's alert rules (its defaults).
        self.call("POST", f"{base}/{self.run}/writers/w/alerts", {"title": "secret"}, 200)
        # An alert webhook (id 1, as the view's: probes name one {id}); nothing listens there.
        hook = self.call("POST", f"/api/v1/alert-webhooks/{self.entity}/proj",
                         {"name": "ops", "url": "http://127.0.0.1:9/hook", "secret": "s"}, 201)
        assert hook["id"] == self.view, (hook, self.view)
        self.snapshot = self.state()

    def call(self, method, path, body, expect):
        status, payload, _ = http(self.url + path, method, body, key=self.key)
        assert status == expect, (method, path, status, payload)
        return payload

    def get(self, path):
        return self.call("GET", path, None, 200)

    def state(self):
        """Everything of alice's that another key might have changed."""
        base = f"/api/v1/runs/{self.entity}/proj"
        run = self.get(f"{base}/{self.run}")
        status, file_body, _ = http(f"{self.url}{base}/{self.run}/files/notes.txt", key=self.key)
        return {
            "runs": sorted(r["id"] for r in self.get(base)["runs"]),
            "run": {k: run[k] for k in ("name", "state", "config", "summary", "exit_code")},
            "writers": [(w["label"], w["state"]) for w in run["writers"]],
            "keys": self.get(f"{base}/{self.run}/keys")["keys"],
            "console": [l["text"] for l in self.get(f"{base}/{self.run}/console")["lines"]],
            "views": [(v["id"], v["name"]) for v in
                      self.get(f"/api/v1/views/{self.entity}/proj")["views"]],
            "files": [(f["name"], f["size"]) for f in self.get(f"{base}/{self.run}/files")["files"]],
            "file": (status, file_body),
            "api_keys": [(k["id"], k["revoked"]) for k in self.get("/api/v1/keys")["keys"]],
            "artifacts": self.get(f"/api/v1/artifacts/{self.entity}/proj"),
            "version": self.get(f"/api/v1/artifacts/{self.entity}/proj/model/v0"),
            "blob": self.get(f"/api/v1/blobs/{self.entity}/{self.sha}?size=7"),
            "upload": self.get(f"/api/v1/blobs/{self.entity}/uploads/{self.upload}?size=7"),
            "blob_bytes": http(f"{self.url}/api/v1/artifacts/{self.entity}/proj/model/v0/files/"
                               "w.pt", key=self.key)[:2],
            "alerts": [(a["id"], a["title"], a["state"], a["acked_by"]) for a in
                       self.get(f"/api/v1/alerts/{self.entity}/proj")["alerts"]],
            "alert_rules": [(r["id"], r["name"], r["enabled"]) for r in
                            self.get(f"/api/v1/alert-rules/{self.entity}/proj")["rules"]],
            "alert_webhooks": self.get(f"/api/v1/alert-webhooks/{self.entity}/proj"),
        }


@pytest.fixture
def victim(server):
    return Victim(server)


def fill(pattern, v):
    return ((pattern + QUERY.get(pattern, "")).replace("{entity}", v.entity)
            .replace("{project}", "proj").replace("{run}", v.run).replace("{label}", "w")
            .replace("{id}", str(v.view)).replace("{name...}", "notes.txt")
            .replace("{key...}", "t")
            .replace("{sha256}", v.sha).replace("{upload}", v.upload).replace("{part}", "0").replace("{name}", "model")
            .replace("{version}", "v0").replace("{alias}", "best").replace("{path...}", "w.pt"))


@pytest.mark.parametrize("basic", [False, True], ids=["bearer", "basic"])
def test_other_entity_gets_404_on_every_scoped_route(server, victim, basic):
    bob = create_key(server, "bob")  # an admin key: the admin-only routes are open to it
    for (method, pattern), body in SCOPED.items():
        raw = body if isinstance(body, bytes) else None
        status, payload, _ = http(server.url + fill(pattern, victim), method,
                                  None if raw else body, key=bob, raw=raw, basic=basic)
        assert status == 404, (method, pattern, status, payload)
        assert isinstance(payload, dict) and "error" in payload, (method, pattern, payload)
    assert victim.state() == victim.snapshot


def test_key_scoped_routes_show_only_the_callers_entity(server, victim):
    bob = create_key(server, "bob")
    url = server.url
    assert http(url + "/api/v1/viewer", key=bob)[1]["entity"] == "bob"
    assert http(url + "/api/v1/projects", key=bob)[1]["projects"] == []
    assert http(url + f"/api/v1/projects?entity={victim.entity}", key=bob)[1]["projects"] == []
    bob_keys = http(url + "/api/v1/keys", key=bob)[1]["keys"]
    assert victim.key_id not in [k["id"] for k in bob_keys]
    # A key bob makes belongs to bob, whatever the body says.
    status, created, _ = http(url + "/api/v1/keys", "POST", {"name": "x", "role": "admin"},
                              key=bob)
    assert status == 201
    assert http(url + "/api/v1/viewer", key=created["key"])[1]["entity"] == "bob"
    status, _, _ = http(url + "/api/v1/keys", "POST", {"name": "x", "entity": victim.entity},
                        key=bob)
    assert status == 400  # no way to name another entity
    # Revoking alice's key by id.
    status, payload, _ = http(url + f"/api/v1/keys/{victim.key_id}", "DELETE", key=bob)
    assert status == 404, payload
    # The UI token exchange needs the server's token, not a key.
    status, payload, _ = http(url + "/api/v1/sessions", "POST", {"token": bob}, key=bob)
    assert status in (401, 403), payload
    # A login link bob makes signs a browser in as bob; bob cannot end alice's session.
    status, made, _ = http(url + "/api/v1/login-tokens", "POST", {}, key=bob)
    assert status == 201, made
    status, session, _ = http(url + "/api/v1/sessions", "POST", {"token": made["token"]})
    assert status == 201, session
    assert http(url + "/api/v1/viewer", key=session["key"])[1]["entity"] == "bob"
    status, payload, _ = http(url + "/api/v1/sessions", "DELETE", key=bob)
    assert status == 400, payload  # an API key is not a session; nothing is ended
    assert http(url + "/api/v1/viewer", key=session["key"])[0] == 200
    # GraphQL: alice's project and run are invisible, and mutations on them are refused.
    gql = """query P($e: String, $p: String!, $r: String!) { project(entityName: $e, name: $p)
             { run(name: $r) { id name config } } }"""
    status, payload, _ = http(url + "/graphql", "POST", {"query": gql, "variables": {
        "e": victim.entity, "p": "proj", "r": victim.run}}, key=bob, basic=True)
    assert status == 200
    assert (payload.get("data") or {}).get("project") is None, payload
    assert victim.run not in json.dumps(payload.get("data"))
    upsert = """mutation U($e: String, $p: String, $n: String) { upsertBucket(input: {
             entityName: $e, modelName: $p, name: $n, displayName: "pwned"}) { bucket { id } } }"""
    for run in (victim.run, "newrun"):
        status, payload, _ = http(url + "/graphql", "POST", {"query": upsert, "variables": {
            "e": victim.entity, "p": "proj", "n": run}}, key=bob, basic=True)
        assert payload.get("errors"), payload
        assert (payload.get("data") or {}).get("upsertBucket") is None, payload
    files = """mutation F($e: String!, $p: String!, $r: String!) { createRunFiles(input: {
             entityName: $e, projectName: $p, runName: $r, files: ["x.txt"]}) {
             files { name uploadUrl } } }"""
    status, payload, _ = http(url + "/graphql", "POST", {"query": files, "variables": {
        "e": victim.entity, "p": "proj", "r": victim.run}}, key=bob, basic=True)
    assert payload.get("errors") and "uploadUrl" not in json.dumps(payload.get("data")), payload
    assert victim.state() == victim.snapshot


def test_signed_upload_url_cannot_be_bent_to_another_run(server, victim):
    """Bob's signed URL for his own run, rewritten to point at alice's run: refused."""
    bob = create_key(server, "bob")
    upsert = """mutation U($p: String, $n: String) { upsertBucket(input: {entityName: "bob",
             modelName: $p, name: $n}) { bucket { id } } }"""
    status, payload, _ = http(server.url + "/graphql", "POST", {"query": upsert, "variables": {
        "p": "proj", "n": "mine"}}, key=bob, basic=True)
    assert status == 200 and "errors" not in payload, payload
    files = """mutation F { createRunFiles(input: {entityName: "bob", projectName: "proj",
             runName: "mine", files: ["notes.txt"]}) { files { name uploadUrl } } }"""
    status, payload, _ = http(server.url + "/graphql", "POST", {"query": files}, key=bob,
                              basic=True)
    upload = payload["data"]["createRunFiles"]["files"][0]["uploadUrl"]
    assert http(upload, "PUT", raw=b"bob's own")[0] == 200  # the URL itself works
    parts = urllib.parse.urlsplit(upload)
    bent = parts._replace(path=parts.path.replace("/files/bob/proj/mine/",
                                                  f"/files/{victim.entity}/proj/{victim.run}/"))
    status, payload, _ = http(urllib.parse.urlunsplit(bent), "PUT", raw=b"overwritten")
    assert status in (401, 403), (status, payload)
    assert victim.state() == victim.snapshot


def test_public_routes_leak_nothing(server, victim):
    url = server.url
    status, body, _ = http(url + "/healthz")
    # Server facts only (what it is, which ingest bodies it reads), nothing of any tenant.
    assert status == 200 and set(body) <= {"status", "version", "ingest_formats"}
    assert body["ingest_formats"] == ["json", "cohort-batch-v4"]
    status, text, _ = http(url + "/metrics")
    assert status == 200 and victim.run not in text and "secret" not in text
    assert victim.key not in text
    status, body, _ = http(url + f"/api/v1/runs/{victim.entity}/proj/{victim.run}/nothing",
                           key=create_key(server, "bob"))
    assert status == 404
    status, body, _ = http(url + "/sdk/otel/v1/metrics", "POST", raw=b"x")
    assert status == 200 and not body
    status, body, _ = http(url + f"/api/v1/runs/{victim.entity}/proj/{victim.run}")
    assert status == 401  # no key at all


def test_signed_artifact_routes_open_nothing_without_their_signature(server, victim):
    bob = create_key(server, "bob")
    md5 = "0" * 32
    for method, path, raw in [
        ("PUT", f"/artifacts-upload/{victim.entity}/1/file/{md5}", b"evil"),
        ("PUT", f"/artifacts-upload/{victim.entity}/1/manifest/{md5}?k=1&x=99999999999&s=forged",
         b"evil"),
        ("GET", f"/artifacts-download/{victim.entity}/{victim.sha}", None),
        ("GET", f"/artifacts-download/{victim.entity}/{victim.sha}?k=1&x=99999999999&s=forged",
         None),
        ("GET", f"/artifacts-manifest/{victim.entity}/1", None),
        ("GET", f"/artifacts-manifest/{victim.entity}/1?k=1&x=99999999999&s=forged", None),
    ]:
        for key in (bob, None):
            status, payload, _ = http(server.url + path, method, raw=raw, key=key)
            assert status == 401, (method, path, status, payload)
    assert victim.state() == victim.snapshot
