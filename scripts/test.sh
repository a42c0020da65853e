#!/usr/bin/env bash
# Sets everything up on a fresh machine, then runs the quality gates and the test suite:
# ruff, mypy --strict, the client's end-to-end tests against Azurite (an independent peer;
# needs Node.js and npm, skipped with a notice without them or with AZT_SKIP_AZURITE=1),
# and the whole pytest suite (warnings are errors), which also builds the docs strictly.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
if [ "${AZT_SKIP_AZURITE:-0}" != "1" ] && command -v node >/dev/null && command -v npm >/dev/null; then
  bash scripts/test-azurite.sh -p no:cacheprovider
else
  echo "note: skipping the Azurite leg (needs node and npm; AZT_SKIP_AZURITE=${AZT_SKIP_AZURITE:-0})" >&2
fi
exec .venv/bin/python -m pytest "$@"
