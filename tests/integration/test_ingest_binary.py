"""The binary batch body of POST .../batches (docs/formats.md, "Batch v4") against the real
`cohort server`: the same data sent as JSON and as binary is stored identically, duplicates are
acknowledged once, and bad bodies (or a missing Cohort-Batch-Seq header) get JSON errors naming
the problem.

The encoder below is written from the format's documentation, independently of the client
library's C++ encoder (core/batch_format.h, which src/server/api/ingest_binary_decode_test.cc
round-trips).
"""
import math
import sqlite3
import struct

from conftest import Api

CONTENT_TYPE = "application/vnd.cohort.batch"


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def encode(history=(), system=(), console=(), version=4):
    """history: [(step or None, time_ms, {key: value})], system: [(time_ms, {key: value})],
    console: [(time_ms, "stdout"|"stderr", text)]. The seq goes in the Cohort-Batch-Seq header."""
    keys = []
    for row in list(history) + [(None,) + tuple(r) for r in system]:
        for k in row[2]:
            if k not in keys:
                keys.append(k)
    p = bytearray(varint(len(keys)))
    for k in keys:
        kb = k.encode()
        p += varint(len(kb)) + kb

    def rows(items, with_step):
        out = bytearray(varint(len(items)))
        prev_keys, prev_time = None, 0
        for step, t, values in items:
            ks = [keys.index(k) for k in values]
            flags = (1 if with_step and step is not None else 0) | (2 if ks == prev_keys else 0)
            out.append(flags)
            if flags & 1:
                out += varint(step)
            out += varint(zigzag(t - prev_time))
            prev_time = t
            if not flags & 2:
                out += varint(len(ks)) + b"".join(varint(k) for k in ks)
                prev_keys = ks
            out += b"".join(struct.pack("<d", v) for v in values.values())
        return out

    p += rows(list(history), True)
    p += rows([(None,) + tuple(r) for r in system], False)
    p += varint(len(console))
    prev_time = 0
    for t, stream, text in console:
        tb = text.encode()
        p += varint(zigzag(t - prev_time)) + bytes([1 if stream == "stderr" else 0])
        p += varint(len(tb)) + tb
        prev_time = t
    p += varint(0)  # no histograms (tests/distributed/test_histograms.py logs them)
    p += varint(0)  # no media rows (tests/distributed/test_media.py logs them)
    return b"CBAT" + bytes([version, 0, 0, 0]) + struct.pack("<I", crc32c(bytes(p))) + bytes(p)


def entity(api):
    return api.get("/api/v1/viewer")[1]["entity"]


def setup_run(api, labels):
    e = entity(api)
    status, run = api.post(f"/api/v1/runs/{e}/proj", {"name": "binary"})
    assert status in (200, 201), run
    base = f"/api/v1/runs/{e}/proj/{run['id']}"
    for label in labels:
        status, w = api.post(base + "/writers", {"label": label})
        assert status in (200, 201), w
    return base


def post_binary(api, base, label, body, seq=1, content_type=CONTENT_TYPE, ordered=None):
    headers = {"Content-Type": content_type}
    if seq is not None:
        headers["Cohort-Batch-Seq"] = str(seq)
    if ordered is not None:
        headers["Cohort-Batch-Ordered"] = ordered
    return api.post(f"{base}/writers/{label}/batches", raw=body, headers=headers)


HISTORY = [
    (0, 1_700_000_000_000, {"loss": 2.5, "acc": 0.125}),
    (1, 1_700_000_000_010, {"loss": 2.25, "acc": -0.0}),
    (2, 1_700_000_000_005, {"loss": float("inf"), "acc": 1e-300}),
    (3, 1_700_000_000_020, {"loss": 0.1 + 0.2, "lr": 3e-4}),
    (None, 1_700_000_000_030, {"loss": float("nan")}),
]
SYSTEM = [(1_700_000_000_001, {"cpu": 12.5}), (1_700_000_000_002, {"cpu": 13.0})]
CONSOLE = [(1_700_000_000_003, "stdout", "epoch 1 caf\u00e9"), (1_700_000_000_004, "stderr", "warn")]


