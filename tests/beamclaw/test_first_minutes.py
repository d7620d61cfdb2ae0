"""What a new user trips on in the first minutes, driven through the real commands:
finding a conversation, reloading a key, a typo in --agent, the output of each
command, and slow failures that say what is going on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import trio

from tests.support.model_server import Reply, Status, scripted_model

from .daemon import cli, free_port, running_daemon, write_config


async def test_sessions_name_a_conversation_for_history_kill_and_the_tree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model, running_daemon(write_config(tmp_path, model), home):
        assert (await cli(home, "chat", "hi")).returncode == 0
        assert (await cli(home, "chat", "hi from bob", "--user", "local:bob")).returncode == 0
        listed = (await cli(home, "sessions")).stdout.decode()
        header, *rows = listed.splitlines()
        assert header.split() == ["ID", "USER", "AGENT", "CHANNEL", "MESSAGES", "LAST", "ACTIVITY", "CONTEXT", "STATE"]
        by_user = {row.split()[1]: row.split() for row in rows}
        assert set(by_user) == {"local:ada", "local:bob"}
        ada = by_user["local:ada"]
        assert ada[2:5] == ["default", "cli", "2"] and ada[-1] == "running" and len(ada[0]) > 12  # whole, into a pipe

        # history and kill take what `sessions` prints.
        shown = (await cli(home, "history", ada[0][:8])).stdout.decode()
        assert shown.splitlines() == [f"session {ada[0][:12]}  local:ada → default", "user: hi", "assistant: hello"]
        tree = json.loads((await cli(home, "tree", "--json")).stdout)
        (sessions,) = [c for c in tree["children"] if c["id"] == "core"]
        (sup,) = [c for c in sessions["children"] if c["id"] == "sessions_sup"]
        labels = sorted(c["label"] for c in sup["children"])
        assert labels == ["local:ada → default (cli)", "local:bob → default (cli)"]
        killed = await cli(home, "kill", f"{ada[0][:8]}/loop")
        assert killed.returncode == 0 and f"core/sessions_sup/{ada[0]}".encode() in killed.stdout

        unknown = await cli(home, "kill", "0bad0bad/loop")
        assert unknown.returncode == 1 and b"names no app" in unknown.stderr
        assert b"and no session (`beamclaw sessions` lists them)" in unknown.stderr
        # A trailing slash names no process: nothing is killed.
        refused = await cli(home, "kill", "core/sessions_sup/")
        assert refused.returncode == 1 and b"ends with '/': name one process below it" in refused.stderr
        assert "sessions running: 2" in (await cli(home, "status")).stdout.decode()

        # Piped, the tree is one node per line, never wrapped; the session's label is on its line.
        drawn = (await cli(home, "tree")).stdout.decode()
        assert any(line.count("local:ada → default (cli)") == 1 and ada[0][:12] in line for line in drawn.splitlines())
        assert all("restarts=" in line for line in drawn.splitlines())

        # After /new, history says so instead of printing nothing.
        assert (await cli(home, "chat", "/new")).stdout == b"new conversation (2 messages forgotten)\n"
        empty = (await cli(home, "history")).stdout.decode()
        assert "no messages yet" in empty


async def test_a_typo_in_agent_creates_no_agent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model(repeat=Reply("hello")) as model:
        config = write_config(tmp_path, model)
        async with running_daemon(config, home):
            typo = await cli(home, "chat", "--agent", "nosuchagent", "hi")
            assert typo.returncode == 1
            assert b"there is no agent 'nosuchagent'" in typo.stderr + typo.stdout
            assert b"beamclaw agent create nosuchagent" in typo.stderr + typo.stdout
            assert not (home / "agents" / "nosuchagent").exists()
            assert (await cli(home, "agent", "create", "ops")).returncode == 0
            assert (await cli(home, "chat", "--agent", "ops", "hi")).returncode == 0
    assert sorted(p.name for p in (home / "agents").iterdir()) == ["ops"]


async def test_reload_takes_a_key_from_the_shell_and_a_new_config_keeping_conversations(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("from the first model")) as first,
        scripted_model(repeat=Reply("from the second model")) as second,
    ):
        config = write_config(tmp_path, first)
        text = config.read_text().replace(
            'model = "scripted-model"\n', 'model = "scripted-model"\napi_key = { env = "MY_MODEL_KEY" }\n'
        )
        config.write_text(text)
        async with running_daemon(config, home) as daemon:
            missing = await cli(home, "chat", "hi", env={"MY_MODEL_KEY": ""})
            said = (missing.stdout + missing.stderr).decode()
            assert missing.returncode == 1 and "MY_MODEL_KEY" in said and "beamclaw reload" in said

            reloaded = await cli(home, "reload", env={"MY_MODEL_KEY": "key-from-the-shell-0123456789"})
            out = reloaded.stdout.decode()
            assert reloaded.returncode == 0 and f"reloaded {config}" in out and "MY_MODEL_KEY" in out
            assert (await cli(home, "chat", "hi again")).stdout == b"from the first model\n"
            assert first.headers[-1]["authorization"] == "Bearer key-from-the-shell-0123456789"

            # A new model in the file: core takes it in place, the conversation goes on.
            config.write_text(text.replace(first.base_url, second.base_url))
            out = (await cli(home, "reload")).stdout.decode()
            assert "applied in place (conversations go on): core" in out
            assert (await cli(home, "chat", "and now?")).stdout == b"from the second model\n"
            history = (await cli(home, "history")).stdout.decode()
            assert "user: hi again" in history and "user: and now?" in history

            # SIGHUP reloads too; a broken file is refused and changes nothing.
            config.write_text(text.replace("[core]", '[core]\nautonomy_level = "reckless"'))
            refused = await cli(home, "reload")
            assert refused.returncode == 1 and b"reload refused" in refused.stderr
            daemon.send_signal(signal.SIGHUP)
            await trio.sleep(0.5)
            assert daemon.poll() is None
            assert (await cli(home, "chat", "still?")).stdout == b"from the second model\n"

            # A new port: the gateway is restarted on it, the conversations are not touched.
            port = free_port()
            config.write_text(text.replace(first.base_url, second.base_url).replace("port = ", f"port = {port}\n#"))
            out = (await cli(home, "reload")).stdout.decode()
            assert "restarted with their new settings: gateway" in out
            status = (await cli(home, "status")).stdout.decode()
            assert f"gateway: http://127.0.0.1:{port}" in status and f"configuration: {config}" in status
            assert "model: scripted-model from provider 'scripted'" in status


async def test_the_start_up_log_names_the_config_the_model_and_the_gateway(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with scripted_model() as model:
        config = write_config(tmp_path, model)
        env = {**os.environ, "BEAMCLAW_HOME": str(home)}
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "beamclaw", "run", "--config", str(config)], env=env, stderr=subprocess.PIPE
        )
        assert process.stderr is not None
        seen = b""
        with trio.fail_after(30):
            while b"gateway listening" not in seen:
                seen += await process.stderr.receive_some()
        process.send_signal(signal.SIGTERM)
        await process.wait()
    line = next(line for line in seen.decode().splitlines() if "BeamClaw starting" in line)
    assert f"BeamClaw starting with {config}" in line
    assert f"model scripted-model from provider 'scripted' at {model.base_url}" in line
    assert "gateway http://127.0.0.1:" in line


async def test_the_output_of_each_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    version = await cli(home, "--version")
    assert version.returncode == 0 and version.stdout.startswith(b"beamclaw ")
    helped = await cli(home, "help", "tree")
    assert helped.returncode == 0 and b"examples:" in helped.stdout and b"beamclaw tree --watch" in helped.stdout
    skills = await cli(home, "skills")
    assert skills.returncode == 0 and b"git-digest" in skills.stdout
    await cli(home, "agent", "create", "ops")
    shown = (await cli(home, "agent", "show", "ops")).stdout.decode()
    assert shown.rstrip().endswith("name          not chosen yet (IDENTITY.md)")
    async with scripted_model(repeat=Reply("hello")) as model, running_daemon(write_config(tmp_path, model), home):
        await trio.sleep(1.2)
        killed = await cli(home, "kill", "obs")  # the app restarts; the daemon's uptime does not
        assert killed.returncode == 0
        await trio.sleep(0.3)
        status = (await cli(home, "status")).stdout.decode()
        uptime = status.split(" up ", 1)[1].split(" s", 1)[0]
        assert int(uptime) >= 1


async def test_a_model_that_is_down_is_retried_with_progress_and_a_bad_url_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(Status(503), Status(503), Reply("finally")) as model,
        running_daemon(write_config(tmp_path, model), home),
    ):
        done = await cli(home, "chat", "hi")
        assert done.returncode == 0 and done.stdout == b"finally\n"
        notes = done.stderr.decode().splitlines()  # into a pipe: one line per retry
        assert len(notes) == 2 and all("trying again in" in n for n in notes), notes
        assert "(attempt 2 of 4)" in notes[0] and "(attempt 3 of 4)" in notes[1]
    bad = tmp_path / "bad.toml"
    bad.write_text('[core]\ndefault_provider = "x"\n[core.providers.x]\nbase_url = "127.0.0.1:11434"\nmodel = "m"\n')
    ran = await cli(home, "run", "--config", str(bad))
    assert ran.returncode == 2 and b"not an http:// or https:// URL" in ran.stderr


async def test_the_echo_model_of_the_first_steps_serves_echo(tmp_path: Path) -> None:
    """The README's `python -m tests.support.model_server --port PORT`, then `model = "echo"`."""
    port = free_port()
    server = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.support.model_server", "--port", str(port)], stdout=subprocess.PIPE
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/v1") as client:
            with trio.fail_after(120):
                while True:
                    try:
                        listed = (await client.get("/models")).json()
                        break
                    except httpx.TransportError:
                        await trio.sleep(0.1)
            assert [model["id"] for model in listed["data"]] == ["echo"]
            body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
            answer = (await client.post("/chat/completions", json=body)).json()
            assert answer["choices"][0]["message"]["content"] == "You said: hi"
    finally:
        server.kill()
        await server.wait()


async def test_a_hostile_reply_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """A reply's escape sequences (clipboard write, screen clear, a carriage return that
    overwrites the line) are printed written out by `chat` and `history`, never obeyed."""
    home = tmp_path / "home"
    hostile = "ok\x1b]52;c;cHduZWQ=\x07\x1b[2J\rfake prompt \u202eexe.txt"
    async with scripted_model(repeat=Reply(hostile)) as model, running_daemon(write_config(tmp_path, model), home):
        chatted = (await cli(home, "chat", "hi")).stdout.decode()
        shown = (await cli(home, "history")).stdout.decode()
    written_out = "ok\\x1b]52;c;cHduZWQ=\\x07\\x1b[2Jfake prompt \\u202eexe.txt"
    assert chatted == written_out + "\n"
    assert shown.splitlines()[-1] == f"assistant: {written_out}"
    for output in (chatted, shown):
        assert not any(c in output for c in "\x1b\x07\r\u202e")
