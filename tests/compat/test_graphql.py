"""The GraphQL endpoint: the probes and queries the vendor's clients send, uploads through the
URLs it hands out, and hostile or unknown input that must be answered with errors, never a
crash."""
import hashlib
import json
import urllib.parse

from .compat_helpers import CREATE_RUN_FILES

PROBE = """
   query ProbeServerCapabilities {
       QueryType: __type(name: "Query") {
           ...fieldData
        }
        MutationType: __type(name: "Mutation") {
           ...fieldData
        }
       ServerInfoType: __type(name: "ServerInfo") {
           ...fieldData
        }
    }

    fragment fieldData on __Type {
        fields {
            name
        }
    }
"""

def test_probes_viewer_and_features(wire, entity):
    status, payload = wire.gql(PROBE)
    assert status == 200 and "errors" not in payload, payload
    data = payload["data"]
    assert {f["name"] for f in data["QueryType"]["fields"]} >= {"viewer", "serverInfo", "project"}
    assert {f["name"] for f in data["MutationType"]["fields"]} >= {"upsertBucket",
                                                                 "createRunFiles"}
    assert data["ServerInfoType"]["fields"]
    status, payload = wire.gql("""query ProbeServerSettings {
        ServerSettingsType: __type(name: "ServerSettings") { ...fieldData } }
        fragment fieldData on __Type { fields { name } }""")
    assert payload == {"data": {"ServerSettingsType": {"fields": []}}}

    status, payload = wire.gql("""query Viewer { viewer { id entity username flags
        teams { edges { node { name } } } }
        serverInfo { cliVersionInfo latestLocalVersionInfo { outOfDate latestVersionString } } }""")
    assert status == 200 and "errors" not in payload, payload
    viewer = payload["data"]["viewer"]
    assert viewer["entity"] == entity and viewer["username"] == entity
    assert viewer["teams"] == {"edges": []}
    assert payload["data"]["serverInfo"] == {"cliVersionInfo": {}, "latestLocalVersionInfo": None}

    status, payload = wire.gql("query ServerFeaturesQuery { serverInfo { features { name isEnabled } } }")
    features = {f["name"]: f["isEnabled"] for f in payload["data"]["serverInfo"]["features"]}
    assert features.get("STRUCTURED_CONSOLE_LOGS") is True

    status, payload = wire.gql("""query OrganizationCoreWeaveOrganizationID($entityName: String!) {
        entity(name: $entityName) { organization { coreWeaveOrganizationId } } }""",
                               {"entityName": entity})
    assert payload == {"data": {"entity": {"organization": None}}}


def test_run_queries(wire, entity):
    wire.upsert("q1", displayName="nice name", summaryMetrics=json.dumps({"acc": 0.5}))
    status, payload = wire.gql("""query RunStoppedStatus($projectName: String, $entityName: String,
        $runId: String!) { project(name: $projectName, entityName: $entityName) {
        run(name: $runId) { stopped } } }""",
                               {"projectName": "proj", "entityName": entity, "runId": "q1"})
    assert payload == {"data": {"project": {"run": {"stopped": False}}}}
    status, payload = wire.gql("""query RunState($entity: String!, $project: String!, $run: String!) {
        project(name: $project, entityName: $entity) { run(name: $run) {
        state displayName summaryMetrics __typename } } }""",
                               {"entity": entity, "project": "proj", "run": "q1"})
    run = payload["data"]["project"]["run"]
    assert run["state"] == "pending" and run["displayName"] == "nice name"
    assert json.loads(run["summaryMetrics"]) == {"acc": 0.5}
    assert run["__typename"] == "Run"


