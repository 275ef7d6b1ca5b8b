"""Helpers of the W&B wire-compatibility suites: a raw protocol client written from
../shared/reference/wandb-wire.md, and environments that point the vendor's real SDKs (Python
`wandb`, JS `@wandb/sdk`) at a Cohort server and nowhere else."""
import base64
import json
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

HERE = pathlib.Path(__file__).resolve().parent
JS_DIR = HERE / "js"


class WandbWire:
    """Speaks the vendor's protocol: GraphQL at /graphql, file_stream, uploads."""

    def __init__(self, url, key, client_id=None):
        self.url = url.rstrip("/")
        self.key = key
        self.client_id = client_id

    def _request(self, method, path_or_url, body=None, headers=None, raw=None, auth=True):
        url = path_or_url if path_or_url.startswith("http") else self.url + path_or_url
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(url, data=data, method=method)
        if auth and self.key:
            token = base64.b64encode(f"api:{self.key}".encode()).decode()
            req.add_header("Authorization", "Basic " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, text, hdrs = resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read(), dict(e.headers)
        try:
            payload = json.loads(text) if text else None
        except ValueError:
            payload = text
        return status, payload, hdrs

    def gql(self, query, variables=None, raw=None, headers=None):
        h = {"X-WANDB-USE-ASYNC-FILESTREAM": "true"} if self.client_id else {}
        if self.client_id:
            h["X-WANDB-CLIENT-ID"] = self.client_id
        h.update(headers or {})
        body = None if raw is not None else {"query": query, "variables": variables or {}}
        status, payload, _ = self._request("POST", "/graphql", body, headers=h, raw=raw)
        return status, payload

    def upsert(self, name, project="proj", entity=None, **fields):
        variables = {"name": name, "project": project, "entity": entity}
        variables.update(fields)
        status, payload = self.gql(UPSERT_BUCKET, variables)
        assert status == 200, payload
        assert "errors" not in payload, payload
        return payload["data"]["upsertBucket"]

    def file_stream(self, entity, project, run, body):
        h = {}
        if self.client_id:
            h = {"X-WANDB-USE-ASYNC-FILESTREAM": "true", "X-WANDB-ASYNC-CLIENT-ID": self.client_id}
        status, payload, headers = self._request(
            "POST", f"/files/{entity}/{project}/{run}/file_stream", body, headers=h)
        return status, payload

    def put(self, url, data, auth=False):
        return self._request("PUT", url, raw=data, auth=auth,
                             headers={"Content-Type": "application/octet-stream"})


CREATE_RUN_FILES = """mutation CreateRunFiles ($entity: String!, $project: String!, $run: String!, $files: [String!]!) {
	createRunFiles(input: {entityName:$entity,projectName:$project,runName:$run,files:$files}) {
		runID
		uploadHeaders
		files {
			name
			uploadUrl
		}
	}
}"""


# The start of a training script for a real Hugging Face Trainer (transformers from PyPI,
# Debian's torch): a tiny GPT-2 built from a config (no downloads) and a 32-sample dataset;
# `out` (argv[1]) is the output directory. The tests append their TrainingArguments and Trainer.
HF_TINY_GPT2 = r'''
import json, os, sys, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
out = sys.argv[1]
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2))

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 32
    def __getitem__(self, i):
        ids = torch.tensor([(i + j) % 64 for j in range(16)])
        return {"input_ids": ids, "labels": ids}
'''


UPSERT_BUCKET = """
mutation UpsertBucket ($id: String, $name: String, $project: String, $entity: String, $groupName: String, $description: String, $displayName: String, $notes: String, $commit: String, $config: JSONString, $host: String, $debug: Boolean, $program: String, $repo: String, $jobType: String, $state: String, $sweep: String, $tags: [String!], $summaryMetrics: JSONString) {
\tupsertBucket(input: {id:$id,name:$name,groupName:$groupName,modelName:$project,entityName:$entity,description:$description,displayName:$displayName,notes:$notes,config:$config,commit:$commit,host:$host,debug:$debug,jobProgram:$program,jobRepo:$repo,jobType:$jobType,state:$state,sweep:$sweep,tags:$tags,summaryMetrics:$summaryMetrics}) {
\t\tbucket {
\t\t\tid
\t\t\tname
\t\t\tdisplayName
\t\t\tdescription
\t\t\tconfig
\t\t\tsweepName
\t\t\tproject {
\t\t\t\tid
\t\t\t\tname
\t\t\t\tentity {
\t\t\t\t\tid
\t\t\t\t\tname
\t\t\t\t}
\t\t\t}
\t\t\thistoryLineCount
\t\t}
\t\tinserted
\t}
}
"""


def history_line(step=None, **values):
    line = dict(values)
    if step is not None:
        line["_step"] = step
    line["_timestamp"] = 1700000000.0 + (step or 0)
    line["_runtime"] = float(step or 0)
    return json.dumps(line)


def sdk_env(server, tmp_path, extra=None):
    """Environment for the vendor's SDKs: Cohort as the only server, everything under tmp."""
    home = tmp_path / "sdk-home"
    for sub in ("wandb", "cache", "config", "data", "artifacts"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update({
        "HOME": str(home),
        "WANDB_BASE_URL": server.url,
        "WANDB_API_KEY": server.config["api_key"],
        "WANDB_MODE": "online",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(home / "wandb"),
        "WANDB_CACHE_DIR": str(home / "cache"),
        "WANDB_CONFIG_DIR": str(home / "config"),
        "WANDB_DATA_DIR": str(home / "data"),
        "WANDB_ARTIFACT_DIR": str(home / "artifacts"),
        "WANDB_ERROR_REPORTING": "false",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_DISABLE_CODE": "true",
        # Belt and braces: anything that is not the Cohort server on loopback goes to a dead
        # proxy, so no test can reach the internet even if an SDK tried.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def run_python(script, env, cwd, timeout=180, args=()):
    path = pathlib.Path(cwd) / "client.py"
    path.write_text(script)
    return subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def wandb_version():
    try:
        import wandb  # noqa: F401
    except ImportError as e:
        pytest.fail(f"the vendor's Python SDK is not installed in {sys.prefix}: {e}; "
                    "run scripts/setup-venv.sh")
    import wandb
    return wandb.__version__
