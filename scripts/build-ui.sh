#!/usr/bin/env bash
# Builds the web UI (ui/) into ui/dist, which `cohort server` serves. Idempotent: `npm ci` runs
# only when ui/node_modules is missing or ui/package-lock.json changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ui="$root/ui"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "build-ui: node and npm are needed to build the web UI (Node >= 20.19)." >&2
  echo "build-ui: on Debian: apt-get install nodejs npm  (or run scripts/install-deps.sh)" >&2
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "build-ui: Node $(node --version) is too old; the UI's build (Vite 7) needs Node >= 20.19." >&2
  exit 1
fi
cd "$ui"
stamp="node_modules/.cohort-lock-stamp"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -d node_modules ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "== web UI: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
echo "== web UI: vite build -> ui/dist"
npx --no-install vite build --logLevel warn
echo "web UI built: $ui/dist"
