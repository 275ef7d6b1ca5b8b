"""Integrations in shared mode with the user's offline or disabled mode (settings={"mode":
...}): the run stays offline or disabled (shared mode used to replace the mode, so the run went
online)."""
import pytest

from integ_helpers import client, read_api, result, run_script  # noqa: F401

pytestmark = pytest.mark.timeout(300)


MODES = r'''
import json, sys
import cohort
from cohort.integrations._common import start_run

run = start_run(mode="shared", settings={"mode": sys.argv[1]}, init_kwargs={"project": "modes"})
info = {"id": run.id, "offline": run.offline, "disabled": run.disabled, "label": run.label}
run.finish()
print("RESULT " + json.dumps(info))
'''


@pytest.mark.parametrize("mode", ["offline", "disabled"])
def test_shared_mode_keeps_an_offline_or_disabled_mode(client, mode):
    info = result(run_script(client, MODES, mode))
    assert info["offline"] == (mode == "offline") and info["disabled"] == (mode == "disabled")
    if mode == "offline":
        assert info["label"] == "rank_0"       # still a writer of a shared run
    assert list(read_api(client).runs("modes")) == []    # nothing reached the server
