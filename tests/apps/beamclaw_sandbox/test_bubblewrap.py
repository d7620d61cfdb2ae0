"""The bubblewrap jail's walls, each tried from inside through the real `bash` tool.

The context is the one the agent loop builds: the jails come from the sandbox app's
running tree (`session_jails`). Every attack is written to a script in the workspace and
run with ``bash attack.sh``, as a model gets past the deny list (which never reads the
files a command runs), so these tests try the jail alone. Where it says so, a test also
runs the same script unjailed (``isolation = "none"``) to show that what it checks is
really there to reach: without the jail, the test would fail.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

import beamclaw_sandbox as sandbox
import supervision as sv
from beamclaw_tools import TerminalTool, ToolSession, run_tool
from tests.apps.beamclaw_sandbox.jail_support import SECRET_CHAT, SESSION, TABLE, Daemon, attack
from tests.support.bubblewrap import requires_bubblewrap

pytestmark = requires_bubblewrap()


def _host_processes(marker: str) -> list[int]:
    """Pids of the host's processes whose command line holds *marker*."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def _gone(marker: str, within: float = 5.0) -> bool:
    with trio.move_on_after(within):
        while _host_processes(marker):
            await trio.sleep(0.05)
        return True
    return False


# --- the daemon's environment and processes ----------------------------------------------


def _daemon_environment() -> list[str]:
    """The entries of this process's own environment block (what /proc/<pid>/environ shows)
    that a jail has no business having (the allowlisted names are left out)."""
    allowed = {"PATH", "HOME", "LANG", "TERM", "TMPDIR", "SHELL", "USER", "LOGNAME", "PWD", "SHLVL", "_"}
    entries = Path(f"/proc/{os.getpid()}/environ").read_bytes().decode(errors="replace").split("\0")
    return [e for e in entries if "=" in e and e.split("=", 1)[0] not in allowed and len(e.split("=", 1)[1]) >= 4]


async def test_the_daemons_environment_is_out_of_reach(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMCLAW_PLANTED_SECRET", "planted-value-5d1e")
    script = 'env; tr "\\0" "\\n" < /proc/1/environ; tr "\\0" "\\n" < /proc/$PPID/environ; cat /proc/*/environ\n'
    result = await attack(daemon, script)
    assert "planted-value-5d1e" not in result.text
    leaked = [entry for entry in _daemon_environment() if entry in result.text]
    assert leaked == []
    # Unjailed, the parent of the command is this process, and its environment is there to read.
    unjailed = await attack(daemon, script, isolation="none")
    assert _daemon_environment() == [] or any(entry in unjailed.text for entry in _daemon_environment())


async def test_the_jails_pid_1_has_an_empty_environment(daemon: Daemon) -> None:
    result = await attack(daemon, "echo ppid=$PPID; wc -c < /proc/1/environ\n")
    assert result.text == "exit code: 0\nppid=1\n0"


async def test_the_daemons_processes_are_out_of_reach(daemon: Daemon) -> None:
    pid = os.getpid()
    script = f"kill -TERM {pid}; echo kill=$?; kill -0 {pid}; echo alive=$?; ls /proc | grep -c '^[0-9]'\n"
    result = await attack(daemon, script)
    assert "kill=1" in result.text and "alive=1" in result.text and "No such process" in result.text
    visible = int(result.text.split("[stderr]")[0].strip().splitlines()[-1])
    assert visible <= 6  # bwrap's pid 1, bash, ls, grep: this jail's processes only
    unjailed = await attack(daemon, f"kill -0 {pid}; echo alive=$?\n", isolation="none")
    assert "alive=0" in unjailed.text


# --- the daemon's files -------------------------------------------------------------------


async def test_the_data_dir_and_its_database_are_out_of_reach(daemon: Daemon) -> None:
    script = (
        "ls -a ../..; ls -a ..\n"
        "sqlite3 ../../sessions.db .dump; echo sqlite=$?\n"
        f"cat {daemon.home}/sessions.db; grep -r passphrase {daemon.home} /tmp 2>/dev/null; true\n"
    )
    result = await attack(daemon, script)
    assert SECRET_CHAT not in result.text
    listing = result.text.split("sqlite")[0]
    assert "sessions.db" not in listing and "control.sock" not in listing and "other" not in listing
    unjailed = await attack(daemon, "sqlite3 ../../sessions.db .dump\n", isolation="none")
    assert SECRET_CHAT in unjailed.text


async def test_the_control_socket_is_out_of_reach(daemon: Daemon) -> None:
    client = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    s.connect(sys.argv[1]); print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
    )
    (daemon.workspace / "client.py").write_text(client)
    script = f"python3 client.py ../../control.sock; python3 client.py {daemon.home}/control.sock\n"
    result = await attack(daemon, script)
    assert result.text == "exit code: 0\nrefused FileNotFoundError\nrefused FileNotFoundError"
    unjailed = await attack(daemon, script, isolation="none")
    assert unjailed.text == "exit code: 0\nconnected\nconnected"


