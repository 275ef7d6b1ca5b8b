#!/usr/bin/env bash
# Web UI tests: type check and unit tests (vitest) of ui/, then the browser tests (node --test
# tests/ui/*.test.mjs: a real `cohort server` on port 0, seeded by the Python SDK (one process per
# rank, the node agent, fake NVML GPUs: tests/ui/seed_sdk.py), driven through Debian's Chromium
# by playwright-core). Screenshots land in artifacts/ui/. Exits non-zero on any failure. Needs the
# server binary: $COHORT_BIN, or $BUILD_DIR (default build/) from scripts/build.sh, or build-ui/;
# the SDK extension and tests/fake_nvml from the same build tree ($COHORT_BUILD_DIR overrides).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build-ui.sh"
cd "$root/ui"
echo "== web UI: type check"
npx --no-install tsc --noEmit -p .
echo "== web UI: unit tests (vitest)"
npx --no-install vitest run --reporter=dot
cd "$root"
if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
  echo "test-ui: Chromium is missing (apt-get install chromium); browser tests cannot run" >&2
  exit 1
fi
mkdir -p "$root/artifacts/ui"
echo "== web UI: browser tests (playwright-core + Chromium)"
node --test --test-concurrency=1 tests/ui/*.test.mjs
