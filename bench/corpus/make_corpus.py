"""Regenerates the metrics corpus, bench/corpus/training.corpus.zst (bench/README.md, issue 22).

Starts a private `cohort server` (SQLite, port 0, a temporary HOME), runs the trainings of
runs.py one after the other as separate processes through the Python SDK and its node agent,
then exports every series of every run (user keys and the agent's system metrics) through the
read API and writes them, bit for bit, in the corpus format below, compressed with `zstd -19`.

    PYTHONPATH=python COHORT_BUILD_DIR=build .venv/bin/python bench/corpus/make_corpus.py

Corpus format (little-endian; read by bench/corpus_bench.cc):
    magic "CCORPUS1"
    u32 series count
    per series:
      u16 length + run name, u16 length + writer label, u8 system (1: an agent system metric),
      u16 length + key, u32 n, then n x i64 step, n x i64 time (ms), n x u64 value bits
System series have no step on the wire; the store gives each sample its time as its step.
"""
import argparse
import math
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
PROJECT = "corpus"

# (runs.py arguments) in the order they run.
RUNS = [
    ["digits-mlp", "--seed", "1", "--lr", "0.05", "--epochs", "90"],
    ["digits-mlp", "--seed", "2", "--lr", "0.02", "--epochs", "90"],
    ["digits-mlp", "--seed", "3", "--lr", "0.1", "--epochs", "90"],
    ["digits-cnn", "--seed", "1", "--epochs", "200"],
    ["chars-gru", "--seed", "1", "--steps", "2000"],
    ["hf-trainer", "--seed", "1", "--steps", "2000"],
]


