"""Alerts survive `cohort export` + `cohort import` from SQLite to PostgreSQL (docs/formats.md,
"Store dump"): the alert history with its acks, the webhook with its signing secret and its
delivery log come along, the new server sends the webhook nothing it was sent before, and a new
alert on the new server is delivered once, signed with the old secret, with ids above the old
ones; a deleted default rule stays deleted."""
import json
import time

from conftest import wait_for
from webhook_receiver import Receiver, signature
from .pg_servers import cohort, fresh_db, server_on

PROJECT = "moved"
SECRET = "old-secret"


def raise_alert(api, run_path, title):
    status, body = api.post(f"{run_path}/writers/rank0/alerts",
                            {"title": title, "text": "x", "level": "ERROR",
                             "time_ms": int(time.time() * 1000)})
    assert status == 200 and body["opened"], body
    return body["alert"]["id"]


def test_export_import_keeps_alerts_webhooks_and_does_not_resend(cluster, tmp_path):
    env = {"COHORT_WEBHOOK_BACKOFF_MAX_S": "1"}
    receiver = Receiver().start()
    try:
        sqlite_path = tmp_path / "old" / "cohort.db"
        # The receiver listens on 127.0.0.1: allowed.
        with server_on(tmp_path / "old", sqlite_path, "--webhook-allow-private", env=env) as old:
            key = old.config["api_key"]
            api = old.api(key)
            e = api.get("/api/v1/viewer")[1]["entity"]
            status, hook = api.post(f"/api/v1/alert-webhooks/{e}/{PROJECT}",
                                    {"name": "ops", "url": receiver.url, "secret": SECRET})
            assert status == 201, hook
            assert api.post(f"/api/v1/runs/{e}/{PROJECT}", {"id": "r1"})[0] in (200, 201)
            run_path = f"/api/v1/runs/{e}/{PROJECT}/r1"
            assert api.post(f"{run_path}/writers", {"label": "rank0"})[0] in (200, 201)
            old_ids = [raise_alert(api, run_path, f"old {i}") for i in range(2)]
            status, acked = api.post(f"/api/v1/alerts/{e}/{PROJECT}/{old_ids[0]}/ack", {})
            assert status == 200 and acked["acked_by"], acked
            assert wait_for(lambda: len(receiver.calls) >= 2, timeout=30), receiver.calls
            # One of the two builtin rules deleted: it must stay deleted after the move.
            status, rules = api.get(f"/api/v1/alert-rules/{e}/{PROJECT}")
            assert status == 200 and len(rules["rules"]) == 2, rules
            gone = rules["rules"][0]["id"]
            assert api.delete(f"/api/v1/alert-rules/{e}/{PROJECT}/{gone}")[0] == 200
            rules_before = api.get(f"/api/v1/alert-rules/{e}/{PROJECT}")[1]
            assert len(rules_before["rules"]) == 1, rules_before
            alerts_before = api.get(f"/api/v1/alerts/{e}/{PROJECT}")[1]
            log_before = api.get(f"/api/v1/alert-webhooks/{e}/{PROJECT}/{hook['id']}/deliveries")[1]
        assert len(log_before["deliveries"]) == 2, log_before

        dump = tmp_path / "store.cdump"
        cohort("export", "--store", str(sqlite_path), "--out", str(dump))
        db = fresh_db(cluster, tmp_path, "alerts")
        url = cluster.url(db)
        cohort("import", "--store", url, "--in", str(dump))
        assert int(cluster.psql(db, "SELECT last_event_id FROM alert_delivery_cursor")) >= 2

        sent_before = len(receiver.calls)
        with server_on(tmp_path / "new", url, "--webhook-allow-private", env=env) as new:
            api = new.api(key)
            assert api.get(f"/api/v1/alerts/{e}/{PROJECT}")[1] == alerts_before
            assert api.get(f"/api/v1/alert-rules/{e}/{PROJECT}")[1] == rules_before
            assert api.get(
                f"/api/v1/alert-webhooks/{e}/{PROJECT}/{hook['id']}/deliveries")[1] == log_before
            time.sleep(3)  # several dispatcher passes: nothing old is sent again
            assert len(receiver.calls) == sent_before, receiver.snapshot()[sent_before:]
            new_id = raise_alert(api, run_path, "after the move")
            assert new_id > max(old_ids)
            assert wait_for(lambda: len(receiver.calls) > sent_before, timeout=30)
            time.sleep(2)
            calls = receiver.snapshot()[sent_before:]
            assert len(calls) == 1, calls
            body = calls[0]["body"]
            assert json.loads(body)["alert"]["id"] == new_id
            assert calls[0]["headers"]["X-Cohort-Signature"] == signature(SECRET, body)
    finally:
        receiver.stop()
