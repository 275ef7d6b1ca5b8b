"""Alerts over the real server's HTTP API (docs/api.md, "Alerts"): alerts raised by code through
the writer route, listed with filters, read and acknowledged; alert rules CRUD with the
project's defaults; bad input refused with 400 naming the field."""
from conftest import wait_for  # noqa: F401

PROJECT = "alerting"


def entity(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200
    return me["entity"]


def make_run(api, run_id="r1"):
    e = entity(api)
    status, run = api.post(f"/api/v1/runs/{e}/{PROJECT}", {"id": run_id})
    assert status in (200, 201), run
    status, w = api.post(f"/api/v1/runs/{e}/{PROJECT}/{run['id']}/writers", {"label": "rank0"})
    assert status in (200, 201), w
    return e, run["id"]


def raise_alert(api, e, run, body, label="rank0"):
    return api.post(f"/api/v1/runs/{e}/{PROJECT}/{run}/writers/{label}/alerts", body)


def test_code_alert_opens_once_bumps_lists_and_acks(api):
    e, run = make_run(api)
    status, body = raise_alert(api, e, run, {"title": "diverging", "text": "loss went up",
                                             "level": "WARN", "time_ms": 1234})
    assert status == 200, body
    assert body["opened"] is True
    a = body["alert"]
    assert (a["run"], a["writer"], a["source"], a["level"], a["state"]) == (
        run, "rank0", "code", "WARN", "open")
    assert a["condition"] == "code:diverging"
    assert a["title"] == "diverging" and a["text"] == "loss went up"
    assert a["rule_id"] is None and a["resolved_ms"] is None and a["acked_by"] is None
    assert a["evidence"] == {"time_ms": 1234}
    assert a["count"] == 1
    # The same call posted again (an agent retrying after a lost answer): the same alert.
    status, retried = raise_alert(api, e, run, {"title": "diverging", "text": "loss went up",
                                                "level": "WARN", "time_ms": 1234})
    assert status == 200 and retried["opened"] is False
    assert retried["alert"]["id"] == a["id"] and retried["alert"]["count"] == 2

    # The same title again: a notification again, so a new alert; the first one is closed.
    status, again = raise_alert(api, e, run, {"title": "diverging", "level": "WARN"})
    assert status == 200 and again["opened"] is True
    assert again["alert"]["id"] != a["id"] and again["alert"]["count"] == 1
    # Another title at another level: another alert.
    status, other = raise_alert(api, e, run, {"title": "checkpoint saved"})
    assert status == 200 and other["opened"] is True and other["alert"]["level"] == "INFO"

    status, listed = api.get(f"/api/v1/alerts/{e}/{PROJECT}?state=open")
    assert status == 200
    assert [x["id"] for x in listed["alerts"]] == [other["alert"]["id"], again["alert"]["id"]]
    status, warn = api.get(f"/api/v1/alerts/{e}/{PROJECT}?level=WARN&run={run}")
    assert status == 200 and [x["id"] for x in warn["alerts"]] == [again["alert"]["id"], a["id"]]
    status, none = api.get(f"/api/v1/alerts/{e}/{PROJECT}?run=nope")
    assert status == 200 and none["alerts"] == []
    status, one = api.get(f"/api/v1/alerts/{e}/{PROJECT}?limit=1")
    assert status == 200 and len(one["alerts"]) == 1

    status, got = api.get(f"/api/v1/alerts/{e}/{PROJECT}/{a['id']}")
    assert status == 200 and got["state"] == "resolved" and got["resolved_ms"] is not None
    status, acked = api.post(f"/api/v1/alerts/{e}/{PROJECT}/{a['id']}/ack")
    assert status == 200, acked
    assert acked["acked_ms"] is not None and acked["acked_by"]
    status, _ = api.get(f"/api/v1/alerts/{e}/{PROJECT}/999999")
    assert status == 404
    status, _ = api.post(f"/api/v1/alerts/{e}/other/{a['id']}/ack")
    assert status == 404

    # Finishing the writer resolves its code alerts.
    status, _ = api.post(f"/api/v1/runs/{e}/{PROJECT}/{run}/writers/rank0/finish",
                         {"exit_code": 0})
    assert status == 200
    status, open_now = api.get(f"/api/v1/alerts/{e}/{PROJECT}?state=open")
    assert status == 200 and open_now["alerts"] == []
    status, resolved = api.get(f"/api/v1/alerts/{e}/{PROJECT}/{a['id']}")
    assert resolved["state"] == "resolved" and resolved["resolved_ms"] is not None


def test_bad_code_alerts_are_refused_naming_the_field(api):
    e, run = make_run(api)
    cases = [
        ({"text": "no title"}, "title"),
        ({"title": ""}, "title"),
        ({"title": "x" * 257}, "title"),
        ({"title": "t", "text": "y" * (64 * 1024 + 1)}, "text"),
        ({"title": "t", "level": "LOUD"}, "level"),
        ({"title": "t", "time_ms": "soon"}, "time_ms"),
        ({"title": "t", "colour": "red"}, "colour"),
    ]
    for body, field in cases:
        status, err = raise_alert(api, e, run, body)
        assert status == 400, (body, err)
        assert err["field"] == field, (body, err)
        assert err["error"]["message"].startswith(field + ":"), err
    status, _ = raise_alert(api, e, "no-such-run", {"title": "t"})
    assert status == 404
    # A label no writer could have (it was stored), and one of a writer that never joined (a code
    # alert ends with its writer: it stayed open for ever).
    status, err = raise_alert(api, e, run, {"title": "t"}, label="a%2Fb%01c")
    assert status == 400 and err["field"] == "label", err
    status, err = raise_alert(api, e, run, {"title": "t"}, label="nosuchwriter")
    assert status == 404 and "no writer 'nosuchwriter'" in err["error"]["message"], err
    status, err = api.get(f"/api/v1/alerts/{e}/{PROJECT}?state=maybe")
    assert status == 400 and err["field"] == "state"
    status, listed = api.get(f"/api/v1/alerts/{e}/{PROJECT}")
    assert status == 200 and listed["alerts"] == []  # nothing half-written


def test_rules_crud_with_project_defaults(api):
    e = entity(api)
    base = f"/api/v1/alert-rules/{e}/{PROJECT}"
    status, body = api.get(base)
    assert status == 200, body
    kinds = sorted((r["kind"], r["builtin"], r["level"]) for r in body["rules"])
    assert kinds == [("metric_nonfinite", True, "WARN"), ("writer_state", True, "ERROR")]
    ws = next(r for r in body["rules"] if r["kind"] == "writer_state")
    assert ws["spec"] == {"states": ["crashed", "failed", "preempted"]}

    rule = {"name": "loss high", "kind": "metric_threshold",
            "spec": {"key": "loss", "op": ">", "value": 10, "after_step": 100}, "level": "ERROR"}
    status, created = api.post(base, rule)
    assert status == 201, created
    assert created["spec"] == rule["spec"] and created["enabled"] is True
    assert created["builtin"] is False
    status, dup = api.post(base, rule)
    assert status == 409, dup
    status, got = api.get(f"{base}/{created['id']}")
    assert status == 200 and got["name"] == "loss high"
    status, updated = api.put(f"{base}/{created['id']}", dict(rule, enabled=False,
                                                               spec={"key": "loss", "op": "<",
                                                                     "value": 1}))
    assert status == 200, updated
    assert updated["enabled"] is False and updated["spec"]["op"] == "<"
    # Builtin rules are editable and deletable; a deleted default is not created again.
    status, _ = api.delete(f"{base}/{ws['id']}")
    assert status == 200
    status, body = api.get(base)
    assert sorted(r["name"] for r in body["rules"]) == sorted(
        ["loss high", next(r["name"] for r in body["rules"] if r["kind"] == "metric_nonfinite")])
    status, _ = api.delete(f"{base}/{ws['id']}")
    assert status == 404


def test_bad_rules_are_refused_naming_the_field(api):
    e = entity(api)
    base = f"/api/v1/alert-rules/{e}/{PROJECT}"
    cases = [
        ({"name": "a", "kind": "telepathy", "spec": {}}, "kind"),
        ({"name": "a", "kind": "metric_threshold", "spec": {"key": "loss", "op": "==",
                                                            "value": 1}}, "spec.op"),
        ({"name": "a", "kind": "metric_threshold", "spec": {"key": "", "op": ">",
                                                            "value": 1}}, "spec.key"),
        ({"name": "a", "kind": "metric_threshold", "spec": {"key": "loss[", "op": ">",
                                                            "value": 1}}, "spec.key"),
        ({"name": "a", "kind": "metric_threshold", "spec": {"key": "loss", "op": ">"}},
         "spec.value"),
        ({"name": "a", "kind": "stale_metric", "spec": {"key": "loss", "minutes": -5}},
         "spec.minutes"),
        ({"name": "a", "kind": "hung", "spec": {"factor": 3, "min_minutes": -1}},
         "spec.min_minutes"),
        ({"name": "a", "kind": "writer_state", "spec": {"states": ["sleepy"]}}, "spec.states"),
        ({"name": "", "kind": "metric_nonfinite", "spec": {"key": "*"}}, "name"),
        ({"name": "a", "kind": "metric_nonfinite", "spec": {"key": "*"}, "level": "LOUD"},
         "level"),
        ({"name": "a", "kind": "metric_nonfinite", "spec": {"key": "*"}, "enabled": "yes"},
         "enabled"),
    ]
    for body, field in cases:
        status, err = api.post(base, body)
        assert status == 400, (body, err)
        assert err["field"] == field, (body, err)
    status, body = api.get(base)
    assert len(body["rules"]) == 2  # only the defaults: nothing half-written
    rid = body["rules"][0]["id"]
    status, err = api.put(f"{base}/{rid}", {"name": "x", "kind": "stale_metric",
                                             "spec": {"key": "loss", "minutes": 0}})
    assert status == 400 and err["field"] == "spec.minutes"
