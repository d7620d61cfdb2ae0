"""The deny list on adversarial text: runs of quotes, ``$(``, backslashes, ``a=``, nested
substitutions, up to the length cap. Every pattern it applies is RE2 (linear time), so
these assert verdicts only, never how long a check took."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamclaw_tools import check_command
from beamclaw_tools._shell_policy import MAX_COMMAND_CHARS

SUDO = "'sudo' privilege escalation"
PROC = "the command reads another process's memory, environment or files under /proc"
TOO_LONG = f"the command is longer than {MAX_COMMAND_CHARS} characters (put long scripts in a file)"
SPLICE = "a backslash-newline joins two pieces of one word (a command name could be spliced)"

# Pieces that make regex engines and parsers work hard, none a tripwire by itself.
PIECES = ["'", '"', "\\", "$(", ")", "`", "a=", "$", "{", "}", ",", "..", ";", " ", "\n", "\t", "x", "(", "|", "&"]
hostile_text = st.lists(st.sampled_from(PIECES), max_size=400).map("".join)
adversarial = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _expected_for_quoted(text: str) -> set[str | None]:
    # A backslash-newline is refused wherever it stands (even in quotes): a conservative
    # rule of the checker, since tree-sitter and bash may read one differently.
    return {None, SPLICE} if "\\\n" in text else {None}


@adversarial
@given(hostile_text)
def test_any_text_in_single_quotes_is_an_argument(text: str) -> None:
    assert check_command("echo " + shlex.quote(text)) in _expected_for_quoted(text)


@adversarial
@given(hostile_text)
def test_a_denied_command_after_any_quoted_text_is_still_found(text: str) -> None:
    verdict = check_command("echo " + shlex.quote(text) + " ; sudo id")
    assert verdict == SUDO or ("\\\n" in text and verdict == SPLICE)


@adversarial
@given(hostile_text)
def test_hostile_text_as_the_command_itself_never_hides_sudo(text: str) -> None:
    # Whatever the text does to the parser, sudo at the end is refused or the whole is.
    verdict = check_command(text + "\nsudo id")
    assert verdict is not None


@adversarial
@given(st.integers(min_value=0, max_value=MAX_COMMAND_CHARS // 2 - 20))
def test_assignments_before_a_command(n: int) -> None:
    assert check_command("a=" * n + " sudo id") == SUDO
    assert check_command("a=" * n + " ls") is None


@adversarial
@given(st.integers(min_value=1, max_value=MAX_COMMAND_CHARS - 20))
def test_runs_of_backslashes(n: int) -> None:
    assert check_command("echo " + "\\" * n + " ; sudo id") == SUDO
    assert check_command("echo " + "\\" * (n - n % 2)) is None


@adversarial
@given(st.integers(min_value=1, max_value=300))
def test_nested_substitutions_are_followed_or_refused_as_too_deep(depth: int) -> None:
    for opening, closing in (("$(echo x ", ")"), ('"$(echo x ', ')"'), ("`echo x ", "`")):
        command = "echo " + opening * depth + "$(true; sudo id)" + closing * depth
        verdict = check_command(command)
        assert verdict == SUDO or "levels" in str(verdict) or (closing == "`" and verdict is not None), command[:80]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo " + "\\" * 24_000, None),  # was 8.4 s of backtracking
        ("echo " + "\\" * 23_999 + " ; sudo id", SUDO),
        ("echo '" + "\\" * 24_000 + "' ; sudo id", SUDO),
        ('echo "' + "\\" * 24_000 + '" ; sudo id', SUDO),
        ("\\" * 24_000 + "ls", None),
        ("a=" * 15_000 + " sudo id", SUDO),
        ("echo " + "'\"'" * 8_000 + " ; sudo id", SUDO),
        ("cat /proc/" + "/" * 24_000, None),
        ("cat /proc/" + "/" * 24_000 + "1/environ", PROC),
        ("echo " + "{a," * 8_000 + "} ; sudo id", SUDO),
        ("a" * MAX_COMMAND_CHARS + "x", TOO_LONG),
    ],
    ids=[
        "backslashes", "backslashes-sudo", "sq-backslashes", "dq-backslashes", "backslash-name", "assignments",
        "quotes", "proc-slashes", "proc-environ", "braces", "over-the-cap",
    ],
)  # fmt: skip
def test_long_adversarial_commands_get_the_right_verdict(command: str, expected: str | None) -> None:
    assert check_command(command) == expected


def test_a_long_run_of_subscript_substitutions_is_refused() -> None:
    assert "array subscript" in str(check_command("echo '" + "[$(" * 8_000 + "'"))


@pytest.mark.parametrize(
    "code",
    [
        'node -e "require(x)"',
        'node -e "require\u00a0(x)"',  # JavaScript reads U+00A0 as a blank
        "node -e \"require( 'fs' + x)\"",
        "perl -e '$a->\u00a0$b'",
        "awk '{print | \"sh\"}'",
        "awk '{print |& \"sh\"}'",
        "cat ~/.beamclaw/sessions.db",
        "cat x/sessions.db",
        "sqlite3 db '\u00a0.shell id'",
    ],
)
def test_patterns_rewritten_for_re2_still_refuse(code: str) -> None:
    assert check_command(code) is not None


@pytest.mark.parametrize(
    "code",
    ["node -e \"require('fs')\"", "node -e \"require( './a.js' )\"", "awk 'a || b {print}'", "cat my-sessions.db"],
)
def test_patterns_rewritten_for_re2_still_allow(code: str) -> None:
    assert check_command(code) is None


@pytest.mark.parametrize("command", ["a=$\nsudo id", "a=$ \nsudo id", "echo $\t\nsudo id"])
def test_a_dollar_at_the_end_of_a_line_never_hides_the_next_command(command: str) -> None:
    # Found by hypothesis: the parser joined "$" to the next line's "sudo", bash does not.
    assert check_command(command) is not None
