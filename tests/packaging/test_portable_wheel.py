"""The portable wheel (scripts/build-wheels.sh, docs/python.md "Wheels for training nodes"):

- its ELF files (the extension and the node `cohort` binary) need only the C runtime: every
  NEEDED library is on the short list below (no libstdc++, Boost, fmt, OpenSSL, libcurl), no
  glibc symbol version is newer than 2.28, and auditwheel tagged it manylinux_2_28;
- `pip install`ed into a minimal Debian root file system that has no compiler, linker, make or
  -dev package (debootstrap --variant=minbase plus python3 and python3-venv, entered with chroot
  in a private mount namespace), it runs a job: init, log, finish through the wheel's own agent,
  against a real server started here, whose API then answers the logged points;
- the wheel's binary has no server, and says so.

Per architecture: x86_64 (this machine's) and aarch64, whose wheel is cross-built
(COHORT_WHEEL_ARCH=aarch64 scripts/build-wheels.sh) and whose root file system (debootstrap --arch=arm64) runs under
qemu-user emulation: Debian's qemu-user-static, its aarch64 binfmt_misc handler registered with
the F flag (the emulator is opened at registration, so it works inside the chroot). The job's
Python, pip, the extension and the wheel's `cohort agent` are aarch64 code; the server is this
machine's x86_64 build.

It builds OpenSSL and libcurl for glibc 2.28 on its first run (~15 minutes on 2 cores per
architecture; cached in ~/.cache/cohort/wheels) and needs root (chroot, mounts, binfmt_misc),
debootstrap, cargo and the network the first time, so it runs with COHORT_WHEEL_TESTS=1 (.ci/run's
"wheels" step sets it). COHORT_WHEEL_ARCHS chooses the architectures (default "x86_64";
"x86_64 aarch64" for both: aarch64 is not in CI's default path, see docs/python.md).
"""
import os
import pathlib
import platform
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
ROOTFS_DIR = pathlib.Path.home() / ".cache" / "cohort"  # the root file systems' tars
HOST_ARCH = platform.machine()
# Per architecture: Debian's name for it, its multiarch library directory, the dynamic loader,
# readelf's name for the machine, and the cached root file system (x86_64's keeps its first name).
ARCHS = {
    "x86_64": {"deb": "amd64", "multiarch": "x86_64-linux-gnu", "loader": "ld-linux-x86-64.so.2",
               "machine": "Advanced Micro Devices X86-64",
               "rootfs": "rootfs-bookworm-minbase.tar"},
    "aarch64": {"deb": "arm64", "multiarch": "aarch64-linux-gnu",
                "loader": "ld-linux-aarch64.so.1", "machine": "AArch64",
                "rootfs": "rootfs-bookworm-minbase-arm64.tar"},
}
SELECTED = os.environ.get("COHORT_WHEEL_ARCHS", "x86_64").replace(",", " ").split()
assert set(SELECTED) <= set(ARCHS), f"COHORT_WHEEL_ARCHS={SELECTED}: known are {sorted(ARCHS)}"
# What manylinux_2_28 lets a wheel need from the system, less what this one must not need
# (libstdc++: libc++ is linked statically; libgcc_s: zig links compiler-rt); plus the loader.
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"}
MAX_GLIBC = (2, 28)
BUILD_TOOLS = ("cc", "gcc", "c++", "g++", "clang", "ld", "as", "make", "cmake", "zig")

pytestmark = [
    pytest.mark.skipif(os.environ.get("COHORT_WHEEL_TESTS") != "1",
                       reason="set COHORT_WHEEL_TESTS=1 (builds OpenSSL and curl; needs root)"),
]


@pytest.fixture(scope="module", params=sorted(ARCHS))
def arch(request):
    if request.param not in SELECTED:
        pytest.skip(f"{request.param}: not in COHORT_WHEEL_ARCHS ({' '.join(SELECTED)})")
    return request.param


