"""`run.alert` of Cohort's Python SDK from a real training process, through the real node agent
to the real server, read back through the alerts API (GET /api/v1/alerts/{entity}/{project})
and the `cohort alerts ls|ack` commands of the real binary."""
import json
import subprocess

from conftest import COHORT_BIN
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

PROJECT = "alerting"

SCRIPT = r'''
import datetime, cohort
run = cohort.init(project="alerting", id="alerts1", settings=cohort.Settings(x_label="rank_0"))
run.log({"loss": 0.5})
run.alert("loss diverged", "loss is NaN at step 0", level=cohort.AlertLevel.ERROR)
run.alert("loss diverged", "again", level="ERROR", wait_duration=datetime.timedelta(minutes=5))
cohort.alert("eval", "acc 0.5", level="warn")  # the module-level call, any case
cohort.alert("eval", "acc 0.6", level="WARN", wait_duration=0)  # no wait: sent, a new alert
run.alert("note", "just so you know")  # INFO by default
for args, kwargs in [(("", "x"), {}), (("t", "x"), {"level": "LOUD"}),
                     (("t" * 257, "x"), {}), (("t", "x"), {"wait_duration": -1}),
                     (("t", "x"), {"wait_duration": "soon"}), ((1, "x"), {})]:
    try:
        run.alert(*args, **kwargs)
        print("accepted", args[0], kwargs)
    except (TypeError, cohort.UsageError) as e:
        print("refused", type(e).__name__, e)
run.finish()
try:
    run.alert("late", "x")
except cohort.UsageError as e:
    print("refused", type(e).__name__, e)
'''


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def test_run_alert_reaches_the_server_through_the_agent(client):
    proc = assert_ok(client.python(SCRIPT))
    out = proc.stdout
    assert "accepted" not in out, out
    assert "refused UsageError run.alert: alert title: must be 1..256 bytes (got 0)" in out
    assert "refused UsageError alert: level must be one of 'INFO', 'WARN' or 'ERROR'" in out
    assert "alert title: must be 1..256 bytes (got 257)" in out
    assert "refused UsageError alert: wait_duration must be >= 0 seconds" in out
    assert "refused TypeError alert: wait_duration must be an int, float" in out
    assert "refused TypeError alert: title must be a str, not int" in out
    assert "refused UsageError alert: this run is finished" in out

    got = wait_until(lambda: (a := alerts(client, run="alerts1")) and len(a) == 4 and a,
                     what="four alerts")
    by_title = {a["title"]: a for a in reversed(got)}  # the newest of each title
    assert len(by_title) == 3, got
    loss = by_title["loss diverged"]
    assert loss["level"] == "ERROR" and loss["source"] == "code"
    assert loss["text"] == "loss is NaN at step 0"
    assert (loss["run"], loss["writer"]) == ("alerts1", "rank_0")
    assert loss["count"] == 1  # the repeat within its wait duration was not sent
    # Each eval call sent notifies: the second opened a new alert and closed the first.
    assert by_title["eval"]["level"] == "WARN" and by_title["eval"]["count"] == 1
    assert by_title["eval"]["text"] == "acc 0.6"
    (first_eval,) = [a for a in got if a["title"] == "eval" and a["id"] != by_title["eval"]["id"]]
    assert first_eval["text"] == "acc 0.5"
    assert by_title["note"]["level"] == "INFO"
    errors = alerts(client, level="ERROR")
    assert [a["title"] for a in errors] == ["loss diverged"]


def table(stdout):
    """An aligned table: column starts from the header, cells cut at those offsets."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    return [dict(zip(names, [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]))
            for line in lines[1:]]


def cli(client, *args):
    env = {k: v for k, v in client.env.items()
           if k not in ("NO_COLOR", "COHORT_BASE_URL", "COHORT_API_KEY")}
    return subprocess.run([str(COHORT_BIN), "alerts", *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_cli_lists_and_acknowledges_alerts(client):
    assert_ok(client.python(SCRIPT))
    wait_until(lambda: len(alerts(client)) == 4, what="four alerts")

    out = cli(client, "ls", "--project", PROJECT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:9] == ["ID", "RUN", "WRITER", "LEVEL", "STATE", "COUNT", "OPENED",
                                      "ACKED", "TITLE"]
    rows = {r["TITLE"]: r for r in reversed(table(out.stdout))}  # the newest of each title
    assert set(rows) == {"loss diverged", "eval", "note"}
    loss = rows["loss diverged"]
    assert (loss["RUN"], loss["WRITER"], loss["LEVEL"], loss["ACKED"]) == (
        "alerts1", "rank_0", "ERROR", "-")
    assert rows["eval"]["COUNT"] == "1" and rows["eval"]["OPENED"].startswith("20")

    out = cli(client, "ls", "--run", f"{PROJECT}/alerts1", "--json", "--level", "WARN")
    assert out.returncode == 0, out.stderr
    eval_alert, first_eval = json.loads(out.stdout)  # newest first
    assert eval_alert["title"] == first_eval["title"] == "eval"
    assert eval_alert["id"] > first_eval["id"] and eval_alert["acked_ms"] is None

    out = cli(client, "ack", f"{PROJECT}/{eval_alert['id']}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"acknowledged alert {eval_alert['id']} (eval, ")
    one = client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}/{eval_alert['id']}")
    assert one["acked_ms"] is not None and one["acked_by"]
    out = cli(client, "ls", "--project", PROJECT, "--json")
    acked = {a["title"]: a["acked_ms"] for a in reversed(json.loads(out.stdout))}
    assert acked["eval"] is not None and acked["note"] is None

    # Every project of the entity by default (a PROJECT column); bad arguments exit 2.
    out = cli(client, "ls")
    assert out.returncode == 0 and out.stdout.split()[:2] == ["ID", "PROJECT"], out
    for bad in (["ack", "12"], ["ack", "x/abc"], ["ls", "--run", "alerts1"]):
        out = cli(client, *bad)
        assert out.returncode == 2, (bad, out.stdout, out.stderr)
        assert out.stderr.startswith(f"cohort alerts {bad[0]}: "), out.stderr
    out = cli(client, "ls", "--state", "closed")
    assert out.returncode != 0 and "closed" in out.stderr, out.stderr
    out = cli(client, "ack", "999999", "--project", PROJECT)
    assert out.returncode == 1 and out.stderr.startswith("cohort alerts ack: "), out.stderr
