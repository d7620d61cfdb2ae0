"""Shell permission rules: which commands of a line run unasked, which ask, which are refused.

The jail is the boundary; these rules are the user's policy for what runs inside it, as
Claude Code's ``Bash(git status)`` rules and Codex's execpolicy are. A command line is
split with a real parser (tree-sitter's bash grammar) into its simple commands:
pipelines, lists, subshells, compound commands, command and process substitutions,
function bodies, the body of ``bash -c '...'`` / ``sh -c`` (recursively), and a
here-document fed to a shell. Each simple command is matched against three lists of
patterns (`Pattern`):

- ``deny``: any simple command that matches refuses the whole line (the pattern named);
- ``ask``: one that matches asks the user, whatever ``allow`` says;
- ``allow``: when every simple command matches, the line runs without asking.

A line the parser cannot split (a syntax error, too long, nested too deep) asks: it
never runs unasked. Matching is on the words as bash will see them after quote removal;
a word bash computes (``$x``, ``$(...)``, a glob brace ``{a,b}``) is unknown: it matches
only a ``*`` wildcard in ``allow`` and ``deny``, and matches any word in ``ask`` (it could
be ``-exec``). ``allow`` sees the command with its prefix assignments (``X=1 ls``) and
its output redirections to files (``ls > out``), so ``ls *`` does not cover either;
``deny`` and ``ask`` see the command words alone. ``deny`` guards against accidents,
not adversaries: ``env rm -rf /`` or a script in a file are not seen as ``rm``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

import attrs
import tree_sitter
import tree_sitter_bash

MAX_COMMAND_CHARS: Final = 32_000
"""Longer lines are not split (they ask): a script that long belongs in a file."""
MAX_DEPTH: Final = 64
"""How deep syntax and code inside code (``bash -c 'sh -c ...'``) are followed before asking."""

#: Read-only commands that run without asking under ``supervised`` and ``read_only``.
DEFAULT_ALLOW: Final = (
    *("ls *", "cat *", "head *", "tail *", "wc *", "grep *", "rg *", "find *", "pwd", "echo *", "cd *"),
    *("true", "false", "which *", "stat *", "du *", "df *", "basename *", "dirname *", "realpath *"),
    *("whoami", "id *", "uname *", "date", "diff *", "cut *", "tr *"),
    *("git status *", "git diff *", "git log *", "git show *", "git blame *", "git ls-files *"),
)
#: What makes an allowed command not read-only: it runs or deletes, or writes a file.
DEFAULT_ASK: Final = (
    *("find * -exec* *", "find * -ok* *", "find * -delete *", "find * -fprint* *", "find * -fls *"),
    *("rg * --pre* *", "git * --output* *", "git * --ext-diff *"),
)
#: What destroys the workspace or the conversation, written plainly.
DEFAULT_DENY: Final = (
    *("rm * / *", "rm * /* *", "rm * ~ *", "rm * ~/ *", "rm * ~/* *", "rm * '*' *", "rm * './*' *"),
    *("kill * -1", "killall5 *"),
)

_SHELLS: Final = frozenset({"sh", "bash", "dash", "ksh", "zsh", "ash", "mksh"})
_SHELL_C: Final = re.compile(r"-[euxl]*c[euxl]*")
_WRITES: Final = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_HARMLESS_TARGETS: Final = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_SPLICE: Final = re.compile(r"(?<![\s|&;(\\])\\\n")


class Unsplittable(Exception):
    """The line cannot be split into simple commands; the message says why."""


@attrs.frozen
class SimpleCommand:
    """One simple command of a line: its words (None where bash computes one), what
    ``allow`` sees besides them (prefix assignments, redirections to files), and its text."""

    words: tuple[str | None, ...]
    text: str
    assignments: tuple[str | None, ...] = ()
    writes: tuple[str | None, ...] = ()
    #: A function that calls itself (``:(){ :|:& };:``): refused as a fork bomb.
    calls_itself: bool = False

    @property
    def full(self) -> tuple[str | None, ...]:
        return (*self.assignments, *self.words, *self.writes)


# --- Patterns ------------------------------------------------------------------------

_ANY: Final = None


def _pattern_words(text: str) -> list[re.Pattern[str] | None]:
    """Split *text* as the shell splits words; an unquoted ``*`` is a wildcard, ``*``
    alone a word of its own matches any number of words (None)."""
    words: list[re.Pattern[str] | None] = []
    current: list[str] | None = None
    quote = ""
    chars = iter(text)
    for char in chars:
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                current = (current or []) + [re.escape(next(chars, "\\"))]
            else:
                current = (current or []) + [re.escape(char)]
        elif char in "'\"":
            quote, current = char, current or []
        elif char == "\\":
            current = (current or []) + [re.escape(next(chars, "\\"))]
        elif char == "*":
            current = (current or []) + [".*"]
        elif char.isspace():
            if current is not None:
                words.append(_ANY if current == [".*"] else re.compile("".join(current), re.DOTALL))
            current = None
        else:
            current = (current or []) + [re.escape(char)]
    if quote:
        raise ValueError(f"pattern {text!r} has an unclosed quote")
    if current is not None:
        words.append(_ANY if current == [".*"] else re.compile("".join(current), re.DOTALL))
    if not words:
        raise ValueError("a pattern must have at least one word")
    return words


@attrs.frozen
class Pattern:
    """A command pattern: words, as in ``git status`` or ``rm -rf *``.

    Words split as the shell splits them (quotes and backslashes work). A ``*`` alone
    is any number of words, none included (``ls *`` matches ``ls`` and ``ls -la``, not
    ``lsof``); a ``*`` in a word is any characters in that word (``find * -exec*``
    matches ``-exec`` and ``-execdir``). A quoted or escaped ``*`` is a star.
    """

    text: str
    _words: tuple[re.Pattern[str] | None, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_words", tuple(_pattern_words(self.text)))

    def matches(self, words: Sequence[str | None], *, unknown_matches: bool = False) -> bool:
        """Whether *words* match; an unknown word (None) matches a word of the pattern only
        when it is a wildcard, or when *unknown_matches* (it could be anything)."""
        first = self._words[0]
        if first is not _ANY and words and words[0] is not None and first.fullmatch(words[0]) is None:
            return False  # the common case, decided without the general matching
        return _match(self._words, tuple(words), unknown_matches)


def _match(pattern: tuple[re.Pattern[str] | None, ...], words: tuple[str | None, ...], unknown: bool) -> bool:
    """Glob matching over words, in time linear in len(pattern) * len(words)."""
    states = _past_wildcards({0}, pattern)
    for word in words:
        after: set[int] = set()
        for i in states:
            if i == len(pattern):
                continue
            head = pattern[i]
            if head is _ANY:
                if word not in _WRITES:  # a wildcard never swallows a redirection to a file
                    after.add(i)
            elif unknown if word is None else head.fullmatch(word) is not None:
                after.add(i + 1)
        states = _past_wildcards(after, pattern)
        if not states:
            return False
    return len(pattern) in states


def _past_wildcards(states: set[int], pattern: tuple[re.Pattern[str] | None, ...]) -> set[int]:
    """*states* and every position after wildcards that may match no word."""
    result = set(states)
    for start in sorted(states):
        i = start
        while i < len(pattern) and pattern[i] is _ANY:
            i += 1
            result.add(i)
    return result


def exact_pattern(command: SimpleCommand) -> str | None:
    """The pattern that matches *command* and nothing else, or None if a word is unknown."""
    if any(word is None for word in command.full):
        return None
    return " ".join(_quote(word) for word in command.full if word is not None)


def _quote(word: str) -> str:
    return word if word in _WRITES else shlex.quote(word)


# --- Splitting -------------------------------------------------------------------------

_LANGUAGE: Final = tree_sitter.Language(tree_sitter_bash.language())


def split(line: str, depth: int = 0) -> list[SimpleCommand]:
    """The simple commands of *line*, in order; raises `Unsplittable`."""
    if len(line) > MAX_COMMAND_CHARS:
        raise Unsplittable(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    if depth > MAX_DEPTH:
        raise Unsplittable("the command nests too deeply")
    if "\r" in line or _SPLICE.search(line):
        raise Unsplittable("a carriage return or a backslash-newline inside a word")
    root = tree_sitter.Parser(_LANGUAGE).parse(line.encode("utf-8", "surrogatepass")).root_node
    if root.has_error:
        raise Unsplittable("the shell parser cannot read it")
    return list(_walk(root, depth, 0))


def _walk(node: tree_sitter.Node, depth: int, level: int) -> Iterator[SimpleCommand]:
    if level > MAX_DEPTH:
        raise Unsplittable("the command nests too deeply")
    match node.type:
        case "command":
            yield from _command(node, (), depth, level)
            return
        case "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = [child for child in node.children if child != body]
            if body is not None and body.type == "command":
                yield from _command(body, redirects, depth, level, _text(node))
            else:
                writes = _writes(redirects)
                if writes:  # a compound command's output goes to a file
                    yield SimpleCommand((), _text(node), writes=writes)
                if body is not None:
                    yield from _walk(body, depth, level + 1)
            for child in redirects:
                yield from _walk(child, depth, level + 1)
            return
        case "variable_assignment" if node.parent is not None and node.parent.type in {"program", "list"}:
            yield SimpleCommand((), _text(node), assignments=(_value(node),))
        case "declaration_command" | "unset_command":
            yield SimpleCommand(tuple(_value(child) for child in node.children), _text(node))
        case "function_definition":
            yield from _function(node)
    for child in node.children:
        yield from _walk(child, depth, level + 1)


def _command(
    node: tree_sitter.Node, redirects: Sequence[tree_sitter.Node], depth: int, level: int, text: str = ""
) -> Iterator[SimpleCommand]:
    assignments: list[str | None] = []
    words: list[str | None] = []
    own_redirects = list(redirects)
    for child in node.children:
        if child.type == "variable_assignment":
            assignments.append(_value(child))
        elif child.type.endswith("_redirect"):
            own_redirects.append(child)
        elif child.type == "command_name":
            words.append(_value(child.children[0]) if child.children else None)
        elif child.is_named:
            words.append(_value(child))
        yield from _walk(child, depth, level + 1)
    inner = _shell_body(words, own_redirects)
    if inner is not None:  # bash -c 'body', bash <<EOF: the body's commands stand for the shell
        yield from split(inner, depth + 1)
        if not assignments and not _writes(own_redirects):
            return
    yield SimpleCommand(tuple(words), text or _text(node), tuple(assignments), _writes(own_redirects))


def _shell_body(words: Sequence[str | None], redirects: Sequence[tree_sitter.Node]) -> str | None:
    """The script a shell in *words* runs from its ``-c`` argument or a here-document."""
    if not words or words[0] is None or words[0].rsplit("/", 1)[-1] not in _SHELLS:
        return None
    if len(words) >= 3 and words[1] is not None and _SHELL_C.fullmatch(words[1]):
        return words[2]
    if len(words) == 1:
        for redirect in redirects:
            body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
            if body is not None:
                return _text(body)
    return None


def _function(node: tree_sitter.Node) -> Iterator[SimpleCommand]:
    """The function's definition as a command when it calls itself (a fork bomb)."""
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:
        return
    own = _text(name)
    stack = [body]
    while stack:
        current = stack.pop()
        if current.type == "command_name" and _text(current) == own:
            yield SimpleCommand((own,), _text(node), calls_itself=True)
            return
        stack.extend(current.children)


