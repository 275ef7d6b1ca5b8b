"""GraphQL amplification: one large config asked for under hundreds of aliases is refused with a
clear error instead of a 600 MB answer, the server's memory stays bounded, and a run's config and
summary cannot grow past 1 MiB in the first place."""
import json

from security_helpers import create_key, http, rss_bytes

DOC_LIMIT = 1 << 20


def test_aliases_of_a_large_config_get_a_clear_error_and_bounded_memory(server):
    admin = server.config["api_key"]
    entity = http(server.url + "/api/v1/viewer", key=admin)[1]["entity"]
    member = create_key(server, entity, role="member")
    config = {"blob": "c" * (DOC_LIMIT - 100)}  # just under the limit
    status, run, _ = http(server.url + f"/api/v1/runs/{entity}/proj", "POST",
                          {"id": "big", "config": config}, key=member)
    assert status == 201, run
    aliases = " ".join(f'a{i}: run(name: "big") {{ config }}' for i in range(500))
    query = f'{{ project(name: "proj") {{ {aliases} }} }}'
    assert len(query) < 20000
    before = rss_bytes(server.proc.pid)
    status, payload, _ = http(server.url + "/graphql", "POST", {"query": query}, key=member,
                              basic=True, timeout=60)
    grown = rss_bytes(server.proc.pid) - before
    assert status == 200
    text = json.dumps(payload)
    assert len(text) < 10000, len(text)
    assert payload["data"] is None, text[:500]
    message = payload["errors"][0]["message"]
    assert "answer too large" in message and "aliases" in message, message
    assert grown < 200 << 20, f"RSS grew by {grown >> 20} MiB"
    # A few aliases still answer.
    few = " ".join(f'a{i}: run(name: "big") {{ config }}' for i in range(3))
    status, payload, _ = http(server.url + "/graphql", "POST",
                              {"query": f'{{ project(name: "proj") {{ {few} }} }}'}, key=member,
                              basic=True)
    assert status == 200 and "errors" not in payload, str(payload)[:300]
    assert len(payload["data"]["project"]["a2"]["config"]) > DOC_LIMIT - 200


def test_config_and_summary_past_one_mib_are_refused_naming_the_field(api):
    entity = api.get("/api/v1/viewer")[1]["entity"]
    status, body = api.post(f"/api/v1/runs/{entity}/proj",
                            {"id": "huge", "config": {"blob": "x" * DOC_LIMIT}})
    assert status == 413 and body["error"]["message"].startswith("config:"), body
    assert api.get(f"/api/v1/runs/{entity}/proj/huge")[0] == 404
    status, run = api.post(f"/api/v1/runs/{entity}/proj", {"id": "ok"})
    assert status == 201
    status, body = api.patch(f"/api/v1/runs/{entity}/proj/ok",
                             {"summary": {"blob": "y" * DOC_LIMIT}})
    assert status == 413 and body["error"]["message"].startswith("summary:"), body
    assert api.get(f"/api/v1/runs/{entity}/proj/ok")[1]["summary"] == {}
