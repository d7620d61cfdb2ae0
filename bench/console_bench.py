"""The web console measured through a real daemon and a real browser: how soon the Tree
page shows a crash, and a chat turn through the console's route beside the same turn
through /v1/chat/completions.

    python -m bench.console_bench [--quick]

The daemon is the real one (``python -m beamclaw run``), answering from the scripted
OpenAI-compatible model server in this process; the browser is Debian's headless
Chromium, driven by Selenium and logged in to the console with an admin token.

  crash  a conversation's loop killed (POST /v1/supervision/kill), 20 times over four
         conversations (a conversation's supervisor allows 5 restarts in 10 s); the
         time from just before the kill request to the moment the Tree page's DOM shows
         the loop's new restart count. An observer inside the page notes that moment on
         the page's clock, so how often the bench asks the browser adds nothing. The
         baseline, in the same run: the same kill seen as the ``supervision`` event of
         /v1/supervision/events by a plain HTTP client (the floor the page stands on).
  chat   the same short turn through the console's route (POST /v1/chat, its events
         read to the last, with the console's session cookie and CSRF token) and through
         POST /v1/chat/completions (streamed, with the admin token), interleaved, each in
         a conversation of its own: p50 and p99 of the whole turn, and the daemon's CPU
         per turn (user + system time of its process, from /proc).

Printed, and written to bench/results/console.json. Measured only, never asserted.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import httpx
import trio
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.beamclaw.daemon import free_port, start_daemon
from tests.support.browser import CHROMEDRIVER, CHROMIUM, WINDOW
from tests.support.model_server import Reply, scripted_model

from ._cli import quick_flag, save
from ._processes import cpu_seconds

_TOKEN_VARIABLE: Final = "BEAMCLAW_BENCH_CONSOLE_TOKEN"
_TOKEN: Final = "console-bench-admin-token-0123456789"
_ANSWER: Final = "The answer, with a sentence or two of text, as a short model reply would have. " * 2
#: Conversations whose loops take turns being killed: each sees a kill every fourth time.
_CONVERSATIONS: Final = 4
#: Seconds between kills: with four conversations, one kill of each every 4 s (its supervisor allows 5 in 10 s).
_KILL_SPACING: Final = 1.0
_T = TypeVar("_T")

#: Installed in the Tree page before a kill: reads the restart count the page shows for
#: the loop at path arguments[0] and notes (on the page's clock, epoch milliseconds, in
#: ``window.benchSeenAt``) the first moment it shows one more; answers the count read.
_WATCH: Final = """
const count = () => {
  const node = document.querySelector(`li[data-path="${arguments[0]}"] > .node .restarts`);
  return node === null ? null : Number(node.dataset.count);
};
const before = count();
window.benchSeenAt = null;
const observer = new MutationObserver(() => {
  if (count() === before + 1) {
    window.benchSeenAt = performance.timeOrigin + performance.now();
    observer.disconnect();
  }
});
observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
return before;
"""


def _config_text(model_url: str, port: int) -> str:
    return (
        f'[core]\ndefault_provider = "scripted"\nautonomy_level = "full"\n'
        f'[core.providers.scripted]\nbase_url = "{model_url}"\nmodel = "scripted-model"\n'
        f"[gateway.http]\nport = {port}\n[gateway.rate_limit]\nrequests = 1000000\n"
        f'[gateway.auth.tokens.bench]\nrole = "admin"\ntoken = {{ env = "{_TOKEN_VARIABLE}" }}\n'
        "[memory]\nenabled = false\n"
    )


@attrs.define
class _Daemon:
    url: str
    process: trio.Process

    def cpu_seconds(self) -> float:
        """User + system time of the daemon's process so far."""
        return cpu_seconds(self.process.pid)


@asynccontextmanager
async def _daemon(base: Path, model_url: str) -> AsyncIterator[_Daemon]:
    port = free_port()
    config = base / "config.toml"
    config.write_text(_config_text(model_url, port), encoding="utf-8")
    process = await start_daemon(config, base / "home", base / "daemon.log", timeout=120)
    try:
        yield _Daemon(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        await process.wait()


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1e3, 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3, 1),
        "max_ms": round(ordered[-1] * 1e3, 1),
    }