def _writes(redirects: Iterable[tree_sitter.Node]) -> tuple[str | None, ...]:
    """The words ``op target`` of each redirection that writes a file."""
    words: list[str | None] = []
    for redirect in redirects:
        if redirect.type != "file_redirect":
            continue
        op = next((c.type for c in redirect.children if c.type in _WRITES), None)
        target = redirect.child_by_field_name("destination")
        value = _value(target) if target is not None else None
        if op is not None and value not in _HARMLESS_TARGETS:
            words += [op, value]
    return tuple(words)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


_UNQUOTED_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_DOUBLE_QUOTED_ESCAPE: Final = re.compile(r'\\([\\"$`])')


def _value(node: tree_sitter.Node) -> str | None:
    """The word *node* as bash passes it after quote removal, or None when bash computes it."""
    text = _text(node)
    match node.type:
        case "word" | "number" | "file_descriptor":
            return _UNQUOTED_ESCAPE.sub(r"\1", text)
        case "raw_string":
            return text[1:-1]
        case "string":
            if all(child.type in {'"', "string_content"} for child in node.children):
                return _DOUBLE_QUOTED_ESCAPE.sub(r"\1", text[1:-1])
            return None
        case "concatenation" | "variable_assignment":
            parts = [_value(child) if child.is_named else _text(child) for child in node.children]
            return None if None in parts else "".join(p for p in parts if p is not None)
        case "variable_name":
            return text
    return None if node.is_named else text


