"""ArtifactVersion.delete() (wandb's Artifact.delete) against the real `cohort server`: versions
committed through its HTTP API (tests/artifacts/art_helpers.py); an admin key deletes (``latest``
moves back), a version with an alias other than ``latest`` is refused unless
delete_aliases=True, and a member key made with `cohort keys create --role member` gets an
AuthError naming the admin-key requirement, nothing deleted."""
import pathlib
import subprocess
import sys

import pytest

_HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent / "artifacts"))
from art_helpers import log_version  # noqa: E402
from conftest import COHORT_BIN  # noqa: E402

import cohort  # noqa: E402
from cohort.api_http import AuthError, NotFound  # noqa: E402
from cohort.errors import UsageError  # noqa: E402


def _member_key(server, entity):
    out = subprocess.run([str(COHORT_BIN), "keys", "create", "--entity", entity, "--role",
                          "member", "--data-dir", str(server.data_dir)],
                         capture_output=True, text=True, env=server.env, check=True)
    return out.stdout.strip()


def test_delete_a_version_with_admin_and_member_keys(server, api):
    status, me = api.get("/api/v1/viewer")
    entity = me["entity"]
    for i in range(3):
        log_version(api, entity, "del", "m", {"m.bin": b"version %d" % i},
                    aliases=["best"] if i == 1 else [])
    admin = cohort.Api(base_url=server.url, api_key=server.config["api_key"])
    member = cohort.Api(base_url=server.url, api_key=_member_key(server, entity))

    # A member key may read the version, not delete it.
    v2 = member.artifact(f"{entity}/del/m:v2")
    with pytest.raises(AuthError) as e:
        v2.delete()
    assert "needs an admin API key" in str(e.value) and "m:v2" in str(e.value), str(e.value)
    assert admin.artifact(f"{entity}/del/m:v2").version == "v2"  # nothing was deleted

    # The admin deletes v2 (it has `latest` only): latest moves back to v1.
    admin.artifact(f"{entity}/del/m:v2").delete()
    with pytest.raises(NotFound):
        admin.artifact(f"{entity}/del/m:v2")
    latest = admin.artifact(f"{entity}/del/m:latest")
    assert latest.version == "v1" and sorted(latest.aliases) == ["best", "latest"]

    # v1 holds `best`: refused as wandb refuses, unless delete_aliases=True.
    with pytest.raises(UsageError) as e:
        latest.delete()
    assert "best" in str(e.value) and "delete_aliases=True" in str(e.value), str(e.value)
    assert admin.artifact(f"{entity}/del/m:best").version == "v1"
    latest.delete(delete_aliases=True)
    with pytest.raises(NotFound):
        admin.artifact(f"{entity}/del/m:best")
    assert admin.artifact(f"{entity}/del/m:latest").version == "v0"
    assert [v.version for v in admin.artifact_versions("m", project=f"{entity}/del")] == ["v0"]