def json_value(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def json_body(seq):
    history = []
    for step, t, values in HISTORY:
        row = {"time": t, "values": {k: json_value(v) for k, v in values.items()}}
        if step is not None:
            row["step"] = step
        history.append(row)
    return {"seq": seq,
            "history": history,
            "system": [{"time": t, "values": v} for t, v in SYSTEM],
            "console": [{"time": t, "stream": s, "text": x} for t, s, x in CONSOLE]}


def stored(api, base, label):
    status, keys = api.get(f"{base}/keys")
    assert status == 200, keys
    out = {}
    for k in keys["keys"]:
        if k["writer"] != label:
            continue
        status, h = api.get(f"{base}/history?keys={k['key']}&writers={label}")
        assert status == 200, h
        out[k["key"]] = [(p[0], p[1], repr(p[2])) for s in h["series"] for p in s["points"]]
    status, lines = api.get(f"{base}/console?labels={label}")
    assert status == 200, lines
    out["console"] = [(l["time"], l["stream"], l["text"]) for l in lines["lines"]
                      if l.get("label", label) == label]
    return out


def test_binary_and_json_bodies_store_identical_data(api):
    base = setup_run(api, ["j", "b"])
    status, rj = api.post(f"{base}/writers/j/batches", json_body(1))
    assert status == 200, rj
    status, rb = post_binary(api, base, "b", encode(HISTORY, SYSTEM, CONSOLE), seq=1)
    assert status == 200, rb
    assert rb == rj == {"duplicate": False, "points": 11, "next_step": 5}
    from_json, from_binary = stored(api, base, "j"), stored(api, base, "b")
    assert set(from_json) >= {"loss", "acc", "lr", "system/cpu", "console"}
    assert from_binary == from_json
    assert len(from_binary["loss"]) == 5 and from_binary["console"][0][2] == "epoch 1 caf\u00e9"


def test_binary_duplicate_seq_is_acknowledged_and_stored_once(api):
    base = setup_run(api, ["b"])
    body = encode(HISTORY[:2])
    status, first = post_binary(api, base, "b", body, seq=7)
    assert status == 200 and first["duplicate"] is False and first["points"] == 4
    status, again = post_binary(api, base, "b", body, seq=7)
    assert status == 200 and again["duplicate"] is True, again
    assert len(stored(api, base, "b")["loss"]) == 2


def batch_records(server):
    with sqlite3.connect(f"file:{server.data_dir / 'cohort.db'}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM batches").fetchone()[0]


def test_ordered_batches_are_stored_once_without_a_record_each(server, api):
    """Cohort-Batch-Ordered: <stream id> (what the agent sends): the server keeps the stream's
    highest seq for the writer, not a record per batch; retries of it and of the stream's lower
    seqs are duplicates, another stream's lower seqs are not."""
    base = setup_run(api, ["b"])
    before = batch_records(server)
    for seq, row in enumerate(HISTORY[:4], start=101):
        status, r = post_binary(api, base, "b", encode([row]), seq=seq, ordered="agent-a")
        assert status == 200 and r["duplicate"] is False, r
    assert batch_records(server) == before
    for seq in (104, 102):
        status, r = post_binary(api, base, "b", encode([HISTORY[0]]), seq=seq, ordered="agent-a")
        assert status == 200 and r["duplicate"] is True, (seq, r)
    # Another stream of the writer (a relaunched job's agent, a clock behind) numbers lower.
    status, r = post_binary(api, base, "b", encode([HISTORY[4]]), seq=7, ordered=" agent-b ")
    assert status == 200 and r["duplicate"] is False, r
    assert batch_records(server) == before
    # Without the header each batch is recorded, as before.
    status, r = post_binary(api, base, "b", encode([HISTORY[4]]), seq=9)
    assert status == 200 and r["duplicate"] is False, r
    assert batch_records(server) == before + 1
    assert len(stored(api, base, "b")["loss"]) == 6
    # The JSON body takes the header too; a value that is not a stream id is refused.
    status, r = api.post(f"{base}/writers/b/batches", json_body(10),
                         headers={"Cohort-Batch-Ordered": "agent-b"})
    assert status == 200 and r["duplicate"] is False, r
    for bad in ("agent b", "a" * 65, "caf\u00e9"):
        status, r = post_binary(api, base, "b", encode([HISTORY[0]]), seq=11,
                                ordered=bad.encode().decode("latin-1"))
        assert status == 400, (bad, r)
        assert "Cohort-Batch-Ordered header: expected a stream id" in r["error"]["message"], r
    assert batch_records(server) == before + 1


def test_unknown_binary_version_is_415_naming_the_version(api):
    base = setup_run(api, ["b"])
    for version in (1, 2, 3, 9):
        status, body = post_binary(api, base, "b", encode(HISTORY, version=version))
        assert status == 415, body
        assert body["error"]["code"] == "unsupported_media_type"
        assert f"version {version}" in body["error"]["message"]
        assert "cohort-batch-v4" in body["error"]["message"]


def test_bad_binary_bodies_are_400_naming_the_problem_and_store_nothing(api):
    base = setup_run(api, ["b"])
    good = encode(HISTORY, SYSTEM, CONSOLE)
    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    cases = {
        "bad checksum": bytes(corrupt),
        "truncated header": good[:6],
        "does not start with": b"{\"seq\": 1}",
    }
    # Truncated payload, re-sealed so that the checksum passes.
    payload = good[12:-3]
    cases["truncated in"] = (good[:8] + struct.pack("<I", crc32c(payload)) + payload)
    # A key index out of range: one key, a row naming key 5.
    p = varint(1) + varint(1) + b"a" + varint(1) + bytes([0]) + varint(2) + \
        varint(1) + varint(5) + struct.pack("<d", 1.0) + varint(0) + varint(0)
    cases["key index 5 out of range"] = b"CBAT\x04\x00\x00\x00" + struct.pack("<I", crc32c(p)) + p
    # A key the key rule refuses (the reserved system/ prefix), named with its place.
    cases["keys[2]: key 'system/cpu' starts with"] = encode(
        [(0, 1, {"loss": 1.0, "acc": 2.0, "system/cpu": 3.0})])
    for needle, body in cases.items():
        status, answer = post_binary(api, base, "b", body)
        assert status == 400, (needle, answer)
        assert needle in answer["error"]["message"], (needle, answer)
    # The seq travels in a header, required with this content type.
    for seq, needle in ((None, "Cohort-Batch-Seq header: required"),
                        ("0", "Cohort-Batch-Seq header: must be > 0"),
                        ("x1", "Cohort-Batch-Seq header: expected a decimal integer")):
        status, answer = post_binary(api, base, "b", good, seq=seq)
        assert status == 400 and needle in answer["error"]["message"], (seq, answer)
    status, keys = api.get(f"{base}/keys")
    assert status == 200 and keys["keys"] == []


def test_healthz_lists_the_binary_format(server):
    status, body = Api(server.url, "").get("/healthz")
    assert status == 200 and body["ingest_formats"] == ["json", "cohort-batch-v4"]
