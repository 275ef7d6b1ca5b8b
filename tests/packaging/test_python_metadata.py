"""The Python package's metadata (pyproject.toml, issue 20) and its version, which has one source:
project(cohort VERSION ...) in CMakeLists.txt. scikit-build-core reads it for the wheel's
metadata (regex provider), CMake compiles it into the extension (cohort._cohort.VERSION), and
cohort.__version__ and `python -m cohort --version` print that.

The metadata is the one a wheel would carry: scikit-build-core's prepare_metadata_for_build_wheel
writes the .dist-info without running CMake. (That an installed wheel's importlib.metadata version
is cohort.__version__ is checked by scripts/test-wheels.sh, COHORT_WHEEL_TESTS=1.)"""
import email.parser
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import BUILD, project_version

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sdk_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("COHORT_BIN",)}
    env.update(HOME=str(tmp_path), COHORT_BUILD_DIR=str(BUILD),
               PYTHONPATH=str(ROOT / "python"))
    return env


@pytest.fixture(scope="module")
def metadata(tmp_path_factory):
    if importlib.util.find_spec("scikit_build_core") is None:
        pytest.skip("needs scikit-build-core (python/requirements-dev.txt)")
    out = tmp_path_factory.mktemp("metadata")
    code = ("import sys; from scikit_build_core.build import prepare_metadata_for_build_wheel "
            "as p; print(p(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dist_info = out / proc.stdout.strip().splitlines()[-1]
    return email.parser.Parser().parsestr((dist_info / "METADATA").read_text())


def test_wheel_metadata_version_is_the_cmake_project_version(metadata):
    assert metadata["Name"] == "cohort"
    assert metadata["Version"] == project_version()


def test_wheel_metadata_classifiers_license_and_python_versions(metadata):
    classifiers = metadata.get_all("Classifier")
    for minor in range(9, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Topic :: Scientific/Engineering :: Artificial Intelligence" in classifiers
    assert metadata["Requires-Python"] == ">=3.9"
    # The repository has no license file: the metadata keeps the project's own terms and names
    # no file it does not ship.
    if not any((ROOT / name).exists() for name in ("LICENSE", "LICENSE.txt", "LICENSE.md",
                                                    "COPYING")):
        assert metadata["License"] == "Proprietary"
        assert "License :: Other/Proprietary License" in classifiers
        assert not metadata.get_all("License-File")
    # Any URL it gives is a real one (none is invented).
    for url in metadata.get_all("Project-URL") or []:
        assert not re.search(r"example\.(com|org)|TODO|<|>|your-?org", url, re.I), url


def test_wheel_metadata_optional_extras(metadata):
    extras = set(metadata.get_all("Provides-Extra"))
    assert {"torch", "pandas", "images"} <= extras, extras
    requires = metadata.get_all("Requires-Dist")

    def needs(extra):
        return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requires
                if re.search(rf'extra == "{extra}"', r)}

    assert "torch" in needs("torch")
    assert "pandas" in needs("pandas")
    assert "pillow" in needs("images")  # cohort.Image encodes PNGs with Pillow
    # The SDK itself imports nothing outside the standard library.
    assert not [r for r in requires if "extra ==" not in r], requires


def test_python_m_cohort_version_and_dunder_version_are_the_cmake_version(tmp_path):
    version = project_version()
    env = sdk_env(tmp_path)
    out = subprocess.run([sys.executable, "-m", "cohort", "--version"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cohort {version}"
    code = ("import cohort, cohort._native as n; print(cohort.__version__); "
            "print(n.native.VERSION)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [version, version]
    # The export command is still what `python -m cohort` runs.
    out = subprocess.run([sys.executable, "-m", "cohort", "--help"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "export" in out.stdout and "--version" in out.stdout

