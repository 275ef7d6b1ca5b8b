"""The C++ client as another project uses it (issue 20, docs/cpp.md "Using the library from
another project").

`cmake --install` of the build under test (COHORT_BUILD_DIR) into a temporary prefix, then a small
program (consumer/app.cc: init, log five steps, summary, finish) built three ways:

- CMake, find_package(Cohort CONFIG REQUIRED) + Cohort::client (and Cohort::client_static);
- pkg-config: c++ -std=c++20 app.cc $(pkg-config --cflags --libs cohort);
- CMake, FetchContent of this source tree (as a subproject only the client is built).

Each program runs against a real `cohort server` and a shared `cohort agent` that the test starts
(COHORT_BIN points nowhere, so the program cannot fall back to a private agent of its own), and
the test reads the logged values back through the server's HTTP API. The installed tree is also
checked: headers that include only standard headers, a shared library that needs no Boost or
fmt, no test, benchmark or fuzzer installed.
"""
import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

from conftest import BUILD, COHORT_BIN, ServerProcess, project_version, wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONSUMER = pathlib.Path(__file__).resolve().parent / "consumer"
PROJECT = "pkgtest"



def sanitized_build():
    """A build of scripts/test-sanitizers.sh: its library needs the sanitizer runtime in the
    program, which a plain consumer build does not link."""
    cache = BUILD / "CMakeCache.txt"
    m = re.search(r"^COHORT_SANITIZE:STRING=(.*)$", cache.read_text(), re.M) \
        if cache.exists() else None
    return bool(m and m.group(1).strip())


pytestmark = [
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None,
                       reason="needs cmake and ninja"),
    pytest.mark.skipif(sanitized_build(), reason="a sanitizer build (COHORT_SANITIZE)"),
]