class Api:
    def __init__(self, url, key):
        self.url, self.key = url.rstrip("/"), key

    def get(self, path, **params):
        q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        req = urllib.request.Request(f"{self.url}{path}{'?' + q if q else ''}",
                                     headers={"Authorization": f"Bearer {self.key}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            # JSON "-0" must stay -0.0 and every number a double of the exact text.
            return json.loads(r.read(), parse_int=lambda s: -0.0 if s == "-0" else int(s))


def start_server(home, cohort_bin):
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
               XDG_RUNTIME_DIR=str(home / "run"))
    (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    proc = subprocess.Popen([str(cohort_bin), "server", "--port", "0", "--data-dir",
                             str(home / "data")], stdout=subprocess.PIPE, env=env, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        sys.exit(f"make_corpus: the server did not start ({url!r})")
    key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]
    return proc, env, url, key


def series_points(api, run_path, route, key, writer, system):
    """Every point of one series, paging with after_step."""
    pts, after = [], None
    while True:
        params = {"keys": key, "limit": 100000, "after_step": after}
        params["labels" if system else "writers"] = writer
        ans = api.get(f"{run_path}/{route}", **params)
        s = [x for x in ans["series"] if x["key"] == key]
        assert len(s) == 1, (key, writer, ans)
        for step, t, v in s[0]["points"]:
            if isinstance(v, str):
                v = float(v.replace("Infinity", "inf"))
            pts.append((int(step), int(t), float(v)))
        if not s[0]["more"]:
            return pts
        after = pts[-1][0]


def export(api, entity):
    runs = api.get(f"/api/v1/runs/{entity}/{PROJECT}", limit=1000)["runs"]
    out = []
    for run in sorted(runs, key=lambda r: r["created_ms"]):
        path = f"/api/v1/runs/{entity}/{PROJECT}/{run['id']}"
        for k in api.get(f"{path}/keys")["keys"]:
            system = k["key"].startswith("system/")
            key = k["key"][len("system/"):] if system else k["key"]
            pts = series_points(api, path, "system" if system else "history", key, k["writer"],
                                system)
            assert len(pts) == k["count"], (k, len(pts))
            out.append((run["name"], k["writer"], system, key, pts))
    return out


def write_corpus(series, path):
    def s16(b):
        return struct.pack("<H", len(b)) + b
    blob = bytearray(b"CCORPUS1" + struct.pack("<I", len(series)))
    for run, writer, system, key, pts in series:
        blob += s16(run.encode()) + s16(writer.encode()) + bytes([int(system)])
        blob += s16(key.encode()) + struct.pack("<I", len(pts))
        blob += struct.pack(f"<{len(pts)}q", *(p[0] for p in pts))
        blob += struct.pack(f"<{len(pts)}q", *(p[1] for p in pts))
        blob += struct.pack(f"<{len(pts)}d", *(p[2] for p in pts))
    raw = path.with_suffix("")
    raw.write_bytes(bytes(blob))
    subprocess.run(["zstd", "-q", "-f", "-19", "--rm", str(raw), "-o", str(path)], check=True)


def round_sample_value(v):
    """The agent's RoundSampleValue (src/agent/monitor/sampler.cc): the double nearest to
    round(v * 100) / 100, halves away from zero as std::round does (Python's round() takes
    them to the even neighbour); NaN, infinities and |v * 100| >= 2^52 as they are; no -0."""
    if not math.isfinite(v):
        return v
    scaled = v * 100.0
    if abs(scaled) >= 2.0 ** 52:
        return v
    whole = math.floor(abs(scaled))
    if abs(scaled) - whole >= 0.5:  # exact: the difference of a double and its floor
        whole += 1
    rounded = math.copysign(whole, scaled) / 100.0
    return 0.0 if rounded == 0 else rounded


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(HERE / "training.corpus.zst"))
    p.add_argument("--select", default="", help="run only these runs (indexes into RUNS: 3,4)")
    p.add_argument("--home", default="", help="keep the server's HOME here (default: temporary)")
    p.add_argument("--export-only", action="store_true",
                   help="export what the server in --home holds, without training")
    p.add_argument("--replace-from", default="",
                   help="with --export-only: a second server HOME whose runs replace the "
                        "first one's of the same name (runs redone with --select)")
    p.add_argument("--round-system-from", default="",
                   help="no training: rewrite this corpus (made before the agent rounded its "
                        "values) with its system series' values rounded as the agent's sampler "
                        "now does: what the agent records from the same readings")
    a = p.parse_args()
    if a.round_system_from:
        from store_size import read_corpus  # the corpus's one reader (bench/corpus/)
        series = [(run, writer, system, key,
                   list(zip(steps, times,
                            [round_sample_value(v) for v in values] if system else values)))
                  for run, writer, system, key, steps, times, values
                  in read_corpus(a.round_system_from)]
        write_corpus(series, pathlib.Path(a.out))
        print(f"make_corpus: {len(series)} series -> {a.out}")
        return
    build = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build"))
    cohort_bin = build / "src" / "cli" / "cohort"
    with tempfile.TemporaryDirectory(prefix="cohort-corpus-") as tmp:
        home = pathlib.Path(a.home or tmp)
        proc, env, url, key = start_server(home, cohort_bin)
        try:
            env.update(COHORT_BASE_URL=url, COHORT_API_KEY=key, COHORT_PROJECT=PROJECT,
                       COHORT_BUILD_DIR=str(build), PYTHONPATH=str(ROOT / "python"),
                       TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                       TRANSFORMERS_OFFLINE="1", COHORT_AGENT_IDLE_S="5")
            chosen = [RUNS[int(i)] for i in a.select.split(",")] if a.select else RUNS
            for args in [] if a.export_only else chosen:
                t0 = time.time()
                subprocess.run([sys.executable, str(HERE / "runs.py"), *args,
                                "--out", str(home / "hf")], env=env, check=True)
                print(f"make_corpus: {' '.join(args)}: {time.time() - t0:.0f} s", flush=True)
            api = Api(url, key)
            series = export(api, api.get("/api/v1/viewer")["entity"])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        if a.replace_from:
            proc, _, url, key = start_server(pathlib.Path(a.replace_from), cohort_bin)
            try:
                api = Api(url, key)
                redone = export(api, api.get("/api/v1/viewer")["entity"])
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            names = {s[0] for s in redone}
            series = [s for s in series if s[0] not in names] + redone
    out = pathlib.Path(a.out)
    write_corpus(series, out)
    total = sum(len(s[4]) for s in series)
    print(f"make_corpus: {len(series)} series, {total} points -> {out} "
          f"({out.stat().st_size} bytes)")
    for run, writer, system, key, pts in series:
        print(f"  {run:24s} {'system/' if system else ''}{key:28s} {len(pts)}")


if __name__ == "__main__":
    main()
