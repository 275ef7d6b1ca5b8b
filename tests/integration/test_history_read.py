"""Raw history reads through the real `cohort server` (src/server/api/history_api.cc): large
answers are written in pieces, and every double must still come back bit for bit."""
import math
import random
import struct
import urllib.parse

P = "/api/v1/runs/{e}/proj"


def test_large_raw_read_returns_every_double_exactly_across_write_buffers(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200
    base = P.format(e=me["entity"])
    status, run = api.post(base, {"name": "exact"})
    assert status in (200, 201), run
    path = f"{base}/{run['id']}"
    status, w = api.post(path + "/writers", {"label": "w"})
    assert status in (200, 201), w

    # Enough points for the answer to fill the writer's buffer many times over, with the
    # longest forms (17-digit values, 19-digit steps and times, subnormals, extremes, non-finite
    # values, -0.0) spread over it so that some land at a buffer's end.
    rng = random.Random(5)
    specials = [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.1 + 0.2,
                -1.0000000000000002, 123456789012345680.0, "NaN", "Infinity", "-Infinity"]
    points = []
    for i in range(20000):
        if i % 97 == 0:
            v = specials[(i // 97) % len(specials)]
        else:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if not math.isfinite(v):
                v = rng.random()
        step = i if i < 19990 else 9_000_000_000_000_000_000 + i  # 19 digits at the end
        time_ms = 1_700_000_000_000 + i if i % 2 else 9_100_000_000_000_000_000 - i
        points.append((step, time_ms, v))
    for seq, start in enumerate(range(0, len(points), 5000), 1):
        rows = [{"step": s, "time": t, "values": {"x": v}} for s, t, v in points[start:start + 5000]]
        status, body = api.post(f"{path}/writers/w/batches", {"seq": seq, "history": rows})
        assert status == 200, body

    q = urllib.parse.urlencode({"keys": "x", "limit": 100000})
    status, body = api.get(f"{path}/history?{q}")
    assert status == 200, body
    got = body["series"][0]["points"]
    assert body["series"][0]["more"] is False
    assert len(got) == len(points)
    for (step, time_ms, v), (gs, gt, gv) in zip(points, got):
        assert (gs, gt) == (step, time_ms)
        if isinstance(v, str):
            assert gv == v
        else:
            assert isinstance(gv, float) or v == int(v)
            assert struct.pack("<d", float(gv)) == struct.pack("<d", v), (step, v, gv)
