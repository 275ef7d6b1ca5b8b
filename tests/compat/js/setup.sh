#!/usr/bin/env bash
# Installs the vendor's JavaScript SDK (@wandb/sdk and its graphql peer) for the compatibility
# tests, exactly as pinned by the committed package-lock.json. Idempotent: does nothing when
# node_modules already matches the lock file. Called by tests/compat (the js_sdk fixture).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v node >/dev/null 2>&1 || { echo "setup.sh: node is not installed (apt-get install nodejs)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "setup.sh: npm is not installed (apt-get install npm)" >&2; exit 1; }
stamp="$here/node_modules/.cohort-lock.sha256"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$here/node_modules/@wandb/sdk" ]; then
  exit 0
fi
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
