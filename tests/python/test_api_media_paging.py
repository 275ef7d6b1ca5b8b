"""Run.media against a real server (tests/conftest.py's ServerProcess, a real run and node
agent: tests/distributed/dist_helpers.py) whose answers are cut at a few rows: every row comes
back, paged by step (python/cohort/api_media.py _rows), and download() writes every file."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import client, wait_until  # noqa: E402,F401  (the fixture)

import sdk_helpers  # noqa: E402,F401
import cohort  # noqa: E402

LOG = r"""
import cohort
run = cohort.init(project="paging")
for step in range(4):
    run.log({"a": [cohort.Html(f"<p>a {step} {i}</p>") for i in range(3)],
             "b": cohort.Html(f"<p>b {step}</p>"),
             "c/d": [cohort.Html(f"<p>c {step} {i}</p>") for i in range(2)], "loss": step})
print("RUN", run.id)
run.finish()
"""


def test_run_media_returns_every_row_when_the_server_cuts_its_answer(client, tmp_path,
                                                                     monkeypatch):
    proc = client.python(LOG)
    assert proc.returncode == 0, proc.stderr
    run_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RUN "))
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    run = api.run(f"{client.entity}/paging/{run_id}")
    wait_until(lambda: len(run.media()) == 24 and all(m["uploaded"] for m in run.media()),
               what="24 uploaded media rows")
    whole = [(m["key"], m["writer"], m["step"], m["index"]) for m in run.media()]
    assert len(set(whole)) == 24

    # The server's answers at most 4 rows (the route's `limit`, what a run of more than
    # 100,000 rows meets at the default): cut inside steps, keys and writers.
    transport = api._t
    plain_get = transport.get
    answers = []

    def cut(path, query=None):
        if path.endswith("/media"):
            query = dict(query or {}, limit=4)
            answer = plain_get(path, query)
            answers.append(answer["truncated"])
            return answer
        return plain_get(path, query)

    monkeypatch.setattr(transport, "get", cut)
    got = run.media()
    assert [(m["key"], m["writer"], m["step"], m["index"]) for m in got] == whole
    assert any(answers)  # the answers were cut
    part = run.media(["a", "c/d"], min_step=1, max_step=2)
    assert [(m["key"], m["step"], m["index"]) for m in part] == [
        (k, s, i) for k, n in (("a", 3), ("c/d", 2)) for s in (1, 2) for i in range(n)]
    paths = run.media().download(str(tmp_path / "dl"))
    assert len(set(paths)) == 24
    assert (tmp_path / "dl" / "a" / got[0]["writer"] / "3_2.html").read_text() == "<p>a 3 2</p>"

    # A step of one key and writer holding more rows than an answer: the route pages by step
    # only, so it cannot be read whole; Run.media raises rather than leave rows out.
    from cohort.errors import UsageError

    def tiny(path, query=None):
        if path.endswith("/media"):
            return plain_get(path, dict(query or {}, limit=2))
        return plain_get(path, query)

    monkeypatch.setattr(transport, "get", tiny)
    with pytest.raises(UsageError, match="more rows at step"):
        run.media(["a"])
    assert len(run.media(["b"])) == 4  # one row a step: still read whole
