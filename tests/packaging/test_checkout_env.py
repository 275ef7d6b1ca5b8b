"""The quick start leaves the SDK installed in the project's environment (scripts/setup-venv.sh,
README "Tracking a training job"): the venv's Python imports `cohort` from this checkout, with
its extension and the `cohort` binary of the build, from any directory and without PYTHONPATH,
and logs a run offline."""
import os
import pathlib
import subprocess
import sys

from conftest import BUILD

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_projects_venv_imports_the_checkouts_sdk_without_pythonpath(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COHORT_BIN")}
    env.update(HOME=str(tmp_path), COHORT_BUILD_DIR=str(BUILD), COHORT_MODE="offline",
               COHORT_DIR=str(tmp_path / "runs"))
    code = ("import cohort, pathlib; print(pathlib.Path(cohort.__file__).resolve()); "
            "run = cohort.init(project='p', mode='offline'); run.log({'x': 1}); run.finish(); "
            "print('logged', run.id)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert pathlib.Path(first) == (ROOT / "python" / "cohort" / "__init__.py").resolve(), first
    assert second.startswith("logged "), out.stdout