async def test_other_agents_workspaces_are_out_of_reach(daemon: Daemon) -> None:
    script = f"cat ../other/secret.txt {daemon.home}/agents/other/secret.txt; ls ..\n"
    result = await attack(daemon, script)
    assert "the other agent's notes" not in result.text
    assert result.text.split("[stderr]")[0].strip().splitlines()[1:] == ["default"]
    unjailed = await attack(daemon, script, isolation="none")
    assert "the other agent's notes" in unjailed.text


async def test_the_daemons_home_and_system_secrets_are_out_of_reach(daemon: Daemon) -> None:
    home = Path.home()
    if daemon.workspace.is_relative_to(home):
        pytest.skip(f"the test's workspace is inside {home}")
    script = f"ls -A {home} | head -3; echo home=$?; test -e /etc/shadow; echo shadow=$?; ls /run /var/run /sys 2>&1\n"
    result = await attack(daemon, script)
    assert "No such file or directory" in result.text and "shadow=1" in result.text
    assert re.search(rf"ls: cannot access '{re.escape(str(home))}'", result.text)


# --- network ------------------------------------------------------------------------------


_CONNECT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); print('connected')\n"
    "except OSError as exc:\n"
    "    print('failed', type(exc).__name__)\n"
)


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


async def test_loopback_listeners_are_out_of_reach(daemon: Daemon, listener: int) -> None:
    (daemon.workspace / "connect.py").write_text(_CONNECT)
    script = f"python3 connect.py {listener}; (echo hi > /dev/tcp/127.0.0.1/{listener}) 2>/dev/null; echo tcp=$?\n"
    result = await attack(daemon, script)
    assert result.text.startswith("exit code: 0\nfailed ConnectionRefusedError\ntcp=1")
    unjailed = await attack(daemon, script, isolation="none")
    assert "connected" in unjailed.text and "tcp=0" in unjailed.text


async def test_network_bridge_opens_the_network_on_purpose(daemon: Daemon, listener: int) -> None:
    jail = sandbox.BubblewrapJail(sandbox.parse_sandbox_config({"network": "bridge"}))
    opened = attrs.evolve(daemon, context=attrs.evolve(daemon.context, jails={"bubblewrap": jail}))
    (daemon.workspace / "connect.py").write_text(_CONNECT)
    result = await attack(opened, f"python3 connect.py {listener}\n")
    assert result.text == "exit code: 0\nconnected"


# --- the file system ----------------------------------------------------------------------


async def test_writes_outside_the_workspace_fail(daemon: Daemon) -> None:
    targets = ["/usr/x", "/etc/x", "/x", "/var/x", "/dev/x", str(Path.home() / "x")]
    script = "".join(f"touch {t} 2>/dev/null; echo {t}=$?\n" for t in targets)
    # The data dir's folders above the workspace: there (empty) only as the way to it. In
    # these tests they lie under /tmp, so a write lands in the jail's own /tmp, never here.
    script += f"touch {daemon.home}/x {daemon.home}/agents/x 2>/dev/null; true\n"
    result = await attack(daemon, script)
    assert result.text.splitlines()[1:] == [f"{t}=1" for t in targets]
    assert not (daemon.home / "x").exists() and not (daemon.home / "agents" / "x").exists()
    unjailed = await attack(daemon, f"touch {daemon.home}/x; echo $?\n", isolation="none")
    assert unjailed.text == "exit code: 0\n0" and (daemon.home / "x").exists()