@pytest.fixture(scope="module")
def wheel(arch):
    out = pathlib.Path(tempfile.mkdtemp(prefix=f"cohort-portable-{arch}-"))
    proc = subprocess.run([str(ROOT / "scripts" / "build-wheels.sh")], capture_output=True,
                          text=True, timeout=3000,
                          env=dict(os.environ, COHORT_WHEEL_ARCH=arch, PYTHONS="3.11", WHEEL_DIR=str(out)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    wheels = sorted(out.glob(f"cohort-*-cp311-*manylinux_2_28_{arch}.whl"))
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


def machine(path):
    out = subprocess.run(["readelf", "-h", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return re.search(r"^\s*Machine:\s*(.+?)\s*$", out, re.M).group(1)


def symbol_versions(path):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return set(re.findall(r"@+([A-Z_]+_[0-9][0-9.]*)", out))


def test_the_wheels_elf_files_need_only_the_c_runtime_of_glibc_2_28(arch, wheel, tmp_path):
    assert wheel.name.endswith(f"-cp311-cp311-manylinux_2_28_{arch}.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
        names = z.namelist()
        tags = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert f"Tag: cp311-cp311-manylinux_2_28_{arch}" in tags, tags
    # The extension is named for the wheel's architecture, not the building interpreter's.
    assert f"cohort/_cohort.cpython-311-{arch}-linux-gnu.so" in names, names
    assert "cohort/bin/cohort" in names, names
    elves = list(elf_files(tmp_path))
    assert len(elves) == 2, elves  # the extension and the binary; nothing grafted beside them
    allowed = ALLOWED_NEEDED | {ARCHS[arch]["loader"]}
    for elf in elves:
        assert machine(elf) == ARCHS[arch]["machine"], (elf.name, machine(elf))
        libs = needed(elf)
        assert libs <= allowed, (elf.name, sorted(libs - allowed))
        versions = symbol_versions(elf)
        foreign = {v for v in versions if not v.startswith("GLIBC_")}
        assert not foreign, (elf.name, sorted(foreign))  # no GLIBCXX_, CXXABI_, OPENSSL_ ...
        glibc = [tuple(int(x) for x in v[len("GLIBC_"):].split(".")[:2]) for v in versions]
        assert glibc and max(glibc) <= MAX_GLIBC, (elf.name, sorted(versions))


def ensure_emulation(arch):
    """Another architecture's programs run here through qemu-user: Debian's qemu-user-static
    and its binfmt_misc handler, registered (with the F flag, so that chroot does not hide the
    emulator) when it is not. Only the handler for `arch` is ever registered."""
    if arch == HOST_ARCH:
        return
    binfmt = pathlib.Path("/proc/sys/fs/binfmt_misc")
    conf = pathlib.Path(f"/usr/lib/binfmt.d/qemu-{arch}.conf")
    assert conf.exists(), f"{conf} is missing: install qemu-user-static (scripts/install-deps.sh)"
    if not (binfmt / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(binfmt)], check=True)
    entry = binfmt / f"qemu-{arch}"
    if not entry.exists():
        (binfmt / "register").write_text(conf.read_text().strip())
    state = entry.read_text()
    flags = re.search(r"^flags: *(\S*)$", state, re.M).group(1)
    assert state.startswith("enabled") and "F" in flags, (
        f"{entry} is registered without the F flag or disabled ({state!r}); unregister it "
        f"(echo -1 > {entry}) and let this test register Debian's line from {conf}")


def make_rootfs(dest, arch):
    """A minimal Debian 12 root file system with python3 and python3-venv only, cached as a tar."""
    cached = ROOTFS_DIR / ARCHS[arch]["rootfs"]
    if not cached.exists():
        assert shutil.which("debootstrap"), "debootstrap is missing (scripts/install-deps.sh)"
        staging = pathlib.Path(tempfile.mkdtemp(prefix="cohort-rootfs-"))
        try:
            subprocess.run(["debootstrap", f"--arch={ARCHS[arch]['deb']}", "--variant=minbase",
                            "--include=python3,python3-venv", "bookworm", str(staging),
                            "http://deb.debian.org/debian"],
                           check=True, capture_output=True, timeout=2400)
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".partial")
            subprocess.run(["tar", "-C", str(staging), "-cf", str(partial), "."], check=True)
            partial.rename(cached)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    dest.mkdir()
    subprocess.run(["tar", "-C", str(dest), "-xf", str(cached)], check=True)


def in_chroot(rootfs, script, env, timeout=300):
    """Runs `sh -c script` chrooted in rootfs, in a private mount namespace (its /proc and /dev
    mounts vanish with it), with only the given environment."""
    inner = (f"mount -t proc proc {rootfs}/proc && mount --rbind /dev {rootfs}/dev && "
             f"exec chroot {rootfs} /usr/bin/env -i "
             + " ".join(f"{k}={v}" for k, v in env.items()) + " /bin/sh -c " + shlex.quote(script))
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                          capture_output=True, text=True, timeout=timeout)


def processes_in(rootfs):
    """The processes whose root directory is rootfs (the job's agent, once the job has ended)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "root") == str(rootfs):
                    found.append(int(entry.name))
            except OSError:
                pass  # gone, or a kernel thread
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot and mounts need root")
@pytest.mark.timeout(3600)
def test_pip_installed_wheel_logs_a_run_in_a_root_file_system_without_build_tools(
        arch, wheel, tmp_path):
    ensure_emulation(arch)
    rootfs = tmp_path / "rootfs"
    make_rootfs(rootfs, arch)
    present = [t for t in BUILD_TOOLS if (rootfs / "usr/bin" / t).exists()]
    assert not present, f"the root file system has build tools: {present}"
    libdir = rootfs / "usr/lib" / ARCHS[arch]["multiarch"]
    assert (libdir / "libc.so.6").exists(), f"not an {arch} root file system: no {libdir}/libc.so.6"
    for pattern in ("libboost*", "libfmt*", "libcurl*"):
        assert not list(libdir.glob(pattern)), pattern
    assert not (rootfs / "usr/include/boost").exists()
    assert machine(rootfs / "usr/bin/python3.11") == ARCHS[arch]["machine"]
    shutil.copy(wheel, rootfs / "tmp" / wheel.name)
    (rootfs / "tmp" / "job.py").write_text(
        "import cohort, platform, sys\n"
        "print('machine', platform.machine())\n"
        "print('version', cohort.__version__, cohort.__file__)\n"
        "run = cohort.init(project='wheel', name='in-chroot', config={'lr': 0.1})\n"
        "for step in range(20):\n"
        "    run.log({'loss': 1.0 / (step + 1)})\n"
        "run.finish()\n"
        "print('run', run.id)\n")

    server = ServerProcess(tmp_path / "server-home").start()
    try:
        # The agent exits 3 s after its last client instead of 60 (src/agent/agent.h).
        env = {"HOME": "/root", "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": "/tmp/run",
               "COHORT_BASE_URL": server.url, "COHORT_API_KEY": server.config["api_key"],
               "COHORT_AGENT_IDLE_S": "3"}
        proc = in_chroot(rootfs, (
            "set -e; mkdir -p -m 700 /tmp/run; python3 -m venv /venv; "
            f"/venv/bin/pip install -q --no-index --no-deps /tmp/{wheel.name}; "
            "/venv/bin/python /tmp/job.py; "
            "cohort=$(/venv/bin/python -c 'import cohort, os; "
            "print(os.path.join(os.path.dirname(cohort.__file__), \"bin\", \"cohort\"))'); "
            "$cohort --version; "
            "if $cohort server --port 0 2>/tmp/server.err; then echo SERVER-STARTED; fi; "
            "cat /tmp/server.err"), env, timeout=300 if arch == HOST_ARCH else 1200)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-6000:]
        assert f"machine {arch}" in out, out  # the job's Python is the wheel's architecture
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
        # The wheel's agent ends by itself once idle: nothing is left running in the root.
        assert wait_for(lambda: not processes_in(rootfs), timeout=60), (
            f"still running in the root file system: {processes_in(rootfs)}")
    finally:
        for pid in processes_in(rootfs):  # only when the assertion above failed
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        server.stop()
