#!/usr/bin/env bash
# Quick start command (1): installs what is missing, builds, starts the server with its web UI on
# the embedded SQLite store (its URL is the first line printed), then runs the bundled
# distributed example (4 torch.distributed ranks sharing one run, examples/ddp_shared.py) against
# it in the background. Ctrl-C stops the server.
# Options (environment): PORT (default 8787), DATA_DIR (default ~/.local/share/cohort/server),
# EXAMPLE=0 to skip the example (300 steps on 4 ranks, about a minute and a half: loss, system
# metrics every 2 s, gradient and parameter histograms every 20 steps, the first layer's weights
# as an image after each epoch).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
COHORT_SKIP_WEED=1 scripts/install-deps.sh >&2  # weed is for the S3 tests only
scripts/setup-venv.sh >&2
# Only what this command runs: the `cohort` binary (server and agent), the Python extension
# and the web UI; scripts/test.sh builds the tests, benchmarks and fuzzers.
BUILD_TARGETS="cohort _cohort" scripts/build.sh >&2
echo "run.sh: the Python SDK is installed in $root/.venv; run training scripts with" >&2
echo "  $root/.venv/bin/python train.py   (or: source $root/.venv/bin/activate)" >&2
build="${BUILD_DIR:-$root/build}"
args=(server --port "${PORT:-8787}")
[ -n "${DATA_DIR:-}" ] && args+=(--data-dir "$DATA_DIR")

out="$(mktemp)"
"$build/src/cli/cohort" "${args[@]}" > >(tee "$out") &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$out"' EXIT INT TERM
for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
if ! kill -0 $server 2>/dev/null; then
  echo "run.sh: the server did not start (see above)" >&2
  exit 1
fi

if [ "${EXAMPLE:-1}" != "0" ]; then
  log="$root/artifacts/example-ddp-shared.log"
  mkdir -p "$(dirname "$log")"
  echo "run.sh: running examples/ddp_shared.py on 4 ranks in project 'demo' (log: $log)" >&2
  (PYTHONPATH="$root/python" COHORT_BUILD_DIR="$build" COHORT_PROJECT=demo \
     "$root/.venv/bin/python" examples/launch.py --nproc 4 examples/ddp_shared.py --project demo \
     --epochs 6 --batches 50 --step-time 0.2 --stats-interval 2 --watch-freq 20 --log-images \
     > "$log" 2>&1 && echo "run.sh: example finished; open the UI link above, project 'demo'" >&2 \
     || echo "run.sh: the example failed; see $log" >&2) &
fi
wait $server
