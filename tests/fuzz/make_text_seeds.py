#!/usr/bin/env python3
"""Writes the hand-made text seeds of the fuzz targets (HTTP, ingest, GraphQL) into
tests/fuzz/corpus/. The binary seeds come from the fuzz_seed_writer tool (CMakeLists.txt).
Rerun after changing a seed here: python3 tests/fuzz/make_text_seeds.py"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


def write(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data.encode() if isinstance(data, str) else data)


# ---- ingest: JSON batch bodies (docs/api.md, "Ingest") ----
INGEST = {
    "full": {"seq": 17,
             "history": [{"step": 100, "time": 1700000000123,
                          "values": {"loss": 0.25, "acc": 0.9, "bad": "NaN"}}],
             "system": [{"time": 1700000000000, "values": {"gpu.0.temp": 61, "cpu": 12.5}}],
             "console": [{"time": 1700000000200, "stream": "stderr", "text": "warning: ..."}]},
    "no_step": {"seq": 1, "history": [{"time": 1, "values": {"a": 1, "b": True}}]},
    "nonfinite": {"seq": 2, "history": [{"step": 0, "time": 0,
                                         "values": {"x": "Infinity", "y": "-Infinity"}}]},
    "many_keys": {"seq": 3, "history": [{"step": 1, "time": 2,
                                         "values": {f"k{i}": i for i in range(12)}}]},
    "console_only": {"seq": 4, "console": [{"time": 5, "text": "hello \u00e9\u4e2d"}]},
    "histograms": {"seq": 5,
                   "history": [{"step": 1, "time": 1, "values": {"loss": 1}}],
                   "histograms": [{"key": "grad/w", "step": 1, "time": 2, "lo": -1, "hi": 1,
                                   "counts": [1, 2.5, 0]},
                                  {"key": "act", "step": 2, "time": 3, "edges": [0, 1, 10],
                                   "counts": [7, 8]}]},
    "media": {"seq": 6,
              "media": [{"key": "img", "step": 0, "time": 1, "index": 1, "type": "image",
                         "sha256": "ab" * 32, "size": 10, "mime": "image/png", "width": 4,
                         "height": 2, "caption": "c \u00e9"},
                        {"key": "tbl", "step": 0, "time": 2, "type": "table",
                         "sha256": "cd" * 32, "size": 3, "mime": "application/json"}]},
    "big_numbers": {"seq": 9223372036854775807,
                    "history": [{"step": 9223372036854775807, "time": -1,
                                 "values": {"v": 1.7976931348623157e308, "w": 5e-324}}]},
}
for name, body in INGEST.items():
    write("ingest", name + ".json", json.dumps(body))
write("ingest", "deep.json", '{"seq": 1, "history": [' * 1 + "[" * 40 + "]" * 40 + "]}")
write("ingest", "escapes.json", r'{"seq": 1, "console": [{"time": 1, "text": "\ud83d\ude00 \u0000 \n"}]}')
write("ingest", "not_object.json", "[1, 2, 3]")

# ---- graphql: documents the W&B clients send, and odd ones ----
GQL = {
    "probe": """query ProbeServerCapabilities {
  QueryType: __type(name: "Query") { ...fieldData }
  MutationType: __type(name: "Mutation") { ...fieldData }
}
fragment fieldData on __Type { fields { name } }""",
    "upsert": """mutation UpsertBucket($id: String, $name: String, $project: String,
  $entity: String, $config: JSONString, $tags: [String!] = ["a"]) {
  upsertBucket(input: {id: $id, name: $name, modelName: $project, entityName: $entity,
    config: $config, tags: $tags, flag: true, n: -12.5e3, nothing: null, kind: ENUM_VALUE}) {
    bucket { id name displayName project { id name entity { id name } } }
    inserted
  }
}""",
    "files": """mutation CreateRunFiles ($entity: String!, $project: String!, $run: String!,
  $files: [String!]!) @dir(a: 1) {
  createRunFiles(input: {entityName:$entity,projectName:$project,runName:$run,files:$files}) {
    runID uploadHeaders files { name uploadUrl }
  }
}""",
    "inline": """{ viewer { id ... on User { entity flags } ... @include(if: true) { username } } }""",
    "block_string": '{ a(s: """block\n  string \\""" """, t: "esc \\u00e9 \\n") }',
    "two_ops": "query A { viewer { id } } query B { viewer { id } } subscription S { x }",
    "deep": "{" + " a {" * 20 + " b" + " }" * 20 + " }",
    "comments": "# comment\n{ viewer, # trailing\n  id }",
}
for name, text in GQL.items():
    write("graphql", name + ".graphql", text)

# ---- http: raw client byte streams; @KEY@ / @BASIC@ are replaced by the fuzzer ----
def req(method, path, body=None, headers=(), auth="bearer", version="1.1"):
    lines = [f"{method} {path} HTTP/{version}", "Host: localhost"]
    if auth == "bearer":
        lines.append("Authorization: Bearer @KEY@")
    elif auth == "basic":
        lines.append("Authorization: Basic @BASIC@")
    lines += list(headers)
    data = b""
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


