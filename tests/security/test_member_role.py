"""A member key (a teammate's, a CI job's) logs, reads and edits runs and artifacts of its entity,
but what removes data for everyone needs an admin key: deleting a run or an artifact version
answers 403 `permission_denied` naming the key and what to do, and removes nothing."""
import subprocess

from conftest import COHORT_BIN, ServerProcess
from security_helpers import create_key, http

PROJECT = "roles"


def test_member_key_edits_but_cannot_delete_runs_or_artifact_versions(tmp_path):
    server = ServerProcess(tmp_path / "home").start()
    try:
        admin = server.config["api_key"]
        status, me, _ = http(server.url + "/api/v1/viewer", key=admin)
        assert status == 200, me
        entity = me["entity"]
        member = create_key(server, entity, role="member")
        runs = f"{server.url}/api/v1/runs/{entity}/{PROJECT}"

        status, run, _ = http(runs, "POST", {"name": "by-member"}, key=member)
        assert status in (200, 201), run
        run_url = f"{runs}/{run['id']}"
        status, patched, _ = http(run_url, "PATCH", {"notes": "edited by a member"}, key=member)
        assert status == 200, patched
        assert http(run_url, key=member)[1]["notes"] == "edited by a member"

        status, body, _ = http(run_url, "DELETE", key=member)
        assert status == 403, body
        assert body["error"]["code"] == "permission_denied", body
        message = body["error"]["message"]
        assert "needs an admin key" in message and "member key" in message, message
        assert "cohort keys create" in message, message
        assert http(run_url, key=member)[0] == 200  # nothing was removed

        # An artifact version put with the admin key (the CLI reads the server's config).
        src = tmp_path / "ckpt.bin"
        src.write_bytes(b"weights" * 1000)
        env = {k: v for k, v in server.env.items()
               if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}
        put = subprocess.run([str(COHORT_BIN), "artifact", "put", str(src), "--name", "ckpt",
                              "--type", "model", "-p", PROJECT], env=env,
                             capture_output=True, text=True, timeout=120)
        assert put.returncode == 0, put.stderr
        versions = f"{server.url}/api/v1/artifacts/{entity}/{PROJECT}/ckpt/versions"
        status, listed, _ = http(versions, key=member)
        assert status == 200 and len(listed["versions"]) == 1, listed
        version_url = f"{server.url}/api/v1/artifacts/{entity}/{PROJECT}/ckpt/v0"
        status, body, _ = http(version_url, "DELETE", key=member)
        assert status == 403, body
        assert body["error"]["code"] == "permission_denied", body
        assert len(http(versions, key=member)[1]["versions"]) == 1

        # The admin key may do both.
        status, body, _ = http(version_url, "DELETE", key=admin)
        assert status == 200, body
        assert http(versions, key=admin)[1]["versions"] == []
        status, body, _ = http(run_url, "DELETE", key=admin)
        assert status == 200, body
        assert http(run_url, key=admin)[0] == 404
    finally:
        server.stop()
