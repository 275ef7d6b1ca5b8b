"""Alert webhooks with two `cohort server` processes on one PostgreSQL database: both run the
webhook dispatcher, and every alert event is delivered exactly once (the delivery claims,
store.h WebhookStore::ClaimDeliveries), whichever server raised it; also with a receiver that answers slowly (each delivery is claimed
right before its call, so a slow call does not let another server's claim of a later one
expire)."""
import json
import time

import pytest

from conftest import wait_for
from webhook_receiver import Receiver
from .pg_servers import clients, server_pair

PROJECT = "hooks"
ALERTS = 12


def start_pair(cluster, tmp_path, extra_args=()):
    # The receiver listens on 127.0.0.1: allowed.
    return server_pair(cluster, tmp_path, "hooks", ["--webhook-allow-private", *extra_args],
                       env={"COHORT_WEBHOOK_BACKOFF_MAX_S": "1"})


@pytest.fixture
def servers(cluster, tmp_path):
    with start_pair(cluster, tmp_path) as (_, a, b):
        yield a, b


@pytest.fixture
def slow_servers(cluster, tmp_path):
    # Calls may take 2 s, so a claim lasts 12 s: 12 calls of 1.2 s one after another (a batch
    # claimed at once) outlast it.
    with start_pair(cluster, tmp_path, ["--webhook-timeout", "2"]) as (_, a, b):
        yield a, b


def test_two_servers_deliver_each_alert_event_once(servers):
    deliver_each_event_once(servers, Receiver())


def test_slow_receiver_gets_each_alert_event_once(slow_servers):
    deliver_each_event_once(slow_servers, Receiver(delay=1.2))


def deliver_each_event_once(servers, receiver):
    api_a, api_b = clients(*servers)
    e = api_a.get("/api/v1/viewer")[1]["entity"]
    receiver.start()
    try:
        status, hook = api_a.post(f"/api/v1/alert-webhooks/{e}/{PROJECT}",
                                  {"name": "ops", "url": receiver.url, "secret": "s"})
        assert status == 201, hook
        status, run = api_b.post(f"/api/v1/runs/{e}/{PROJECT}", {"id": "r1"})
        assert status in (200, 201), run
        run_path = f"/api/v1/runs/{e}/{PROJECT}/r1"
        assert api_a.post(f"{run_path}/writers", {"label": "rank0"})[0] in (200, 201)
        # Raised on both servers, alternately.
        ids = []
        for i in range(ALERTS):
            api = (api_a, api_b)[i % 2]
            status, body = api.post(f"{run_path}/writers/rank0/alerts",
                                    {"title": f"alert {i}", "text": "x", "level": "ERROR",
                                     "time_ms": int(time.time() * 1000)})
            assert status == 200 and body["opened"], body
            ids.append(body["alert"]["id"])
        assert wait_for(lambda: len(receiver.calls) >= ALERTS, timeout=40), len(receiver.calls)
        time.sleep(3 + receiver.delay)  # several more passes of both dispatchers
        calls = receiver.snapshot()
        events = [(p["alert"]["id"], p["event"]) for p in
                  (json.loads(c["body"]) for c in calls)]
        assert sorted(events) == sorted((i, "opened") for i in ids), events
        deliveries = [c["headers"]["X-Cohort-Delivery"] for c in calls]
        assert len(set(deliveries)) == len(deliveries) == ALERTS
        for api in (api_a, api_b):
            status, log = api.get(f"/api/v1/alert-webhooks/{e}/{PROJECT}/{hook['id']}/deliveries")
            assert status == 200, log
            assert len(log["deliveries"]) == ALERTS
            assert all(d["state"] == "delivered" and d["attempts"] == 1
                       for d in log["deliveries"]), log
    finally:
        receiver.stop()
