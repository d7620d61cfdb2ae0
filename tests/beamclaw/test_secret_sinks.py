"""Every credential format, in every disguise, through every way out of a real daemon.

The user pastes the generated corpus (`tests.support.credentials`: 40+ formats, each
plain, JSON-escaped, inside a tool call's arguments, and as base64 or hex of a secret
the daemon holds in its environment) into a chat; the scripted model writes it to a
file as a tool argument, reads it back as a tool result and says it back, streamed and
not; an A2A client sends it too. Then no secret may be found in any reply, streamed
chunk, A2A response, stored history, database file, log line or event. The same again
with each prefixed format bare in prose (`bare_corpus`).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest
import trio

from tests.support.credentials import BARE_RULES, Credential, bare_corpus, credential_corpus, with_variants
from tests.support.model_server import Call, Reply, scripted_model

from .daemon import history, start_daemon, write_config

SEED = 11
#: Under the chat and A2A text caps, so every batch is accepted.
BATCH_CHARS = 12_000


def _batches(corpus: list[Credential]) -> list[str]:
    batches: list[str] = []
    current = ""
    for credential in corpus:
        if current and len(current) + len(credential.text) > BATCH_CHARS:
            batches.append(current)
            current = ""
        current += credential.text + "\n\n"
    return [*batches, current]


def _steps(batch: str, index: int) -> list[Reply]:
    """One chat turn (write the batch as a tool argument, read it back, say it), one
    streamed turn that says it, and the A2A turn that says it."""
    path = f"pasted-{index}.txt"
    return [
        Reply(tool_calls=(Call("write_file", {"path": path, "content": batch}, id=f"w{index}"),)),
        Reply(tool_calls=(Call("read_file", {"path": path}, id=f"r{index}"),)),
        Reply(f"Here is what you sent:\n{batch}"),
        Reply(f"Streamed back:\n{batch}"),
        Reply(f"Over A2A:\n{batch}"),
    ]


def _sse_text(body: str) -> str:
    text = []
    for line in body.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:]).get("choices", ()):
                text.append(choice.get("delta", {}).get("content") or "")
    return "".join(text)


async def _send_all(http: httpx.AsyncClient, batch: str, index: int) -> list[str]:
    """The batch through the three entrances; what each answered."""
    chat = {"model": "default", "user": "leaky", "messages": [{"role": "user", "content": batch}]}
    replies = []
    answer = await http.post("/v1/chat/completions", json=chat)
    assert answer.status_code == 200, answer.text
    replies.append(answer.text)
    streamed = await http.post("/v1/chat/completions", json={**chat, "stream": True})
    assert streamed.status_code == 200, streamed.text
    replies.append(_sse_text(streamed.text))
    message = {"messageId": f"m{index}", "role": "ROLE_USER", "parts": [{"text": batch}]}
    sent = await http.post(
        "/a2a", json={"jsonrpc": "2.0", "id": index, "method": "SendMessage", "params": {"message": message}}
    )
    assert sent.status_code == 200 and "result" in sent.json(), sent.text
    replies.append(sent.text)
    task_id = sent.json()["result"]["task"]["id"]
    got = await http.post("/a2a", json={"jsonrpc": "2.0", "id": index, "method": "GetTask", "params": {"id": task_id}})
    replies.append(got.text)
    listed = await http.post("/a2a", json={"jsonrpc": "2.0", "id": index, "method": "ListTasks", "params": {}})
    replies.append(listed.text)
    return replies


async def _every_way_out(tmp_path: Path, corpus: list[Credential], extra: str = "") -> dict[str, str]:
    """The corpus through a real daemon (`_steps` for each batch): every text that came out
    of it, by where it was found."""
    batches = _batches(corpus)
    home = tmp_path / "home"
    steps = [step for i, b in enumerate(batches) for step in _steps(b, i)]
    # The history outgrows the window: compaction's memory flush and summary take a reply
    # each (one with the batch in it), and the turns after them take the ones left.
    async with scripted_model(*steps, repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model, extra=extra)
        port = config.read_text().split("port = ")[1].split()[0]
        daemon = await start_daemon(config, home)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                outputs = [text for i, batch in enumerate(batches) for text in await _send_all(http, batch, i)]
            outputs.append(json.dumps(await history(home, "api:leaky")))
        finally:
            daemon.send_signal(signal.SIGTERM)
            with trio.fail_after(30):
                await daemon.wait()
        assert model.refusals == []

    assert "[REDACTED]" in outputs[0]
    sinks = {f"output {n}": text for n, text in enumerate(outputs)}
    sinks["what the model was sent"] = json.dumps(model.requests)
    memory = [path for path in home.glob("memory/**/*") if path.is_file()]  # kept.db, chunks, bm25, cache
    for path in [*home.glob("*.db*"), *home.glob("logs/*"), *home.glob("agents/**/memory/*"), *memory]:
        sinks[str(path.relative_to(home))] = path.read_bytes().decode(errors="replace")
    assert any(name.startswith("sessions.db") for name in sinks) and any(name.startswith("a2a.db") for name in sinks)
    return sinks


def _leaks(corpus: list[Credential], sinks: dict[str, str]) -> list[str]:
    return sorted({f"{c.name} in {sink}" for c in corpus for sink, text in sinks.items() if c.secret in text})


async def test_no_credential_survives_any_way_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = with_variants(credential_corpus(seed=SEED), seed=SEED)
    assert len({c.name.split("/")[0] for c in corpus}) >= 40
    for number, credential in enumerate(c for c in corpus if c.register):
        monkeypatch.setenv(f"LEAKY_SERVICE_{number}_TOKEN", credential.register)  # held by the daemon
    sinks = await _every_way_out(tmp_path, corpus)
    assert any(name.endswith("kept.db") for name in sinks)
    assert _leaks(corpus, sinks) == []


async def test_no_bare_credential_survives_any_way_out(tmp_path: Path) -> None:
    """Each prefixed format of `BARE_RULES` with no variable name before it, plain and
    inside a tool call's JSON arguments. The log is at DEBUG, where tool calls are logged
    with their arguments (the start of them: the obs tests put every format through the
    log backend)."""
    corpus = with_variants(bare_corpus(seed=SEED), kinds=("plain", "tool-call"), seed=SEED)
    assert {c.name.split("/")[0] for c in corpus} == {f"bare:{name}" for name in BARE_RULES}
    sinks = await _every_way_out(tmp_path, corpus, extra='[obs]\nlog_level = "DEBUG"\n')
    assert "[REDACTED]" in sinks["logs/beamclaw.log"]  # planted text reached the log, scrubbed
    assert _leaks(corpus, sinks) == []
