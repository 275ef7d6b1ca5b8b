#!/usr/bin/env bash
# Prepares `.gpu/`, what a device machine needs to run this tree's GPU checks (docs/benchmarks.md,
# "On a GPU"): the device has its own Python (3.12) with CUDA torch and no package registry, so
# the bundle carries the cp312-abi3 extension and node binary of scripts/build-wheels.sh (placed
# as a build tree: COHORT_BUILD_DIR=.gpu/build), this machine's `cohort` server with the shared
# libraries it links (.gpu/srv.tar.xz, which bench/gpu_device_run.sh unpacks into /tmp/srv; the
# wrapper .gpu/build/src/cli/cohort runs it with the loader pointed at /tmp/srv/lib), and the
# vendor SDK's wheels for the side-by-side figures. About 46 MB (the device takes 64 MiB with
# the working tree); 35 s here with the wheel cache warm.
# Then, on the device machine (the repository root; `.gpu` carried):
#   bash bench/gpu_device_run.sh
# Usage: bench/gpu_bundle.sh        (BUILD_DIR: the server's build, default build/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="$root/.gpu"
exclude="$(git -C "$root" rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
rm -rf "$out" && mkdir -p "$out/build/python/cohort" "$out/build/src/cli" "$out/whl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "gpu_bundle: the cp312-abi3 wheel (scripts/build-wheels.sh)"
PYTHONS=3.12 WHEEL_DIR="$tmp/wheel" "$root/scripts/build-wheels.sh" > "$tmp/wheel.log" 2>&1 ||
  { tail -20 "$tmp/wheel.log"; exit 1; }
(cd "$tmp" && unzip -q wheel/cohort-*-cp312-abi3-*.whl 'cohort/_cohort*' 'cohort/bin/*')
cp "$tmp"/cohort/_cohort* "$out/build/python/cohort/"
cp -r "$tmp/cohort/bin" "$out/build/python/cohort/"
echo "gpu_bundle: the server and its libraries"
mkdir -p "$tmp/srv/lib"
strip -o "$tmp/srv/cohort" "$build/src/cli/cohort"
for lib in $(ldd "$build/src/cli/cohort" | awk '/=>/ {print $3}'); do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libresolv.so.*) ;;  # the device's own
    *) cp -L "$lib" "$tmp/srv/lib/" ;;
  esac
done
tar -C "$tmp/srv" -cJf "$out/srv.tar.xz" cohort lib
cat > "$out/build/src/cli/cohort" <<'WRAP'
#!/bin/sh
# The server binary of the bundle with the shared libraries it was linked against.
LD_LIBRARY_PATH=/tmp/srv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec /tmp/srv/cohort "$@"
WRAP
chmod +x "$out/build/src/cli/cohort"
echo "gpu_bundle: the vendor SDK's wheels (those the device image lacks)"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$out/whl" \
  wandb==0.31.0 cwevals==0.0.1b1 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \
  opentelemetry-exporter-otlp-proto-http==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2 \
  opentelemetry-proto==1.45.2 opentelemetry-semantic-conventions==0.66b2 \
  opentelemetry-exporter-http-transport==0.66b2 opentelemetry-exporter-otlp-common==0.66b2 \
  googleapis-common-protos==1.76.0 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
  typing-inspection==0.4.5 platformdirs==4.14.9 distro==1.8.0 sniffio==1.3.1
du -sh "$out"
echo "gpu_bundle: ready; carry .gpu and run: bash bench/gpu_device_run.sh"
