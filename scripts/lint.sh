#!/usr/bin/env bash
# Runs clang-format (check, or --fix to rewrite) and clang-tidy over the C++ sources.
# Usage: scripts/lint.sh [--fix] [--no-tidy]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
fix=0; tidy=1
for a in "$@"; do
  case "$a" in --fix) fix=1 ;; --no-tidy) tidy=0 ;; esac
done
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'include/*.h' 'bench/*.cc' 'examples/*.cc' 'python/*.cc')
if [ $fix -eq 1 ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi
if [ $tidy -eq 1 ]; then
  build="${BUILD_DIR:-$root/build}"
  [ -f "$build/compile_commands.json" ] || scripts/build.sh
  mapfile -t ccs < <(printf '%s\n' "${files[@]}" | grep '\.cc$' | grep -v '_test\.cc$')
  clang-tidy -p "$build" --quiet "${ccs[@]}"
fi
