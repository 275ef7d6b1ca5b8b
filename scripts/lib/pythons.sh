# Sourced by scripts/build-wheels.sh and scripts/test-wheels.sh: where CPython 3.N is.
# find_python 3.N -> $COHORT_PY3N when set, else pyenv's newest 3.N.* ($PYENV_ROOT, default
# ~/.pyenv), else python3.N on PATH; prints nothing when there is none.
find_python() {
  local v="$1" var="COHORT_PY${1/./}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  local pyenv="${PYENV_ROOT:-$HOME/.pyenv}" best=""
  for d in "$pyenv"/versions/"$v".*; do
    [ -x "$d/bin/python" ] && best="$d/bin/python"
  done
  if [ -n "$best" ]; then echo "$best"; return; fi
  command -v "python$v" || true
}
