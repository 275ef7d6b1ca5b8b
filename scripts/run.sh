#!/usr/bin/env bash
# Quick start command (1): installs what is missing, builds, and starts the server with its web
# UI on the embedded SQLite store. Prints the URL first. Ctrl-C stops it.
# Options: PORT (default 8787), DATA_DIR (default ~/.local/share/cohort/server).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/install-deps.sh >&2
scripts/setup-venv.sh >&2
scripts/build.sh >&2
build="${BUILD_DIR:-$root/build}"
args=(server --port "${PORT:-8787}")
[ -n "${DATA_DIR:-}" ] && args+=(--data-dir "$DATA_DIR")
exec "$build/src/cli/cohort" "${args[@]}"
