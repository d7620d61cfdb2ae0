"""The web console in a real browser (headless Chromium) against a real daemon and the
scripted model: log in, chat and see the reply stream in, approve a tool call from its
button, kill a session's loop from the tree and see it come back with its restart count
raised, log out. Each page the test visits is saved to docs/console/ for the docs.

Selenium blocks, so the browser's steps run in a worker thread while this process's
Trio loop serves the scripted model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from tests.support.browser import SCREENSHOTS, WINDOW, save_screenshot, script_errors, wait_until
from tests.support.model_server import Call, Hold, Reply, scripted_model

from .daemon import running_daemon, write_config

ADMIN_TOKEN = "console-admin-token-7f3a9c"
VIEWER_TOKEN = "console-viewer-token-2b8e41"
#: Long enough to come in several drafts: the stream's scrubber holds back the last 256
#: characters (a credential could be still arriving), and a draft goes out every 80 more.
GREETING = (
    "Hello from the scripted model, streamed to the console. "
    "A reply this long reaches the page in drafts, each the whole reply so far, "
    "about every eighty characters, and then once more as the final text, "
    "so the page shows it growing as the model writes it. "
    "The gateway holds back the last few hundred characters of a stream until it knows "
    "that no credential is hiding in them, which is why a short reply arrives all at once. "
    "This one goes on a little longer, to be sure that at least two drafts come before "
    "the end, and that the browser shows each of them in turn."
)
#: Records each text the conversation's elements are given (every draft of a reply): a
#: WebDriver script, which the page's CSP does not restrict.
RECORD_TEXTS = """
window.texts = [];
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) if (node.nodeType === Node.TEXT_NODE) window.texts.push(node.data);
  }
}).observe(document.getElementById("messages"), { subtree: true, childList: true });
"""
TOOL_COMMAND = "command echo approved-from-the-console"


def _port(config: Path) -> int:
    found = re.search(r"port = (\d+)", config.read_text())
    assert found is not None
    return int(found.group(1))


def _config(tmp_path: Path, model: Any) -> Path:
    extra = "[gateway.rate_limit]\nrequests = 1000\n"
    for name, role, value in (("boss", "admin", ADMIN_TOKEN), ("watcher", "viewer", VIEWER_TOKEN)):
        token = tmp_path / f"{name}.token"
        token.write_text(value)
        token.chmod(0o600)
        extra += f'[gateway.auth.tokens.{name}]\ntoken = {{ file = "{token}" }}\nrole = "{role}"\n'
    return write_config(tmp_path, model, autonomy="supervised", extra=extra)


def _by(kind: str) -> Any:
    from selenium.webdriver.common.by import By

    return getattr(By, kind)


def _log_in(driver: Any, url: str, token: str = ADMIN_TOKEN, role: str = "admin") -> None:
    from selenium.webdriver.common.keys import Keys

    driver.get(f"{url}/ui")
    wait_until(driver, lambda d: d.current_url.endswith("/ui/login"))
    if role == "admin":
        save_screenshot(driver, "login")
    # From the keyboard: the token field has the focus, Enter submits.
    driver.switch_to.active_element.send_keys(token, Keys.ENTER)
    wait_until(driver, lambda d: d.current_url.endswith("/ui/chat"))
    assert driver.find_element(_by("TAG_NAME"), "body").get_attribute("data-role") == role


def _send(driver: Any, text: str, keyboard: bool = False) -> None:
    """Write *text* and send it: with the Send button, or from the *keyboard* (Ctrl+Enter)."""
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element(_by("ID"), "chat-text")
    box.send_keys(text)
    if keyboard:
        box.send_keys(Keys.CONTROL, Keys.ENTER)
    else:
        driver.find_element(_by("CSS_SELECTOR"), '[data-action="send"]').click()


def _fits_a_phone(driver: Any, name: str | None = None) -> None:
    """At a phone's width the page scrolls only downwards; its screenshot as *name* (if any)."""
    driver.set_window_size(390, 844)
    try:
        wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the page is {wide} px wider than a phone's screen"
        if name is not None:
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    finally:
        driver.set_window_size(*WINDOW)


def _replies(driver: Any) -> list[str]:
    return [e.text for e in driver.find_elements(_by("CSS_SELECTOR"), '.message.assistant[data-done="true"] .body')]


def _chat(driver: Any) -> None:
    """A turn streamed in, then a tool call approved from its button."""
    wait_until(driver, lambda d: d.find_elements(_by("CSS_SELECTOR"), "#agent option"))
    driver.execute_script(RECORD_TEXTS)
    _send(driver, "say hello")
    wait_until(driver, lambda d: GREETING in _replies(d))
    texts = driver.execute_script("return window.texts")
    drafts = [text for text in texts if text and GREETING.startswith(text) and text != GREETING]
    assert len(drafts) >= 2, texts  # it grew in steps before the final text
    _send(driver, "run the command", keyboard=True)
    approve = wait_until(
        driver, lambda d: d.find_elements(_by("CSS_SELECTOR"), '.approval [data-action="approve"][data-answer="yes"]')
    )[0]
    assert "approved-from-the-console" in driver.find_element(_by("CSS_SELECTOR"), ".approval").text
    assert not driver.find_elements(_by("CSS_SELECTOR"), ".message.tool")  # nothing runs before the answer
    save_screenshot(driver, "chat-approval")
    approve.click()
    wait_until(driver, lambda d: "it ran" in _replies(d))
    tool = driver.find_element(_by("CSS_SELECTOR"), ".message.tool")
    assert tool.get_attribute("data-tool") == "bash" and tool.get_attribute("data-state") == "done"
    assert "approved-from-the-console" in tool.text  # its arguments, then its result
    assert driver.find_element(_by("CSS_SELECTOR"), ".approval").get_attribute("data-answered") == "yes"
    save_screenshot(driver, "chat")
    _fits_a_phone(driver, "chat-phone")


