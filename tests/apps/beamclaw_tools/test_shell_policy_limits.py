"""The deny list never hangs: hostile sizes and depths get a clear refusal, honest big commands pass."""

from __future__ import annotations

import pytest

from beamclaw_tools import check_command
from beamclaw_tools._shell_policy import MAX_CODE_DEPTH, MAX_COMMAND_CHARS, MAX_SYNTAX_DEPTH, MAX_SYNTAX_NODES


def test_a_command_over_the_size_limit_is_refused_unread() -> None:
    reason = check_command("echo " + "a" * MAX_COMMAND_CHARS)
    assert reason is not None and "longer than" in reason


def test_a_large_here_document_writing_a_file_is_allowed() -> None:
    body = "\n".join(f"line {i}: some text, with 'quotes' and $dollars" for i in range(500))
    command = f"cat > data.txt <<'EOF'\n{body}\nEOF"
    assert len(command) < MAX_COMMAND_CHARS
    assert check_command(command) is None


def test_deeply_nested_substitutions_are_refused_as_too_deep() -> None:
    command = "echo " + "$(echo " * 2000 + "x" + ")" * 2000
    reason = check_command(command)
    assert reason is not None and "levels of syntax" in reason


def test_deeply_nested_subshells_are_refused_as_too_deep() -> None:
    reason = check_command("(" * (MAX_SYNTAX_DEPTH + 10) + "ls" + ")" * (MAX_SYNTAX_DEPTH + 10))
    assert reason is not None and "levels of syntax" in reason


def test_code_nested_in_code_is_followed_to_a_bound() -> None:
    command = "ls"
    for level in range(MAX_CODE_DEPTH + 2):
        # Quoted at the first levels; then bare (each quoting level triples the length).
        command = "eval " + ("'" + command.replace("'", "'\\''") + "'" if level < 4 else command)
    assert len(command) < MAX_COMMAND_CHARS
    reason = check_command(command)
    assert reason is not None and "levels deep" in reason


def test_code_nested_within_the_bound_is_judged() -> None:
    assert check_command("bash -c \"sh -c 'eval ls'\"") is None
    assert check_command("bash -c \"sh -c 'eval sudo'\"") == "'sudo' privilege escalation"


@pytest.mark.parametrize(
    "garbage",
    [
        "$(" * 40_000,
        "(" * 90_000,
        "{ " * 40_000,
        '"$(' * 30_000,
        "`" * 90_000,
        "if x; then " * 8_000,
        "$((" * 30_000,
        "{a," * 30_000,
        "cat <<A <<B <<C\n" * 5_000,
        "".join("$(){}[]<>|&;'\"`\\ \nabc=#!*?~"[(i * 7919) % 26] for i in range(90_000)),
    ],
    ids=["subst", "parens", "braces", "quoted-subst", "backquotes", "ifs", "arith", "brace-exp", "heredocs", "noise"],
)
def test_pathological_input_gets_a_clear_refusal(garbage: str) -> None:
    reason = check_command(garbage)
    assert reason is not None
    assert any(word in reason for word in ("cannot be parsed", "levels", "longer than", "cannot be checked"))


def test_many_ordinary_commands_in_one_script_are_checked_in_full() -> None:
    script = "ls -la; " * 3_500 + "sudo id"
    assert len(script) < MAX_COMMAND_CHARS
    assert check_command(script) == "'sudo' privilege escalation"
    assert check_command("ls -la; " * 3_500) is None


def test_too_many_commands_in_one_call_are_refused() -> None:
    script = "a;" * (MAX_SYNTAX_NODES // 3)
    assert len(script) < MAX_COMMAND_CHARS
    reason = check_command(script)
    assert reason is not None and "syntax nodes" in reason


def test_inline_python_too_deep_for_its_parser_is_refused() -> None:
    reason = check_command("python3 -c '" + "(" * 5_000 + "1" + ")" * 5_000 + "'")
    assert reason is not None and "Python" in reason


def test_a_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="command must be a str"):
        check_command(b"ls")  # type: ignore[arg-type]
