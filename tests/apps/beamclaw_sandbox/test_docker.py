"""Docker code execution against a real engine: the container's limits, the exec tool,
scopes, crashes and restarts, the bridge from inside the container, PII through it, the
reaper. Skipped, saying why, when no engine answers."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

import beamclaw_sandbox as sandbox
import supervision as sv
from beamclaw_obs import ObsEvent
from beamclaw_sandbox._docker import LABEL_BOOT, LABEL_INSTANCE, LABEL_KEY, LABEL_SANDBOX
from beamclaw_sandbox._reaper import reap
from beamclaw_sandbox._sandbox import ExecRequest, ExecResult
from beamclaw_tools import ToolContext, ToolError, ToolSession, tool_definitions

from .conftest import RealTools
from .docker_support import IMAGE, container_exists, docker_client, need_docker, sandbox_app, sandbox_name


@pytest.fixture(autouse=True)
def _docker() -> None:
    need_docker()


def _session(sid: str = "s1", agent: str = "default") -> ToolSession:
    return ToolSession(sid, agent, f"local:{sid}")


def _context(home: Path, agent: str = "default", call_tool: Any = None) -> ToolContext:
    workspace = home / "agents" / agent
    workspace.mkdir(parents=True, exist_ok=True)
    return ToolContext(workspace=workspace, data_dir=home, call_tool=call_tool)


async def _exec(runtime: Any, code: str, *, key: str = "session:s1", language: str = "python", **kw: Any) -> ExecResult:
    via = await sandbox.ensure_sandbox(key, kw.pop("workspace", None))
    request = ExecRequest(language, code, kw.pop("timeout", 20.0), kw.pop("call_tool", None), kw.pop("tools", ()))  # type: ignore[arg-type]
    return await sv.call(via, request, timeout=90)


async def test_the_container_is_locked_down_as_the_reference_says(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with sandbox_app(home, pids_limit=64, cpu_limit="0.5") as runtime:
        await sandbox.ensure_sandbox("session:s1", None)
        name = sandbox_name(runtime, "session:s1")
        client = docker_client()
        try:
            attrs = client.api.inspect_container(name)
        finally:
            client.close()
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"] and not host["Privileged"]
        assert host["ReadonlyRootfs"] is True
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Memory"] == 128 << 20 and host["MemorySwap"] == 128 << 20
        assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 64
        assert "/tmp" in host["Tmpfs"]
        assert attrs["Config"]["User"] == "1000:1000"
        labels = attrs["Config"]["Labels"]
        assert labels[LABEL_SANDBOX] == "1" and labels[LABEL_INSTANCE] == runtime.instance
        assert labels[LABEL_BOOT] == runtime.boot and labels[LABEL_KEY] == "session:s1"


async def test_limits_hold_inside_the_container(tmp_path: Path) -> None:
    async with sandbox_app(tmp_path / "home", pids_limit=48) as runtime:
        who = await _exec(runtime, "id -u; grep CapEff /proc/self/status; touch /etc/x; touch /tmp/ok && echo tmp ok",
                          language="shell")  # fmt: skip
        assert who.stdout.splitlines()[:2] == ["1000", "CapEff:\t0000000000000000"]
        assert "Read-only file system" in who.stderr and "tmp ok" in who.stdout

        net = await _exec(runtime, """
import socket, os
print(sorted(os.listdir('/sys/class/net')))
for target in [('1.1.1.1', 53), ('172.17.0.1', 2375)]:
    try:
        socket.create_connection(target, timeout=2)
        print('connected', target)
    except OSError as exc:
        print('refused', target, exc.errno)
""")  # fmt: skip
        assert net.stdout.splitlines()[0] == "['lo']", net
        assert "connected" not in net.stdout and net.stdout.count("refused") == 2

        memory = await _exec(runtime, "x = bytearray(512 * 1024 * 1024); print('allocated', len(x))")
        assert memory.exit_code == 137 and "allocated" not in memory.stdout  # killed at the 128m limit

        pids = await _exec(runtime, """
import os, time
children, error = [], None
for _ in range(100):
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.errno
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    children.append(pid)
print(len(children), error)
for pid in children:
    os.kill(pid, 9)
