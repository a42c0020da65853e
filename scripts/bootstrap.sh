#!/usr/bin/env bash
# Creates .venv (if needed) and installs azt with its development dependencies.
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.azt-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # This machine's pip config names local mirrors that may be absent; pip warns
  # about each one. Keep real errors, drop that noise.
  pipq() {
    local rc=0
    .venv/bin/python -m pip install --quiet "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }
    rc=${PIPESTATUS[0]}
    return "$rc"
  }
  pipq --upgrade pip
  # The distribution was named "azt" before it became "azt-tables" (the PyPI name "azt" is
  # another project's): drop the old editable install, whose commands the new one replaces.
  if .venv/bin/python -m pip show --quiet azt >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --yes azt
  fi
  pipq -e '.[dev]'
  touch "$stamp"
fi
