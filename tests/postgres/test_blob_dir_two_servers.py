"""Two `cohort server` processes on one PostgreSQL database sharing one `--blob-dir` (a local
blob store on a shared file system; docs/operations.md, "Object storage (S3-compatible)"): each
server completes an upload by reading every byte and publishing a copy of what it read, so a
client that sends an upload's parts in order to one server (which hashed them as they came) and
other bytes for one part to the other cannot get those bytes published under the blob's name."""
import hashlib

import pytest

from conftest import ServerProcess  # noqa: E402
from pg_cluster import PgCluster  # noqa: E402
from test_s3_two_servers import data_of  # noqa: E402  (bytes that differ part by part)

PART = 8 << 20


@pytest.fixture(scope="module")
def cluster():
    with PgCluster() as pg:
        yield pg


@pytest.fixture
def servers(cluster, tmp_path):
    db = "bd_" + tmp_path.name.replace("-", "_").lower()[-40:]
    cluster.create_database(db)
    url = cluster.url(db, "pool_size=4")
    shared = tmp_path / "shared-blobs"
    args = ["--store", url, "--blob-dir", str(shared)]
    a = ServerProcess(tmp_path / "a", extra_args=args).start()
    b = ServerProcess(tmp_path / "b", extra_args=args).start()
    yield a, b, shared
    a.stop()
    b.stop()


def put_part(api, entity, sha, size, n, chunk):
    status, body = api.put(f"/api/v1/blobs/{entity}/{sha}/parts/{n}?size={size}", raw=chunk,
                           headers={"Content-Type": "application/octet-stream"})
    assert status == 200, body


def test_parts_of_other_bytes_through_the_other_server_are_never_published(servers):
    a, b, shared = servers
    key = a.config["api_key"]
    api_a, api_b = a.api(key), b.api(key)
    status, me = api_a.get("/api/v1/viewer")
    assert status == 200, me
    entity = me["entity"]
    data = data_of(2 * PART + 999, "shared-dir")
    sha, size = hashlib.sha256(data).hexdigest(), len(data)

    for n in range(3):
        put_part(api_a, entity, sha, size, n, data[n * PART:(n + 1) * PART])
    put_part(api_b, entity, sha, size, 1, b"Z" * PART)
    status, body = api_a.post(f"/api/v1/blobs/{entity}/{sha}/complete", {"size": size})
    assert status == 400 and "not the blob announced" in body["error"]["message"], body
    assert not list(shared.glob(f"sha256/*/{sha}"))
    status, st = api_b.get(f"/api/v1/blobs/{entity}/{sha}?size={size}")
    assert status == 200 and not st["stored"], st

    # Uploaded again through both servers, completed on one, read back through the other.
    for n in range(3):
        put_part(api_a if n % 2 else api_b, entity, sha, size, n, data[n * PART:(n + 1) * PART])
    status, done = api_a.post(f"/api/v1/blobs/{entity}/{sha}/complete", {"size": size})
    assert status == 200 and done["stored"], done
    (blob,) = shared.glob(f"sha256/*/{sha}")
    assert blob.read_bytes() == data
    assert not list(shared.glob("uploads/*"))  # the upload and its verified copy are gone