# --- Rules -----------------------------------------------------------------------------


@attrs.frozen
class Verdict:
    """What the rules say of a line: refused (``denied`` names the pattern), or the simple
    commands that make it ask (none: it runs unasked), and why when not just "not allowed"."""

    denied: str | None = None
    asking: tuple[SimpleCommand, ...] = ()
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.denied is None and not self.asking and not self.reason


def _patterns(texts: Iterable[str | Pattern]) -> tuple[Pattern, ...]:
    return tuple(text if isinstance(text, Pattern) else Pattern(text) for text in texts)


@attrs.frozen
class ShellRules:
    """The ``allow``, ``ask`` and ``deny`` lists of one tool; deny wins, then ask, then allow."""

    allow: tuple[Pattern, ...] = attrs.field(default=DEFAULT_ALLOW, converter=_patterns)
    ask: tuple[Pattern, ...] = attrs.field(default=DEFAULT_ASK, converter=_patterns)
    deny: tuple[Pattern, ...] = attrs.field(default=DEFAULT_DENY, converter=_patterns)

    def judge(self, line: str, also_allowed: Iterable[Pattern] = ()) -> Verdict:
        """The verdict on *line*; *also_allowed* are the session's patterns (``/always``)."""
        try:
            commands = split(line)
        except (Unsplittable, RecursionError) as exc:
            reason = str(exc) if isinstance(exc, Unsplittable) else "the command nests too deeply"
            return Verdict(reason=f"BeamClaw could not split this command ({reason})")
        allow = (*self.allow, *also_allowed)
        asking: list[SimpleCommand] = []
        asked_by = ""
        for command in commands:
            if command.calls_itself:
                return Verdict(denied=f"`{command.text}` defines a function that calls itself (a fork bomb)")
            denied = next((p for p in self.deny if p.matches(command.words)), None)
            if denied is not None:
                return Verdict(denied=f"`{command.text}` matches the deny rule {denied.text!r}")
            rule = next((p for p in self.ask if p.matches(command.words, unknown_matches=True)), None)
            if rule is not None:
                asked_by = asked_by or f"`{command.text}` matches the ask rule {rule.text!r}"
                asking.append(command)
            elif not any(p.matches(command.full) for p in allow):
                asking.append(command)
        return Verdict(asking=tuple(asking), reason=asked_by)
