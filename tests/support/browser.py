"""A real browser for the web console's tests: Debian's headless Chromium, driven through
its chromedriver by Selenium.

Nothing here downloads a browser or a driver: both are the system's (``apt-get install
chromium chromium-driver``, which ``.ci/run`` does), named by path, so Selenium Manager
is never asked. Without them (or without selenium) a test that takes `browser` skips,
saying why; under CI (``CI=true``) it fails instead, since CI must really run it.

Selenium's calls block: a Trio test makes them in a worker thread
(``trio.to_thread.run_sync``), so the servers the test runs in its own process (the
scripted model) go on answering meanwhile.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

CHROMIUM: Path = Path("/usr/bin/chromium")
CHROMEDRIVER: Path = Path("/usr/bin/chromedriver")
#: The window every test (and every screenshot) uses: the same pixels on every run.
WINDOW = (1280, 900)
#: Where the screenshots of the console's pages go, for the docs.
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"
_ARGUMENTS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
    "--force-color-profile=srgb", "--lang=en-US",
)  # fmt: skip

_T = TypeVar("_T")


def _missing() -> str | None:
    """Why no browser can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} is missing (apt-get install {package})"
    return None


def require_browser() -> None:
    """Skip the calling test (fail it under CI) when the browser cannot run here."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the browser tests must run under CI: {reason}")
        pytest.skip(reason)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium (a `selenium.webdriver.Chrome`) with a profile of its own, quit after the test."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in _ARGUMENTS:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(driver: Any, found: Callable[[Any], _T], timeout: float = 30) -> _T:
    """Wait until ``found(driver)`` is truthy and return it (a Selenium ``TimeoutException`` after *timeout*).

    An element missing, or gone stale because the page redrew it, counts as not yet.
    """
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    result: _T = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=ignored).until(found)
    return result


def script_errors(driver: Any) -> list[str]:
    """The page's console errors since the last call (a failed request, an exception)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def save_screenshot(driver: Any, name: str) -> Path:
    """A screenshot of the whole page as ``docs/console/NAME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.execute_script("window.scrollTo(0, 0)")
    height = driver.execute_script("return Math.max(document.body.scrollHeight, window.innerHeight)")
    driver.set_window_size(WINDOW[0], min(max(int(height), WINDOW[1]), 2400))
    try:
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(*WINDOW)
    return path