""")  # fmt: skip
        forked, error = pids.stdout.split()
        assert int(forked) < 48 and error == "11", pids  # EAGAIN at the pids limit

        # After all that, the same container still answers.
        again = await _exec(runtime, "print('still here')")
        assert again.stdout == "still here\n"


async def test_no_api_key_reaches_the_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test0123456789abcdefghij")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw")
    monkeypatch.setenv("LANG", "C.UTF-8")
    async with sandbox_app(tmp_path / "home") as runtime:
        result = await _exec(runtime, "import os, json; print(json.dumps(dict(os.environ)))")
        env = json.loads(result.stdout)
        assert "OPENAI_API_KEY" not in env and "TELEGRAM_BOT_TOKEN" not in env
        assert not any("sk-test" in v or "AAHdq" in v for v in env.values())
        assert env["LANG"] == "C.UTF-8" and env["HOME"] == "/tmp"


async def test_the_exec_tool_runs_python_and_shell_in_a_warm_container(tmp_path: Path) -> None:
    home = tmp_path / "home"
    events: list[ObsEvent] = []
    async with sandbox_app(home, events, workspace_mount="rw") as runtime:
        tool = sandbox.ExecTool(runtime.config)
        context = _context(home)
        if os.getuid() == 0:  # a root daemon's containers run as uid 1000: the workspace must let it write
            os.chown(context.workspace, 1000, 1000)
        (context.workspace / "data.csv").write_text("a,b\n1,2\n3,4\n")
        first = await tool.execute(
            {"code": "import csv\nrows = list(csv.DictReader(open('/workspace/data.csv')))\n"
                     "print(sum(int(r['b']) for r in rows))\nopen('/tmp/state', 'w').write('kept')"},
            _session(), context,
        )  # fmt: skip
        assert not first.is_error and first.text.splitlines()[1] == "6", first.text
        name = sandbox_name(runtime, "session:s1")
        second = await tool.execute(
            {"language": "shell", "code": "cat /tmp/state; echo; echo made > /workspace/out.txt; exit 3"},
            _session(), context,
        )  # fmt: skip
        assert second.is_error and second.text.startswith("exit code 3") and "kept" in second.text
        assert sandbox_name(runtime, "session:s1") == name  # the same warm container
        assert (context.workspace / "out.txt").read_text() == "made\n"
        await trio.sleep(0.1)
        kinds = [e.name for e in events]
        assert kinds.count("sandbox_created") == 1 and kinds.count("sandbox_exec") == 2
        exec_event = next(e for e in events if e.name == "sandbox_exec")
        assert exec_event.data["name"] == name and exec_event.data["exit_code"] == 0


async def test_a_script_that_worked_is_saved_as_a_skill_and_runs_again_by_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with sandbox_app(home) as runtime:
        tool = sandbox.ExecTool(runtime.config)
        context = attrs.evolve(_context(home), single_user=True)
        save = {"name": "sum-up", "description": "Adds the numbers 0 to 9"}
        failed = await tool.execute({"code": "raise SystemExit(2)", "save_as": save}, _session(), context)
        assert failed.is_error and not (context.workspace / "skills" / "sum-up").exists()  # only what worked
        first = await tool.execute({"code": "print(sum(range(10)))", "save_as": save}, _session(), context)
        assert not first.is_error and "saved as the skill 'sum-up'" in first.text, first.text
        again = await tool.execute({"skill": "sum-up"}, _session("s2"), context)
        assert not again.is_error and again.text.splitlines()[1] == "45", again.text
        with pytest.raises(ToolError, match="already a skill folder skills/sum-up"):  # checked before it runs
            await tool.execute({"code": "print(1)", "save_as": save}, _session(), context)


async def test_a_read_only_workspace_cannot_be_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with sandbox_app(home, workspace_mount="ro") as runtime:
        context = _context(home)
        (context.workspace / "notes.md").write_text("hello")
        result = await sandbox.ExecTool(runtime.config).execute(
            {"language": "shell", "code": "cat /workspace/notes.md; echo; echo x > /workspace/notes.md"},
            _session(), context,
        )  # fmt: skip
        assert "hello" in result.text and "Read-only file system" in result.text
        assert (context.workspace / "notes.md").read_text() == "hello"


async def test_scopes_decide_which_sessions_share_a_container(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for scope, expected in (("session", 3), ("agent", 2), ("shared", 1)):
        async with sandbox_app(home, scope=scope) as runtime:
            tool = sandbox.ExecTool(runtime.config)
            for sid, agent in (("s1", "ada"), ("s2", "ada"), ("s3", "bob")):
                result = await tool.execute({"code": "print(1)"}, _session(sid, agent), _context(home, agent))
                assert not result.is_error, result.text
            assert len(await sandbox.list_sandboxes()) == expected, scope


async def test_a_crashed_sandbox_takes_its_container_and_comes_back_with_a_new_one(tmp_path: Path) -> None:
    events: list[ObsEvent] = []
    async with sandbox_app(tmp_path / "home", events) as runtime:
        await _exec(runtime, "open('/tmp/mark', 'w').write('1')")
        via = runtime.registry.via("session:s1")
        old_pid, old_name = via.whereis(), sandbox_name(runtime, "session:s1")
        with pytest.raises(sv.ProcessExited):
            await sv.call(via, ("no such request",))  # a crash in handle_call
        with trio.fail_after(30):
            while sum(e.name == "sandbox_created" for e in events) < 2:
                await trio.sleep(0.05)
        assert via.whereis() not in (None, old_pid)
        new_name = sandbox_name(runtime, "session:s1")
        assert new_name != old_name
        assert not container_exists(old_name) and container_exists(new_name)
        fresh = await _exec(runtime, "import os; print(os.path.exists('/tmp/mark'))")
        assert fresh.stdout == "False\n"  # a new container, not the old one
        # Killed outright (cancelled, no terminate): the container still goes.
        sv.kill(via.whereis())
        with trio.fail_after(30):
            while sum(e.name == "sandbox_created" for e in events) < 3:
                await trio.sleep(0.05)
        assert sandbox_name(runtime, "session:s1") != new_name and not container_exists(new_name)


async def test_kill_and_app_stop_remove_every_container(tmp_path: Path) -> None:
    async with sandbox_app(tmp_path / "home") as runtime:
        await _exec(runtime, "print(1)", key="session:a")
        await _exec(runtime, "print(1)", key="session:b")
        a, b = sandbox_name(runtime, "session:a"), sandbox_name(runtime, "session:b")
        assert await sandbox.kill_sandbox("session:a") == a
        assert await sandbox.kill_sandbox("no-such") is None
        assert not container_exists(a) and container_exists(b)
        assert [s["key"] for s in await sandbox.list_sandboxes()] == ["session:b"]
        status = await sandbox.sandbox_status()
        assert status["image_built"] and status["sandboxes"] == 1 and status["engine"]
    assert not container_exists(b)


async def test_a_script_timeout_is_reported_and_the_sandbox_carries_on(tmp_path: Path) -> None:
    async with sandbox_app(tmp_path / "home", max_output_bytes=1000) as runtime:
        slow = await _exec(runtime, "import time\nprint('start', flush=True)\ntime.sleep(60)", timeout=2)
        assert slow.timed_out and slow.stdout == "start\n"
        loud = await _exec(runtime, "print('x' * 100_000)")
        assert loud.truncated and len(loud.stdout) == 1000
        assert (await _exec(runtime, "print('ok')")).stdout == "ok\n"


async def test_a_script_calls_tools_through_the_bridge_under_the_policy(tmp_path: Path, real_tools: RealTools) -> None:
    home = tmp_path / "home"
    rules = [{"action": "deny", "tool": "bash"}, {"action": "deny", "tool": "write_*"}]
    policy = {"default_action": "allow", "rules": rules}
    async with sandbox_app(home, policy=policy) as runtime:
        (real_tools.context.workspace / "numbers.json").write_text(json.dumps(list(range(10))))
        script = """
