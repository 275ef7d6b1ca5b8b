"""A small run of the fleet load benchmark (bench/fleet_load.cc) in the default suite: 500
keep-alive agents heartbeating and 50 runs logging with system metrics against one server, with
chart queries throughout. The full 10,000-agent run is bench/fleet_load.sh (docs/reliability.md).
"""
import json
import subprocess

from conftest import BUILD, ServerProcess
from security_helpers import create_key, http, metric

FLEET = BUILD / "bench" / "fleet_load"


def test_500_agents_and_50_logging_runs_are_served_without_errors(tmp_path):
    assert FLEET.exists(), f"{FLEET} is missing: build the bench targets"
    s = ServerProcess(tmp_path).start()
    try:
        key = create_key(s, "fleet")
        r = subprocess.run([str(FLEET), "--url", s.url, "--key", key, "--server-pid",
                            str(s.proc.pid), "--agents", "500", "--runs", "50",
                            "--heartbeat-s", "1", "--log-hz", "2", "--idle-s", "1",
                            "--agents-only-s", "2", "--load-s", "3", "--chart-points", "20000",
                            "--buckets", "100"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        out = json.loads(r.stdout)
        assert out["agents_connected"] == 500 and out["loggers_connected"] == 50, out
        load = out["load"]
        assert load["errors"] == 0 and load["non_2xx"] == 0, out
        assert load["ingest_batches"] >= 50 * 2 * 2, out   # ~2 Hz for ~3 s, each run
        assert load["heartbeats"] >= 500, out
        assert out["idle"]["chart_queries"] >= 1 and load["chart_queries"] >= 1, out
        assert load["server_rss_max_mb"] > 0 and load["server_cpu_cores"] > 0, out
        text = http(s.url + "/metrics", key=s.config["api_key"])[1]  # admin: per entity
        assert metric(text, "cohort_entity_points_total", entity="fleet") >= 20000
        assert metric(text, "cohort_http_connections_total") >= 550
    finally:
        s.stop()
