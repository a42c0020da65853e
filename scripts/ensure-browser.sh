#!/usr/bin/env bash
# Makes sure the headless browser of tests/explorer is installed: Debian's chromium and
# chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver). Installs them with apt-get
# when they are missing and apt-get is usable (root); otherwise prints a notice: the
# browser tests then skip with that reason (pytest -ra shows it), except under CI=true,
# where they fail. AZT_SKIP_BROWSER_INSTALL=1 never installs.
set -uo pipefail
have() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }
if have; then
  exit 0
fi
if [ "${AZT_SKIP_BROWSER_INSTALL:-0}" != "1" ] && command -v apt-get >/dev/null && [ "$(id -u)" = "0" ]; then
  echo "note: installing chromium and chromium-driver for the explorer's browser tests" >&2
  if ! apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || true
  fi
fi
if have; then
  exit 0
fi
if [ "${CI:-}" = "true" ]; then
  echo "error: chromium/chromium-driver are missing and could not be installed; under CI the explorer's browser tests fail" >&2
else
  echo "note: chromium/chromium-driver are missing and could not be installed (needs apt-get as root); the explorer's browser tests (tests/explorer/test_browser.py) will skip" >&2
fi
exit 0
