"""Makes the `cohort` package importable for the Python SDK tests, from the source tree.

The package is python/cohort; its extension comes from the CMake build directory
($COHORT_BUILD_DIR, default <repo>/build), where the build puts <build>/python/cohort/_cohort*.so
(see docs/python.md). An installed wheel works too. When neither is there, importing this
module raises an ImportError that says how to build it: the tests fail, they never skip.
"""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build"))
PYTHON_SRC = ROOT / "python"

os.environ.setdefault("COHORT_BUILD_DIR", str(BUILD))
# A run the unit tests start without naming a mode (or one a child process starts) never
# reaches a real server or spawns an agent in the user's HOME. The distributed tests give their
# processes an environment of their own (dist_helpers.Client), without this.
os.environ["COHORT_MODE"] = "disabled"
if str(PYTHON_SRC) not in sys.path:
    sys.path.insert(0, str(PYTHON_SRC))

try:
    import cohort  # noqa: E402,F401
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        f"The Python SDK tests need the extension cohort._cohort: build it with "
        f"`cmake -S {ROOT} -B {BUILD} -DCOHORT_BUILD_PYTHON=ON && cmake --build {BUILD} "
        f"--target _cohort` (COHORT_BUILD_DIR={BUILD}). Import failed: {e}") from e
