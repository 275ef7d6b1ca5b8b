#!/usr/bin/env bash
# The GPU checks and figures of docs/benchmarks.md ("On a GPU"), run on a device machine from the
# repository root with `.gpu` (bench/gpu_bundle.sh) carried; results under $OUT (or /tmp/gpu-out).
# About 6 minutes on an H100; each step has its own time limit.
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/gpu-out}"
mkdir -p "$out"
t0=$(date +%s)
el() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
mkdir -p /tmp/srv && tar -C /tmp/srv -xJf .gpu/srv.tar.xz
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 COHORT_BUILD_DIR=$PWD/.gpu/build
el setup; nproc; uptime; nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
el pytest
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_histogram.py \
  tests/python/test_watch_hooks.py > "$out/pytest.log" 2>&1; echo "pytest rc=$?"; tail -3 "$out/pytest.log"
el gpu_check
timeout 150 python3 bench/gpu_check.py > "$out/gpu_check.json" 2> "$out/gpu_check.err"
echo "gpu_check rc=$?"; head -c 2500 "$out/gpu_check.json"
el histogram_bench
DEVICE=cuda LOG_ONLY=1 timeout 120 python3 bench/histogram_bench.py > "$out/hist.json" 2> "$out/hist.err"
echo "hist rc=$?"; cat "$out/hist.json"
for batch in 4096 16; do
  el "watch_bench batch $batch"
  timeout 150 python3 bench/watch_bench.py --device cuda --rounds 2 --steps 400 --batch $batch \
    > "$out/watch$batch.json" 2> "$out/watch$batch.err"; echo "rc=$?"
  grep -A8 '"watch_added"' "$out/watch$batch.json"; grep "round" "$out/watch$batch.err"
done
el end; uptime