def _stop(driver: Any, hold: Hold) -> None:
    """A turn the model keeps waiting on, ended with the Stop button."""
    _send(driver, "take your time")
    wait_until(driver, lambda _: trio.from_thread.run_sync(hold.reached.is_set))
    stop = driver.find_element(_by("CSS_SELECTOR"), '[data-action="stop"]')
    wait_until(driver, lambda _: stop.is_enabled())
    stop.click()
    wait_until(driver, lambda d: "stopped the turn" in d.find_element(_by("ID"), "notice").text)
    wait_until(driver, lambda d: len(_replies(d)) == 3)  # the stopped turn's reply is over
    assert not stop.is_enabled()


def _sessions(driver: Any, url: str) -> str:
    """The sessions page lists the conversation; its id."""
    driver.get(f"{url}/ui/sessions")
    row = wait_until(driver, lambda d: d.find_elements(_by("CSS_SELECTOR"), "#sessions tbody tr[data-session]"))[0]
    assert "default" in row.text and "console" in row.text
    row.find_element(_by("CSS_SELECTOR"), '[data-action="history"]').click()
    wait_until(driver, lambda d: "it ran" in d.find_element(_by("ID"), "history-messages").text)
    save_screenshot(driver, "sessions")
    _fits_a_phone(driver)
    session: str = row.get_attribute("data-session")
    return session


def _restarts(driver: Any, path: str) -> tuple[int]:
    """The restart count the tree shows for *path* (in a tuple: a count of 0 is an answer too)."""
    node = driver.find_element(_by("CSS_SELECTOR"), f'li[data-path="{path}"] > .node .restarts')
    return (int(node.get_attribute("data-count")),)


def _tree(driver: Any, url: str, session: str) -> None:
    """Kill the session's loop from the tree; the tree shows it back, its restart count raised.

    The page redraws the tree at each supervision event: every step looks its element up again.
    """
    driver.get(f"{url}/ui/tree")
    loop = f'li[data-path$="/{session}/loop"]'
    path = wait_until(driver, lambda d: d.find_element(_by("CSS_SELECTOR"), loop).get_attribute("data-path"))
    (before,) = wait_until(driver, lambda d: _restarts(d, path))
    kill = f'li[data-path="{path}"] > .node [data-action="kill"]'
    wait_until(driver, lambda d: d.find_element(_by("CSS_SELECTOR"), kill).click() or True)
    wait_until(driver, lambda d: _restarts(d, path) == (before + 1,))
    state = f'li[data-path="{path}"] > .node .state'
    wait_until(driver, lambda d: d.find_element(_by("CSS_SELECTOR"), state).text == "running")
    assert "killed" in driver.find_element(_by("ID"), "notice").text
    save_screenshot(driver, "tree")
    _fits_a_phone(driver)


def _log_out(driver: Any, url: str) -> None:
    driver.find_element(_by("CSS_SELECTOR"), '[data-action="logout"]').click()
    wait_until(driver, lambda d: d.current_url.endswith("/ui/login"))
    driver.get(f"{url}/ui/tree")
    assert driver.current_url.endswith("/ui/login")  # the cookie no longer admits


def _viewer(driver: Any, url: str) -> None:
    """A viewer sees the pages, and no button a viewer may not press (each page once drawn)."""
    _log_in(driver, url, VIEWER_TOKEN, "viewer")
    drawn = {
        "chat": "#agent option",
        "tree": 'li[data-path="core/sessions_sup"]',
        "sessions": "#viewer-note",
    }
    for page, shown in drawn.items():
        driver.get(f"{url}/ui/{page}")
        wait_until(driver, lambda d, shown=shown: d.find_elements(_by("CSS_SELECTOR"), shown))
        actions = {e.get_attribute("data-action") for e in driver.find_elements(_by("CSS_SELECTOR"), "[data-action]")}
        assert actions == {"logout"}, (page, actions)
    assert "operator role" in driver.find_element(_by("ID"), "viewer-note").text


async def test_the_console_in_a_browser(tmp_path: Path, browser: Any) -> None:
    hold = Hold()  # never released: only Stop ends that turn
    steps = [
        Reply(GREETING),
        Reply(tool_calls=(Call("bash", {"command": TOOL_COMMAND}, id="c1"),)),
        Reply("it ran"),
        hold,
    ]
    async with scripted_model(*steps) as model:
        config = _config(tmp_path, model)
        async with running_daemon(config, tmp_path / "home"):
            url = f"http://127.0.0.1:{_port(config)}"

            def drive() -> None:
                _log_in(browser, url)
                _chat(browser)
                _stop(browser, hold)
                session = _sessions(browser, url)
                _tree(browser, url, session)
                _log_out(browser, url)
                _viewer(browser, url)

            await trio.to_thread.run_sync(drive)  # each wait gives up after 30 s
    assert len(model.requests) == len(steps)
    assert not [e for e in script_errors(browser) if "favicon" not in e]