import json
print(open('/tools/index.txt').read().strip())
print([t['name'] for t in search_tools('json')])
numbers = json.loads(call_tool('read_file', path='numbers.json'))
print('sum', sum(numbers))
for name, args in [('bash', {'command': 'id'}), ('write_file', {'path': 'x', 'content': 'y'})]:
    try:
        call_tool(name, **args)
    except BridgeError as exc:
        print('refused', name, exc.code)
"""
        result = await _exec(runtime, script, call_tool=real_tools, tools=await tool_definitions())
        lines = result.stdout.splitlines()
        assert result.exit_code == 0, result.stderr
        index = [line for line in lines if ": " in line]
        assert {line.split(":")[0] for line in index} >= {"read_file", "jq"}
        assert not any(line.startswith(("bash:", "write_file:", "exec:")) for line in index)
        assert "sum 45" in lines
        assert "refused bash -32001" in lines and "refused write_file -32001" in lines
        assert [name for name, _ in real_tools.seen] == ["read_file"]  # the denied calls never ran
        assert result.bridge_calls == 1 and result.bridge_denied == 2
        assert not (real_tools.context.workspace / "x").exists()


async def test_a_shell_script_reaches_the_bridge_too(tmp_path: Path, real_tools: RealTools) -> None:
    async with sandbox_app(tmp_path / "home") as runtime:
        (real_tools.context.workspace / "a.txt").write_text("from the host\n")
        result = await _exec(runtime, "python3 -m beamclaw_bridge call read_file '{\"path\": \"a.txt\"}'",
                             language="shell", call_tool=real_tools, tools=await tool_definitions())  # fmt: skip
        assert "from the host" in result.stdout, result


async def test_the_exec_tool_passes_the_loops_dispatcher_to_the_bridge(tmp_path: Path, real_tools: RealTools) -> None:
    home = tmp_path / "home"
    async with sandbox_app(home) as runtime:
        context = _context(home, call_tool=real_tools)
        (real_tools.context.workspace / "n.txt").write_text("41")
        result = await sandbox.ExecTool(runtime.config).execute(
            {"code": "print(int(call_tool('read_file', path='n.txt')) + 1)"}, _session(), context
        )
        assert result.text.splitlines()[1] == "42", result.text
        no_dispatcher = await sandbox.ExecTool(runtime.config).execute(
            {"code": "call_tool('read_file', path='n.txt')"}, _session(), _context(home)
        )
        assert no_dispatcher.is_error and "-32003" in no_dispatcher.text


_EMAILS = ["ada@example.com", "grace.hopper@navy.mil", "linus+kernel@example.org"]


async def test_pii_never_enters_the_container_and_round_trips(tmp_path: Path, real_tools: RealTools) -> None:
    """Property style (seeded): values in the script reach the container as tokens, reach
    tools as values, and come back to the model as the same tokens."""
    rng = random.Random(10)
    async with sandbox_app(tmp_path / "home") as runtime:
        for _ in range(3):
            values = [*rng.sample(_EMAILS, 2), rng.choice(["+44 20 7946 0958", "(415) 555-2671"])]
            script = (
                f"values = {values!r}\n"
                "print(open(__file__).read().count(chr(64)))\n"  # at-signs in what the container was given
                "import json\n"
                "print(json.dumps(values))\n"
                "print(call_tool('write_file', path='out.json', content=json.dumps(values)))\n"
            )
            result = await _exec(runtime, script, call_tool=real_tools, tools=await tool_definitions())
            assert result.exit_code == 0, result.stderr
            lines = result.stdout.splitlines()
            assert lines[0] == "0"  # no address inside the container
            shown = json.loads(lines[1])
            assert all(v not in result.stdout for v in values)
            written = json.loads((real_tools.context.workspace / "out.json").read_text())
            assert written == values  # the tool got the real values
            assert len(set(shown)) == len(values) and all(s.startswith("PII_") for s in shown)
        # Stable across execs: the same value, the same token.
        first = await _exec(runtime, "print('ada@example.com')")
        second = await _exec(runtime, "print('ada@example.com')")
        assert first.stdout == second.stdout and first.stdout.startswith("PII_EMAIL_")


async def test_the_reaper_removes_orphans_of_this_daemon_only(tmp_path: Path) -> None:
    events: list[ObsEvent] = []
    async with sandbox_app(tmp_path / "home", events) as runtime:
        await _exec(runtime, "print(1)")
        live = sandbox_name(runtime, "session:s1")
        client = docker_client()
        try:
            orphan = client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, labels={
                LABEL_SANDBOX: "1", LABEL_INSTANCE: runtime.instance, LABEL_BOOT: "an-earlier-boot", LABEL_KEY: "k",
            }, network_mode="none")  # fmt: skip
            other = client.containers.run(IMAGE, ["sleep", "infinity"], detach=True, labels={
                LABEL_SANDBOX: "1", LABEL_INSTANCE: "another-daemon", LABEL_BOOT: "x",
            }, network_mode="none")  # fmt: skip
            try:
                reaped = await reap(runtime)
                assert reaped == [orphan.name]
                assert not container_exists(orphan.name)
                assert container_exists(other.name) and container_exists(live)
            finally:
                other.remove(force=True)
        finally:
            client.close()
        await trio.sleep(0.1)
        assert [e.data["name"] for e in events if e.name == "sandbox_reaped"] == [orphan.name]


async def test_the_reaper_stops_idle_sandboxes(tmp_path: Path) -> None:
    async with sandbox_app(tmp_path / "home", idle_timeout_seconds=0.5) as runtime:
        await _exec(runtime, "print(1)")
        name = sandbox_name(runtime, "session:s1")
        started = time.monotonic()
        while time.monotonic() - started < 0.6:
            await trio.sleep(0.1)
        assert await reap(runtime) == [name]
        assert await sandbox.list_sandboxes() == [] and not container_exists(name)


async def test_a_missing_image_is_a_tool_error_that_names_the_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with sandbox_app(home, docker_image="beamclaw-sandbox:never-built") as runtime:
        with pytest.raises(ToolError, match="beamclaw sandbox build"):
            await sandbox.ExecTool(runtime.config).execute({"code": "print(1)"}, _session(), _context(home))


async def test_the_docker_jail_runs_each_command_in_a_fresh_locked_down_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test0123456789abcdefghij")
    home = tmp_path / "home"
    workspace = home / "agents" / "default"
    skills = home / "skills" / "demo"
    for folder in (workspace / "sub", skills):
        folder.mkdir(parents=True)
    (skills / "run.sh").write_text("echo skill ran\n")
    if os.getuid() == 0:  # a root daemon's containers run as uid 1000: the workspace must let it write
        for folder in (workspace, workspace / "sub"):
            os.chown(folder, 1000, 1000)
    async with sandbox_app(home) as runtime:
        jail = (await sandbox.session_jails(_session()))["docker"]
        assert jail.backend == "docker" and await jail.check() is None
        script = (
            "pwd; echo made > here.txt; bash " + str(skills / "run.sh") + "; touch " + str(skills / "x") +
            " 2>&1 | grep -o 'Read-only file system'; touch /etc/x 2>&1 | grep -o 'Read-only file system';"
            " echo key=${OPENAI_API_KEY:-none}; cat /sys/class/net/*/operstate | wc -l"
        )  # fmt: skip
        result = await jail.run(
            ["bash", "-c", script], workspace=workspace, cwd=workspace / "sub", timeout=20, output_limit=10_000,
            readonly=[skills],
        )  # fmt: skip
        lines = result.stdout.decode().splitlines()
        assert result.exit_code == 0, result
        assert lines[:2] == [str(workspace / "sub"), "skill ran"]
        assert lines[2:4] == ["Read-only file system"] * 2 and lines[4] == "key=none" and lines[5] == "1"  # lo only
        assert (workspace / "sub" / "here.txt").read_text() == "made\n"

        slow = await jail.run(["sleep", "30"], workspace=workspace, timeout=1, output_limit=100)
        assert slow.timed_out and slow.exit_code is None
        loud = await jail.run(["python3", "-c", "print('x' * 5000)"], workspace=workspace, timeout=20, output_limit=100)
        assert loud.truncated and b"bytes left out" in loud.stdout and len(loud.stdout) < 200
        client = docker_client()
        try:
            left = client.api.containers(all=True, filters={"label": f"{LABEL_INSTANCE}={runtime.instance}"})
        finally:
            client.close()
        assert left == []  # every command's container is gone
