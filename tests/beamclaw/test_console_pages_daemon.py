"""The console's Logs and Usage pages in a real browser against a real daemon (they read
what only the daemon has: its log file, and the tokens its turns recorded): a line logged
after the Logs page opened shows on it, live; the Usage page shows a turn's tokens
against the agent's budget. Their screenshots go to docs/console/."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import trio

from tests.support.browser import save_screenshot, script_errors, wait_until
from tests.support.model_server import Reply, scripted_model

from .daemon import api, running_daemon, write_config

ADMIN_TOKEN = "pages-admin-token-5d81e2"
#: The agent's daily budget, and what the scripted model says each turn used.
BUDGET = 50_000  # a turn reserves its estimate (prompt, tools, a completion) first
PROMPT_TOKENS, COMPLETION_TOKENS = 120, 30


def _config(tmp_path: Path, model: Any) -> tuple[Path, str]:
    token = tmp_path / "admin.token"
    token.write_text(ADMIN_TOKEN)
    token.chmod(0o600)
    extra = (
        f'[gateway.auth.tokens.boss]\ntoken = {{ file = "{token}" }}\nrole = "admin"\n'
        f"[gateway.rate_limit]\nrequests = 1000\n[memory]\nenabled = false\n"
    )
    config = write_config(tmp_path, model, extra=extra)
    text = config.read_text().replace("[core]\n", f"[core]\ndaily_token_budget = {BUDGET}\n", 1)
    config.write_text(text)
    port = re.search(r"port = (\d+)", text)
    assert port is not None
    return config, f"http://127.0.0.1:{port.group(1)}"


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = driver.find_elements(By.CSS_SELECTOR, selector)
    return found


def _log_in(driver: Any, url: str) -> None:
    driver.get(f"{url}/ui/login")
    _css(driver, "#token")[0].send_keys(ADMIN_TOKEN)
    _css(driver, '[data-action="login"]')[0].click()
    wait_until(driver, lambda d: d.current_url.endswith("/ui/chat"))


def _log_lines(driver: Any) -> list[str]:
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        return [line.text for line in _css(driver, "#log-lines .log-line")]
    except StaleElementReferenceException:  # the page dropped its lines to show them again
        return []


def _levels_shown(driver: Any, level: str) -> set[str]:
    """The levels of the lines shown once the level filter is set to *level*."""
    from selenium.webdriver.support.ui import Select

    Select(_css(driver, "#logs-level")[0]).select_by_value(level)
    return {line.get_attribute("data-level") for line in _css(driver, "#log-lines .log-line:not([hidden])")}


async def test_the_logs_page_shows_a_line_logged_after_it_opened(tmp_path: Path, browser: Any) -> None:
    async with scripted_model(repeat=Reply("hi")) as model:
        config, url = _config(tmp_path, model)
        home = tmp_path / "home"
        async with running_daemon(config, home):

            def open_logs() -> None:
                _log_in(browser, url)
                browser.get(f"{url}/ui/logs")
                wait_until(browser, lambda d: _css(d, "#logs-status")[0].text == "live")
                wait_until(browser, _log_lines)  # the file's last lines first

            await trio.to_thread.run_sync(open_logs)
            assert not [line for line in _log_lines(browser) if 'child_id="cleaner"' in line]
            killed = await api(home, "POST", "/v1/supervision/kill", {"path": "core/cleaner"})
            assert killed.status_code == 200, killed.text
            pid = killed.json()["pid"]

            def crash_line(driver: Any) -> list[str]:
                return [line for line in _log_lines(driver) if 'child_id="cleaner"' in line and pid in line]

            (line,) = await trio.to_thread.run_sync(wait_until, browser, crash_line)
            assert "ERROR" in line and "crashed=true" in line
            await trio.to_thread.run_sync(save_screenshot, browser, "logs")
            levels = await trio.to_thread.run_sync(_levels_shown, browser, "40")  # errors only
            assert levels == {"ERROR"}
            assert [e for e in script_errors(browser) if "favicon" not in e] == []


async def test_the_usage_page_shows_a_turns_tokens_against_the_budget(tmp_path: Path, browser: Any) -> None:
    async with scripted_model(
        repeat=Reply("hi", prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS)
    ) as model:
        config, url = _config(tmp_path, model)
        home = tmp_path / "home"
        async with running_daemon(config, home):
            body = {"model": "default", "user": "ada", "messages": [{"role": "user", "content": "hello"}]}
            turn = await api(home, "POST", "/v1/chat/completions", body)
            assert turn.status_code == 200, turn.text
            today = dt.datetime.now(dt.UTC).date().isoformat()
            row = f'#usage-table tr[data-day="{today}"][data-agent="default"] td'

            def read_usage() -> tuple[list[str], list[str], str]:
                _log_in(browser, url)
                browser.get(f"{url}/ui/usage")
                cells = wait_until(browser, lambda d: [cell.text for cell in _css(d, row)])
                budget = [cell.text for cell in _css(browser, '#usage-budgets tr[data-agent="default"] td')]
                meter = _css(browser, '#usage-budgets tr[data-agent="default"] meter')[0].get_attribute("value")
                save_screenshot(browser, "usage")
                return cells, budget, meter

            cells, budget, meter = await trio.to_thread.run_sync(read_usage)
            assert [e for e in script_errors(browser) if "favicon" not in e] == []
    total = PROMPT_TOKENS + COMPLETION_TOKENS
    assert cells == [today, "default", str(PROMPT_TOKENS), str(COMPLETION_TOKENS), str(total)]
    assert budget[:3] == ["default", str(total), f"{BUDGET:,}"]
    assert float(meter) == total and budget[3].strip() == "0.3%"  # 150 of 50,000
