#!/usr/bin/env bash
# Run the client's end-to-end tests against Azurite (an independent Table service emulator).
#
#   scripts/test-azurite.sh [extra pytest args]
#
# Installs Azurite into .cache/azurite (git-ignored) if needed, starts its table service on a
# free port with in-memory persistence, runs `pytest tests/client tests/differential -m live`
# with AZT_TEST_CONNECTION_STRING pointing at it (the client's end-to-end tests, and the
# differential test that drives the stub and Azurite with the same command sequences), and
# stops it again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PREFIX="$ROOT/.cache/azurite"
AZURITE_JS="$PREFIX/node_modules/azurite/dist/src/table/main.js"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# Pinned so that a new Azurite release cannot change what "passes against Azurite" means
# without a commit here.
AZURITE_VERSION="${AZURITE_VERSION:-3.37.0}"

installed=""
if [[ -f "$PREFIX/node_modules/azurite/package.json" ]]; then
  installed="$(node -e "console.log(require('$PREFIX/node_modules/azurite/package.json').version)")"
fi
if [[ ! -f "$AZURITE_JS" || "$installed" != "$AZURITE_VERSION" ]]; then
  echo "installing azurite@$AZURITE_VERSION into $PREFIX" >&2
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2
fi

PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
WORKDIR="$(mktemp -d)"
LOG="$WORKDIR/azurite.log"

# --inMemoryPersistence cannot be combined with --location; run inside WORKDIR so that
# anything Azurite writes lands there.
(cd "$WORKDIR" && exec node "$AZURITE_JS" --tableHost 127.0.0.1 --tablePort "$PORT" \
  --inMemoryPersistence --disableTelemetry >"$LOG" 2>&1) &
AZURITE_PID=$!
cleanup() {
  kill "$AZURITE_PID" 2>/dev/null || true
  wait "$AZURITE_PID" 2>/dev/null || true
  rm -rf "$WORKDIR"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  if "$PYTHON" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$PORT)))"; then
    break
  fi
  if ! kill -0 "$AZURITE_PID" 2>/dev/null; then
    echo "azurite failed to start:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.1
done

DEV_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
export AZT_TEST_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$DEV_KEY;TableEndpoint=http://127.0.0.1:$PORT/devstoreaccount1;"
echo "azurite table service on port $PORT" >&2
"$PYTHON" -m pytest tests/client tests/differential -m live -q "$@"