async def test_kernel_settings_are_out_of_reach(daemon: Daemon) -> None:
    """A daemon run as root maps the jail's root to the host's: /proc/sys must not be writable
    (kernel.core_pattern would run a program of the workspace as the host's root)."""
    targets = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/printk_ratelimit", "/proc/sys/vm/drop_caches"]
    # Opened for appending and closed, nothing written: a regression must not change the host.
    script = "".join(f"(exec 3>>{t}) 2>/dev/null; echo {t}=$?\n" for t in targets)
    result = await attack(daemon, script)
    assert result.text.splitlines()[1:] == [f"{t}=1" for t in targets]


async def test_the_jail_has_no_capabilities(daemon: Daemon) -> None:
    result = await attack(daemon, "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status\n")
    assert [line.split()[1] for line in result.text.splitlines()[1:]] == ["0000000000000000"] * 3


async def test_the_workspace_is_writable_and_keeps_its_files(daemon: Daemon) -> None:
    await attack(daemon, "mkdir -p notes && echo kept > notes/a.txt && echo scratch > /tmp/b.txt\n")
    assert (daemon.workspace / "notes" / "a.txt").read_text() == "kept\n"
    again = await attack(daemon, "cat notes/a.txt; cat /tmp/b.txt 2>/dev/null || echo 'no /tmp/b.txt'\n")
    assert again.text == "exit code: 0\nkept\nno /tmp/b.txt"  # /tmp is each command's own


async def test_skill_folders_are_readable_and_not_writable(daemon: Daemon) -> None:
    skill = daemon.context.readonly_dirs[0] / "hello"
    result = await attack(daemon, f"bash {skill}/hello.sh; touch {skill}/x 2>/dev/null; echo write=$?\n")
    assert result.text == "exit code: 0\nhello from the skill\nwrite=1"


async def test_a_file_past_the_size_limit_is_cut(daemon: Daemon) -> None:
    result = await attack(daemon, "head -c 3M /dev/zero > big; echo status=$?\n")
    assert "status=153" in result.text or "File size limit exceeded" in result.text  # SIGXFSZ
    assert (daemon.workspace / "big").stat().st_size <= 1024 * 1024


# --- resources and time -------------------------------------------------------------------


#: RLIMIT_NPROC binds every user but root: the kernel lets root's processes past it even in a
#: user namespace (their user is root's), so the process limit holds for a daemon run as an
#: unprivileged user (as the systemd unit does), not for one run as root.
needs_non_root = pytest.mark.skipif(
    os.geteuid() == 0, reason="run as root: the kernel exempts root from RLIMIT_NPROC (pids_limit)"
)


@needs_non_root
async def test_a_process_storm_stops_at_the_process_limit(daemon: Daemon) -> None:
    script = "for i in $(seq 1 300); do sleep 30.5151 & done 2>/dev/null\necho running=$(ls /proc | grep -c '^[0-9]')\n"
    result = await attack(daemon, script)
    running = int(result.text.split("running=")[1].split()[0])
    assert running <= TABLE["pids_limit"] + 2  # type: ignore[operator]
    assert await _gone("30.5151")  # and they died with the jail


@needs_non_root  # as root nothing would bound it but the timeout: not on a shared machine
async def test_a_fork_bomb_is_contained_and_killed(daemon: Daemon) -> None:
    result = await attack(daemon, "bomb() { bomb | bomb & }; bomb; sleep 2.7373\n", timeout=3)
    assert result.is_error
    assert await _gone("attack.sh")


async def test_whatever_a_command_starts_dies_with_it(daemon: Daemon) -> None:
    """Processes that left the command's session and process group (setsid, double fork)
    still die with the jail: they are in its pid namespace."""
    script = "setsid sleep 77.3131 & (sleep 77.3131 &) ; nohup sleep 77.3131 >/dev/null 2>&1 & echo started\n"
    result = await attack(daemon, script)
    assert result.text == "exit code: 0\nstarted"
    assert await _gone("77.3131")


async def test_runaway_memory_is_stopped(daemon: Daemon) -> None:
    script = "python3 -c 'b = bytearray(2 * 1024**3); print(\"allocated\")'; echo status=$?\n"
    result = await attack(daemon, script)
    assert "MemoryError" in result.text and "allocated" not in result.text.replace("status", "")


