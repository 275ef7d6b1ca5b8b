"""Settings and torchrun's environment, as the server shows them: labels, primary and
finish-state flags, GPU ids, the run id every rank derives, the run's URL."""
import json

from dist_helpers import assert_ok, client, wait_until  # noqa: F401

SNIPPET = """
import json, cohort
run = cohort.init(project="surface", {args})
run.log({{"x": 1}})
print(json.dumps({{"id": run.id, "label": run.label, "url": run.url, "entity": run.entity,
                  "project": run.project}}))
run.finish()
"""


def run_snippet(client, args, env=None):
    proc = assert_ok(client.python(SNIPPET.format(args=args), env=env))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_explicit_shared_settings_reach_the_writer(client):
    primary = run_snippet(client, "settings=cohort.Settings(mode='shared', x_label='node-a', "
                                  "x_primary=True, x_stats_gpu_device_ids=[0, 1])")
    worker = run_snippet(client, f"id={primary['id']!r}, settings=cohort.Settings("
                                 "mode='shared', x_label='node-b', x_primary=False, "
                                 "x_update_finish_state=False)")
    assert worker["id"] == primary["id"] and worker["label"] == "node-b"
    view = client.run_view(primary["id"], project="surface")
    writers = wait_until(lambda: (w := view.writers()) and len(w) == 2 and w, what="writers")
    assert writers["node-a"]["gpu_ids"] == [0, 1]
    assert writers["node-a"]["primary"] and writers["node-a"]["update_finish_state"]
    assert not writers["node-b"]["primary"] and not writers["node-b"]["update_finish_state"]


def test_torchrun_rank_gives_label_and_worker_role_and_cohort_run_id_the_run(client):
    env = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "COHORT_RUN_ID": "job-42"}
    info = run_snippet(client, "settings=cohort.Settings(mode='shared')", env=env)
    assert (info["id"], info["label"]) == ("job-42", "rank_3")
    view = client.run_view("job-42", project="surface")
    writers = wait_until(lambda: view.writers(), what="writer")
    assert not writers["rank_3"]["primary"]


def test_torchelastic_run_id_gives_every_rank_the_same_run(client):
    ids = [run_snippet(client, "settings=cohort.Settings(mode='shared')",
                       env={"RANK": str(r), "TORCHELASTIC_RUN_ID": "elastic-7"})["id"]
           for r in (0, 1)]
    assert ids[0] == ids[1]
    other = run_snippet(client, "settings=cohort.Settings(mode='shared')",
                        env={"RANK": "0", "TORCHELASTIC_RUN_ID": "elastic-8"})["id"]
    assert other != ids[0]
    view = client.run_view(ids[0], project="surface")
    assert sorted(wait_until(lambda: (w := view.writers()) and len(w) == 2 and w,
                             what="2 writers")) == ["rank_0", "rank_1"]


def test_plain_run_under_torchrun_is_its_own_primary_and_url_names_the_run(client):
    info = run_snippet(client, "group='g'", env={"RANK": "2"})
    assert info["label"] == "rank_2"
    assert info["url"].startswith(client.server.url)
    # The web UI's page of the run (as the UI and the alert webhooks link it).
    assert info["url"].endswith(f"/?p={info['entity']}%2Fsurface&run={info['id']}")
    view = client.run_view(info["id"], project="surface")
    writers = wait_until(lambda: view.writers(), what="writer")
    assert writers["rank_2"]["primary"]  # not RANK == 0, but the only writer of its run
    assert wait_until(lambda: view.get()["state"] == "finished", what="finished")
