"""Two `cohort server` processes on one PostgreSQL database sharing one `--blob-dir` (a local
blob store on a shared file system; docs/operations.md, "Object storage (S3-compatible)"): each
server completes an upload by reading every byte and publishing a copy of what it read, so a
client that sends an upload's parts in order to one server (which hashed them as they came) and
other bytes for one part to the other cannot get those bytes published under the blob's name."""
import hashlib

import pytest

from .pg_servers import clients, data_of, entity_of, put_part, server_pair

PART = 8 << 20


@pytest.fixture
def servers(cluster, tmp_path):
    shared = tmp_path / "shared-blobs"
    with server_pair(cluster, tmp_path, "bd", ["--blob-dir", str(shared)]) as (_, a, b):
        yield a, b, shared


def test_parts_of_other_bytes_through_the_other_server_are_never_published(servers):
    a, b, shared = servers
    api_a, api_b = clients(a, b)
    entity = entity_of(api_a)
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
