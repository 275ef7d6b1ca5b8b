"""The exit code a run is finished with when the process ends without finishing it: the code
given to sys.exit and to the builtins exit()/quit() (run in a fresh interpreter, disabled mode:
the code the package hands to the run's finish is read from a patched Run._finish_with)."""
import os
import subprocess
import sys

import pytest

import sdk_helpers

SCRIPT = r'''
import os, sys
import cohort
from cohort._run import Run

_orig = Run._finish_with
def _finish_with(self, code, state):
    os.write(1, f"FINISHED {code} {state!r}\n".encode())
    return _orig(self, code, state)
Run._finish_with = _finish_with

cohort.init(mode="disabled", project="exit")
cohort._state.install_hooks()   # what init does for an online or offline run
{ending}
'''


@pytest.mark.parametrize("ending,code", [
    ("sys.exit(3)", 3),
    ("exit(3)", 3),
    ("quit(4)", 4),
    ("exit()", 0),
    ("pass", 0),
    ("raise ValueError('boom')", 1),
])
def test_run_finishes_with_the_process_exit_code(tmp_path, ending, code):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT.replace("{ending}", ending))
    env = dict(os.environ, PYTHONPATH=str(sdk_helpers.PYTHON_SRC))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == code, proc.stderr[-3000:]
    assert f"FINISHED {code} ''" in proc.stdout, (proc.stdout, proc.stderr[-3000:])