async def test_a_command_that_runs_for_ever_is_killed_with_every_child(daemon: Daemon) -> None:
    result = await attack(daemon, "sleep 1000.4242 & sleep 1000.4242\n", timeout=1)
    assert result.is_error and "timed out after 1 s" in result.text
    assert await _gone("1000.4242")


async def test_a_command_may_run_longer_than_trios_idle_thread_lifetime(daemon: Daemon) -> None:
    """--die-with-parent kills bwrap when the *thread* that forked it exits; trio's idle
    worker threads exit after 10 s, so a command spawned from one would die then."""
    result = await attack(daemon, "sleep 11.5; echo survived\n", timeout=30)
    assert result.text == "exit code: 0\nsurvived"


async def test_no_new_user_namespaces_inside(daemon: Daemon) -> None:
    result = await attack(daemon, "unshare --user --map-root-user true; echo unshare=$?\n")
    assert "unshare=1" in result.text


async def _jailing_process(tmp_path: Path, marker: str) -> trio.Process:
    """Another process that runs ``sleep MARKER`` in a jail on the workspace ``tmp_path/ws``."""
    (tmp_path / "ws").mkdir()
    program = (
        "import sys, trio\n"
        "from pathlib import Path\n"
        "from beamclaw_sandbox import BubblewrapJail, parse_sandbox_config\n"
        "async def main():\n"
        "    jail = BubblewrapJail(parse_sandbox_config({}))\n"
        "    await jail.run(['sleep', sys.argv[2]], workspace=Path(sys.argv[1]), timeout=100, output_limit=100)\n"
        "trio.run(main)\n"
    )
    return await trio.lowlevel.open_process([sys.executable, "-c", program, str(tmp_path / "ws"), marker])


async def test_the_jail_dies_with_the_daemon(tmp_path: Path) -> None:
    """kill -9 of the process that started a jail takes the jail down with it."""
    process = await _jailing_process(tmp_path, "1000.9191")
    try:
        with trio.fail_after(20):
            while not _host_processes("1000.9191"):
                await trio.sleep(0.05)
    finally:
        process.kill()
        await process.wait()
    assert await _gone("1000.9191")


# --- the terminal, and the loop's wiring ---------------------------------------------------


async def test_the_terminal_is_jailed_too(daemon: Daemon) -> None:
    terminal = TerminalTool()
    await run_tool(terminal, {"command": "mkdir -p sub && cd sub"}, SESSION, daemon.context)
    result = await run_tool(terminal, {"command": f"pwd; ls -a {daemon.home}"}, SESSION, daemon.context)
    assert result.text.splitlines()[1] == str(daemon.workspace / "sub")
    assert "sessions.db" not in result.text


async def test_the_jails_process_serves_every_session_the_same_bubblewrap_jail(daemon: Daemon) -> None:
    other = await sandbox.session_jails(ToolSession("s2", "other", "local:bob"))
    assert other["bubblewrap"] is daemon.context.jails["bubblewrap"]


async def test_with_the_sandbox_app_down_there_are_no_jails() -> None:
    assert await sandbox.session_jails(SESSION) == {}


async def test_a_cancelled_call_kills_its_jail(daemon: Daemon) -> None:
    """A loop that crashes or is stopped mid-command leaves nothing running."""
    with trio.move_on_after(1):
        await attack(daemon, "sleep 500.8181 & sleep 500.8181\n", timeout=60)
    assert await _gone("500.8181")


# --- the files that shape the prompt -------------------------------------------------------

#: Each line tries to change a prompt file or folder and says BROKE if it could.
PROMPT_ATTACKS = [
    "echo planted >> MEMORY.md",
    ": > AGENTS.md",
    "rm -f HEARTBEAT.md",
    "mv MEMORY.md moved.md",
    "ln -sf /etc/passwd MEMORY.md",
    "ln MEMORY.md hard.md",
    "cp attack.sh IDENTITY.md",
    "mv notes.txt SOUL.md",
    "echo planted > USER.md",
    "truncate -s 0 TOOLS.md",
    "chmod 666 MEMORY.md",
    "echo planted > memory/2030-01-02.md",
    "echo planted >> memory/2030-01-01.md",
    "mv memory gone",
    "rm -rf memory",
    "mkdir -p skills/evil && echo planted > skills/evil/SKILL.md",
    "rm -rf skills",
]


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(folder.rglob("*"))
        if p.name not in {"attack.sh", "notes.txt"}
    }


