"""Alert webhooks over the real server (docs/api.md, "Alert webhooks") with a real HTTP receiver
started by the test: an alert raised by code is delivered once with a valid signature; a
receiver that is down, then up, gets it once after retries, and the delivery log shows the
attempts; CRUD with a write-only secret, the test button, bad input refused naming the field;
without --webhook-allow-private, loopback and link-local (cloud metadata) destinations are
refused at connect time, and neither the test button nor the log echoes a receiver's answer;
--public-url makes run_url."""
import time

import pytest

from conftest import ServerProcess, wait_for
from webhook_receiver import Receiver, free_port, signature

PROJECT = "hooks"


FAST = {"COHORT_WEBHOOK_BACKOFF_MAX_S": "1"}
# The receivers of these tests listen on 127.0.0.1, which the server refuses to call by default.
ALLOW_PRIVATE = ["--webhook-allow-private"]


@pytest.fixture
def fast_server(tmp_path):
    # Retries at most a second apart (the default backoff starts at 5 s).
    s = ServerProcess(tmp_path, extra_args=ALLOW_PRIVATE, env=FAST).start()
    yield s
    s.stop()


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def entity(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200
    return me["entity"]


def make_run(api, e, run_id="r1"):
    status, run = api.post(f"/api/v1/runs/{e}/{PROJECT}", {"id": run_id})
    assert status in (200, 201), run
    status, w = api.post(f"/api/v1/runs/{e}/{PROJECT}/{run['id']}/writers", {"label": "rank0"})
    assert status in (200, 201), w
    return run["id"]


def raise_alert(api, e, run, title, level="ERROR"):
    status, body = api.post(f"/api/v1/runs/{e}/{PROJECT}/{run}/writers/rank0/alerts",
                            {"title": title, "text": "details", "level": level,
                             "time_ms": int(time.time() * 1000)})
    assert status == 200, body
    return body["alert"]


def test_alert_is_delivered_once_signed_and_logged(fast_server, receiver):
    api = fast_server.api()
    e = entity(api)
    base = f"/api/v1/alert-webhooks/{e}/{PROJECT}"
    status, hook = api.post(base, {"name": "ops", "url": receiver.url, "secret": "k3y",
                                   "min_level": "WARN"})
    assert status == 201, hook
    assert hook["has_secret"] is True and "secret" not in hook
    assert (hook["format"], hook["min_level"], hook["enabled"]) == ("generic", "WARN", True)
    run = make_run(api, e)
    raise_alert(api, e, run, "too low", level="INFO")  # below min_level: not sent
    alert = raise_alert(api, e, run, "rank died")

    assert wait_for(lambda: len(receiver.calls) >= 1, timeout=15), "no webhook call"
    time.sleep(2.5)  # a few more dispatcher passes: nothing is sent again
    calls = receiver.snapshot()
    assert len(calls) == 1, [c["body"] for c in calls]
    call = calls[0]
    assert call["path"] == "/hook"
    assert call["headers"]["X-Cohort-Signature"] == signature("k3y", call["body"])
    assert call["headers"]["X-Cohort-Event"] == "opened"
    payload = receiver.payloads()[0]
    assert payload["version"] == 1 and payload["event"] == "opened"
    assert payload["alert"]["id"] == alert["id"]
    assert payload["alert"]["title"] == "rank died" and payload["alert"]["run"] == run
    assert payload["run_url"].startswith(fast_server.url + "/?p=")

    status, log = api.get(f"{base}/{hook['id']}/deliveries")
    assert status == 200, log
    assert len(log["deliveries"]) == 1
    d = log["deliveries"][0]
    assert (d["state"], d["attempts"], d["last_status"], d["event"], d["alert_id"]) == (
        "delivered", 1, 200, "opened", alert["id"])
    assert call["headers"]["X-Cohort-Delivery"] == str(d["id"])
    # The alert's deliveries across the project's webhooks.
    status, per_alert = api.get(f"{base}/deliveries?alert={alert['id']}")
    assert status == 200, per_alert
    assert [(x["id"], x["webhook_id"]) for x in per_alert["deliveries"]] == [(d["id"], hook["id"])]
    assert api.get(f"{base}/deliveries?alert=999999")[1] == {"deliveries": []}
    assert api.get(f"{base}/deliveries?limit=0")[0] == 400

    # The test button posts now and answers with the receiver's status.
    status, test = api.post(f"{base}/{hook['id']}/test")
    assert status == 200, test
    assert test["ok"] is True and test["status"] == 200
    assert receiver.payloads()[-1]["event"] == "test"
    # ... and is not an alert: the log is unchanged.
    assert len(api.get(f"{base}/{hook['id']}/deliveries")[1]["deliveries"]) == 1


def test_receiver_down_then_up_gets_the_alert_once_after_retries(fast_server):
    api = fast_server.api()
    e = entity(api)
    base = f"/api/v1/alert-webhooks/{e}/{PROJECT}"
    port = free_port()  # nothing listens there yet
    receiver = Receiver(port=port)
    status, hook = api.post(base, {"name": "later", "url": receiver.url})
    assert status == 201, hook
    run = make_run(api, e)
    alert = raise_alert(api, e, run, "hung")

    def log():
        status, body = api.get(f"{base}/{hook['id']}/deliveries")
        assert status == 200, body
        return body["deliveries"]

    # Failed attempts are recorded (pending, with the connection error) while it is down.
    assert wait_for(lambda: log() and log()[0]["attempts"] >= 2, timeout=20), log()
    d = log()[0]
    assert d["state"] == "pending" and d["last_status"] is None and d["last_error"]
    receiver.start()
    try:
        assert wait_for(lambda: log()[0]["state"] == "delivered", timeout=20), log()
        time.sleep(2)
        assert len(receiver.calls) == 1
        assert receiver.payloads()[0]["alert"]["id"] == alert["id"]
        d = log()[0]
        assert d["attempts"] >= 3 and d["last_status"] == 200 and d["delivered_ms"]
    finally:
        receiver.stop()


def test_webhook_crud_secret_is_write_only_and_bad_input_names_the_field(fast_server):
    api = fast_server.api()
    e = entity(api)
    base = f"/api/v1/alert-webhooks/{e}/{PROJECT}"
    for body, field in [({"name": "x", "url": "ftp://example.com/h"}, "url"),
                        ({"name": "x", "url": "example.com/h"}, "url"),
                        ({"name": "x", "url": "http://"}, "url"),
                        # URLs curl cannot parse (accepted, then retried for hours).
                        ({"name": "x", "url": "http://example.com:99999/x"}, "url"),
                        ({"name": "x", "url": "http://example.com:0/x"}, "url"),
                        ({"name": "x", "url": "http://[::1/x"}, "url"),
                        ({"name": "x", "url": "http://a:b:c/"}, "url"),
                        ({"name": "x", "url": "http://exa|mple.com/"}, "url"),
                        ({"name": "x", "url": "http://h/", "format": "teams"}, "format"),
                        ({"name": "x", "url": "http://h/", "min_level": "LOUD"}, "min_level"),
                        ({"name": "", "url": "http://h/"}, "name"),
                        ({"url": "http://h/"}, "name")]:
        status, err = api.post(base, body)
        assert status == 400, (body, err)
        assert err["field"] == field, (body, err)
    assert api.get(base)[1] == {"webhooks": []}  # nothing half-written

    status, hook = api.post(base, {"name": "chat", "url": "https://hooks.example.com/x",
                                   "format": "slack", "secret": "s"})
    assert status == 201, hook
    assert api.post(base, {"name": "chat", "url": "https://h/"})[0] == 409
    path = f"{base}/{hook['id']}"
    status, got = api.get(path)
    assert status == 200 and got == hook and "secret" not in got
    # PUT without "secret" keeps it; with null, clears it.
    status, put = api.put(path, {"name": "chat2", "url": "https://h/y", "format": "discord",
                                 "min_level": "ERROR", "enabled": False})
    assert status == 200, put
    assert (put["name"], put["format"], put["enabled"], put["has_secret"]) == (
        "chat2", "discord", False, True)
    status, err = api.put(path, {"name": "chat2", "url": "file:///etc/passwd"})
    assert status == 400 and err["field"] == "url"
    assert api.get(path)[1]["url"] == "https://h/y"
    status, put = api.put(path, {"name": "chat2", "url": "https://h/y", "secret": None})
    assert status == 200 and put["has_secret"] is False
    assert [h["name"] for h in api.get(base)[1]["webhooks"]] == ["chat2"]
    # The test button with nothing listening: no answer, said so.
    dead = f"http://127.0.0.1:{free_port()}/"
    assert api.put(path, {"name": "chat2", "url": dead})[0] == 200
    status, test = api.post(f"{path}/test")
    assert status == 200 and test["ok"] is False and test["status"] is None and test["error"]
    assert api.delete(path)[0] == 200
    assert api.get(path)[0] == 404
    assert api.get(f"{path}/deliveries")[0] == 404
    # Another entity's project is not found.
    assert api.get(f"/api/v1/alert-webhooks/someone-else/{PROJECT}")[0] == 404


def test_non_public_destinations_are_refused_without_the_flag(tmp_path, receiver):
    server = ServerProcess(tmp_path, env=FAST).start()
    try:
        api = server.api()
        e = entity(api)
        base = f"/api/v1/alert-webhooks/{e}/{PROJECT}"
        for name, url, shown in [("local", receiver.url, "127.0.0.1, loopback"),
                                 ("metadata", "http://169.254.169.254/latest/meta-data/",
                                  "169.254.169.254, link-local"),
                                 ("byname", f"http://localhost:{receiver.port}/hook", "loopback"),
                                 ("v6", f"http://[::ffff:127.0.0.1]:{receiver.port}/", "loopback")]:
            status, hook = api.post(base, {"name": name, "url": url, "min_level": "ERROR"})
            assert status == 201, hook  # a URL is not checked when saved (DNS may change)
            status, test = api.post(f"{base}/{hook['id']}/test")
            assert status == 200, test
            assert test["ok"] is False and test["status"] is None, (name, test)
            assert "non-public address" in test["error"] and shown in test["error"], test
            assert "--webhook-allow-private" in test["error"], test
        # An alert: its deliveries fail at once (not retried), saying why; nothing was called.
        run = make_run(api, e)
        raise_alert(api, e, run, "boom")
        def failed():
            log = api.get(f"{base}/deliveries")[1]["deliveries"]
            return len(log) == 4 and all(d["state"] == "failed" for d in log) and log
        log = wait_for(failed, timeout=15)
        assert log, api.get(f"{base}/deliveries")[1]
        assert all(d["attempts"] == 1 and d["last_status"] is None and
                   "non-public address" in d["last_error"] for d in log), log
        assert receiver.snapshot() == []
    finally:
        server.stop()


def test_receivers_answer_is_not_echoed(fast_server):
    api = fast_server.api()
    e = entity(api)
    base = f"/api/v1/alert-webhooks/{e}/{PROJECT}"
    secret = b"root:x:0:0 internal page the admin must not read"
    r = Receiver(status=500, body=secret).start()
    try:
        status, hook = api.post(base, {"name": "ops", "url": r.url})
        assert status == 201, hook
        status, test = api.post(f"{base}/{hook['id']}/test")
        assert status == 200, test
        assert test == {"ok": False, "status": 500, "error": "HTTP 500"}, test
        run = make_run(api, e)
        raise_alert(api, e, run, "boom")
        log = lambda: api.get(f"{base}/{hook['id']}/deliveries")[1]["deliveries"]
        assert wait_for(lambda: log() and log()[0]["attempts"] >= 1, timeout=15), log()
        d = log()[0]
        assert d["last_status"] == 500 and d["last_error"] == "HTTP 500", d
    finally:
        r.stop()


def test_public_url_makes_run_url(tmp_path, receiver):
    server = ServerProcess(tmp_path, extra_args=ALLOW_PRIVATE + [
        "--public-url", "https://cohort.example.com/tracker/"], env=FAST).start()
    try:
        api = server.api()
        e = entity(api)
        status, hook = api.post(f"/api/v1/alert-webhooks/{e}/{PROJECT}",
                                {"name": "ops", "url": receiver.url})
        assert status == 201, hook
        run = make_run(api, e)
        raise_alert(api, e, run, "boom")
        assert wait_for(lambda: receiver.calls, timeout=15), "no webhook call"
        assert receiver.payloads()[0]["run_url"] == (
            f"https://cohort.example.com/tracker/?p={e}%2F{PROJECT}&run={run}")
    finally:
        server.stop()
    # Not an http(s) URL: the server does not start, and says which flag.
    for bad in ["cohort.example.com", "ftp://cohort.example.com", "https://h/?a=1"]:
        with pytest.raises(RuntimeError, match="--public-url"):
            ServerProcess(tmp_path / "bad", extra_args=["--public-url", bad]).start()
