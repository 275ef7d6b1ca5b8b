"""One entity's key can neither read nor write another entity's data, on every route."""
import subprocess

import pytest

from conftest import COHORT_BIN
from test_api import entity, ingest, join, make_run, runs_path


def create_key(server, ent, role="admin"):
    out = subprocess.run([str(COHORT_BIN), "keys", "create", "--entity", ent, "--role", role,
                          "--data-dir", str(server.data_dir)],
                         capture_output=True, text=True, env=server.env, check=True)
    return out.stdout.strip()


@pytest.fixture
def victim(api):
    run = make_run(api, name="secret", group="G")
    join(api, run, "w")
    ingest(api, run, "w", {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"x": 1}}],
                           "console": [{"time": 1, "text": "hello"}]})
    return run


def test_other_entity_cannot_read_or_write_any_route(server, api, victim):
    bob = server.api(create_key(server, "bob"))
    assert bob.get("/api/v1/viewer")[1]["entity"] == "bob"
    e = entity(api)
    base = f"/api/v1/runs/{e}/proj"
    rid = victim["id"]
    reads = [f"{base}", f"{base}/{rid}", f"{base}/{rid}/writers", f"{base}/{rid}/keys",
             f"{base}/{rid}/history", f"{base}/{rid}/system", f"{base}/{rid}/console",
             f"/api/v1/groups/{e}/proj", f"/api/v1/views/{e}/proj"]
    for path in reads:
        status, body = bob.get(path)
        assert status == 404, (path, status, body)
    writes = [("POST", f"{base}", {"name": "x"}),
              ("PATCH", f"{base}/{rid}", {"name": "pwned"}),
              ("POST", f"{base}/{rid}/writers", {"label": "evil"}),
              ("POST", f"{base}/{rid}/writers/w/batches", {"seq": 99}),
              ("POST", f"{base}/{rid}/writers/w/heartbeat", {}),
              ("POST", f"{base}/{rid}/writers/w/finish", {"exit_code": 1}),
              ("DELETE", f"{base}/{rid}", None),
              ("POST", f"/api/v1/views/{e}/proj", {"name": "v"})]
    for method, path, body in writes:
        status, resp = bob.call(method, path, body)
        assert status == 404, (method, path, status, resp)
    # Nothing changed for the owner.
    status, run = api.get(f"{base}/{rid}")
    assert run["name"] == "secret" and run["state"] == "running"
    assert [w["label"] for w in run["writers"]] == ["w"]
    # And bob's project listing shows nothing of alice's.
    assert bob.get("/api/v1/projects")[1]["projects"] == []


def test_member_key_cannot_manage_keys(server, api):
    member = server.api(create_key(server, entity(api), role="member"))
    status, body = member.get("/api/v1/keys")
    assert status == 403 and body["error"]["code"] == "permission_denied"


def test_revoked_key_stops_working(server, api):
    status, created = api.post("/api/v1/keys", {"name": "ci", "role": "member"})
    assert status == 201
    ci = server.api(created["key"])
    assert ci.get("/api/v1/viewer")[0] == 200
    assert api.delete(f"/api/v1/keys/{created['id']}")[0] == 200
    assert ci.get("/api/v1/viewer")[0] == 401


def test_keys_are_stored_hashed(server, api):
    import sqlite3
    key = server.config["api_key"]
    db = sqlite3.connect(server.data_dir / "cohort.db")
    dump = "\n".join(db.iterdump())
    assert key not in dump
