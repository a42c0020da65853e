#!/usr/bin/env bash
# Drive the stub with two legacy, independent Table clients from PyPI (scripts/test.sh runs it):
#
#   scripts/test-legacy-peer.sh [json|atom|dropin]   (default: all three)
#
# * azure-cosmosdb-table 1.0.6 (JSON, DataServiceVersion 3.0;NetFx, Int64 for Python ints,
#   bare-LF batches with absolute-path targets): tests/peers/legacy_cosmosdb_table_check.py
# * azure-storage 0.20.3, the last Python SDK that spoke AtomPub to tables (x-ms-version
#   2014-02-14, batches with absolute URLs): tests/peers/legacy_atom_table_check.py
# * the azt.legacy drop-in: tests/peers/legacy_dropin/run.py runs each script written for
#   azure-cosmosdb-table twice against one stub (the real SDK; the import swapped to
#   azt.legacy) and compares their transcripts.
#
# Both SDKs live in a throwaway virtualenv ($LEGACY_VENV, default /tmp/legacy-venv; created when
# missing), never in the project's .venv: their dependencies (azure-nspkg, cryptography,
# requests, ...) must not leak into it. Each check starts the stub itself with the project's
# interpreter ($AZT_STUB_PYTHON, default .venv/bin/python) and stops it again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${LEGACY_VENV:-/tmp/legacy-venv}"
BASE_PYTHON="${LEGACY_BASE_PYTHON:-python3.11}"
export AZT_STUB_PYTHON="${AZT_STUB_PYTHON:-$ROOT/.venv/bin/python}"
# Pinned: a re-release must not change what "the legacy peers pass" means without a commit.
PACKAGES=("azure-cosmosdb-table==1.0.6" "azure-storage==0.20.3")

ready() {
  [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as md
assert md.version("azure-cosmosdb-table") == "1.0.6"
assert md.version("azure-storage") == "0.20.3"
import azure.cosmosdb.table.tableservice, azure.storage.table  # noqa: F401
PY
}

if ! ready; then
  echo "creating the legacy-peer venv in $VENV" >&2
  "$BASE_PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2
  ready || { echo "the legacy SDKs do not import in $VENV" >&2; exit 1; }
fi

which="${1:-all}"
rc=0
if [[ "$which" == all || "$which" == json ]]; then
  "$VENV/bin/python" tests/peers/legacy_cosmosdb_table_check.py || rc=1
fi
if [[ "$which" == all || "$which" == atom ]]; then
  "$VENV/bin/python" tests/peers/legacy_atom_table_check.py || rc=1
fi
if [[ "$which" == all || "$which" == dropin ]]; then
  "$AZT_STUB_PYTHON" tests/peers/legacy_dropin/run.py --legacy-python "$VENV/bin/python" \
    --azt-python "$AZT_STUB_PYTHON" --stub-python "$AZT_STUB_PYTHON" || rc=1
fi
exit "$rc"
