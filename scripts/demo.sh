#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main demo against the embedded stub.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m examples.demo "$@"
