"""Loads the extension module ``cohort._cohort`` and tells the client library where the
``cohort`` binary (which serves ``cohort agent``) is.

Where the extension comes from:

- an installed wheel (``pip install .``): ``cohort/_cohort*.so`` beside this file, with the
  binary at ``cohort/bin/cohort``;
- a CMake build tree (``-DCOHORT_BUILD_PYTHON=ON``): ``<build>/python/cohort/_cohort*.so`` with
  ``<build>/python/cohort/bin/cohort`` linked to ``<build>/src/cli/cohort``. The package is
  imported from the source tree (``PYTHONPATH=<repo>/python``) and finds the extension in
  ``$COHORT_BUILD_DIR``, else in ``<repo>/build``.

``COHORT_BIN`` is set (when the user has not set it) to the ``bin/cohort`` beside the extension
so that the library spawns the agent of the same build, and child processes inherit it.
"""
from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import List

_PACKAGE = __name__.rpartition(".")[0]


def _build_tree_candidates() -> List[str]:
    """Directories of a CMake build tree that may hold the extension."""
    out = []
    build = os.environ.get("COHORT_BUILD_DIR")
    if build:
        out.append(os.path.join(os.path.abspath(build), "python", "cohort"))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if os.path.isfile(os.path.join(repo, "CMakeLists.txt")):
        out.append(os.path.join(repo, "build", "python", "cohort"))
    return out


def _load() -> ModuleType:
    name = _PACKAGE + "._cohort"
    try:
        return importlib.import_module(name)
    except ImportError as first:
        if getattr(first, "name", None) not in (None, name):
            raise  # the extension exists but one of its dependencies failed to load
        package = sys.modules[_PACKAGE]
        tried = []
        for directory in _build_tree_candidates():
            tried.append(directory)
            try:
                found = any(f.startswith("_cohort") and f.endswith(".so")
                            for f in os.listdir(directory))
            except OSError:
                found = False
            if not found:
                continue
            package.__path__.append(directory)
            try:
                return importlib.import_module(name)
            except ImportError:
                package.__path__.remove(directory)
                raise
        raise ImportError(
            "cohort: the extension module cohort._cohort is not built. Install the package "
            "(`pip install .` at the repository root) or build it with CMake "
            "(-DCOHORT_BUILD_PYTHON=ON, target _cohort) and set COHORT_BUILD_DIR to the build "
            "directory. Looked beside the package and in: " + (", ".join(tried) or "nothing"),
            name=name) from first


native = _load()


def _point_at_binary() -> None:
    if os.environ.get("COHORT_BIN"):
        return
    binary = os.path.join(os.path.dirname(os.path.realpath(native.__file__)), "bin", "cohort")
    if os.path.isfile(binary) and os.access(binary, os.X_OK):
        os.environ["COHORT_BIN"] = binary


_point_at_binary()