def test_upsert_updates_and_errors(wire, api, entity):
    first = wire.upsert("u1", config=json.dumps({"a": {"value": 1}}), tags=["x"])
    assert first["inserted"] is True
    again = wire.upsert("u1", entity=entity, config=json.dumps({"b": {"value": 2}}))
    assert again["inserted"] is False
    status, run = api.get(f"/api/v1/runs/{entity}/proj/u1")
    assert run["config"] == {"a": 1, "b": 2} and run["tags"] == ["x"]
    # An update may name the run by the id an earlier answer returned.
    status, payload = wire.gql("""mutation UpsertBucket($id: String, $notes: String) {
        upsertBucket(input: {id: $id, notes: $notes}) { bucket { name description } } }""",
                               {"id": first["bucket"]["id"], "notes": "via id"})
    assert payload["data"]["upsertBucket"]["bucket"] == {"name": "u1", "description": "via id"}
    # A run without a name gets one.
    status, payload = wire.gql("""mutation { upsertBucket(input: {modelName: "proj"}) {
        bucket { name } inserted } }""")
    assert len(payload["data"]["upsertBucket"]["bucket"]["name"]) == 8

    status, payload = wire.gql("""mutation { upsertBucket(input: {name: "x",
        entityName: "someone-else"}) { bucket { name } } }""")
    assert status == 200 and payload["data"]["upsertBucket"] is None
    assert "not found" in payload["errors"][0]["message"]
    status, payload = wire.gql("""mutation { upsertBucket(input: {name: "bad id!"}) {
        bucket { name } } }""")
    assert "run: invalid id" in payload["errors"][0]["message"]
    status, payload = wire.gql("""mutation M($c: JSONString) { upsertBucket(input: {name: "y",
        config: $c}) { bucket { name } } }""", {"c": "{not json"})
    assert "config" in payload["errors"][0]["message"]
    # A summary refused refuses the whole mutation: nothing of it is written (the run and its
    # config were stored before the summary was read).
    for run, summary in (("z1", "{not json"), ("z2", json.dumps({"s": "x" * (2 << 20)}))):
        status, payload = wire.gql("""mutation M($c: JSONString, $s: JSONString, $n: String) {
            upsertBucket(input: {name: $n, modelName: "proj", config: $c, summaryMetrics: $s}) {
                bucket { name } } }""",
                                   {"c": json.dumps({"a": {"value": 1}}), "s": summary, "n": run})
        assert payload["errors"] and "summaryMetrics" in payload["errors"][0]["message"], payload
        assert api.get(f"/api/v1/runs/{entity}/proj/{run}")[0] == 404
    # Fields over the native API's limits are refused naming them (they were cut at 256 bytes,
    # inside a character if need be, and tags past the 256th dropped without a word).
    for fields, word in (({"displayName": "\u00e9" * 150}, "displayName"),
                         ({"jobType": "t" * 129}, "jobType"),
                         ({"notes": "n" * (65 << 10)}, "notes"),
                         ({"tags": ["t" * 129]}, "tag"),
                         ({"tags": [f"t{i}" for i in range(257)]}, "tags")):
        status, payload = wire.gql("""mutation M($d: String, $j: String, $n: String,
            $t: [String!]) { upsertBucket(input: {name: "long1", modelName: "proj",
            displayName: $d, jobType: $j, notes: $n, tags: $t}) { bucket { name } } }""",
                                   {"d": fields.get("displayName"), "j": fields.get("jobType"),
                                    "n": fields.get("notes"), "t": fields.get("tags")})
        assert payload["errors"] and word in payload["errors"][0]["message"], (fields, payload)
        assert api.get(f"/api/v1/runs/{entity}/proj/long1")[0] == 404


