#!/usr/bin/env bash
# The dependency-floor leg (scripts/test.sh runs it; AZT_SKIP_DEPENDENCY_FLOOR=1 skips it):
#
#   scripts/test-dependency-floor.sh [pytest arguments]
#
# Installs azt with the OLDEST version of each dependency pyproject.toml declares, at run
# time and in the [testing] extra (every `name>=X` of [project].dependencies and of
# [project.optional-dependencies].testing installed as `name==X`, so the floors are read
# from pyproject.toml and cannot drift from it) into a venv of its own, then runs a focused
# subset of the suite there (under a minute): the stub's connection front end (front.py)
# and its fallback to aiohttp's handler, the parser refusals, the client transport and its
# lazy read timer, the retry policy (tenacity), the wire formats (lxml, msgspec), the ORM
# codec (attrs, cattrs), the stub's queries (sortedcontainers) and its durable store, and
# the azt.testing pytest fixtures (pytest, pytest-asyncio). It first prints which path the
# stub's front end and the client's read timer take there.
#
# The venv ($AZT_FLOOR_VENV, default .cache/floor-venv) is built from $AZT_FLOOR_BASE_PYTHON
# (default python3.11, the oldest Python supported, else python3) and reused while the
# floors and that Python are the same; it is rebuilt from scratch when they change. Needs
# only PyPI. The other test tools (hypothesis, azure-data-tables for the fixtures' tests) are
# whatever pip resolves next to the floors.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${AZT_FLOOR_VENV:-$ROOT/.cache/floor-venv}"
BASE_PYTHON="${AZT_FLOOR_BASE_PYTHON:-$(command -v python3.11 || command -v python3)}"

# The floors, one `name==version` a line; anything but a plain `name>=version` is refused,
# so that a new kind of requirement is noticed here rather than silently left out.
PINS="$("$BASE_PYTHON" - <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["testing"]:
    m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", requirement)
    if m is None:
        raise SystemExit(f"test-dependency-floor: not a plain floor: {requirement!r}")
    print(f"{m[1]}=={m[2]}")
PY
)"
mapfile -t PIN_ARRAY <<<"$PINS"
STAMP="$VENV/.azt-floor"
WANTED="$("$BASE_PYTHON" -c 'import sys; print(sys.version.split()[0])')
$PINS"

ready() {
  [[ -x "$VENV/bin/python" && -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$WANTED" ]] &&
    "$VENV/bin/python" - "${PIN_ARRAY[@]}" <<'PY' 2>/dev/null
import importlib.metadata as md
import sys

for pin in sys.argv[1:]:
    name, version = pin.split("==")
    installed = md.version(name)
    # "5.0" is "5.0.0": compare the release numbers, padded
    want = [int(p) for p in version.split(".")]
    have = [int(p) for p in installed.split(".")[: len(want) + 1] if p.isdigit()]
    have += [0] * (len(want) - len(have))
    assert have[: len(want)] == want and all(p == 0 for p in have[len(want) :]), pin
import azt, azt_server_stub  # noqa: E401,F401
PY
}

if ! ready; then
  echo "creating the dependency-floor venv in $VENV:" $PINS >&2
  rm -rf "$VENV"
  "$BASE_PYTHON" -m venv "$VENV"
  # This machine's pip config may name local mirrors that are absent; pip warns about
  # each one. Keep real errors, drop that noise.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -e "$ROOT" "${PIN_ARRAY[@]}" hypothesis azure-data-tables 2>&1 | { grep -v '^WARNING: Location' || true; }
  [[ "${PIPESTATUS[0]}" == 0 ]] || { echo "installing the floors failed" >&2; exit 1; }
  echo "$WANTED" >"$STAMP"
  ready || { echo "the floor venv does not hold the declared floors" >&2; exit 1; }
fi

export PYTHONPATH="$ROOT" AZT_SKIP_PACKAGING=1
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md

from azt._core import transport
from azt_server_stub import front

names = ("aiohttp", "multidict", "yarl", "attrs", "cattrs", "tenacity", "lxml")
names += ("sortedcontainers", "msgspec")
names += ("pytest", "pytest-asyncio")
print("dependency floor:", ", ".join(f"{n} {md.version(n)}" for n in names))
print(
    "  stub front end:",
    "FrontProtocol" if front.front_supported() else "aiohttp's handler (fallback)",
    "| client read timer:",
    "lazy" if transport._LAZY_READ_TIMEOUT_FITS else "aiohttp's (fallback)",
)
PY
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/stub/test_front.py \
  tests/stub/test_front_fallback.py \
  tests/stub/test_http_parser_refusals.py \
  tests/stub/test_http_robustness.py \
  tests/stub/test_body_fastpaths.py \
  tests/stub/test_access_log.py \
  tests/stub/test_faults.py \
  tests/stub/test_backend_query.py \
  tests/stub/test_storage_durability.py \
  tests/stub/test_storage_readthrough.py \
  tests/client/test_transport.py \
  tests/client/test_transport_compat.py \
  tests/client/test_read_timeout.py \
  tests/client/test_retry.py \
  tests/client/test_e2e.py \
  tests/client/test_entity_instances.py \
  tests/client/test_wire_xml.py \
  tests/client/test_wire_atom.py \
  tests/client/test_query_page_decoder.py \
  tests/orm/test_codec.py \
  tests/orm/test_query_decoding.py \
  tests/orm/test_decoder_differential.py \
  tests/plugin \
  "$@"
