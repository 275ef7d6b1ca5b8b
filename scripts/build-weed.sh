#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (the S3-compatible server the S3 blob-store tests start) into a cache
# directory outside the repository, once per machine, and prints the binary's path.
# Usage: scripts/build-weed.sh        (a no-op when the binary exists)
# Env: COHORT_CACHE_DIR (default ~/.cache/cohort), GO (default: go on PATH, else /usr/local/go/bin/go).
# Cold: about 6-7 minutes and 2 GB of Go modules (kept under the cache dir for the next build).
# See docs/operations.md "Object storage (S3-compatible)".
set -euo pipefail

WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
CACHE="${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/weed"
BIN="$CACHE/weed"

if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi

GO="${GO:-$(command -v go || true)}"
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
if [ -z "$GO" ]; then
  echo "build-weed: no Go toolchain (go on PATH or /usr/local/go/bin/go); the S3 tests will skip" >&2
  exit 1
fi

mkdir -p "$CACHE"
export GOPATH="$CACHE/gopath" GOCACHE="$CACHE/gocache" GOFLAGS=-modcacherw
echo "build-weed: building SeaweedFS weed $WEED_VERSION into $CACHE (several minutes cold)" >&2
"$GO" mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" >/dev/null
SRC="$CACHE/src-$WEED_VERSION"
if [ ! -f "$SRC/go.mod" ]; then
  rm -rf "$SRC.tmp"
  cp -r "$GOPATH/pkg/mod/github.com/seaweedfs/seaweedfs@$WEED_VERSION" "$SRC.tmp"
  chmod -R u+w "$SRC.tmp"
  mv "$SRC.tmp" "$SRC"
fi
(cd "$SRC" && "$GO" build -o "$BIN.tmp" ./weed)
mv "$BIN.tmp" "$BIN"
echo "build-weed: built $BIN" >&2
echo "$BIN"