def test_create_run_files_and_upload(wire, api, entity):
    wire.upsert("f1")
    names = ["config.yaml", "media/images/a b.png"]
    status, payload = wire.gql(CREATE_RUN_FILES, {"entity": entity, "project": "proj",
                                                  "run": "f1", "files": names})
    assert status == 200 and "errors" not in payload, payload
    result = payload["data"]["createRunFiles"]
    assert result["uploadHeaders"] == []
    assert [f["name"] for f in result["files"]] == names
    urls = {f["name"]: f["uploadUrl"] for f in result["files"]}
    # The vendor's clients PUT without credentials: the URL carries a signature.
    assert wire.put(urls["config.yaml"], b"lr: 0.1\n")[0] == 200
    assert wire.put(urls["media/images/a b.png"], b"\x89PNG\x00\x01")[0] == 200
    tampered = urls["config.yaml"].replace("config.yaml", "other.yaml")
    assert wire.put(tampered, b"x")[0] == 401
    unsigned = urls["config.yaml"].split("?")[0]
    assert wire.put(unsigned, b"x")[0] == 401
    assert wire.put(unsigned, b"lr: 0.2\n", auth=True)[0] == 200  # or with the key

    status, listing = api.get(f"/api/v1/runs/{entity}/proj/f1/files")
    assert status == 200
    files = {f["name"]: f for f in listing["files"]}
    assert sorted(files) == sorted(names)
    assert files["config.yaml"]["size"] == 8
    path = urllib.parse.urlsplit(files["media/images/a b.png"]["url"]).path
    status, body, headers = wire._request("GET", path, headers={
        "Authorization": "Bearer " + api.key})
    assert status == 200 and body == b"\x89PNG\x00\x01"
    assert headers["Content-Disposition"] == "attachment"  # never rendered in the UI's origin
    # A vendor media file (media/images/x.png) is a blob the entity holds (the media rows of the
    # history lines name it by SHA-256; docs/compat.md), which the run file above was served from.
    sha = hashlib.sha256(b"\x89PNG\x00\x01").hexdigest()
    status, blob = api.get(f"/api/v1/blobs/{entity}/{sha}?size=6")
    assert status == 200 and blob["stored"] is True, blob
    assert files["media/images/a b.png"]["size"] == 6
    status, text = api.get(f"/api/v1/runs/{entity}/proj/f1/files/config.yaml")
    assert text == "lr: 0.2\n"
    assert api.get(f"/api/v1/runs/{entity}/proj/f1/files/missing")[0] == 404


def test_unknown_and_malformed_graphql_are_errors_not_crashes(server, wire):
    status, payload = wire.gql("query Nope { somethingElse { id } }")
    assert status == 200 and payload["data"] == {"somethingElse": None}
    assert "Cannot query field" in payload["errors"][0]["message"]
    status, payload = wire.gql("mutation DeleteEverything { deleteRun(input: {id: 1}) { ok } }")
    assert status == 200 and "errors" in payload
    status, payload = wire.gql("subscription S { viewer { id } }")
    assert "errors" in payload and "data" not in payload
    for text in ["{", "query {", "{ viewer { entity }", "query Q($a: ) { viewer { id } }",
                 "{ viewer(x: \"unterminated) { id } }", "type Query { a: Int }", "}}}}",
                 "{ a: b: c }", "\x00\x01\x02", "{ viewer { ...missingFragment } }",
                 "query A { viewer { id } } query B { viewer { id } }"]:
        status, payload = wire.gql(text)
        assert status == 200, text
        assert payload.get("errors"), text
    deep = "{" + "a {" * 5000 + "b" + "}" * 5001
    status, payload = wire.gql(deep)
    assert status == 200 and "nested more than" in payload["errors"][0]["message"]
    cyclic = "{ viewer { ...a } } fragment a on User { ...b } fragment b on User { ...a }"
    assert "within itself" in wire.gql(cyclic)[1]["errors"][0]["message"]
    huge = "{ viewer(s: \"" + "x" * (2 << 20) + "\") { id } }"
    status, payload = wire.gql(huge)
    assert status in (200, 413) and payload["errors"]
    # Not GraphQL-over-HTTP at all.
    assert wire.gql(None, raw=b"not json")[0] == 400
    assert wire.gql(None, raw=b"[]")[0] == 400
    assert wire.gql(None, raw=json.dumps({"variables": {}}).encode())[0] == 400
    assert wire.gql(None, raw=json.dumps({"query": "{ viewer { id } }",
                                          "variables": [1]}).encode())[0] == 400
    bad = type(wire)(wire.url, "ck_" + "1" * 40)
    status, payload = bad.gql("query Viewer { viewer { entity } }")
    assert status == 401 and payload["errors"]
    # Still serving.
    status, payload = wire.gql("{ viewer { entity } }")
    assert status == 200 and payload["data"]["viewer"]["entity"]
    assert server.proc.poll() is None


def test_client_telemetry_is_swallowed(wire):
    status, _, _ = wire._request("POST", "/sdk/otel/v1/metrics", raw=b"\x0a\x00", auth=False)
    assert status == 200
