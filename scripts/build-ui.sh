#!/usr/bin/env bash
# Builds the web UI (ui/) into ui/dist, which `cohort server` serves. Idempotent: `npm ci` runs
# only when ui/node_modules is missing or ui/package-lock.json changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ui="$root/ui"
# The toolchain in ui/package-lock.json (Vite 6, Vitest 3, playwright-core 1.61) supports Node 18,
# so an up-to-date Debian 12's own `apt-get install nodejs npm` (Node 18.19+, npm 9) is enough.
# Checked with Debian 12's nodejs 18.20.4 + npm 9.2 and with Node 20.
min_node="18.19"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "build-ui: node and npm are needed to build the web UI (Node >= $min_node)." >&2
  echo "build-ui: on Debian: apt-get install nodejs npm  (or run scripts/install-deps.sh)" >&2
  exit 1
fi
node_version="$(node -p 'process.versions.node')"
IFS=. read -r node_major node_minor _ <<<"$node_version"
if [ "$node_major" -lt 18 ] || { [ "$node_major" -eq 18 ] && [ "$node_minor" -lt 19 ]; }; then
  echo "build-ui: Node v$node_version is too old; the web UI's build and tests (Vite 6, Vitest 3) need Node >= $min_node." >&2
  echo "build-ui: Debian 12's current nodejs package (apt-get update && apt-get install nodejs npm) is enough; so is Node 20 or 22." >&2
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
