"""The deny list reads commands as bash does: whatever real bash would run, the policy has seen.

A stub ``sudo`` on PATH leaves a mark when it runs. Each command below hides ``sudo`` in
some syntax; real bash runs it, and then the policy must have refused the command. A
disagreement between the parser and bash (there were several, in here-documents, line
continuations and touching words) shows up here as a command the policy allowed and
bash ran. The commands are fixed (no fork bombs), and each runs in its own session,
killed whole afterwards, unprivileged when the tests run as root.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from beamclaw_tools import check_command

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")

NAMES = ["sudo", "s\\udo", "'s'udo", "$'\\x73udo'", "sud\\\no", "$(echo sudo)"]
TEMPLATES = [
    "{}",
    "ls; {}",
    "true && {}",
    "false || {}",
    "echo $({})",
    'echo "$({})"',
    "echo `{}`",
    "( {} )",
    "{{ {}; }}",
    "if true; then {}; fi",
    "for i in 1; do {}; done",
    "case x in x) {};; esac",
    "f() {{ {}; }}; f",
    "cat <({})",
    "x=$({})",
    "echo ${{x:-$({})}}",
    "[[ $({}) ]]",
    "echo $(( $({}) ))",
    "{} | cat",
    "echo | {}",
    "! {}",
    "eval '{}'",
    "bash -c '{}'",
    'sh -c "{}"',
    "env {}",
    "nice {}",
    "timeout 5 {}",
    "command {}",
    "exec {}",
    "trap '{}' EXIT",
    "xargs {} </dev/null",
    "find . -maxdepth 0 -exec {} \\;",
    "bash <<'EOF'\n{}\nEOF",
    "cat <<EOF\n$({})\nEOF",
    "cat <<-EOF\n\t$({})\n\tEOF",
    "time {}",
    "echo x >$({})",
    "> out {}",
    "X=1 {}",
    'cat <<< "$({})"',
    "while {}; do break; done",
    "# c\n{}",
    "echo a;{}",
    "bash <<< '{}'",
    '. /dev/stdin <<< "{}"',
    'source <(echo "{}")',
    'echo "{}" | bash',
    "a=( $({}) )",
    "declare x=$({})",
    "echo ${{x[$({})]}}",
    "echo \\\n;{}",
    "env -S '{}'",
]
COMMANDS = sorted({t.format(n + " id") for t, n in itertools.product(TEMPLATES, NAMES)})


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:  # not under pytest's 0700 base: the runs may be unprivileged
        root = Path(name)
        (root / "bin").mkdir()
        (root / "work").mkdir()
        (root / "marks").mkdir()
        stub = root / "bin" / "sudo"
        stub.write_text('#!/bin/sh\ntouch "$MARK"\n')
        for path, mode in (
            (root, 0o755),
            (root / "bin", 0o755),
            (stub, 0o755),
            (root / "work", 0o777),
            (root / "marks", 0o777),
        ):
            path.chmod(mode)
        yield root


def _bash_runs_sudo(command: str, root: Path, index: int = 0) -> bool:
    mark = root / "marks" / str(index)
    unprivileged = {"user": 65534, "group": 65534, "extra_groups": []} if os.getuid() == 0 else {}
    process = subprocess.Popen(
        ["prlimit", "--nproc=64", "--cpu=5", "bash", "-c", command]
        if shutil.which("prlimit")
        else ["bash", "-c", command],
        cwd=root / "work",
        env={"PATH": f"{root / 'bin'}:/usr/bin:/bin", "HOME": str(root / "work"), "MARK": str(mark)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        **unprivileged,  # type: ignore[arg-type]
    )
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return mark.exists()


def test_the_stub_marks_a_plain_run(sandbox: Path) -> None:
    assert _bash_runs_sudo("sudo id", sandbox, -1)
    assert not _bash_runs_sudo("echo sudo id", sandbox, -2)


def test_whatever_bash_runs_the_policy_refused(sandbox: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(lambda job: _bash_runs_sudo(job[1], sandbox, job[0]), enumerate(COMMANDS, 1)))
    ran = [command for command, outcome in zip(COMMANDS, outcomes, strict=True) if outcome]
    missed = [command for command in ran if check_command(command) is None]
    assert not missed
    assert len(ran) > len(COMMANDS) // 2  # most of these really are ways to run sudo
