"""Media rows through the JSON ingest, server side (docs/benchmarks.md, "Media budget"): the
latency of a writer's batch that carries one media row and a scalar, next to a batch of scalars
only (the control), on a fresh store per run, for one or two `cohort` binaries (an A/B of a
change on the media path: the run's media bytes read under the run row's lock and written back
per media batch). Rounds alternate the binaries' order. Loopback, one keep-alive connection.

    .venv/bin/python bench/media_ingest_bench.py [--store sqlite|postgres] [--rounds 3]
        [--batches 300] [--bin build/src/cli/cohort --bin OTHER/src/cli/cohort]

PostgreSQL: a durable throwaway cluster (tests/postgres/pg_cluster.py), one database per run.
"""
import argparse
import hashlib
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
sys.path.insert(0, str(ROOT / "bench"))
import _bench_server  # noqa: E402
from pg_cluster import PgCluster  # noqa: E402


def one_run(binary, workdir, store_url, batches):
    """Median ms of a media batch and of a scalar batch (alternating), for one fresh server."""
    _bench_server.COHORT = pathlib.Path(binary)
    server = _bench_server.Server(workdir, store_url)
    try:
        entity = server.json("GET", "/api/v1/viewer")["entity"]
        run = server.json("POST", f"/api/v1/runs/{entity}/bench", {"name": "media"})["id"]
        path = f"/api/v1/runs/{entity}/bench/{run}"
        server.json("POST", path + "/writers", {"label": "rank_0"})
        times = {"media": [], "scalars": []}
        for seq in range(1, 2 * batches + 1):
            step = seq
            body = {"seq": seq, "history": [{"step": step, "time": 1_700_000_000_000 + step,
                                             "values": {"loss": 1.0 / seq}}]}
            kind = "media" if seq % 2 else "scalars"
            if kind == "media":
                sha = hashlib.sha256(str(seq).encode()).hexdigest()
                body["media"] = [{"key": "samples", "step": step, "time": 1_700_000_000_000 + step,
                                  "type": "image", "sha256": sha, "size": 10_000,
                                  "mime": "image/png", "width": 64, "height": 64}]
            t = time.perf_counter()
            server.json("POST", f"{path}/writers/rank_0/batches", body)
            times[kind].append((time.perf_counter() - t) * 1e3)
        # The first tenth warms the connection and the statements.
        return {k: statistics.median(v[len(v) // 10:]) for k, v in times.items()}
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="postgres")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=300, help="media batches (and as many others)")
    ap.add_argument("--bin", action="append", help="a cohort binary (repeat for an A/B)")
    args = ap.parse_args()
    bins = args.bin or [str(ROOT / "build" / "src" / "cli" / "cohort")]
    pg = PgCluster(durable=True).start() if args.store == "postgres" else None
    results = {b: [] for b in bins}
    try:
        for r in range(args.rounds):
            order = bins if r % 2 == 0 else list(reversed(bins))
            for i, b in enumerate(order):
                url = None
                if pg is not None:
                    db = f"media_{r}_{i}"
                    pg.create_database(db)
                    url = pg.url(db)
                with tempfile.TemporaryDirectory(prefix="cohort-media-ingest-") as work:
                    res = one_run(b, work, url, args.batches)
                results[b].append(res)
                print(f"round {r} {b}: media batch {res['media']:.3f} ms, "
                      f"scalar batch {res['scalars']:.3f} ms", flush=True)
    finally:
        if pg is not None:
            pg.stop()
    for b, rs in results.items():
        med = {k: statistics.median(x[k] for x in rs) for k in ("media", "scalars")}
        print(f"{b}: median of {len(rs)} runs: media batch {med['media']:.3f} ms, "
              f"scalar batch {med['scalars']:.3f} ms, media - scalar "
              f"{med['media'] - med['scalars']:+.3f} ms")


if __name__ == "__main__":
    main()
