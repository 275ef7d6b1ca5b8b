"""The presigned-URL alternative of docs/artifacts.md ("S3: through the server or presigned?"),
measured raw: FILE sent straight to an S3 endpoint in 8 MiB parts, one SigV4 query-string
presigned PUT per part (what the server would hand out), one after the other as `cohort artifact
put` sends its parts; then the same parts read back with presigned GETs through SHA-256 (what the
server would still have to do to verify the upload). Prints JSON: {"put_s", "get_s", "bytes"}.
Usage: python3 bench/s3_presigned_transfer.py ENDPOINT BUCKET FILE"""
import hashlib
import http.client
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "s3"))
import weed  # noqa: E402

PART = 8 << 20


def main(endpoint, bucket, path):
    host = urllib.parse.urlparse(endpoint).netloc
    conn = http.client.HTTPConnection(host, timeout=120)
    size = os.path.getsize(path)
    count = (size + PART - 1) // PART
    # The bucket (a presigned PUT of the bucket itself; 409 when it exists).
    u = urllib.parse.urlparse(weed.presign(endpoint, bucket, "", "PUT"))
    conn.request("PUT", u.path + "?" + u.query)
    conn.getresponse().read()
    t0 = time.time()
    with open(path, "rb") as f:
        for n in range(count):
            data = f.read(PART)
            u = urllib.parse.urlparse(weed.presign(endpoint, bucket, f"presigned/part-{n}", "PUT"))
            conn.request("PUT", u.path + "?" + u.query, body=data,
                         headers={"Content-Length": str(len(data))})
            r = conn.getresponse()
            r.read()
            assert r.status == 200, (n, r.status)
    t1 = time.time()
    h = hashlib.sha256()
    got = 0
    for n in range(count):
        u = urllib.parse.urlparse(weed.presign(endpoint, bucket, f"presigned/part-{n}", "GET"))
        conn.request("GET", u.path + "?" + u.query)
        r = conn.getresponse()
        assert r.status == 200, (n, r.status)
        while True:
            chunk = r.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            got += len(chunk)
    t2 = time.time()
    assert got == size, (got, size)
    print(json.dumps({"put_s": t1 - t0, "get_s": t2 - t1, "bytes": size}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
