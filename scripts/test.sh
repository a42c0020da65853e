#!/usr/bin/env bash
# Sets everything up on a fresh machine, then runs the quality gates and the test suite:
# ruff, mypy --strict, the client's end-to-end tests against Azurite (an independent peer;
# needs Node.js and npm, skipped with a notice without them or with AZT_SKIP_AZURITE=1),
# two legacy Python Table SDKs (JSON and AtomPub) driving the stub from their own venv in
# .cache/ (AZT_SKIP_LEGACY_PEERS=1 skips them), the dependency floor (scripts/test-dependency-
# floor.sh: the oldest version of each dependency pyproject.toml declares, in a venv in
# .cache/, running the stub's front end, the client transport and the codecs there; under a
# minute once the venv is built; AZT_SKIP_DEPENDENCY_FLOOR=1 skips it), and the whole pytest
# suite (warnings are errors), which also builds the docs strictly and checks the package as a user installs it
# (tests/packaging: builds the wheel, installs it with [testing] into a fresh venv outside
# the repository, runs the getting-started programs, a user project's tests with the
# fixtures and mypy --strict there; about 40 s; AZT_SKIP_PACKAGING=1 skips it, except in CI).
# tests/stub runs a second time on uvloop (azt-stub's loop when it is installed; AZT_SKIP_UVLOOP=1
# skips it). The data explorer's browser tests (tests/explorer) need headless Chromium:
# scripts/ensure-browser.sh installs Debian's chromium and chromium-driver when missing and
# apt-get is usable, else prints a notice (the tests then skip with that reason; under
# CI=true they fail).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/ensure-browser.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
if [ "${AZT_SKIP_AZURITE:-0}" != "1" ] && command -v node >/dev/null && command -v npm >/dev/null; then
  bash scripts/test-azurite.sh -p no:cacheprovider
else
  echo "note: skipping the Azurite leg (needs node and npm; AZT_SKIP_AZURITE=${AZT_SKIP_AZURITE:-0})" >&2
fi
# The legacy venv is exported: tests/client/test_legacy_encryption.py drives the real SDK in it.
export LEGACY_VENV="${LEGACY_VENV:-$PWD/.cache/legacy-venv}"
if [ "${AZT_SKIP_LEGACY_PEERS:-0}" != "1" ]; then
  LEGACY_BASE_PYTHON="${LEGACY_BASE_PYTHON:-python3}" \
    bash scripts/test-legacy-peer.sh
else
  echo "note: skipping the legacy-peer checks (AZT_SKIP_LEGACY_PEERS=1)" >&2
fi
if [ "${AZT_SKIP_DEPENDENCY_FLOOR:-0}" != "1" ]; then
  bash scripts/test-dependency-floor.sh
else
  echo "note: skipping the dependency-floor leg (AZT_SKIP_DEPENDENCY_FLOOR=1)" >&2
fi
# The uvloop leg: azt-stub runs on uvloop when it is installed (the [stub] extra, in the
# dev extra), so the stub's own tests run on it too (about 2.5 minutes); AZT_SKIP_UVLOOP=1
# skips it. Its answers must be the same on both loops.
# Under CI it is never skipped for want of uvloop (the dev extra installs it).
if [ "${AZT_SKIP_UVLOOP:-0}" != "1" ] && { [ -n "${CI:-}" ] || .venv/bin/python -c "import uvloop" 2>/dev/null; }; then
  AZT_TEST_LOOP=uvloop .venv/bin/python -m pytest tests/stub -q -p no:cacheprovider
else
  echo "note: skipping the uvloop leg (uvloop not installed, or AZT_SKIP_UVLOOP=1)" >&2
fi
exec .venv/bin/python -m pytest "$@"
