#!/usr/bin/env bash
# Creates .venv (seeing Debian's torch through --system-site-packages) and installs the Python
# packages the tests need. Idempotent: reinstalls only when the requirements change.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
req="$root/python/requirements-dev.txt"
nodeps="$root/python/requirements-nodeps.txt"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup-venv: creating $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
stamp="$venv/.requirements.sha256"
want="$(cat "$req" "$nodeps" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup-venv: installing $(grep -vc '^#' "$req") packages"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$req"
  "$venv/bin/python" -m pip install -q --no-deps -r "$nodeps"
  echo "$want" > "$stamp"
fi
# The SDK from this checkout, importable by the venv's Python (`import cohort`): the package is
# python/ and it finds its extension and the `cohort` binary in build/ (cohort/_native.py).
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
pth="$site/cohort-checkout.pth"
if [ ! -f "$pth" ] || [ "$(cat "$pth")" != "$root/python" ]; then
  echo "$root/python" > "$pth"
fi
