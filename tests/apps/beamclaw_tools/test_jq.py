"""`jq` runs the model's filter as hostile code: in a process of its own, empty environment,
limits, no module files, and the event loop never waits for it."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from beamclaw_tools import JqTool, ToolContext, ToolResult, ToolSession, run_tool
from beamclaw_tools._jq import _WORKER, module_directive, refusal


async def jq(tool: JqTool, program: str, text: str, context: ToolContext, session: ToolSession) -> ToolResult:
    return await run_tool(tool, {"filter": program, "input": text}, session, context)


# --- what still works -------------------------------------------------------------------


async def test_ordinary_filters_work(context: ToolContext, session: ToolSession) -> None:
    tool = JqTool()
    assert await jq(tool, ".[] | .n", '[{"n": 1}, {"n": "b"}]', context, session) == ToolResult('1\n"b"')
    assert await jq(tool, ".a", '{"a": "h\\u00e9 \\u2603 \U0001f600"}', context, session) == ToolResult('"hé ☃ 😀"')
    assert await jq(tool, "[.[] * 2] | add", "[1, 2.5]", context, session) == ToolResult("7")
    assert await jq(tool, ".", "1 2 3", context, session) == ToolResult("1\n2\n3")  # several inputs
    assert await jq(tool, "empty", "1", context, session) == ToolResult("")
    assert await jq(tool, '"import" | ascii_upcase', "null", context, session) == ToolResult('"IMPORT"')
    assert await jq(tool, "{import: 1} | .import", "null", context, session) == ToolResult("1")


async def test_errors_are_clear(context: ToolContext, session: ToolSession) -> None:
    tool = JqTool()
    bad_json = await jq(tool, ".", "{bad", context, session)
    assert bad_json.is_error and bad_json.text.startswith("jq: parse error")
    syntax = await jq(tool, ".[", "{}", context, session)
    assert syntax.is_error and syntax.text.startswith("jq: ") and "syntax error" in syntax.text
    runtime = await jq(tool, ".a + 1", '{"a": "x"}', context, session)
    assert runtime.is_error and "cannot be added" in runtime.text
    too_big = await jq(JqTool(max_input=10), ".", "[" + "1," * 10 + "1]", context, session)
    assert too_big.is_error and too_big.text == "input is 23 characters; the limit is 10"


async def test_output_is_capped(context: ToolContext, session: ToolSession) -> None:
    result = await jq(JqTool(output_limit=100), "repeat(1)", "null", context, session)  # endless outputs
    assert not result.is_error
    body, marker = result.text.rsplit("\n[", 1)
    assert len(body) <= 100 and set(body.split("\n")) == {"1"}
    assert marker == "... output truncated at 100 characters]"


# --- the environment ----------------------------------------------------------------------


async def test_the_environment_is_empty(
    context: ToolContext, session: ToolSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_GATEWAY_TOKEN", "gw-secret-0123456789")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-secret-0123456789")
    tool = JqTool()
    assert await jq(tool, "$ENV", "null", context, session) == ToolResult("{}")
    assert await jq(tool, "env", "null", context, session) == ToolResult("{}")
    assert await jq(tool, "$ENV | map_values(explode)", "null", context, session) == ToolResult("{}")
    assert await jq(tool, "$ENV.HOME, env.PATH", "null", context, session) == ToolResult("null\nnull")


# --- module files ---------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "x.json").write_text('{"secret": "outside-data-4242"}')
    (folder / "x.jq").write_text('def leak: "outside-code-4242";')
    return folder


@pytest.mark.parametrize(
    "program",
    [
        'import "x" as $d {search: "{dir}"}; $d',
        'include "x" {search: "{dir}"}; leak',
        'import "x" as m {search: "{dir}"}; m::leak',
        'module {a: 1}; import "x" as $d {search: "{dir}"}; $d',
        '  \n\t# a comment\n# another \\\\\nimport "x" as $d {search: "{dir}"}; $d',
        '#!/usr/bin/jq\r\nimport "x" as $d {search: "{dir}"}; $d',
        '"x" | modulemeta',
        "get_search_list",
        'def f: modulemeta; "x" | f',
    ],
)
async def test_module_files_are_refused(
    program: str, outside: Path, context: ToolContext, session: ToolSession
) -> None:
    result = await jq(JqTool(), program.replace("{dir}", str(outside)), "null", context, session)
    assert result.is_error and "not allowed" in result.text and "4242" not in result.text


def test_only_the_first_token_can_be_a_directive() -> None:
    """parser.y: ``TopLevel: Module Imports Query``; jq's lexer decides what the first token is."""
    assert module_directive('import "a" as $a; $a') == "import"
    assert module_directive('include "a"; .') == "include"
    assert module_directive("module {}; .") == "module"
    assert module_directive('# c\n  import "a" as $a; $a') == "import"
    assert module_directive('# c \\\n import "a" as $a; $a') is None  # still the comment, for jq too
    assert module_directive('# c \\\\\nimport "a" as $a; $a') == "import"  # an escaped backslash ends it
    assert module_directive('# c \\\r\n import "a" as $a; $a') is None
    assert module_directive("importx") is None
    assert module_directive("import::f") is None  # one IDENT token, longer than the keyword
    assert module_directive(".import") is None
    assert module_directive('"import"') is None
    assert module_directive("modulemeta") is None  # refused, but for another reason
    assert refusal("modulemeta") is not None and refusal(".a\x00") is not None
    assert refusal(".modules | .imported") is None


