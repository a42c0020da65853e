"""Fixtures of the explorer's browser tests: a headless Chromium (Debian's ``chromium`` and
``chromium-driver``), driven by Selenium, against a stub serving the explorer.

Where the browser is not installed the browser tests skip with a reason naming what is
missing (``pytest -ra`` shows it; ``scripts/test.sh`` installs the packages first when it
can); under CI (``CI=true``) a missing browser fails them instead. Screenshots for
``docs/explorer.md`` are written when ``AZT_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, ThreadedStubServer
from azt_server_stub.realism.faults import FaultInjector
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

from .support import TableApi

try:  # the dev extra has selenium; without it the browser tests skip (fail under CI)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover
    HAVE_SELENIUM = False

CHROMIUM = os.environ.get("AZT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("AZT_CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "images" / "explorer"
#: The flags the browser runs with: headless, and without the background traffic that makes
#: Chromium slow on a machine without a network.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def _missing_browser(reason: str) -> None:
    message = (
        f"explorer browser tests need headless Chromium: {reason} "
        "(apt-get install -y chromium chromium-driver; scripts/test.sh does it when it can)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        _missing_browser(", ".join(missing) + " not found")
    if not HAVE_SELENIUM:  # pragma: no cover - selenium is in the dev extra
        _missing_browser("the selenium package is not installed (pip install -e '.[dev]')")
    profile = tempfile.mkdtemp(prefix="azt-explorer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.set_script_timeout(10)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    """A stub serving the explorer, with every realism layer present (and harmless)."""
    config = StubConfig(
        accounts={DEV_ACCOUNT: [DEV_KEY]},
        faults=FaultInjector(),
        throttle=Throttle(ThrottleLimits(partition_rate=None, account_rate=None)),
        partitions=PartitionLayout(RangeLayout()),
    )
    with ThreadedStubServer(config, explorer=True) as server:
        yield server


@pytest.fixture(scope="module")
def table_api(stub: ThreadedStubServer) -> TableApi:
    """Signed raw HTTP to the stub's Table API (outside the page)."""
    return TableApi(stub.endpoint)


def screenshot(driver: Any, name: str) -> None:
    """Save ``docs/images/explorer/NAME.png`` when ``AZT_UPDATE_SCREENSHOTS=1``."""
    if os.environ.get("AZT_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")
        assert driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