RUN = "/api/v1/runs/fuzz/p/r1"
write("http", "healthz", req("GET", "/healthz", auth=None))
write("http", "metrics", req("GET", "/metrics", auth=None))
write("http", "viewer", req("GET", "/api/v1/viewer"))
write("http", "unauthenticated", req("GET", "/api/v1/viewer", auth=None))
write("http", "run_lifecycle", b"".join([
    req("POST", "/api/v1/runs/fuzz/p", {"id": "r1", "name": "n", "group": "g", "tags": ["t"],
                                          "config": {"lr": 0.1, "nested": {"a": [1, 2]}}}),
    req("POST", RUN + "/writers", {"label": "rank_0", "primary": True, "gpu_ids": [0]}),
    req("POST", RUN + "/writers/rank_0/batches", INGEST["full"]),
    req("POST", RUN + "/writers/rank_0/heartbeat", {}),
    req("GET", RUN + "/history?keys=loss,acc&buckets=10"),
    req("GET", RUN + "/history?keys=loss&min_step=0&max_step=1000&limit=5&after_step=3"),
    req("GET", RUN + "/system?labels=rank_0&keys=cpu&buckets=3"),
    req("GET", RUN + "/keys"),
    req("GET", RUN + "/console?labels=rank_0&stream=stderr&q=warn&after=0&limit=10"),
    req("GET", RUN + "/console/index?stride=10"),
    req("PATCH", RUN, {"summary": {"best": 1}, "config": {"lr": None}, "tags": ["x"]}),
    req("POST", RUN + "/writers/rank_0/finish", {"exit_code": 1, "state": "failed"}),
    req("GET", RUN),
]))
write("http", "list_runs", req(
    "GET", "/api/v1/runs/fuzz/p?group=g&state=crashed,running&sort=-name&limit=2&filters="
    "%5B%7B%22field%22%3A%22config.lr%22%2C%22op%22%3A%22%3E%22%2C%22value%22%3A%220%22%7D%5D"))
write("http", "groups_projects", req("GET", "/api/v1/groups/fuzz/p") +
      req("GET", "/api/v1/projects?entity=fuzz"))
write("http", "views", req("POST", "/api/v1/views/fuzz/p", {
    "name": "v", "spec": {"filters": [{"field": "state", "op": "in", "values": ["crashed"]}],
                          "group_by": "group", "sort": "-created", "columns": ["loss"]}}) +
      req("GET", "/api/v1/views/fuzz/p") + req("PUT", "/api/v1/views/fuzz/p/1", {"name": "w",
                                                                                   "spec": {}}) +
      req("DELETE", "/api/v1/views/fuzz/p/1"))
write("http", "keys", req("POST", "/api/v1/keys", {"name": "ci", "role": "member"}) +
      req("GET", "/api/v1/keys") + req("DELETE", "/api/v1/keys/2"))
write("http", "delete_run", req("DELETE", "/api/v1/runs/fuzz/p/r1"))
write("http", "graphql", req("POST", "/graphql", {"query": GQL["upsert"], "variables": {
    "name": "g1", "project": "p", "entity": "fuzz", "config": "{\"lr\": {\"value\": 1}}"}},
    auth="basic") + req("POST", "/graphql", {"query": GQL["probe"]}, auth="basic"))
write("http", "file_stream", req("POST", "/graphql", {"query": GQL["upsert"], "variables": {
    "name": "fs1", "project": "p", "entity": "fuzz"}}, auth="basic") +
    req("POST", "/files/fuzz/p/fs1/file_stream", {"files": {
        "wandb-history.jsonl": {"offset": 0, "content": [json.dumps(
            {"_step": 0, "loss": 1.5, "_timestamp": 1700000000.5, "_runtime": 1})]},
        "output.log": {"offset": 0, "content": ["2024-05-01T12:00:00.000000 epoch 1",
                                                 "ERROR 2024-05-01T12:00:00.100000 oops"]},
        "wandb-summary.json": {"offset": 0, "content": [json.dumps({"loss": 0.5})]}},
        "complete": False}, auth="basic"))
write("http", "upload", req("PUT", "/files/fuzz/p/fs1/upload/config.yaml", "lr: 1\n",
                            auth="basic") +
      req("GET", "/api/v1/runs/fuzz/p/fs1/files") +
      req("GET", "/api/v1/runs/fuzz/p/fs1/files/config.yaml"))
write("http", "chunked",
      b"POST /api/v1/runs/fuzz/p HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer @KEY@\r\n"
      b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"\r\n9\r\n: \"r2\"}  \r\n0\r\n\r\n")
write("http", "expect_continue",
      b"POST /api/v1/runs/fuzz/p HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer @KEY@\r\n"
      b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}")
write("http", "head_and_10", req("HEAD", "/healthz", auth=None) +
      req("GET", "/healthz", auth=None, version="1.0"))
write("http", "bad_request_line", b"GET /\x00 HTTP/1.1\r\n\r\n")
write("http", "absolute_target", b"GET http://localhost/healthz?x=%zz&y=+1 HTTP/1.1\r\n\r\n")
write("http", "percent_path", req("GET", "/api/v1/runs/fuzz/p/%2E%2E%2Fx/files/..%2F..%2Fetc%2Fpasswd"))
write("http", "big_header", b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 5000 + b"\r\n\r\n")
write("http", "big_content_length",
      b"POST /api/v1/runs/fuzz/p HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{}")
write("http", "session", req("POST", "/api/v1/sessions", {"token": "nope"}, auth=None))
write("http", "method_not_allowed", req("PUT", "/healthz", "", auth=None) +
      req("GET", "/api/v2/nothing"))