async def test_a_jailed_command_cannot_change_what_enters_the_prompt(daemon: Daemon) -> None:
    """The outside attack: after /always for bash, a command wrote MEMORY.md, AGENTS.md or
    HEARTBEAT.md and reached every user's prompt unasked."""
    ws = daemon.workspace
    for name in ("IDENTITY.md", "SOUL.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md", "HEARTBEAT.md"):
        (ws / name).write_text(f"{name} as the operator wrote it\n")
    (ws / "memory").mkdir()
    (ws / "memory" / "2030-01-01.md").write_text("a log line\n")
    (ws / "notes.txt").write_text("an ordinary file\n")
    assert not (ws / "USER.md").exists()
    script = "".join(f"{line} 2>/dev/null && echo BROKE: {line!r}\n" for line in PROMPT_ATTACKS)
    script += "echo ordinary >> notes.txt && mkdir -p work && echo ok > work/new.txt && echo WROTE\n"
    before = {**_tree(ws), "USER.md": ""}  # a missing prompt file is made empty, never by the command
    result = await attack(daemon, script)
    assert "BROKE" not in result.text, result.text
    assert "WROTE" in result.text  # the rest of the workspace stays writable
    after = _tree(ws)
    assert {k: v for k, v in after.items() if not k.startswith(("work", "skills"))} == {
        k: v for k, v in before.items() if not k.startswith("work")
    }
    assert after["skills"] == "<dir>" and not any(k.startswith("skills/") for k in after)
    assert (ws / "notes.txt").read_text() == "an ordinary file\nordinary\n"
    # Without the jail the same script does change them: the walls are what stops it.
    unjailed = await attack(daemon, "echo planted >> MEMORY.md && echo BROKE\n", isolation="none")
    assert "BROKE" in unjailed.text


async def test_a_prompt_file_that_is_a_link_stops_the_jail_with_the_fix(daemon: Daemon) -> None:
    (daemon.workspace / "MEMORY.md").symlink_to("notes.txt")
    result = await attack(daemon, "echo should-not-run\n")
    assert result.is_error and "MEMORY.md in the workspace is not a regular file" in result.text
    assert "should-not-run" not in result.text


async def test_an_etc_copy_left_by_a_kill_9_is_removed_at_the_next_start(tmp_path: Path) -> None:
    process = await _jailing_process(tmp_path, "1000.7373")
    pattern = f"beamclaw-jail-etc-{process.pid}-*"
    try:
        with trio.fail_after(20):  # the copy is made before the jail starts
            while not (copies := list(Path(tempfile.gettempdir()).glob(pattern))):
                await trio.sleep(0.05)
        (left,) = copies
    finally:
        process.kill()  # SIGKILL: no atexit runs
        await process.wait()
    assert left.is_dir()
    mine = sandbox.BubblewrapJail(sandbox.parse_sandbox_config({}))
    result = await mine.run(["true"], workspace=tmp_path / "ws", timeout=20, output_limit=100)
    assert result.exit_code == 0
    assert not left.exists()
    assert list(Path(tempfile.gettempdir()).glob(f"beamclaw-jail-etc-{os.getpid()}-*"))  # its own is kept


async def test_the_sandbox_app_removes_a_dead_daemons_etc_copy_when_it_starts(tmp_path: Path) -> None:
    gone = await trio.lowlevel.open_process(["true"])
    await gone.wait()  # its pid is nobody's now
    left = Path(tempfile.mkdtemp(prefix=f"beamclaw-jail-etc-{gone.pid}-"))
    (left / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    async with sv.open_supervisor(sandbox.supervision_tree({}, tmp_path)):
        assert not left.exists()  # at the start, before any command


def test_the_guarded_names_are_the_prompt_files_core_reads() -> None:
    import beamclaw_core as core
    from beamclaw_sandbox._prompt_guard import PROMPT_FILES

    assert set(PROMPT_FILES) == set(core.SEEDED_FILES)
