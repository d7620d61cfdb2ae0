"""Every prefixed credential format, bare in prose, through every way out of a real daemon.

The same run as `test_secret_sinks` (chat, streaming, a real write_file/read_file tool
call, A2A, the SQLite stores, the log files, what the scripted model was sent), with
`bare_corpus`: each format of `BARE_RULES` with no variable name before it, plain and
inside a tool call's JSON arguments. No planted value may come out anywhere. The log
is at DEBUG, where tool calls are logged with their arguments (the start of them: the
obs tests put every format through the log backend).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import trio

from tests.support.credentials import BARE_RULES, bare_corpus, with_variants
from tests.support.model_server import Reply, scripted_model

from .daemon import control, start_daemon, write_config
from .test_secret_sinks import _batches, _send_all, _steps

SEED = 13


async def test_no_bare_credential_survives_any_way_out(tmp_path: Path) -> None:
    corpus = with_variants(bare_corpus(seed=SEED), kinds=("plain", "tool-call"), seed=SEED)
    assert {c.name.split("/")[0] for c in corpus} == {f"bare:{name}" for name in BARE_RULES}
    batches = _batches(corpus)
    home = tmp_path / "home"
    steps = [step for i, b in enumerate(batches) for step in _steps(b, i)]
    async with scripted_model(*steps, repeat=Reply("ok")) as model:
        config = write_config(tmp_path, model, extra='[obs]\nlog_level = "DEBUG"\n')  # tool arguments logged
        port = config.read_text().split("port = ")[1].split()[0]
        daemon = await start_daemon(config, home)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                outputs = [text for i, batch in enumerate(batches) for text in await _send_all(http, batch, i)]
            history = await control(home, {"cmd": "history", "user": "api:leaky", "agent": "default"})
            outputs.append(json.dumps(history))
        finally:
            daemon.send_signal(signal.SIGTERM)
            with trio.fail_after(30):
                await daemon.wait()
        assert model.refusals == []

    assert "[REDACTED]" in outputs[0]
    sinks = {f"output {n}": text for n, text in enumerate(outputs)}
    sinks["what the model was sent"] = json.dumps(model.requests)
    for path in [*home.glob("*.db*"), *home.glob("logs/*"), *home.glob("memory/**/*")]:
        if path.is_file():
            sinks[str(path.relative_to(home))] = path.read_bytes().decode(errors="replace")
    assert any(name.startswith("sessions.db") for name in sinks) and any(name.startswith("a2a.db") for name in sinks)
    assert "[REDACTED]" in sinks["logs/beamclaw.log"]  # planted text reached the log, scrubbed
    leaks = sorted({f"{c.name} in {sink}" for c in corpus for sink, text in sinks.items() if c.secret in text})
    assert leaks == []
