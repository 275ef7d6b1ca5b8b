#!/usr/bin/env bash
# Installs every system package Cohort needs to build, run and test, idempotently.
# Usage: scripts/install-deps.sh [--with-browser] [--with-postgres]
# Runs apt-get only for packages that are missing. Needs root (or sudo).
# nginx: tests/postgres/test_nginx_deployment.py runs deploy/nginx/cohort.conf with it (its own
# instance on loopback); the package's service is not needed. openssl: that test's certificate.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev sqlite3 libpq-dev libzstd-dev libcurl4-openssl-dev libssl-dev
  libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-format clang-tidy clang-14 libclang-rt-14-dev
  python3 python3-venv python3-dev python3-torch
  # torch's BLAS: Debian's reference BLAS makes the corpus trainings (bench/corpus) ~20x slower
  libopenblas0-serial zstd
  postgresql nodejs npm chromium
  nginx openssl
  # tests/packaging/test_portable_wheel.py: a minimal Debian root file system without build tools;
  # qemu-user-static runs the aarch64 one (COHORT_WHEEL_ARCHS=aarch64; the test registers the
  # aarch64 binfmt_misc handler from /usr/lib/binfmt.d/qemu-aarch64.conf when it is missing)
  debootstrap qemu-user-static
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# nodejs/npm may come from elsewhere (e.g. nodesource); accept any working node >= 18.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}")
  missing=("${missing[@]/npm}")
fi
clean=()
for p in "${missing[@]}"; do [ -n "$p" ] && clean+=("$p"); done

if [ ${#clean[@]} -gt 0 ]; then
  echo "install-deps: installing ${clean[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${clean[@]}"
else
  echo "install-deps: all system packages present"
fi

# SeaweedFS `weed`, the S3-compatible server the S3 blob-store tests start (built once into
# ~/.cache/cohort/weed; docs/operations.md, "SeaweedFS for tests"). Without it those tests skip
# and say why; COHORT_SKIP_WEED=1 skips the build here.
if [ -z "${COHORT_SKIP_WEED:-}" ]; then
  if weed="$("$(dirname "$0")/build-weed.sh")"; then
    echo "install-deps: SeaweedFS weed at $weed"
  else
    echo "install-deps: could not build SeaweedFS weed (see above); the S3 tests will skip" >&2
  fi
fi
