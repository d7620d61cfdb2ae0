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
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

import beamclaw_memory as memory
from beamclaw_sandbox._docker import LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX, instance_id
from tests.apps.beamclaw_mcp.conftest import stdio

from .apps_api import ADMIN, ALICE, VIEWER, Api, running_api
from .docker_engine import docker_engine

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


NOTES = "# Notes\n\nThe boat is moored at Quay 7.\nThe spare key is under the blue pot.\n"


async def test_a_memory_search_shows_the_line_found_from_the_keyboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_api(tmp_path, monkeypatch) as api, browser(api) as b:
        folder = api.home / "agents" / "default"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text(NOTES)
        await memory.sync("default")
        await b.log_in(ALICE)
        await b.open("memory")
        query = await b.until(lambda d: d.find_elements(By.ID, "memory-query"))
        await b.run(query[0].send_keys, "where is the boat moored", Keys.ENTER)  # Enter submits the form
        found = await b.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#memory-hits .hit"))
        first = found[0]
        assert await b.run(lambda: first.find_element(By.CSS_SELECTOR, ".hit-path").text) == "MEMORY.md"
        assert "The boat is moored at Quay 7." in await b.run(lambda: first.find_element(By.CSS_SELECTOR, ".hit-text").text)
        start = int(await b.run(first.get_attribute, "data-start"))
        end = int(await b.run(first.get_attribute, "data-end"))
        assert "The boat is moored at Quay 7." in NOTES.splitlines()[start - 1 : end]
        lines = await b.run(lambda: first.find_element(By.CSS_SELECTOR, ".hit-lines").text)
        assert lines in (f"line {start}", f"lines {start}–{end}")
        assert await b.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#memory-status tr[data-agent="default"]'))
        await b.screenshot("memory")


async def test_the_mcp_page_lists_a_server_its_tools_and_for_an_admin_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table={"servers": {"files": stdio()}}) as api, browser(api) as b:
        await b.log_in(ADMIN)
        await b.open("mcp")
        state = '#mcp-servers tr[data-server="files"] [data-field="state"]'
        while await b.texts(state) != ["ready"]:  # the server starts as the page opens: read it again
            await b.click('[data-action="refresh"]')
            await trio.sleep(0.2)
        tools = await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, "#mcp-tools td.mono")])
        assert "mcp__files__add" in tools and "add" in tools
        await b.screenshot("mcp")
        await b.click('#mcp-servers tr[data-server="files"] button[data-action="restart"]')
        assert await b.until(lambda d: "restarting files" in d.find_element(By.ID, "notice").text)


async def test_an_admin_kills_a_sandbox_from_the_sandbox_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = {LABEL_SANDBOX: "1", LABEL_INSTANCE: instance_id(tmp_path / "home")}
    containers: dict[str, dict[str, object]] = {
        "bc-new": {"labels": {**labels, LABEL_KEY: "session:bbb"}, "state": "running", "created": 1795750000.0},
        "bc-old": {"labels": {**labels, LABEL_KEY: "session:aaa"}, "state": "exited", "created": 1795740000.0},
    }
    with docker_engine(containers) as engine:
        monkeypatch.setenv("DOCKER_HOST", engine.url)
        async with running_api(tmp_path, monkeypatch) as api, browser(api) as b:
            await b.log_in(ADMIN)
            await b.open("sandbox")
            names = "#sandboxes tr[data-sandbox] td.mono:first-child"
            assert await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, names)] == ["bc-old", "bc-new"])
            await b.screenshot("sandbox")
            await b.click('tr[data-sandbox="bc-new"] button[data-action="kill"]')
            assert await b.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, names)] == ["bc-old"])
            assert engine.removed == ["bc-new"]


async def test_a_viewer_sees_no_button_it_may_not_press(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table={"servers": {"files": stdio()}}) as api, browser(api) as b:
        await _add_job(api, "water the plants")
        await b.log_in(VIEWER)
        for page in ("scheduler", "memory", "mcp", "sandbox", "logs", "usage"):
            await b.open(page)
            await b.until(lambda d: d.execute_script("return document.readyState") == "complete")
            assert await b.run(lambda: b.driver.find_element(By.TAG_NAME, "body").get_attribute("data-role")) == "viewer"
            if page == "mcp":  # the servers are listed, without their Restart
                assert await b.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#mcp-servers tr[data-server="files"]'))
            pressable = await b.texts("button:not([data-action=logout]):not([data-action^=refresh])")
            assert pressable == [], page
            forms = await b.texts("form")
            assert forms == [], page
        for page in ("scheduler", "sandbox", "logs"):  # what a viewer may not read, it is told so
            await b.open(page)
            assert await b.texts("#viewer-note") != [], page
