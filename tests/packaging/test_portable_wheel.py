"""The portable wheel (scripts/build-wheels.sh, docs/python.md "Wheels for training nodes"):

- its ELF files (the extension and the node `cohort` binary) need only the C runtime: every
  NEEDED library is on the short list below (no libstdc++, Boost, fmt, OpenSSL, libcurl), no
  glibc symbol version is newer than 2.28, and auditwheel tagged it manylinux_2_28;
- `pip install`ed into a minimal Debian root file system that has no compiler, linker, make or
  -dev package (debootstrap --variant=minbase plus python3 and python3-venv, entered with chroot
  in a private mount namespace), it runs a job: init, log, finish through the wheel's own agent,
  against a real server started here, whose API then answers the logged points;
- the wheel's binary has no server, and says so.

It builds OpenSSL and libcurl for glibc 2.28 on its first run (~15 minutes on 2 cores; cached in
~/.cache/cohort/wheels) and needs root (chroot, mounts), debootstrap, cargo and the network the
first time, so it runs with COHORT_WHEEL_TESTS=1 (.ci/run's "wheels" step sets it).
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import tempfile
import zipfile

import pytest

from conftest import ServerProcess, project_version, wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("COHORT_WHEEL_CACHE", pathlib.Path.home() / ".cache/cohort/wheels"))
ROOTFS_CACHE = pathlib.Path.home() / ".cache" / "cohort" / "rootfs-bookworm-minbase.tar"
# What manylinux_2_28 lets a wheel need from the system, less what this one must not need
# (libstdc++: libc++ is linked statically; libgcc_s: zig links compiler-rt).
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                  "ld-linux-x86-64.so.2"}
MAX_GLIBC = (2, 28)
BUILD_TOOLS = ("cc", "gcc", "c++", "g++", "clang", "ld", "as", "make", "cmake", "zig")

pytestmark = [
    pytest.mark.skipif(os.environ.get("COHORT_WHEEL_TESTS") != "1",
                       reason="set COHORT_WHEEL_TESTS=1 (builds OpenSSL and curl; needs root)"),
]


@pytest.fixture(scope="module")
def wheel():
    out = pathlib.Path(tempfile.mkdtemp(prefix="cohort-portable-"))
    proc = subprocess.run([str(ROOT / "scripts" / "build-wheels.sh")], capture_output=True,
                          text=True, timeout=3000,
                          env=dict(os.environ, PYTHONS="3.11", WHEEL_DIR=str(out)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    wheels = sorted(out.glob("cohort-*-cp311-*manylinux_2_28_x86_64.whl"))
    assert len(wheels) == 1, (list(out.iterdir()), proc.stdout[-3000:])
    yield wheels[0]
    shutil.rmtree(out, ignore_errors=True)


def elf_files(root):
    for path in root.rglob("*"):
        if path.is_file() and path.read_bytes()[:4] == b"\x7fELF":
            yield path


def needed(path):
    out = subprocess.run(["readelf", "-d", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


def symbol_versions(path):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return set(re.findall(r"@+([A-Z_]+_[0-9][0-9.]*)", out))


def test_the_wheels_elf_files_need_only_the_c_runtime_of_glibc_2_28(wheel, tmp_path):
    assert "manylinux_2_28_x86_64" in wheel.name
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
        names = z.namelist()
    assert any(re.fullmatch(r"cohort/_cohort\..*\.so", n) for n in names), names
    assert "cohort/bin/cohort" in names, names
    elves = list(elf_files(tmp_path))
    assert len(elves) == 2, elves  # the extension and the binary; nothing grafted beside them
    for elf in elves:
        libs = needed(elf)
        assert libs <= ALLOWED_NEEDED, (elf.name, sorted(libs - ALLOWED_NEEDED))
        versions = symbol_versions(elf)
        foreign = {v for v in versions if not v.startswith("GLIBC_")}
        assert not foreign, (elf.name, sorted(foreign))  # no GLIBCXX_, CXXABI_, OPENSSL_ ...
        glibc = [tuple(int(x) for x in v[len("GLIBC_"):].split(".")[:2]) for v in versions]
        assert glibc and max(glibc) <= MAX_GLIBC, (elf.name, sorted(versions))


def make_rootfs(dest):
    """A minimal Debian 12 root file system with python3 and python3-venv only, cached as a tar."""
    if not ROOTFS_CACHE.exists():
        assert shutil.which("debootstrap"), "debootstrap is missing (scripts/install-deps.sh)"
        staging = pathlib.Path(tempfile.mkdtemp(prefix="cohort-rootfs-"))
        try:
            subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv",
                            "bookworm", str(staging), "http://deb.debian.org/debian"],
                           check=True, capture_output=True, timeout=1200)
            ROOTFS_CACHE.parent.mkdir(parents=True, exist_ok=True)
            partial = ROOTFS_CACHE.with_suffix(".partial")
            subprocess.run(["tar", "-C", str(staging), "-cf", str(partial), "."], check=True)
            partial.rename(ROOTFS_CACHE)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    dest.mkdir()
    subprocess.run(["tar", "-C", str(dest), "-xf", str(ROOTFS_CACHE)], check=True)


def in_chroot(rootfs, script, env, timeout=300):
    """Runs `sh -c script` chrooted in rootfs, in a private mount namespace (its /proc and /dev
    mounts vanish with it), with only the given environment."""
    inner = (f"mount -t proc proc {rootfs}/proc && mount --rbind /dev {rootfs}/dev && "
             f"exec chroot {rootfs} /usr/bin/env -i "
             + " ".join(f"{k}={v}" for k, v in env.items()) + " /bin/sh -c " + shlex.quote(script))
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot and mounts need root")
@pytest.mark.timeout(3600)
def test_pip_installed_wheel_logs_a_run_in_a_root_file_system_without_build_tools(wheel, tmp_path):
    rootfs = tmp_path / "rootfs"
    make_rootfs(rootfs)
    present = [t for t in BUILD_TOOLS if (rootfs / "usr/bin" / t).exists()]
    assert not present, f"the root file system has build tools: {present}"
    for pattern in ("libboost*", "libfmt*", "libcurl*"):
        assert not list(rootfs.glob(f"usr/lib/x86_64-linux-gnu/{pattern}")), pattern
    assert not (rootfs / "usr/include/boost").exists()
    shutil.copy(wheel, rootfs / "tmp" / wheel.name)
    (rootfs / "tmp" / "job.py").write_text(
        "import cohort, sys\n"
        "print('version', cohort.__version__, cohort.__file__)\n"
        "run = cohort.init(project='wheel', name='in-chroot', config={'lr': 0.1})\n"
        "for step in range(20):\n"
        "    run.log({'loss': 1.0 / (step + 1)})\n"
        "run.finish()\n"
        "print('run', run.id)\n")

    server = ServerProcess(tmp_path / "server-home").start()
    try:
        env = {"HOME": "/root", "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": "/tmp/run",
               "COHORT_BASE_URL": server.url, "COHORT_API_KEY": server.config["api_key"]}
        proc = in_chroot(rootfs, (
            "set -e; mkdir -p -m 700 /tmp/run; python3 -m venv /venv; "
            f"/venv/bin/pip install -q --no-index --no-deps /tmp/{wheel.name}; "
            "/venv/bin/python /tmp/job.py; "
            "cohort=$(/venv/bin/python -c 'import cohort, os; "
            "print(os.path.join(os.path.dirname(cohort.__file__), \"bin\", \"cohort\"))'); "
            "$cohort --version; "
            "if $cohort server --port 0 2>/tmp/server.err; then echo SERVER-STARTED; fi; "
            "cat /tmp/server.err"), env)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-6000:]
        assert f"version {project_version()} /venv/lib/python3.11/site-packages/cohort/" in out, out
        assert f"cohort {project_version()}" in out, out
        assert "SERVER-STARTED" not in out and "it has no server" in out, out
        run_id = re.search(r"^run (\S+)$", out, re.M).group(1)

        import cohort  # the checkout's SDK, reading back through the server's API
        public = cohort.Api(base_url=server.url, api_key=server.config["api_key"])

        def rows():
            found = list(public.run(f"wheel/{run_id}").scan_history(keys=["loss"]))
            return found if len(found) == 20 else None
        found = wait_for(rows, timeout=30)
        assert found, "the server has not the chroot run's 20 points"
        assert [r["step"] for r in found] == list(range(20))
        assert [r["loss"] for r in found] == [1.0 / (step + 1) for step in range(20)]
    finally:
        server.stop()