def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


@pytest.mark.skipif(not sys.platform.startswith("linux") or _landlock_abi() < 1, reason="no Landlock here")
def test_the_worker_cannot_open_files_even_if_a_directive_got_through(outside: Path) -> None:
    """Defence in depth: the worker itself, given an import the tool would have refused."""
    request = {"filter": f'import "x" as $d {{search: "{outside}"}}; $d', "input": "null", "output_limit": 1000}
    done = subprocess.run(
        [sys.executable, "-I", "-B", str(_WORKER), "5", str(256 << 20)],
        input=json.dumps(request).encode(),
        capture_output=True,
        env={},
        cwd=outside,
        check=True,
    )
    status, _, text = done.stdout.decode().partition("\n")
    assert status == "error" and "Permission denied" in text and "4242" not in text


# --- time and memory ---------------------------------------------------------------------------


@pytest.mark.parametrize("program", ["last(repeat(1))", "last(range(1e12))", "def f: f; f"])
async def test_a_filter_that_never_ends_is_killed(program: str, context: ToolContext, session: ToolSession) -> None:
    result = await jq(JqTool(timeout=1), program, "null", context, session)
    assert result == ToolResult("jq: timed out after 1 s", is_error=True)


async def test_the_event_loop_keeps_running_while_jq_burns(context: ToolContext, session: ToolSession) -> None:
    ticks_while_running = 0
    finished = False

    async def ticker() -> None:
        nonlocal ticks_while_running
        while not finished:
            await trio.sleep(0.01)
            if not finished:
                ticks_while_running += 1

    async def burn() -> None:
        nonlocal finished
        result = await jq(JqTool(timeout=2), "last(repeat(1))", "null", context, session)
        finished = True
        assert result.text == "jq: timed out after 2 s"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        nursery.start_soon(burn)
    # In the daemon's thread the library held the GIL: not one tick until it returned.
    assert ticks_while_running >= 20


@pytest.mark.parametrize("program", ["[range(1e9)]", '[limit(1e9; repeat("xxxxxxxxxxxxxxxx"))] | add'])
async def test_a_memory_bomb_is_stopped(program: str, context: ToolContext, session: ToolSession) -> None:
    result = await jq(JqTool(memory_mib=64, timeout=20), program, "null", context, session)
    assert result == ToolResult("jq: used more than 64 MiB", is_error=True)


async def test_a_crash_of_the_library_costs_only_its_process(context: ToolContext, session: ToolSession) -> None:
    # Converting a value nested this deep overflows the C stack of the binding.
    result = await jq(JqTool(timeout=20), "reduce range(300000) as $i (0; [.])", "null", context, session)
    assert result.is_error and result.text.startswith("jq: ")
    assert await jq(JqTool(), ".", "1", context, session) == ToolResult("1")  # and we are still here


async def test_cancelling_a_call_kills_its_worker(context: ToolContext, session: ToolSession) -> None:
    before = _workers()
    with trio.move_on_after(0.5):
        await jq(JqTool(timeout=30), "last(repeat(1))", "null", context, session)
    assert _workers() <= before


def _workers() -> int:
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                count += str(_WORKER) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    return count


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout must be more than 0"):
        JqTool(timeout=0)
