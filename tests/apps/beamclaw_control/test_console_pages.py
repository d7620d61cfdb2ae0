"""The Scheduler, Memory, MCP and Sandbox pages of the web console, and what a viewer sees
on every page, in a real browser (Debian's headless Chromium) against the gateway's real
app and the real apps it reaches: a job paused and resumed from its buttons, memory
searched from the keyboard and the lines found shown, an MCP server listed with its tools,
a sandbox killed, and a viewer shown none of the buttons it may not press. Each page's
screenshot goes to docs/console/.

Selenium blocks and the app serves from this test's Trio loop: the browser's steps run
in a worker thread (`_in_thread`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

import beamclaw_memory as memory
from beamclaw_sandbox._docker import LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX, instance_id
from tests.apps.beamclaw_mcp.conftest import stdio
from tests.support.browser import save_screenshot, script_errors, wait_until

from .apps_api import ADMIN, ALICE, VIEWER, Api, running_api
from .docker_engine import docker_engine

_T = TypeVar("_T")
NOTES = "# Notes\n\nThe boat is moored at Quay 7.\nThe spare key is under the blue pot.\n"
SERVERS = {"servers": {"files": stdio()}}
#: A job's message that would be an element if a page put it in as HTML.
HOSTILE = 'check the mail <img id="injected" src="x">'
#: Every page of this module's, as a viewer opens it.
PAGES = ("scheduler", "memory", "mcp", "sandbox", "logs", "usage")
#: A phone's window (CSS pixels).
PHONE = (390, 844)


async def _in_thread(step: Callable[..., _T], *args: Any) -> _T:
    return await trio.to_thread.run_sync(step, *args)


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, selector)
    return found


def _texts(driver: Any, selector: str) -> list[str]:
    """The texts of the elements *selector* finds (none while a page draws them again)."""
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        return [element.text for element in _css(driver, selector)]
    except StaleElementReferenceException:
        return []


def _click(driver: Any, selector: str) -> None:
    """Click the first element *selector* finds, as soon as there is one that stays put."""
    from selenium.common.exceptions import StaleElementReferenceException

    def clicked(d: Any) -> bool:
        try:
            found = _css(d, selector)
            if found:
                found[0].click()
            return bool(found)
        except StaleElementReferenceException:
            return False

    wait_until(driver, clicked)


def _log_in(driver: Any, url: str, token: str) -> None:
    driver.get(f"{url}/ui/login")
    _css(driver, "#token")[0].send_keys(token)
    _click(driver, '[data-action="login"]')
    wait_until(driver, lambda d: d.current_url.endswith("/ui/chat"))


def _open(driver: Any, url: str, page: str) -> None:
    driver.get(f"{url}/ui/{page}")
    wait_until(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def _no_script_errors(driver: Any) -> None:
    assert [e for e in script_errors(driver) if "favicon" not in e] == []


async def _add_job(api: Api, message: str) -> dict[str, Any]:
    added = await api.post(ALICE, "/v1/scheduler/jobs", {"kind": "every", "spec": "1h", "message": message})
    assert added.status_code == 201, added.text
    job: dict[str, Any] = added.json()["job"]
    return job


async def _job_states(api: Api) -> list[str]:
    return [job["state"] for job in (await api.get(ALICE, "/v1/scheduler/jobs")).json()["jobs"]]


async def test_a_job_is_paused_resumed_and_cancelled_from_the_scheduler_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    from selenium.webdriver.common.keys import Keys

    async with running_api(tmp_path, monkeypatch) as api:
        job = await _add_job(api, "water the plants")
        row = f'#jobs tr[data-job="{job["id"]}"]'

        def state_is(state: str) -> None:
            wait_until(browser, lambda d: _texts(d, f'{row} [data-field="state"]') == [state])

        def open_page() -> None:
            _log_in(browser, api.url, ALICE)
            _open(browser, api.url, "scheduler")
            state_is("active")
            wait_until(browser, lambda d: _css(d, "#job-agent option"))
            save_screenshot(browser, "scheduler")
            _click(browser, f'{row} button[data-action="pause"]')
            state_is("paused")

        def resume_from_the_keyboard() -> str:
            _css(browser, f'{row} button[data-action="resume"]')[0].send_keys(Keys.ENTER)
            state_is("active")
            focused: str = browser.switch_to.active_element.get_attribute("data-action")
            return focused

        await _in_thread(open_page)
        assert await _job_states(api) == ["paused"]  # the server's state, not only the page's
        assert _texts(browser, f"{row} button[data-action]") == ["Runs", "Resume", "Cancel"]
        assert await _in_thread(resume_from_the_keyboard) == "pause"  # the keyboard stays on the row
        assert await _job_states(api) == ["active"]
        await _in_thread(_click, browser, f'{row} button[data-action="cancel"]')
        assert await _job_states(api) == ["active"]  # Cancel asks once more first
        await _in_thread(_click, browser, f'{row} button[data-action="confirm-cancel"]')
        await _in_thread(wait_until, browser, lambda d: not _css(d, row))  # the scheduler forgets it
        assert await _job_states(api) == []
        assert _texts(browser, "#jobs-empty") == ["No jobs yet."]
        _no_script_errors(browser)


async def test_a_job_is_added_from_the_form_its_text_shown_as_text_and_its_runs_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:

        def add() -> None:
            _log_in(browser, api.url, ALICE)
            _open(browser, api.url, "scheduler")
            wait_until(browser, lambda d: _css(d, "#job-agent option"))
            _css(browser, "#job-spec")[0].send_keys("2h")
            _css(browser, "#job-message")[0].send_keys(HOSTILE)
            _click(browser, '[data-action="add"]')
            wait_until(browser, lambda d: _texts(d, "#jobs tbody tr td:nth-child(5)") == [HOSTILE])
            _click(browser, '#jobs tbody tr button[data-action="runs"]')
            wait_until(browser, lambda d: _css(d, "#runs:not([hidden])"))

        await _in_thread(add)
        (job,) = (await api.get(ALICE, "/v1/scheduler/jobs")).json()["jobs"]
        assert (job["user"], job["schedule"], job["message"]) == ("api:alice", "every 2h", HOSTILE)
        assert _css(browser, "#injected") == []  # the daemon's text became text, not markup
        assert _texts(browser, "#runs-empty") == ["The job has not run yet."]
        _no_script_errors(browser)


async def test_a_finished_jobs_runs_are_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)).isoformat(timespec="seconds")
        added = await api.post(ALICE, "/v1/scheduler/jobs", {"kind": "at", "spec": soon, "message": "say hi"})
        assert added.status_code == 201, added.text
        job = added.json()["job"]
        runs: list[dict[str, Any]] = []
        with trio.fail_after(60):  # a real run, on the scheduler's clock, to its end
            while not runs or runs[0]["finished_at"] is None:
                await trio.sleep(0.2)
                runs = (await api.get(ALICE, f"/v1/scheduler/jobs/{job['id']}/runs")).json()["runs"]
        row = f'#jobs tr[data-job="{job["id"]}"]'

        def show_runs() -> list[str]:
            _log_in(browser, api.url, ALICE)
            _open(browser, api.url, "scheduler")
            wait_until(browser, lambda d: _css(d, "#job-agent option"))
            _click(browser, "#jobs-all")  # a job that ran at its time is finished
            _click(browser, f'{row} button[data-action="runs"]')
            return wait_until(browser, lambda d: _texts(d, "#runs-table tbody tr"))

        (shown,) = await _in_thread(show_runs)
        assert shown.startswith(str(runs[0]["run_id"])) and runs[0]["state"] in shown
        _no_script_errors(browser)


async def test_a_memory_search_from_the_keyboard_shows_the_lines_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    from selenium.webdriver.common.keys import Keys

    async with running_api(tmp_path, monkeypatch) as api:
        folder = api.home / "agents" / "default"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text(NOTES)
        await memory.sync("default")

        def search() -> Any:
            _log_in(browser, api.url, ALICE)
            _open(browser, api.url, "memory")
            wait_until(browser, lambda d: _css(d, "#memory-agent option"))
            _css(browser, "#memory-query")[0].send_keys("where is the boat moored", Keys.ENTER)  # Enter submits
            hit = wait_until(browser, lambda d: _css(d, "#memory-hits .hit"))[0]
            wait_until(browser, lambda d: _css(d, '#memory-status tr[data-agent="default"]'))
            save_screenshot(browser, "memory")
            return hit

        hit = await _in_thread(search)
        assert hit.get_attribute("data-path") == "MEMORY.md"
        assert _texts(hit, ".hit-path") == ["MEMORY.md"]
        assert "The boat is moored at Quay 7." in _texts(hit, ".hit-text")[0]
        start, end = int(hit.get_attribute("data-start")), int(hit.get_attribute("data-end"))
        assert "The boat is moored at Quay 7." in NOTES.splitlines()[start - 1 : end]  # the lines it says
        assert _texts(hit, ".hit-lines") == [f"lines {start}\N{EN DASH}{end}" if end > start else f"line {start}"]
        _no_script_errors(browser)


async def test_an_admin_reindexes_an_agents_memory_from_its_button(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    async with running_api(tmp_path, monkeypatch) as api:
        folder = api.home / "agents" / "default"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text(NOTES)
        documents = '#memory-status tr[data-agent="default"] td:nth-child(2)'

        def reindex() -> list[str]:
            _log_in(browser, api.url, ADMIN)
            _open(browser, api.url, "memory")
            wait_until(browser, lambda d: _css(d, "#memory-agent option"))
            _click(browser, '[data-action="reindex"]')
            wait_until(browser, lambda d: _texts(d, "#notice") == ["indexed default's memory again"])
            return _texts(browser, "#memory-status thead th")

        columns = await _in_thread(reindex)
        assert columns[:2] == ["agent", "documents"]
        assert int(_texts(browser, documents)[0]) >= 1  # the status read again after the reindex
        _no_script_errors(browser)


async def test_the_mcp_page_lists_servers_with_their_tools_and_last_error_and_an_admin_restarts_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    table = {"max_restarts": 2, "servers": {"files": stdio(), "bad": stdio("--mode", "crash")}}
    async with running_api(tmp_path, monkeypatch, mcp_table=table) as api:
        files, bad = '#mcp-servers tr[data-server="files"]', '#mcp-servers tr[data-server="bad"]'

        def look() -> tuple[str, str]:
            _log_in(browser, api.url, ADMIN)
            _open(browser, api.url, "mcp")
            # The servers start as the page opens; it reads them again every 5 s.
            wait_until(browser, lambda d: _texts(d, f'{files} [data-field="state"]') == ["ready"])
            wait_until(browser, lambda d: _texts(d, f'{bad} [data-field="state"]') == ["failed"], timeout=60)
            wait_until(browser, lambda d: "mcp__files__add" in _texts(d, "#mcp-tools td.mono"))
            save_screenshot(browser, "mcp")
            _click(browser, f"{bad} details summary")
            read_at = _texts(browser, "#mcp-status")
            wait_until(browser, lambda d: _texts(d, "#mcp-status") not in ([], read_at), timeout=60)  # drawn again
            error = _texts(browser, f"{bad} td.error-text")[0]
            stderr = _texts(browser, f"{bad} td.error-text details[open] pre")  # still open: still shown
            _click(browser, f'{files} button[data-action="restart"]')
            wait_until(browser, lambda d: _texts(d, "#notice") == ["restarting files"])
            return error, stderr

        error, stderr = await _in_thread(look)
        listed = {s["name"]: s for s in (await api.get(ADMIN, "/v1/mcp/servers")).json()["servers"]}
        assert listed["bad"]["last_error"] and listed["bad"]["last_error"] in error
        assert len(stderr) == 1 and "cannot open /nonexistent/config.json" in stderr[0]
        assert "add" in _texts(browser, '#mcp-tools tr[data-tool="mcp__files__add"] td')
        _no_script_errors(browser)


async def test_an_admin_kills_a_sandbox_from_the_sandbox_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    labels = {LABEL_SANDBOX: "1", LABEL_INSTANCE: instance_id(tmp_path / "home")}
    containers: dict[str, dict[str, Any]] = {
        "bc-new": {"labels": {**labels, LABEL_KEY: "session:bbb"}, "state": "running", "created": 1_795_750_000.0},
        "bc-old": {"labels": {**labels, LABEL_KEY: "session:aaa"}, "state": "exited", "created": 1_795_740_000.0},
    }
    names = "#sandboxes tr[data-sandbox] td:first-child"
    with docker_engine(containers) as engine:
        monkeypatch.setenv("DOCKER_HOST", engine.url)
        async with running_api(tmp_path, monkeypatch) as api:

            def kill() -> None:
                _log_in(browser, api.url, ADMIN)
                _open(browser, api.url, "sandbox")
                wait_until(browser, lambda d: _texts(d, names) == ["bc-old", "bc-new"])
                save_screenshot(browser, "sandbox")
                _click(browser, 'tr[data-sandbox="bc-new"] button[data-action="kill"]')
                _click(browser, 'tr[data-sandbox="bc-new"] button[data-action="confirm-kill"]')  # pressed twice
                wait_until(browser, lambda d: _texts(d, names) == ["bc-old"])

            await _in_thread(kill)
        assert engine.removed == ["bc-new"]
        _no_script_errors(browser)


async def test_a_viewer_sees_no_button_it_may_not_press(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table=SERVERS) as api:
        await _add_job(api, "water the plants")
        seen: dict[str, tuple[list[str], list[Any], list[str]]] = {}

        def visit() -> None:
            _log_in(browser, api.url, VIEWER)
            for page in PAGES:
                _open(browser, api.url, page)
                if page == "mcp":  # the servers are listed, without their Restart
                    wait_until(browser, lambda d: _css(d, '#mcp-servers tr[data-server="files"]'))
                if page == "memory":
                    wait_until(browser, lambda d: _css(d, "#memory-status tbody tr"))
                buttons = _texts(browser, "main button:not([data-action^=refresh])")
                seen[page] = (buttons, _css(browser, "main form"), _texts(browser, "#viewer-note"))

        await _in_thread(visit)
        assert {page: buttons for page, (buttons, _, _) in seen.items()} == {page: [] for page in PAGES}
        assert {page: forms for page, (_, forms, _) in seen.items()} == {page: [] for page in PAGES}
        told = [page for page, (_, _, note) in seen.items() if note]  # what it may not read, it is told why
        assert told == ["scheduler", "memory", "sandbox", "logs"]
        _no_script_errors(browser)


async def test_an_operator_sees_its_users_buttons_and_no_admins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any
) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table=SERVERS) as api:
        job = await _add_job(api, "water the plants")
        ready = {
            "scheduler": f'#jobs tr[data-job="{job["id"]}"]',
            "memory": "#memory-status tbody tr",
            "mcp": '#mcp-servers tr[data-server="files"]',
        }
        actions: dict[str, set[str]] = {}

        def visit() -> None:
            _log_in(browser, api.url, ALICE)
            for page in PAGES:
                _open(browser, api.url, page)
                if page in ready:
                    wait_until(browser, lambda d: _css(d, ready[page]))  # noqa: B023 - called at once
                buttons = _css(browser, "main button[data-action]")
                actions[page] = {button.get_attribute("data-action") for button in buttons} - {"refresh"}

        await _in_thread(visit)
        assert actions == {
            "scheduler": {"runs", "pause", "cancel", "add", "close-runs"},
            "memory": {"search", "refresh-status"},  # no Reindex
            "mcp": set(),  # no Restart
            "sandbox": set(),
            "logs": set(),
            "usage": set(),
        }
        _no_script_errors(browser)


async def test_every_page_fits_a_phones_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Any) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table=SERVERS) as api:
        await _add_job(api, "a message long enough to need a wide column, or a table that scrolls sideways")
        overflow: dict[str, int] = {}

        def visit() -> None:
            _log_in(browser, api.url, ADMIN)
            browser.set_window_size(*PHONE)
            for page in PAGES:
                _open(browser, api.url, page)
                wait_until(browser, lambda d: _css(d, "main"))
                overflow[page] = browser.execute_script(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )

        await _in_thread(visit)
        assert overflow == {page: 0 for page in PAGES}  # tables scroll in their own box; the page never sideways