def build_env():
    """The environment of the builds the test runs: the shared compiler cache, with paths made
    relative (CCACHE_BASEDIR=/) so that the same sources in another temporary directory of the
    same depth hit the cache."""
    env = dict(os.environ)
    env.setdefault("CCACHE_DIR", str(pathlib.Path.home() / ".cache" / "ccache"))
    env.update(CCACHE_BASEDIR="/", CCACHE_NOHASHDIR="1")
    for k in ("CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "CXXFLAGS", "LDFLAGS"):
        env.pop(k, None)
    return env


def run(cmd, timeout=600, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=kw.pop("env", build_env()), **kw)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """The build under test, installed into a fresh prefix (the packaged libraries are built
    first if this build directory has not built them yet)."""
    assert (BUILD / "build.ninja").exists() or (BUILD / "Makefile").exists(), \
        f"build the project first (scripts/build.sh): {BUILD}"
    run(["cmake", "--build", BUILD, "-j1", "--target", "cohort_client_shared",
         "cohort_client_static", "cohort"], timeout=1200)
    p = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", BUILD, "--prefix", p])
    return p


def libdir(prefix):
    found = sorted(prefix.glob("lib*/**/libcohort_client.so"))
    assert found, sorted(str(f.relative_to(prefix)) for f in prefix.rglob("*"))
    return found[0].parent


# -- the installed tree -------------------------------------------------------------------------

def test_install_tree_holds_the_client_package_and_nothing_of_the_tests(prefix):
    files = sorted(str(f.relative_to(prefix)) for f in prefix.rglob("*") if not f.is_dir())
    lib = libdir(prefix).relative_to(prefix)
    version = project_version()
    major, minor = version.split(".")[:2]
    expected = {
        "bin/cohort", "include/cohort/cohort.h", "include/cohort/status.h",
        "include/cohort/histogram.h",
        f"{lib}/libcohort_client.a", f"{lib}/libcohort_client.so",
        f"{lib}/libcohort_client.so.{version}", f"{lib}/pkgconfig/cohort.pc",
        f"{lib}/cmake/Cohort/CohortConfig.cmake", f"{lib}/cmake/Cohort/CohortConfigVersion.cmake",
        f"{lib}/cmake/Cohort/CohortTargets.cmake",
        f"{lib}/cmake/Cohort/CohortStaticTargets.cmake",
    }
    assert expected <= set(files), sorted(expected - set(files))
    for f in files:
        name = pathlib.PurePath(f).name
        assert not re.search(r"test|bench|fuzz|_cohort", name), f"installed: {f}"
    # The SONAME carries the ABI version (0.x: major.minor), the file the full version.
    out = run(["readelf", "-d", prefix / lib / "libcohort_client.so"]).stdout
    soversion = f"{major}.{minor}" if major == "0" else major
    assert f"Library soname: [libcohort_client.so.{soversion}]" in out, out
    out = run([prefix / "bin" / "cohort", "--version"]).stdout
    assert version in out


def test_installed_headers_include_only_standard_and_cohort_headers(prefix):
    includes = []
    for h in (prefix / "include").rglob("*"):
        if h.is_file():
            includes += [(h.name, m) for m in
                         re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', h.read_text(), re.M)]
    assert includes
    third_party = [(h, i) for h, i in includes
                   if re.match(r"(boost|fmt|openssl|nlohmann|CLI|curl|sqlite|gtest)", i)]
    assert not third_party, third_party
    # Everything is either <cohort/...> or a standard header (no directory, no .h suffix).
    others = [(h, i) for h, i in includes if not i.startswith("cohort/") and ("/" in i or "." in i)]
    assert not others, others


def test_shared_library_needs_no_boost_or_fmt_and_exports_only_the_api(prefix):
    so = libdir(prefix) / "libcohort_client.so"
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        run(["readelf", "-d", so]).stdout)
    assert needed, "no NEEDED entries read"
    assert not [n for n in needed if n.startswith(("libboost", "libfmt"))], needed
    exported = run(["nm", "-DC", "--defined-only", so]).stdout.splitlines()
    names = [line.split(" ", 2)[2] for line in exported if line.count(" ") >= 2]
    assert any(n.startswith("cohort::Init(") for n in names), names
    leaked = [n for n in names if not n.startswith(("cohort::Init(", "cohort::Setup(",
                                                    "cohort::StatusCodeName(", "cohort::Status::",
                                                    "cohort::Run::"))
              or n.startswith("cohort::Run::Impl::")]
    assert not leaked, leaked[:20]


# -- the three ways of building a program against it ------------------------------------------

@pytest.fixture(scope="module")
def server_and_agent(tmp_path_factory):
    """`cohort server` and a shared `cohort agent` (a Unix socket in the server's HOME)."""
    home = tmp_path_factory.mktemp("home")
    server = ServerProcess(home).start()
    socket = home / "run" / "cohort-test-agent.sock"
    agent = subprocess.Popen(
        [str(COHORT_BIN), "agent", "--socket", str(socket), "--data-dir", str(home / "agent"),
         "--idle-exit", "600"],
        env=server.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: socket.exists() or agent.poll() is not None, timeout=20)
        assert agent.poll() is None, agent.stderr.read()
        yield server, socket, agent
    finally:
        agent.terminate()
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
        server.stop()


def run_app(app, server_and_agent, name, extra_env=None):
    """Runs a consumer program through the test's agent and checks what the server holds."""
    server, socket, agent = server_and_agent
    env = {k: v for k, v in server.env.items()
           if not k.startswith("COHORT_") and k not in ("RANK", "TORCHELASTIC_RUN_ID")}
    env.update(COHORT_PROJECT=PROJECT, COHORT_AGENT_SOCKET=str(socket),
               COHORT_BIN="/nonexistent/cohort")  # the test's agent or nothing
    env.update(extra_env or {})
    proc = subprocess.run([str(app), name], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_id = re.search(r"^run (\S+)$", proc.stdout, re.M).group(1)
    assert agent.poll() is None, "the agent exited"

    api = server.api()
    _, me = api.get("/api/v1/viewer")
    base = f"/api/v1/runs/{me['entity']}/{PROJECT}/{run_id}"

    def finished():
        status, body = api.get(base)
        return body if status == 200 and body.get("state") == "finished" else None

    info = wait_for(finished, timeout=30)
    assert info, api.get(base)
    assert info["name"] == name
    assert info["config"]["how"] == name
    assert info["summary"]["best"] == 42.5
    assert info["metadata"]["sdk"] == "cohort-cpp/" + project_version()

    def history():
        status, body = api.get(base + "/history?keys=loss,acc")
        if status != 200:
            return None
        series = {s["key"]: [(p[0], p[2]) for p in s["points"]] for s in body["series"]}
        return series if all(len(series.get(k, [])) == 5 for k in ("loss", "acc")) else None

    series = wait_for(history, timeout=30)
    assert series, api.get(base + "/history?keys=loss,acc")
    assert series["loss"] == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    assert series["acc"] == [(s, pytest.approx(0.1 * s)) for s in range(5)]
    return run_id


def cmake_consumer(build_dir, *defines, timeout=600):
    run(["cmake", "-S", CONSUMER, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         *defines])
    run(["cmake", "--build", build_dir, "-j1"], timeout=timeout)
    return build_dir / "app"


def needed(binary):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                      run(["readelf", "-d", binary]).stdout)


def test_find_package_cohort_client(prefix, server_and_agent, tmp_path):
    app = cmake_consumer(tmp_path / "b", f"-DCMAKE_PREFIX_PATH={prefix}")
    assert any(n.startswith("libcohort_client.so.") for n in needed(app)), needed(app)
    run_app(app, server_and_agent, "find-package")


def test_find_package_cohort_client_static(prefix, server_and_agent, tmp_path):
    app = cmake_consumer(tmp_path / "b", f"-DCMAKE_PREFIX_PATH={prefix}", "-DCOHORT_VIA=static")
    assert not any(n.startswith("libcohort_client") for n in needed(app)), needed(app)
    run_app(app, server_and_agent, "find-package-static")


def test_pkg_config(prefix, server_and_agent, tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("needs pkg-config")
    env = dict(build_env(), PKG_CONFIG_PATH=str(libdir(prefix) / "pkgconfig"))
    assert run(["pkg-config", "--modversion", "cohort"], env=env).stdout.strip() == \
        project_version()
    flags = run(["pkg-config", "--cflags", "--libs", "cohort"], env=env).stdout.split()
    app = tmp_path / "app"
    cxx = os.environ.get("CXX", "c++")
    # The one thing pkg-config does not say: where the shared library is at run time.
    run([cxx, "-std=c++20", "-o", app, CONSUMER / "app.cc", *flags], env=env)
    run_app(app, server_and_agent, "pkg-config",
            extra_env={"LD_LIBRARY_PATH": str(libdir(prefix))})


@pytest.mark.timeout(900)
def test_fetchcontent_builds_only_the_client(server_and_agent, tmp_path):
    build_dir = tmp_path / "b"
    start = time.monotonic()
    app = cmake_consumer(build_dir, "-DCOHORT_VIA=fetchcontent", f"-DCOHORT_SOURCE_DIR={ROOT}",
                         timeout=900)
    took = time.monotonic() - start
    # Only what the program links was built: the client's objects, no server, CLI or tests.
    sub = build_dir / "_deps" / "cohort-build"
    built = {p.name for p in sub.rglob("*") if p.is_file() and os.access(p, os.X_OK)}
    assert any(n.startswith("libcohort_client.so") for n in built), built
    for absent in ("cohort", "client_test", "core_test", "cohort_example_cpp", "series_bench"):
        assert absent not in built, (absent, sorted(built))
    assert not (sub / "tests").exists()
    assert not list(sub.rglob("_cohort*.so"))
    cache = (build_dir / "CMakeCache.txt").read_text()
    for option in ("COHORT_BUILD_TESTS", "COHORT_BUILD_BENCH", "COHORT_BUILD_PYTHON",
                   "COHORT_INSTALL"):
        assert re.search(rf"^{option}:BOOL=OFF$", cache, re.M), option
    run_app(app, server_and_agent, "fetchcontent")
    print(f"FetchContent configure + build: {took:.0f} s")
