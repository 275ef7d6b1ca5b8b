"""Moving from SQLite to PostgreSQL (docs/operations.md): data written over HTTP into a
SQLite-backed server is copied with `cohort migrate` (and with `cohort export` + `cohort import`)
into a throwaway PostgreSQL cluster; a server on PostgreSQL then answers every read as the old
one did, the old API keys still authenticate, exactly-once holds for retried batches, and running
the copy again stores nothing twice."""
import base64
import os
import urllib.request

from .pg_servers import cohort, fresh_db, get, server_on


def batch(seq, label, n=50):
    rows = [{"step": (seq - 1) * n + i, "time": 1_700_000_000_000 + seq * 100 + i,
             "values": {"loss": 1.0 / (seq * n + i + 1), "lr": 0.1 * (i % 3)}}
            for i in range(n)]
    return {"seq": seq, "history": rows,
            "system": [{"time": 1_700_000_000_000 + seq, "values": {"gpu.0.temp": 60.0 + seq}}],
            "console": [{"time": 1_700_000_000_000 + seq, "stream": "stdout",
                         "text": f"{label} batch {seq}"},
                        {"time": 1_700_000_000_000 + seq, "stream": "stderr",
                         "text": f"{label} warn {seq}"}]}


def write_workload(server):
    """Writes runs, a shared run with two writers, console, a run file, a view and an extra key.
    Returns (entity, run paths, extra key)."""
    api = server.api()
    entity = get(api, "/api/v1/viewer")["entity"]
    base = f"/api/v1/runs/{entity}/migr"
    runs = []
    for name, tags in (("solo", ["a", "b"]), ("shared", ["ddp"])):
        status, run = api.post(base, {"name": name, "group": "g1", "tags": tags,
                                      "config": {"lr": 0.1, "layers": [1, 2, 3], "name": name}})
        assert status == 201, run
        runs.append(f"{base}/{run['id']}")
    solo, shared = runs
    assert api.post(f"{solo}/writers", {"label": "main"})[0] == 201
    for seq in range(1, 4):
        assert api.post(f"{solo}/writers/main/batches", batch(seq, "main"))[0] == 200
    assert api.post(f"{solo}/writers/main/finish", {"exit_code": 0})[0] == 200
    assert api.post(f"{shared}/writers", {"label": "rank_0", "primary": True})[0] == 201
    assert api.post(f"{shared}/writers", {"label": "rank_1", "primary": False})[0] == 201
    for seq in range(1, 6):
        for label in ("rank_0", "rank_1"):
            status, body = api.post(f"{shared}/writers/{label}/batches", batch(seq, label, 200))
            assert status == 200 and body["duplicate"] is False, body
    assert api.patch(shared, {"summary": {"best": 0.25}, "notes": "moved"})[0] == 200
    assert api.post(f"{shared}/writers/rank_1/finish", {"exit_code": 1})[0] == 200
    assert api.post(f"{shared}/writers/rank_0/finish", {"exit_code": 0})[0] == 200
    # A file uploaded through the W&B-compatible route (authenticated with the key).
    run_id = shared.rsplit("/", 1)[1]
    req = urllib.request.Request(
        f"{server.url}/files/{entity}/migr/{run_id}/upload/config.yaml", data=b"lr: 0.1\n\x00\xff",
        method="PUT", headers={"Content-Type": "application/octet-stream",
                               "Authorization": "Basic " + base64.b64encode(
                                   f"api:{server.config['api_key']}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200
    status, view = api.post(f"/api/v1/views/{entity}/migr",
                            {"name": "crashed", "spec": {"filters": [], "sort": "-created"}})
    assert status == 201, view
    status, key = api.post("/api/v1/keys", {"name": "ci", "role": "member"})
    assert status == 201, key
    return entity, runs, key["key"]


def answers(api, entity, runs):
    """Every read the migration must keep, as comparable JSON."""
    out = {"runs": get(api, f"/api/v1/runs/{entity}/migr"),
           "views": get(api, f"/api/v1/views/{entity}/migr")}
    for path in runs:
        out[path] = {
            "run": get(api, path),
            "writers": get(api, f"{path}/writers"),
            "keys": get(api, f"{path}/keys"),
            "raw": get(api, f"{path}/history"),
            "buckets": get(api, f"{path}/history", keys="loss", buckets=7),
            "page": get(api, f"{path}/history", keys="loss", limit=30, after_step=20),
            "system": get(api, f"{path}/system", keys="gpu.0.temp"),
            "console": get(api, f"{path}/console", limit=10000),
            "console_q": get(api, f"{path}/console", labels="rank_1", stream="stderr"),
            "files": get(api, f"{path}/files"),
        }
    return out


def strip_urls(value):
    """File listings carry the server's own URL; everything else must be identical."""
    if isinstance(value, dict):
        return {k: strip_urls(v) for k, v in value.items() if k != "url"}
    if isinstance(value, list):
        return [strip_urls(v) for v in value]
    return value


def file_bytes(api, path):
    req = urllib.request.Request(api.url + f"{path}/files/config.yaml",
                                 headers={"Authorization": "Bearer " + api.key})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def row_counts(cluster, db):
    tables = ("runs", "writers", "batches", "series", "chunks", "console", "run_files", "views",
              "api_keys")
    return {t: int(cluster.psql(db, f"SELECT count(*) FROM {t}")) for t in tables}


def test_migrate_sqlite_to_postgres_keeps_every_answer(cluster, tmp_path):
    sqlite_path = tmp_path / "old" / "cohort.db"
    with server_on(tmp_path / "old", sqlite_path) as old:
        entity, runs, extra_key = write_workload(old)
        admin_key = old.config["api_key"]
        before = answers(old.api(), entity, runs)
        before_file = file_bytes(old.api(), runs[1])
    assert before_file == b"lr: 0.1\n\x00\xff"
    assert len(before[runs[1]]["console"]["lines"]) == 20

    db = fresh_db(cluster, tmp_path, "mig")
    url = cluster.url(db)
    done = cohort("migrate", "--from", f"sqlite:{sqlite_path}", "--to", url)
    assert "chunks" in done.stderr and "migrated" in done.stderr, done.stderr
    counts = row_counts(cluster, db)
    assert counts["runs"] == 2 and counts["writers"] == 3 and counts["api_keys"] == 2
    assert counts["batches"] == 13 and counts["chunks"] > 0 and counts["run_files"] == 1

    # A second run without --resume is refused (target not empty) and changes nothing.
    refused = cohort("migrate", "--from", str(sqlite_path), "--to", url, check=False)
    assert refused.returncode == 1
    assert "not empty" in refused.stderr and "--resume" in refused.stderr, refused.stderr
    # With --resume it is idempotent: nothing is stored twice.
    again = cohort("migrate", "--from", f"sqlite://{sqlite_path}", "--to", url, "--resume",
                   "--progress", "never")
    assert "migrated 0 rows" in again.stderr, again.stderr
    assert row_counts(cluster, db) == counts

    with server_on(tmp_path / "new", url) as new:
        api = new.api(admin_key)  # the old admin key authenticates against the new store
        after = answers(api, entity, runs)
        for key in before:
            assert strip_urls(after[key]) == strip_urls(before[key]), key
        assert file_bytes(api, runs[1]) == before_file
        status, me = new.api(extra_key).get("/api/v1/viewer")
        assert status == 200 and me["entity"] == entity, me
        assert new.api("ck_not_a_key").get("/api/v1/viewer")[0] == 401

        # Exactly-once across the move: a retried batch is a duplicate; new data lands after.
        shared = runs[1]
        status, body = api.post(f"{shared}/writers/rank_0/batches", batch(5, "rank_0", 200))
        assert status == 200 and body["duplicate"] is True, body
        assert api.post(f"{shared}/writers", {"label": "rank_0", "primary": True})[0] in (200, 201)
        status, body = api.post(f"{shared}/writers/rank_0/batches", batch(6, "rank_0", 200))
        assert status == 200 and body["duplicate"] is False, body
        lines = get(api, f"{shared}/console", limit=10000)["lines"]
        assert len(lines) == 22 and lines[-1]["text"] == "rank_0 warn 6"
        assert len({line["id"] for line in lines}) == 22
        status, run = api.post(f"/api/v1/runs/{entity}/migr", {"name": "after-move"})
        assert status == 201, run


def test_export_import_round_trip_and_clear_errors(cluster, tmp_path):
    sqlite_path = tmp_path / "old" / "cohort.db"
    with server_on(tmp_path / "old", sqlite_path) as old:
        entity, runs, _ = write_workload(old)
        admin_key = old.config["api_key"]
        before = answers(old.api(), entity, runs)

    dump = tmp_path / "store.cdump"
    out = cohort("export", "--store", str(sqlite_path), "--out", str(dump))
    assert out.stdout.strip() == str(dump)
    assert not (tmp_path / "store.cdump.tmp").exists()
    # A dump is not a whole backup: it says where the files of artifacts and media are.
    assert "not in the store: copy the data directory's blobs/" in out.stderr, out.stderr

    db = fresh_db(cluster, tmp_path, "imp")
    url = cluster.url(db)
    cohort("import", "--store", url, "--in", str(dump))
    again = cohort("import", "--store", url, "--in", str(dump), "--resume")
    assert "imported 0 rows" in again.stderr, again.stderr

    # Back from PostgreSQL to a new SQLite file through a dump: the same answers again.
    dump2 = tmp_path / "from-pg.cdump"
    cohort("export", "--store", url, "--out", str(dump2))
    back_path = tmp_path / "back" / "cohort.db"
    cohort("import", "--store", str(back_path), "--in", str(dump2))
    for store in (url, str(back_path)):
        with server_on(tmp_path / ("srv" + str(abs(hash(store)))), store) as server:
            after = answers(server.api(admin_key), entity, runs)
        for key in before:
            if store != url and isinstance(key, str) and key.startswith("/api/v1/runs/"):
                # Console ids are renumbered from PostgreSQL's per-run numbering; the lines
                # themselves must be the same.
                for part in ("console", "console_q"):
                    for side in (after, before):
                        for line in side[key][part]["lines"]:
                            line.pop("id", None)
                        side[key][part].pop("next_after", None)
            assert strip_urls(after[key]) == strip_urls(before[key]), (store, key)

    # A torn dump (the export died mid-write) is refused with a clear error, nothing written.
    torn = tmp_path / "torn.cdump"
    data = dump.read_bytes()
    torn.write_bytes(data[: len(data) // 2])
    db2 = fresh_db(cluster, tmp_path, "torn")
    bad = cohort("import", "--store", cluster.url(db2), "--in", str(torn), check=False)
    assert bad.returncode == 1 and "truncated" in bad.stderr, bad.stderr
    assert cluster.psql(db2, "SELECT to_regclass('runs') IS NULL") == "t"  # not even opened
    partial = cohort("import", "--store", cluster.url(db2), "--in", str(torn),
                     "--allow-truncated", check=False)
    assert "warning" in partial.stderr, partial.stderr
    assert int(cluster.psql(db2, "SELECT count(*) FROM runs")) == 2

    # Not a dump; an unreachable database; a missing source.
    junk = tmp_path / "junk"
    junk.write_bytes(b"SQLite format 3\x00")
    bad = cohort("import", "--store", url, "--in", str(junk), check=False)
    assert bad.returncode == 1 and "not a cohort store dump" in bad.stderr, bad.stderr
    bad = cohort("migrate", "--from", str(sqlite_path), "--to",
                 f"postgresql://postgres@/nope?host={tmp_path}/no-such-dir&port=1",
                 check=False)
    assert bad.returncode == 1 and "cannot open store" in bad.stderr, bad.stderr
    bad = cohort("export", "--store", str(tmp_path / "missing.db"), "--out", str(tmp_path / "x"),
                 check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr, bad.stderr
    assert not os.path.exists(tmp_path / "missing.db")