def _admin(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {_TOKEN}"}, timeout=60)


async def _open_conversations(http: httpx.AsyncClient) -> list[str]:
    """Conversations with a running loop (one turn each): their ids."""
    ids = []
    for n in range(_CONVERSATIONS):
        body = {"model": "default", "user": f"tree{n}", "messages": [{"role": "user", "content": "hello"}]}
        (await http.post("/v1/chat/completions", json=body)).raise_for_status()
        listed = (await http.get("/v1/sessions", params={"limit": 100})).json()["sessions"]
        ids.append(next(s["id"] for s in listed if s["user_id"] == f"api:tree{n}"))
    return ids


async def _restarts_streamed(
    url: str,
    seen: trio.MemorySendChannel[tuple[str, float]],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Send (the restarted child's supervisor, epoch seconds read) for each restart event of
    /v1/supervision/events, once subscribed."""
    async with _admin(url) as http, http.stream("GET", "/v1/supervision/events", timeout=None) as response:
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and name == "ready":
                task_status.started()
            elif line.startswith("data:") and name == "supervision":
                event = json.loads(line[5:])
                if event["kind"] == "restart" and event["child_id"] == "loop":
                    await seen.send((event["supervisor"], time.time()))


async def _in_browser(call: Callable[..., _T], *args: Any) -> _T:
    return await trio.to_thread.run_sync(call, *args)


async def _crashes(daemon: _Daemon, kills: int) -> dict[str, Any]:
    page, stream = [], []
    async with _admin(daemon.url) as http, trio.open_nursery() as nursery:
        ids = await _open_conversations(http)
        send, receive = trio.open_memory_channel[tuple[str, float]](100)
        await nursery.start(_restarts_streamed, daemon.url, send)
        with _chromium() as browser:
            await _in_browser(_log_in, browser, daemon.url)
            await _in_browser(browser.get, f"{daemon.url}/ui/tree")
            for n in range(kills):
                session = ids[n % len(ids)]
                path = f"core/sessions_sup/{session}/loop"
                with trio.fail_after(30):  # the page draws the tree (again, after the last kill)
                    while await _in_browser(browser.execute_script, _WATCH, path) is None:
                        await trio.sleep(0.05)
                while receive.statistics().current_buffer_used:  # restarts of an earlier kill
                    receive.receive_nowait()
                started = time.time()
                (await http.post("/v1/supervision/kill", json={"path": path})).raise_for_status()
                with trio.fail_after(30):
                    supervisor, streamed = await receive.receive()
                    while supervisor != f"session:{session}":
                        supervisor, streamed = await receive.receive()
                    while (seen := await _in_browser(browser.execute_script, "return window.benchSeenAt")) is None:
                        await trio.sleep(0.05)
                stream.append(streamed - started)
                page.append(seen / 1e3 - started)
                await trio.sleep(_KILL_SPACING)
        nursery.cancel_scope.cancel()
    return {"kills": kills, "tree_page": _ms(page), "events_stream": _ms(stream)}


@contextmanager
def _chromium() -> Iterator[Any]:
    """Debian's headless Chromium through its chromedriver (the test's browser's paths and window)."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def _log_in(browser: Any, url: str) -> None:
    """Log *browser* in to the console with the admin token, as a person would."""
    browser.get(f"{url}/ui/login")
    browser.find_element("id", "token").send_keys(_TOKEN)
    browser.find_element("css selector", '[data-action="login"]').click()


async def _console_log_in(http: httpx.AsyncClient) -> None:
    """Give *http* the console's session cookie, and its CSRF token and Origin on every
    request, as the console's scripts send them."""
    http.headers["Origin"] = str(http.base_url).rstrip("/")
    login = await http.post("/ui/login", data={"token": _TOKEN})
    assert login.status_code == 303, login.text  # to the chat page, with the cookie
    page = (await http.get("/ui/chat")).text
    http.headers["X-CSRF-Token"] = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]


async def _console_turn(http: httpx.AsyncClient, text: str) -> float:
    """A turn through POST /v1/chat, its events read to the last (``reply``): when (the
    `time.perf_counter` reading) its ``final`` event, the whole reply's text, came."""
    body = {"text": text, "user": "console", "channel": "console"}
    final = None
    async with http.stream("POST", "/v1/chat", json=body) as response:
        response.raise_for_status()
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and name == "final":
                final = time.perf_counter()
            elif line.startswith("data:") and name == "reply":
                assert json.loads(line[5:])["ok"] and final is not None, line
                return final
    raise AssertionError("the console's chat stream ended without a reply event")


async def _completions_turn(http: httpx.AsyncClient, text: str) -> float:
    """The same turn through POST /v1/chat/completions, streamed, read to ``[DONE]``: when
    (the `time.perf_counter` reading) its last text came, which is then."""
    body = {"model": "default", "user": "completions", "stream": True, "messages": [{"role": "user", "content": text}]}
    async with http.stream("POST", "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.strip() == "data: [DONE]":
                return time.perf_counter()
    raise AssertionError("the completions stream ended without [DONE]")


async def _chats(daemon: _Daemon, rounds: int) -> dict[str, Any]:
    """Each route's turns: to the whole text (``text``) and to the stream's end (``turn``)."""
    timings: dict[str, dict[str, list[float]]] = {"console": {"text": [], "turn": []},
                                                  "completions": {"text": [], "turn": []}}  # fmt: skip
    cpu = dict.fromkeys(timings, 0.0)
    async with httpx.AsyncClient(base_url=daemon.url, timeout=60) as console, _admin(daemon.url) as api:
        await _console_log_in(console)
        turns: dict[str, Callable[[str], Awaitable[float]]] = {
            "console": functools.partial(_console_turn, console),
            "completions": functools.partial(_completions_turn, api),
        }
        for turn in turns.values():  # warm: each conversation opened, the model connection made
            await turn("warm up")
        for n in range(rounds):  # interleaved, so a noisy neighbour hits both alike
            for name, turn in turns.items():
                before, started = daemon.cpu_seconds(), time.perf_counter()
                text_at = await turn(f"message {n}")
                timings[name]["turn"].append(time.perf_counter() - started)
                timings[name]["text"].append(text_at - started)
                cpu[name] += daemon.cpu_seconds() - before
    return {
        name: {
            "turn": _ms(values["turn"]),
            "text": _ms(values["text"]),
            "daemon_cpu_ms_per_turn": round(cpu[name] / rounds * 1e3, 2),
        }
        for name, values in timings.items()
    } | {"rounds": rounds}


async def _main(quick: bool) -> dict[str, Any]:
    os.environ[_TOKEN_VARIABLE] = _TOKEN
    async with scripted_model(repeat=Reply(_ANSWER)) as model:
        model.keep_requests = False
        with tempfile.TemporaryDirectory(prefix="bc-console-") as tmp:
            async with _daemon(Path(tmp), model.base_url) as daemon:
                return {
                    "cpus": os.cpu_count(),
                    "crash": await _crashes(daemon, 4 if quick else 20),
                    "chat": await _chats(daemon, 20 if quick else 200),
                }


_CRASH_LABELS: Final = {"tree_page": "the Tree page in Chromium", "events_stream": "the events stream (baseline)"}
_CHAT_LABELS: Final = {
    "console": "POST /v1/chat (the console's route)",
    "completions": "POST /v1/chat/completions (streamed)",
}


def main() -> None:
    result = trio.run(_main, quick_flag(__doc__))
    crash, chat = result["crash"], result["chat"]
    print(f"a {result['cpus']}-core machine: the daemon, the browser and the model server share its cores")
    crashes = f"crash -> shown ({crash['kills']} kills of a conversation's loop)"
    print(f"{crashes:46} {'p50':>7}  {'p99':>7}  {'max':>7}   (ms)")
    for name, label in _CRASH_LABELS.items():
        figures = crash[name]
        print(f"  {label:44} {figures['p50_ms']:7.1f}  {figures['p99_ms']:7.1f}  {figures['max_ms']:7.1f}")
    turns = f"chat turn ({chat['rounds']} each, interleaved)"
    print(f"{turns:46} {'text p50':>8}  {'end p50':>7}  {'end p99':>7}  {'daemon CPU/turn':>15}   (ms)")
    for name, label in _CHAT_LABELS.items():
        text, turn, cpu = chat[name]["text"], chat[name]["turn"], chat[name]["daemon_cpu_ms_per_turn"]
        print(f"  {label:44} {text['p50_ms']:8.1f}  {turn['p50_ms']:7.1f}  {turn['p99_ms']:7.1f}  {cpu:15.2f}")
    ratio = chat["console"]["turn"]["p50_ms"] / chat["completions"]["turn"]["p50_ms"]
    print(f"  the console's p50 to the stream's end over the completions p50: {ratio:.2f}x")
    save("console", result)


if __name__ == "__main__":
    main()
