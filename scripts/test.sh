#!/usr/bin/env bash
# Sets everything up on a fresh machine, then runs the quality gates and the test suite:
# ruff, mypy --strict, and pytest (warnings are errors).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
