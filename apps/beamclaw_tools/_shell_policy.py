"""The shell deny list: a second layer, behind the jail, for every `bash` and `terminal` command.

The jail (bubblewrap or Docker) is the security boundary. This layer refuses, before
anything runs, commands whose intent is plain from their text: privilege escalation,
destroying the system or the disk, reverse shells, code piped into a shell, reaching
the daemon's secrets. It must be sound on its own terms, so it reads the command the
way bash does, with a real parser (tree-sitter's bash grammar; bashlex was tried and
cannot parse ``[[ ]]``, ``case``, ``$(( ))`` or arrays), never by splitting text:

- The whole syntax tree is walked: lists, pipelines, compound commands, subshells,
  command and process substitutions, here-documents and here-strings, function
  bodies, assignments and redirections. Text the parser cannot read is refused, and
  so is every place where tree-sitter is known to read differently from bash (a
  here-document laid out oddly, words that touch, a comment or a number inside a
  word, a backslash-newline not after a blank, a carriage return): a test runs real
  bash on hundreds of disguised commands and checks the policy saw all it ran.
- Every simple command is judged on its *effective* name, after peeling the wrappers
  that run their arguments as a command (``env``, ``nice``, ``timeout``, ``xargs``,
  ``find -exec``, ``parallel``, ``exec``, ``command``, ``busybox``, ``uv run``, ...).
  Code handed to another program in the text itself (``bash -c``, ``eval``, ``trap``,
  here-documents fed to a shell, ``git -c core.pager=``, ``ssh -o ProxyCommand=``,
  ``tar --to-command=``, ``PAGER=``...) is parsed and judged the same way.
- A command name that is computed (an expansion, a substitution, a glob or brace
  pattern) is refused: what it runs cannot be known before it runs. Quoting that only
  hides a name (``\\sudo``, ``'sudo'``) is undone and the name judged; a name spliced
  from several quoted pieces (``"su"'do'``) is refused as obfuscated.
- A shell or interpreter that would read its program from input nobody can see (a
  pipe, ``/dev/stdin``, a process substitution) is refused; a program given in the
  text is judged. Inline Python (``-c``, here-documents) is read with Python's own
  parser and refused when it reaches for processes, sockets, ptys, FFI, dynamic code
  or dunder attributes; inline Perl, Ruby, Node, PHP and Lua code is refused when it
  names such primitives (a token list: it catches the obvious, not the determined);
  inline code of other interpreters is refused.
- Long options count by unambiguous prefix, as GNU's getopt reads them (``--recu``
  is ``--recursive``); an option that is a prefix of a dangerous one counts as it. A
  computed argument where an option could stand counts as the dangerous option.

What a deny list cannot see stays out of its reach: scripts in files (``bash x.sh``,
``python3 x.py``), data flow through variables, the directory a previous `terminal`
call left, and anything a program decides at run time. That is what the jail is for.

Input is bounded (:data:`MAX_COMMAND_CHARS`, :data:`MAX_SYNTAX_DEPTH`,
:data:`MAX_SYNTAX_NODES`, :data:`MAX_CODE_DEPTH`): a pathological command gets a refusal saying so, never a hang.
"""

from __future__ import annotations

import ast
import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final, NamedTuple, NoReturn

import attrs
import re2
import tree_sitter
import tree_sitter_bash

MAX_COMMAND_CHARS: Final = 32_000
"""Longer commands are refused unread (a here-document of that size belongs in a file). The
same as the longest chat message the gateway takes (``gateway.http.max_user_chars``): a
command is model text, and no command needs to be longer than what a user may type."""
MAX_SYNTAX_DEPTH: Final = 256
"""Deeper syntax trees are refused (an honest command nests a few dozen levels at most)."""
MAX_SYNTAX_NODES: Final = 40_000
"""Larger syntax trees are refused (several thousand simple commands: a script belongs in a file)."""
MAX_CODE_DEPTH: Final = 8
"""How deep code inside code is followed (``bash -c 'sh -c "eval ..."'``) before refusing."""


#: Python's ``\s`` for text (every Unicode blank), for RE2, whose ``\s`` is ASCII only:
#: where a pattern looks for a blank between two tokens of code (JavaScript reads U+00A0
#: as one), a blank it did not know would hide the tokens.
_WS: Final = r"[\s\x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]"


class _Refused(Exception):
    """Carries the reason for a refusal up from wherever in the tree it was found."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _refuse(reason: str) -> NoReturn:
    raise _Refused(reason)


# --- What is refused outright --------------------------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _each(names: str, value: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), value)


_DENIED_COMMANDS: Final[Mapping[str, str]] = {
    **_each("sudo su doas pkexec runuser run0 sg newgrp setpriv capsh setcap", "privilege escalation"),
    **_each("chroot nsenter unshare", "changes the root or namespaces (jail escape)"),
    **_each("shutdown reboot halt poweroff init telinit kexec", "stops the machine"),
    **_each("systemctl service systemd-run machinectl", "controls system services"),
    **_each(
        "mkfs mke2fs mkswap fdisk sfdisk cfdisk gdisk sgdisk parted wipefs losetup cryptsetup dmsetup mdadm "
        "lvremove vgremove pvremove swapon swapoff mount umount blkdiscard hdparm",
        "changes disks or file systems",
    ),
    "shred": "destroys files beyond recovery",
    **_each("insmod rmmod modprobe", "loads or unloads kernel modules"),
    **_each("iptables ip6tables nft ufw sysctl", "changes the system configuration"),
    **_each("useradd userdel usermod groupadd groupdel groupmod gpasswd chsh chfn", "changes system users"),
    **_each("passwd chpasswd vipw visudo", "changes passwords or sudoers"),
    **_each("crontab at batch", "installs persistent jobs"),
    **_each("nc ncat netcat socat telnet", "opens raw network connections (reverse shells)"),
    **_each("mkfifo mknod", "makes a named pipe or device node (a reverse-shell building block)"),
    **_each("docker podman nerdctl ctr crictl", "controls the container engine (root on the host)"),
    **_each("tmux screen", "starts sessions that run commands out of sight"),
    "killall5": "kills every process",
    "coproc": "runs a coprocess (a form this checker does not read)",
    "alias": "defines aliases, which hide what a command runs",
    "fc": "re-runs history through an editor",
}
_KEYWORDS: Final = _names("{ } ( ) ! [[ ]] if then else elif fi do done while until for case esac in function select")
"""Words that, read as a command name, mean tree-sitter misread a compound command."""

_DANGEROUS_VARIABLES: Final = _names(
    "BASH_ENV ENV PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 SHELLOPTS BASHOPTS BASH_ALIASES BASH_CMDS BASH_LOADABLES_PATH "
    "LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH GCONV_PATH PERL5OPT PERL5DB RUBYOPT NODE_OPTIONS PYTHONWARNINGS "
    "PYTHONSTARTUP TAR_OPTIONS GIT_CONFIG_PARAMETERS GIT_EXEC_PATH GIT_TEMPLATE_DIR"
)
"""Variables whose value the shell or a program later runs or loads as code."""
_COMMAND_VARIABLES: Final = _names(
    "PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH GIT_SSH_COMMAND "
    "GIT_EXTERNAL_DIFF GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS GIT_PROXY_COMMAND RSYNC_RSH CVS_RSH LESSOPEN LESSCLOSE "
    "BROWSER FCEDIT"
)
"""Variables holding a command line that a program runs: the value is judged as one."""

_POSIX_SHELLS: Final = _names("sh bash dash ksh ksh93 mksh lksh ash yash rbash posh")
_OTHER_SHELLS: Final = _names("zsh fish csh tcsh xonsh pwsh powershell nu elvish osh ysh rc es")
_STDIN_PATHS: Final = re2.compile(r"/dev/(?:stdin|fd/\d+|tty)|/proc/(?:self|thread-self|\d+)/fd/\d+")
_BENIGN_DEVICES: Final = _names(
    "/dev/null /dev/zero /dev/stdout /dev/stderr /dev/stdin /dev/tty /dev/full /dev/random /dev/urandom"
)
_SYSTEM_DIRS: Final = tuple(
    sorted(
        _names(
            "/etc /boot /usr /bin /sbin /lib /lib32 /lib64 /libx32 /sys /proc /dev /root /var/spool /var/lib /var/log"
        )
    )
)

# Raw-text tripwires: checked on every script text and every literal word value, so that
# quoting cannot hide them. Every pattern applied to a command is RE2 (``re2``): its time
# is linear in the text whatever the pattern, where Python's ``re`` backtracks (a run of
# 24,000 backslashes took seconds). RE2 has no look-around and its ``\w``, ``\s``, ``\b``
# are ASCII: each pattern is written so that it matches at least what Python's did.
_TEXT_PATTERNS: Final = (
    (re2.compile(r"/dev/(?:tcp|udp)/|/inet6?/(?:tcp|udp)/"), "opens a network socket from the shell (reverse shell)"),
    (
        re2.compile(
            r"/dev/(?:[shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk/|dm-\d|md\d|loop\d|mapper/|sg\d|sr\d|mtd|ram\d|"
            r"zram|nbd|rbd|root\b|mem\b|kmem\b|port\b|kmsg\b)"
        ),
        "reaches a raw disk or memory device",
    ),
    (
        re2.compile(
            r"(?:^|[^\w.-])(?:sessions\.db|gateway\.db|control\.sock|beamclaw\.key|beamclaw\.log)\b|"
            r"\.beamclaw\b|BEAMCLAW_HOME"
        ),
        "reaches the daemon's own files (data dir, control socket, keys)",
    ),
    (re2.compile(r"--no-preserve-root"), "disables the root protection of rm, chmod or chown"),
)
_PROC: Final = re2.compile(r"/proc/+")
_PROC_PATH: Final = re2.compile(r"[^\s'\"`;|&<>()]*")
_PROC_GLOBAL: Final = re2.compile(
    r"(?:cpuinfo|meminfo|loadavg|uptime|version|stat|mounts|filesystems|partitions|devices|diskstats|"
    r"interrupts|swaps|vmstat|zoneinfo|cgroups|modules|crypto|sys/|net/|pressure/)(?:$|/)"
)
_ARITHMETIC_INJECTION: Final = re2.compile(r"\[[^\]]{0,200}(?:\$\(|`)")


_ANY_TEXT_PATTERN: Final = re2.compile("|".join(f"(?:{pattern.pattern})" for pattern, _ in _TEXT_PATTERNS))


_ENVIRON: Final = re2.compile(r"(?:^|/)environ\b")


def _check_text(text: str) -> None:
    """Refuse *text* (a script or a literal value) when a tripwire pattern is in it."""
    # Every tripwire holds one of these strings; most words hold none, and a substring
    # test costs far less than a call into RE2.
    hinted = "/" in text or "." in text or "BEAMCLAW_HOME" in text or "--no-preserve-root" in text
    if hinted and _ANY_TEXT_PATTERN.search(text):
        for pattern, reason in _TEXT_PATTERNS:
            if pattern.search(text):
                _refuse(f"the command {reason}")
    if "/proc/" in text:
        # Two steps, not one pattern with a capture: RE2 finds a capture's bounds in a
        # slower pass whose cost grows with the repetition bound.
        for match in _PROC.finditer(text):
            path = _PROC_PATH.match(text[match.end() : match.end() + 200]).group(0)
            first = path.split("/", 1)[0]
            if ".." in path or (first not in {"", "self", "thread-self"} and not _PROC_GLOBAL.match(path)):
                _refuse("the command reads another process's memory, environment or files under /proc")
    if "environ" in text and _ENVIRON.search(text):
        _refuse("the command reads a process environment (where the daemon's secrets live)")


# --- Words -----------------------------------------------------------------------------


class _Word(NamedTuple):
    """One shell word as bash will see it, as far as the text alone tells.

    ``value`` is the literal value when the word is static (quotes removed, escapes
    undone), None when it is computed at run time. ``pattern`` marks an unquoted glob or
    brace expansion, ``spliced`` a word glued from quoted and unquoted pieces. (A named
    tuple, not an attrs class: one is made for every word of every command checked.)
    """

    raw: str
    value: str | None
    pattern: bool = False
    spliced: bool = False
    procsub: bool = False  # holds a command or process substitution
    optionlike: bool = False  # computed, and could begin with '-' or split into several words
    start: int = 0
    end: int = 0


def _literal(value: str) -> _Word:
    return _Word(value, value)


_GLOB_SHAPE: Final = re2.compile(r"[*?\[]|[@!+*?]\(|\{[^{}]{0,200}(?:,|\.\.)[^{}]{0,200}\}")


def _unescape_unquoted(text: str) -> tuple[str, str]:
    """The value of an unquoted word and its *shape* (escaped characters replaced by 'Q')."""
    if "\\" not in text:
        return text, text
    value: list[str] = []
    shape: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                value.append(text[i + 1])
                shape.append("Q")
            i += 2
            continue
        value.append(ch)
        shape.append(ch)
        i += 1
    return "".join(value), "".join(shape)


_DOUBLE_QUOTED_ESCAPE: Final = re2.compile(r'\\([$`"\\\n])')


def _unescape_double_quoted(text: str) -> str:
    return str(_DOUBLE_QUOTED_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text))


def _text(node: tree_sitter.Node) -> str:
    data = node.text
    return data.decode("utf-8", "surrogatepass") if data is not None else ""


def _word(node: tree_sitter.Node) -> _Word:
    """The word *node* stands for; every literal value is checked against the tripwires."""
    value, shape, quoted, pieces = _word_parts(node)
    raw = _text(node)
    if value is not None:
        _check_text(value)
        if quoted and _ARITHMETIC_INJECTION.search(value):
            _refuse(
                f"the literal {raw!r} holds a command substitution in an array subscript "
                "(bash runs it when the value is used in arithmetic)"
            )
    return _Word(
        raw=raw,
        value=value,
        pattern=bool(_GLOB_SHAPE.search(shape)) or node.type == "brace_expression",
        spliced=quoted and pieces > 1,
        optionlike=value is None and _optionlike(node),
        procsub=node.type in _SUBSTITUTIONS
        or (node.type == "concatenation" and any(c.type in _SUBSTITUTIONS for c in node.children)),
        start=node.start_byte,
        end=node.end_byte,
    )


_SUBSTITUTIONS: Final = _names("process_substitution command_substitution")


_EXPANSIONS: Final = _names(
    "simple_expansion expansion command_substitution process_substitution arithmetic_expansion ansi_c_string "
    "translated_string"
)
_NUMERIC_SPECIALS: Final = _names("$$ $! $# $?")


def _optionlike(node: tree_sitter.Node) -> bool:
    """Whether a computed word could expand to an option: it starts computed, or it splits.

    ``/tmp/x.$$`` cannot (a fixed start, a number); ``"$d"``, ``$x`` and ``/a/$x`` can
    (an unquoted expansion splits into words, the later ones possibly ``-r``).
    """
    pieces = node.children if node.type == "concatenation" else [node]
    first = pieces[0] if pieces else node
    if first.type in _EXPANSIONS or (
        first.type == "string" and first.named_child_count and _string_starts_computed(first)
    ):
        return True
    if first.type in {"word", "raw_string", "string"} and _text(first).lstrip("'\"").startswith("-"):
        return True
    return any(
        p.type in _EXPANSIONS and p.type != "arithmetic_expansion" and _text(p) not in _NUMERIC_SPECIALS for p in pieces
    )


def _string_starts_computed(node: tree_sitter.Node) -> bool:
    inner = [c for c in node.children if c.type != '"']
    return bool(inner) and inner[0].type != "string_content"


def _merged(words: list[_Word]) -> list[_Word]:
    """Glue words that touch: tree-sitter splits some words bash reads as one (``"s"\\udo``)."""
    merged: list[_Word] = []
    for word in words:
        if merged and word.start == merged[-1].end and word.start > 0:
            last = merged[-1]
            value = None if last.value is None or word.value is None else last.value + word.value
            merged[-1] = _Word(
                raw=last.raw + word.raw,
                value=value,
                pattern=last.pattern or word.pattern,
                spliced=True,
                procsub=last.procsub or word.procsub,
                optionlike=last.optionlike or word.optionlike,
                start=last.start,
                end=word.end,
            )
        else:
            merged.append(word)
    return merged


def _word_parts(node: tree_sitter.Node) -> tuple[str | None, str, bool, int]:
    """(value or None, shape for pattern detection, quoted?, number of pieces)."""
    kind = node.type
    if kind in {"word", "number", "extglob_pattern", "variable_name", "file_descriptor", "test_operator"}:
        value, shape = _unescape_unquoted(_text(node))
        return value, shape, shape != value, 1
    if kind == "raw_string":
        inner = _text(node)[1:-1]
        return inner, "Q" * len(inner), True, 1
    if kind == "string":
        if all(child.type in {'"', "string_content"} for child in node.children):
            inner = _unescape_double_quoted(_text(node)[1:-1])
            return inner, "Q" * len(inner), True, 1
        return None, "", True, 1
    if kind == "concatenation":
        values: list[str] = []
        shapes: list[str] = []
        quoted = False
        computed = False
        for child in node.children:
            piece, piece_shape, child_quoted, _ = _word_parts(child)
            quoted = quoted or child_quoted
            if piece is None:
                computed = True
            else:
                values.append(piece)
            shapes.append(piece_shape)
        return (None if computed else "".join(values)), "".join(shapes), quoted, len(node.children)
    # Expansions, substitutions, ANSI-C and locale strings, arithmetic: computed.
    return None, "", kind in {"ansi_c_string", "translated_string"}, 1


# --- Parsing --------------------------------------------------------------------------

_LANGUAGE: Final = tree_sitter.Language(tree_sitter_bash.language())
_parsers = threading.local()
_state = threading.local()  # per check: ``away`` once a ``cd`` may have left the workspace


def _away() -> bool:
    """Whether an earlier ``cd`` in this command may have left the workspace (relative paths then mean anything)."""
    return bool(getattr(_state, "away", False))


def _parse(text: str) -> tree_sitter.Node:
    parser: tree_sitter.Parser | None = getattr(_parsers, "parser", None)
    if parser is None:  # a parser is not thread-safe: one per thread
        parser = _parsers.parser = tree_sitter.Parser(_LANGUAGE)
    return parser.parse(text.encode("utf-8", "surrogatepass")).root_node


def _first_error(root: tree_sitter.Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            line = node.start_point[0] + 1
            snippet = _text(node)[:40] or node.type
            return f"line {line}, near {snippet!r}"
        stack.extend(reversed([child for child in node.children if child.has_error or child.is_missing]))
    return "an unknown place"


_SPLICE: Final = re2.compile(r"(\\+)\n")


def _check_splices(text: str) -> None:
    """Refuse a backslash-newline where bash and tree-sitter may read it differently.

    bash removes a backslash-newline wherever it stands (``sud\\<newline>o`` is ``sudo``);
    tree-sitter does not always. Only the common layout is accepted: a continuation
    after a blank or an operator (``ls -la \\``, ``make &&\\``).
    """
    for match in _SPLICE.finditer(text):
        run = len(match.group(1))
        if run % 2 == 0:
            continue  # an escaped backslash, then a plain newline
        before = text[match.start() - 1] if run == 1 and match.start() > 0 else ("\\" if run > 1 else "\n")
        if before not in " \t|&;(":
            _refuse("a backslash-newline joins two pieces of one word (a command name could be spliced)")


# --- Stdin: where a shell or interpreter would read its program from ------------------


@attrs.frozen
class _Stdin:
    kind: str  # "none" (the tool's /dev/null), "pipe" (unseen input), "file", "text"
    text: str | None = None  # the here-document or here-string, when static


_NO_INPUT: Final = _Stdin("none")
_LEADING_TABS: Final = re2.compile(r"(?m)^\t+")
_PIPE: Final = _Stdin("pipe")


def _heredoc_text(node: tree_sitter.Node) -> _Stdin:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    text = _text(body) if body is not None else ""
    delimiter = _text(start) if start is not None else ""
    if node.children and node.children[0].type == "<<-":
        text = _LEADING_TABS.sub("", text)
    if any(q in delimiter for q in "'\"\\") or not any(c in text for c in "$`\\"):
        return _Stdin("text", text)
    return _Stdin("text", None)  # the body expands at run time


def _stdin_after(redirects: Iterable[tree_sitter.Node], stdin: _Stdin) -> _Stdin:
    for node in redirects:
        if node.type == "heredoc_redirect":
            stdin = _heredoc_text(node)
        elif node.type == "herestring_redirect":
            # tree-sitter may split the word (``'a'\\b``) into touching pieces: glue them back.
            pieces = _merged([_word(c) for c in node.named_children])
            stdin = _Stdin("text", pieces[0].value if len(pieces) == 1 else None)
        elif node.type == "file_redirect":
            descriptor = next((c for c in node.children if c.type == "file_descriptor"), None)
            op = next((c.type for c in node.children if not c.is_named), "")
            if descriptor is not None and _text(descriptor) != "0":
                continue
            if op == "<":
                target = node.child_by_field_name("destination")
                word = _word(target) if target is not None else _Word("", None)
                if word.procsub or word.value is None or _STDIN_PATHS.fullmatch(word.value):
                    stdin = _PIPE
                else:
                    stdin = _Stdin("file")
            elif op in {"<&", "<&-"}:
                stdin = _PIPE
    return stdin


# --- The walk ---------------------------------------------------------------------------

_REDIRECTS: Final = _names("file_redirect heredoc_redirect herestring_redirect")
_BLANKS: Final = frozenset({b" ", b"\t", b"\n", b";", b"|", b"&", b"(", b")"})
_WORDISH: Final = _names(
    "word number string raw_string ansi_c_string translated_string concatenation simple_expansion "
    "expansion command_substitution process_substitution arithmetic_expansion brace_expression "
    "extglob_pattern test_operator $"
)


def _check_script(text: str, depth: int, stdin: _Stdin) -> None:
    """Parse *text* as bash and judge every command in it."""
    if depth > MAX_CODE_DEPTH:
        _refuse(f"the command nests code more than {MAX_CODE_DEPTH} levels deep")
    if len(text) > MAX_COMMAND_CHARS:
        _refuse(f"the command is longer than {MAX_COMMAND_CHARS} characters (put long scripts in a file)")
    if "\x00" in text:
        _refuse("the command contains a NUL character")
    if "\r" in text:
        _refuse("the command contains a carriage return (bash reads it as part of a word); remove it")
    _check_text(text)
    _check_splices(text)
    root = _parse(text)
    if root.has_error:
        _refuse(f"the command cannot be parsed as bash ({_first_error(root)}), so it cannot be checked")
    if _expansion_across_lines(root):
        # bash reads a lone "$" before a newline as a "$"; the parser joins it to the next
        # line's first word ("a=$\nsudo id" hid the sudo), so the two would disagree.
        _refuse("a '$' ends a line (the checker and bash read it differently); quote it or write \\$")
    _walk(root, depth, stdin, text.encode("utf-8", "surrogatepass"))


def _walk(root: tree_sitter.Node, depth: int, stdin: _Stdin, source: bytes) -> None:
    stack: list[tuple[tree_sitter.Node, int, _Stdin]] = [(root, 0, stdin)]
    visited = 0
    while stack:
        node, level, inp = stack.pop()
        visited += 1
        if visited > MAX_SYNTAX_NODES:
            _refuse(f"the command has more than {MAX_SYNTAX_NODES} syntax nodes (put long scripts in a file)")
        if level > MAX_SYNTAX_DEPTH:
            _refuse(f"the command nests more than {MAX_SYNTAX_DEPTH} levels of syntax")
        kind = node.type
        children = node.children
        child_inputs: list[_Stdin] | None = None  # None: every child reads the node's input
        if kind == "comment" and node.start_byte > 0 and source[node.start_byte - 1 : node.start_byte] not in _BLANKS:
            # bash starts a comment only at the start of a word (``X=1#x`` is one word).
            _refuse("the parser read a comment inside a word, where bash reads on")
        if kind == "number" and (node.named_child_count or any(c.isspace() for c in _text(node))):
            # tree-sitter reads ``1# `cmd``` as a based number; bash reads a word, then a command.
            _refuse("the parser read a number spanning other syntax, where bash reads separate words")
        if kind == "word" and "\n" in _text(node):
            # bash never reads a bare newline inside a word: tree-sitter glued two lines.
            _refuse("the parser read a newline inside a word, where bash would see two commands")
        if kind == "command":
            _judge_command_node(node, None, inp, depth)
        elif kind == "redirected_statement":
            redirects = [c for c in children if c.type in _REDIRECTS]
            body_input = _stdin_after(redirects, inp)
            child_inputs = [inp] * len(children)
            for i, child in enumerate(children):
                if child.type not in _REDIRECTS:
                    child_inputs[i] = body_input
                    if child.type == "command":
                        _judge_command_node(child, node, body_input, depth)
                        # judged here with its redirects; walk its insides below without re-judging
                        stack.extend((c, level + 2, body_input) for c in reversed(child.children))
                        child_inputs[i] = _Stdin("skip")
        elif kind == "pipeline":
            piped = False
            child_inputs = [inp] * len(children)
            for i, child in enumerate(children):
                if child.type in {"|", "|&"}:
                    piped = True
                elif piped:
                    child_inputs[i] = _PIPE
        elif kind == "function_definition":
            _check_function(node)
        elif kind == "variable_assignment":
            _check_assignment(node, depth, inp)
        elif kind == "declaration_command":
            _check_declaration(node)
        elif kind == "file_redirect":
            _check_redirect(node)
        elif kind == "heredoc_redirect":
            _check_heredoc(node, depth, inp, source)
        elif kind == "command_substitution":
            if _text(node).startswith("`") and "\\" in _text(node):
                _refuse("a backquoted substitution holds backslashes (nested backquotes cannot be read reliably)")
        elif kind == "expansion":
            types = [c.type for c in children]
            if "@" in types and types[types.index("@") + 1 : types.index("@") + 2] == ["P"]:
                _refuse("the ${var@P} expansion runs the command substitutions held in a variable")
        if child_inputs is None:
            stack.extend((child, level + 1, inp) for child in reversed(children))
        else:
            for child, child_input in zip(reversed(children), reversed(child_inputs), strict=True):
                if child_input.kind != "skip":
                    stack.append((child, level + 1, child_input))


_DELIMITER_QUOTING: Final = re2.compile(r"""\\(.)|['"]""")


def _unquoted_delimiter(text: str) -> str:
    return str(_DELIMITER_QUOTING.sub(lambda m: m.group(1) or "", text))


def _check_heredoc(node: tree_sitter.Node, depth: int, stdin: _Stdin, source: bytes) -> None:
    """Refuse a here-document whose reading by tree-sitter may differ from bash's; judge its substitutions.

    tree-sitter's bash grammar misreads some here-documents (a body starting with a
    backslash, ``<<-`` bodies indented with tabs), so its reading is checked against
    bash's rules, on the source lines: the body is whole lines, it ends at the first
    line equal to the delimiter (tabs stripped for ``<<-``), and nothing else of the
    statement spans those lines.
    """
    children = node.children
    strip_tabs = bool(children) and children[0].type == "<<-"
    start = next((c for c in children if c.type == "heredoc_start"), None)
    body = next((c for c in children if c.type == "heredoc_body"), None)
    end = next((c for c in children if c.type == "heredoc_end"), None)
    if start is None or body is None or end is None:
        _refuse("a here-document without a body or an end line cannot be checked")
    raw_delimiter = _text(start)
    delimiter = _unquoted_delimiter(raw_delimiter)
    after = source[start.end_byte : start.end_byte + 1]
    if after and after not in b" \t\n;|&<>()":
        _refuse("a here-document's delimiter runs into other text (bash reads a different delimiter)")
    for child in children:
        if child.type not in {"heredoc_body", "heredoc_end"} and (
            "\n" in _text(child) or child.start_point[0] > start.start_point[0]
        ):
            _refuse("a here-document is laid out in a way the checker cannot read reliably")
    # The lines as bash reads them: tree-sitter's body node may skip the first line's blanks.
    body_begin = source.rfind(b"\n", 0, body.start_byte) + 1 if body.end_byte > body.start_byte else body.start_byte
    end_begin = source.rfind(b"\n", 0, end.start_byte) + 1
    end_stop = source.find(b"\n", end.start_byte)
    end_line = source[end_begin : len(source) if end_stop < 0 else end_stop].decode("utf-8", "surrogatepass")
    if source[body_begin : body.start_byte].strip(b" \t") or body_begin > end_begin:
        _refuse("a here-document's body does not start a line (a reading bash may not share)")
    if (end_line.lstrip("\t") if strip_tabs else end_line) != delimiter:
        _refuse("a here-document's end line does not match its delimiter")
    body_text = source[body_begin:end_begin].decode("utf-8", "surrogatepass")
    lines = body_text.split("\n")
    if any((line.lstrip("\t") if strip_tabs else line) == delimiter for line in lines):
        _refuse("a here-document's end line appears inside its body (a reading bash may not share)")
    quoted = any(q in raw_delimiter for q in "'\"\\")
    if not quoted and strip_tabs and any(c in body_text for c in "$`"):
        # tree-sitter does not parse substitutions in tab-indented ``<<-`` bodies: re-read the
        # body, tabs stripped as bash strips them, as a plain here-document.
        stripped = _LEADING_TABS.sub("", body_text)
        marker = "BEAMCLAW_EOF"
        while marker in stripped:
            marker += "_"
        _check_script(f"cat <<{marker}\n{stripped}{marker}\n", depth + 1, stdin)


def _command_words(
    command: tree_sitter.Node, statement: tree_sitter.Node | None
) -> tuple[list[_Word], list[tree_sitter.Node]]:
    """The words of a simple command in source order, and its redirections.

    tree-sitter reads ``cmd > out arg`` as a redirection with two destinations; bash
    gives ``arg`` to the command, so destinations after the first are arguments.
    """
    words: list[_Word] = []
    redirects: list[tree_sitter.Node] = []
    seen_name = False
    for child in command.children:
        if child.type == "command_name":
            seen_name = True
            inner = child.named_children
            words.append(
                _word(inner[0])
                if len(inner) == 1
                else _Word(_text(child), None, start=child.start_byte, end=child.end_byte)
            )
        elif child.type in _REDIRECTS:
            redirects.append(child)
        elif seen_name and (child.type in _WORDISH or not child.is_named):
            words.append(
                _word(child)
                if child.is_named
                else _Word(_text(child), None, start=child.start_byte, end=child.end_byte)
            )
    if statement is not None:
        redirects.extend(c for c in statement.children if c.type in _REDIRECTS)
    # ``cat <<EOF > out`` nests the file redirection inside the here-document's node.
    redirects.extend(
        c for r in list(redirects) if r.type == "heredoc_redirect" for c in r.children if c.type in _REDIRECTS
    )
    for redirect in redirects:
        if redirect.type == "file_redirect":
            destinations = [c for c in redirect.children if c.type in _WORDISH and c.type != "$"]
            words.extend(_word(extra) for extra in destinations[1:])
        elif redirect.type == "heredoc_redirect":
            words.extend(_word(c) for c in redirect.children if c.type in _WORDISH and c.type != "$")
    ends = {r.end_byte for r in redirects}
    if any(w.start in ends for w in words):
        # bash reads touching text as part of the redirection's word; tree-sitter split it off.
        _refuse("a redirection's word runs into other text (a reading bash does not share)")
    if words:
        words[1:] = sorted(words[1:], key=lambda w: w.start)
    return _merged(words), redirects


def _judge_command_node(
    command: tree_sitter.Node, statement: tree_sitter.Node | None, stdin: _Stdin, depth: int
) -> None:
    words, redirects = _command_words(command, statement)
    if statement is None:
        stdin = _stdin_after(redirects, stdin)
    if words:
        _judge(words, stdin, depth)


def _check_function(node: tree_sitter.Node) -> None:
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return
    name = _text(name_node)
    stack = [body]
    while stack:
        current = stack.pop()
        if current.type == "command_name" and _text(current) == name:
            _refuse(f"the function {name!r} calls itself (a fork bomb?)")
        stack.extend(current.children)


_NAME: Final = re2.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT: Final = re2.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_FD_PATH: Final = re2.compile(r"/dev/fd/[0-9]+")


def _assignment_name(node: tree_sitter.Node) -> str:
    match = _NAME.match(_text(node))
    return match.group(0) if match else ""


def _check_variable(name: str, value: _Word | None, depth: int, stdin: _Stdin) -> None:
    if name in {"CDPATH", "OLDPWD", "PWD"}:
        _state.away = True  # a later relative ``cd`` may now land anywhere
    if name in _DANGEROUS_VARIABLES or name.startswith("BASH_FUNC_"):
        _refuse(f"setting {name} makes the shell or a program run code from it")
    if name in _COMMAND_VARIABLES:
        if value is None or value.value is None:
            _refuse(f"{name} holds a command line and its value is computed at run time")
        _check_script(value.value.lstrip("|"), depth + 1, stdin)


def _check_assignment(node: tree_sitter.Node, depth: int, stdin: _Stdin) -> None:
    value_node = node.child_by_field_name("value")
    value = _word(value_node) if value_node is not None else _literal("")
    _check_variable(_assignment_name(node), value, depth, stdin)


def _check_declaration(node: tree_sitter.Node) -> None:
    for child in node.named_children:
        if child.type == "variable_assignment":
            value_node = child.child_by_field_name("value")
            if value_node is not None and _text(value_node) in _DANGEROUS_VARIABLES:
                _refuse(f"a name reference to {_text(value_node)} lets code reach it")
        elif child.type in _WORDISH:
            word = _word(child)
            if word.value is None:
                _refuse(f"{_text(node.children[0])} declares a computed name {word.raw!r}")
            _check_declared_name(word.value)
        elif child.type == "variable_name":
            _check_declared_name(_text(child))


def _check_declared_name(text: str) -> None:
    name, _, value = text.partition("=")
    name = name.rstrip("+").split("[", 1)[0]
    if name in _DANGEROUS_VARIABLES or name.startswith("BASH_FUNC_") or value in _DANGEROUS_VARIABLES:
        _refuse(f"setting {name} makes the shell or a program run code from it")


def _check_redirect(node: tree_sitter.Node) -> None:
    op = next((c.type for c in node.children if not c.is_named), "")
    if op.startswith("<") and op not in {"<>"}:
        return
    target = node.child_by_field_name("destination")
    if target is None:
        return
    word = _word(target)
    if word.value is not None and not word.value.isdigit() and word.value != "-":
        _check_write_target(word.value, "a redirection")


def _normal(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _check_write_target(path: str, what: str) -> None:
    normal = _normal(path)
    if normal.startswith("/dev/") and (normal in _BENIGN_DEVICES or _FD_PATH.fullmatch(normal)):
        return
    if _is_system_path(normal):
        _refuse(f"{what} writes to the system path {path!r}")


def _is_system_path(normal: str) -> bool:
    return normal.startswith("//") or any(normal == d or normal.startswith(d + "/") for d in _SYSTEM_DIRS)


# --- Judging one simple command -----------------------------------------------------------


class _Call(NamedTuple):
    """A command about to be judged: its name, its arguments and what surrounds it."""

    name: str
    args: Sequence[_Word]
    stdin: _Stdin
    depth: int
    fed: bool = False  # more arguments arrive from input (xargs, parallel)


class _Next(NamedTuple):
    """What a wrapper runs: judged in turn."""

    argv: Sequence[_Word]
    stdin: _Stdin
    fed: bool = False


_Handler = Callable[[_Call], _Next | None]

_FAMILIES: Final[Mapping[str, str]] = {
    **_each("python python2 python3 pypy pypy3", "python"),
    **_each("nodejs", "node"),
    **_each("luajit", "lua"),
    **_each("gawk mawk nawk", "awk"),
    **_each("busybox toybox", "busybox"),
    **_each("vi nvim view rvim rview vimdiff gvim evim vimx ex", "vim"),
    **_each("red", "ed"),
    **_each("more most pg", "less"),
    **_each("mariadb", "mysql"),
    **_each("typeset local readonly export", "declare"),
    **_each("readarray", "mapfile"),
    **_each("complete", "compgen"),
    **_each(".", "source"),
    **_each("pkill", "killall"),
    **_each("sftp", "scp"),
    **_each("bsdtar gtar", "tar"),
}
"""Names run by the same handler."""
_VERSIONED_NAMES: Final = ("python", "pypy", "perl", "ruby", "php", "lua", "node", "pip", "tclsh", "wish")
_VERSIONED: Final = re2.compile(rf"({'|'.join(_VERSIONED_NAMES)})[0-9.]*")


def _family(name: str) -> str:
    if name.startswith(("mkfs.", "mkfs_")):
        return "mkfs"
    versioned = _VERSIONED.fullmatch(name) if name.startswith(_VERSIONED_NAMES) else None
    base = versioned.group(1) if versioned else name
    return _FAMILIES.get(name, _FAMILIES.get(base, base))


def _command_name(word: _Word) -> str:
    if word.value is None:
        _refuse(f"the command name {word.raw!r} is computed at run time, so what it runs cannot be known")
    if word.pattern:
        _refuse(f"the command name {word.raw!r} is a glob or brace pattern, so what it runs cannot be known")
    name = word.value.rstrip("/").rsplit("/", 1)[-1] if "/" in word.value.rstrip("/") else word.value
    if name in _DENIED_COMMANDS or _family(name) in _DENIED_COMMANDS:
        _refuse(f"{name!r} {_DENIED_COMMANDS.get(name) or _DENIED_COMMANDS[_family(name)]}")
    if word.spliced:
        _refuse(f"the command name {word.raw!r} is spliced from quoted pieces (an obfuscated name)")
    if word.value in _KEYWORDS:
        _refuse(f"the shell keyword {word.value!r} stands where a command is expected (a form the checker cannot read)")
    return name


def _judge(argv: Sequence[_Word], stdin: _Stdin, depth: int, fed: bool = False) -> None:
    """Judge one simple command, peeling wrappers until the command that really runs."""
    if depth > MAX_CODE_DEPTH:
        _refuse(f"the command nests code more than {MAX_CODE_DEPTH} levels deep")
    for _ in range(64):
        if not argv:
            if fed:
                _refuse("the command that xargs or parallel runs comes from its input, so it cannot be known")
            return
        name = _command_name(argv[0])
        handler = _HANDLERS.get(_family(name))
        if handler is None:
            return
        step = handler(_Call(name, argv[1:], stdin, depth, fed))
        if step is None:
            return
        argv, stdin, fed = step.argv, step.stdin, step.fed
    _refuse("the command wraps itself too many times")


# --- Option parsing -------------------------------------------------------------------


@attrs.frozen
class _Spec:
    """The options of a wrapper: which take a value, which are flags.

    ``long`` maps each long option to whether it takes a value. ``strict`` refuses an
    option the spec does not know: where the command starts would be a guess.
    """

    short_values: str = ""
    short_flags: str = ""
    long_values: str = ""  # long options taking a value, space-separated
    long_flags: str = ""  # long options without a value (``help`` and ``version`` are always known)
    optional_attached: str = ""  # short options whose value, if any, is attached
    digits: bool = False  # ``nice -10``
    strict: bool = True

    @property
    def long(self) -> dict[str, bool]:
        return {
            **dict.fromkeys(("help", "version", *self.long_flags.split()), False),
            **dict.fromkeys(self.long_values.split(), True),
        }


def _resolve_long(command: str, given: str, table: Mapping[str, bool]) -> str:
    """The long option *given* stands for: exact, else its unambiguous prefix, as getopt does."""
    if given in table:
        return given
    matches = [option for option in table if option.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    what = "ambiguous" if matches else "unknown"
    _refuse(f"{command}: the {what} option '--{given}' leaves unclear what it runs")


def _could_be(given: str, option: str) -> bool:
    """Whether ``--given`` may abbreviate ``--option`` (conservative: any prefix counts)."""
    return bool(given) and option.startswith(given)


@attrs.frozen
class _Options:
    values: list[tuple[str, _Word]]  # (option, value) in order
    flags: list[str]
    operands: list[_Word]


def _parse_options(call: _Call, spec: _Spec, stop_at_operand: bool = True) -> _Options:
    """Split *call*'s arguments into options and operands per *spec*."""
    args = list(call.args)
    values: list[tuple[str, _Word]] = []
    flags: list[str] = []
    operands: list[_Word] = []
    i = 0
    while i < len(args):
        word = args[i]
        text = word.value
        if text is None:
            _refuse(f"{call.name}: the argument {word.raw!r} is computed, so what {call.name} runs cannot be known")
        if text == "--":
            operands.extend(args[i + 1 :])
            break
        if text.startswith("--") and len(text) > 2:
            given, eq, attached = text[2:].partition("=")
            if spec.strict or any(o.startswith(given) for o in spec.long):
                option = _resolve_long(call.name, given, spec.long)
            else:
                option = given
            if spec.long.get(option, False) and not eq:
                if i + 1 >= len(args):
                    break
                values.append((option, args[i + 1]))
                i += 2
                continue
            if eq:
                values.append((option, _literal(attached)))
            else:
                flags.append(option)
            i += 1
            continue
        if spec.digits and text[1:].isdigit() and text.startswith("-"):
            flags.append(text[1:])  # ``nice -10``
            i += 1
            continue
        if text.startswith("-") and len(text) > 1:
            j = 1
            consumed_next = False
            while j < len(text):
                ch = text[j]
                if ch in spec.short_values:
                    attached_value = text[j + 1 :]
                    if attached_value:
                        values.append((ch, _literal(attached_value)))
                    elif i + 1 < len(args):
                        values.append((ch, args[i + 1]))
                        consumed_next = True
                    break
                if ch in spec.optional_attached:
                    values.append((ch, _literal(text[j + 1 :])))
                    break
                if ch in spec.short_flags:
                    flags.append(ch)
                    j += 1
                    continue
                if spec.strict:
                    _refuse(f"{call.name}: the unknown option '-{ch}' leaves unclear what it runs")
                flags.append(ch)
                j += 1
            i += 2 if consumed_next else 1
            continue
        if stop_at_operand:
            operands.extend(args[i:])
            break
        operands.append(word)
        i += 1
    return _Options(values, flags, operands)


def _static(call: _Call, word: _Word, what: str) -> str:
    if word.value is None:
        _refuse(f"{call.name}: the {what} {word.raw!r} is computed at run time, so it cannot be checked")
    return word.value


def _shell_code(call: _Call, word: _Word, what: str) -> None:
    """Judge *word* as a bash command line that *call* will run."""
    _check_script(_static(call, word, what), call.depth + 1, call.stdin)


# --- Wrappers -------------------------------------------------------------------------


def _wrapper(spec: _Spec, fixed_operands: int = 0) -> _Handler:
    """A command that runs its operands (after *fixed_operands* of its own) as a command."""

    def handle(call: _Call) -> _Next | None:
        options = _parse_options(call, spec)
        return _Next(options.operands[fixed_operands:], call.stdin, call.fed)

    return handle


def _env(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="uCSP",
        short_flags="i0v",
        long_values="unset chdir split-string",
        long_flags=("ignore-environment null block-signal default-signal ignore-signal list-signal-handling debug"),
    )
    args = list(call.args)
    while args and args[0].value == "-":  # ``env -`` is ``env -i``
        args.pop(0)
    options = _parse_options(call._replace(args=args), spec)
    operands = list(options.operands)
    for option, value in options.values:
        if option in {"S", "split-string"}:
            text = _static(call, value, "split string")
            if any(c in text for c in "$\\'\"`"):
                _refuse("env -S: the split string uses quoting or expansions, so what it runs cannot be checked")
            operands = [_literal(part) for part in text.split()] + operands
    while operands and operands[0].value is not None and _ASSIGNMENT.match(operands[0].value):
        name, _, assigned = operands[0].value.partition("=")
        _check_variable(name, _literal(assigned), call.depth, call.stdin)
        operands.pop(0)
    if operands and operands[0].value is None:
        _refuse(f"env: the argument {operands[0].raw!r} is computed, so what env runs cannot be known")
    return _Next(operands, call.stdin, call.fed)


def _command(call: _Call) -> _Next | None:
    options = _parse_options(call, _Spec(short_flags="pvV"))
    if "v" in options.flags or "V" in options.flags:
        return None  # a lookup, nothing runs
    return _Next(options.operands, call.stdin, call.fed)


def _xargs(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="adEILnPs",
        short_flags="0oprtx",
        optional_attached="eil",
        long_values="arg-file delimiter max-args max-procs max-chars process-slot-var",
        long_flags="eof replace max-lines null no-run-if-empty open-tty interactive verbose exit show-limits",
    )
    options = _parse_options(call, spec)
    replace: str | None = None
    for option, value in options.values:
        if option in {"I", "i", "replace"}:
            replace = (value.value or "{}") if option != "I" else _static(call, value, "replacement string")
    for flag in options.flags:
        if flag == "replace":
            replace = "{}"
    argv = options.operands or [_literal("echo")]
    if replace:
        argv = [_Word(w.raw, None) if w.value is not None and replace in w.value else w for w in argv]
    # The child's stdin is /dev/null (or the terminal with -o): nothing of the pipe.
    return _Next(argv, _NO_INPUT, fed=replace is None)


_FIND_ONE_ARGUMENT: Final = _names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -perm -type -xtype -user -group "
    "-uid -gid -size -mtime -mmin -atime -amin -ctime -cmin -used -links -inum -samefile -fstype -maxdepth -mindepth "
    "-printf -context -files0-from -regextype -D -O"
)
"""find's tests and options that take one argument (a computed one is fine there)."""


def _find(call: _Call) -> _Next | None:
    args = list(call.args)
    i = 0
    while i < len(args) and args[i].value in {"-H", "-L", "-P"}:
        i += 1
    starts: list[_Word] = []
    while i < len(args) and not (args[i].value or "-").startswith(("-", "(", "!", ",")):
        starts.append(args[i])
        i += 1
    starts = starts or [_literal(".")]
    risky_start = call.fed or any(
        w.value is None or w.pattern or _is_rootish(w.value, strict=False) or (_away() and not w.value.startswith("/"))
        for w in starts
    )
    while i < len(args):
        text = args[i].value
        if text is None:
            _refuse(f"find: the computed word {args[i].raw!r} stands where an action such as -exec could be")
        if text in _FIND_ONE_ARGUMENT or text.startswith("-newer"):
            i += 2
            continue
        if text == "-delete" and risky_start:
            _refuse("find -delete from the root, home or a system directory is destructive")
        if text in {"-fprint", "-fprint0", "-fprintf", "-fls"} and i + 1 < len(args):
            target = args[i + 1].value
            if target is not None:
                _check_write_target(target, f"find {text}")
        if text in {"-exec", "-execdir", "-ok", "-okdir"}:
            j = i + 1
            while j < len(args) and args[j].value not in {";", "+"}:
                j += 1
            # ``{}`` stands for the paths found: under a risky start, the start itself.
            found = starts[0].value if risky_start and len(starts) == 1 else None if risky_start else "./found"
            inner = [
                (_Word(w.raw, None) if found is None else _literal(w.value.replace("{}", found)))
                if w.value is not None and "{}" in w.value
                else w
                for w in args[i + 1 : j]
            ]
            _judge(inner, call.stdin, call.depth + 1)
            i = j
        i += 1
    return None


_PARALLEL_LONG_VALUES: Final = (
    "arg-file arg-file-sep arg-sep delimiter eof env jobs max-procs max-lines max-replace-args max-args "
    "max-chars colsep basefile bf results res tmpdir tagstring timeout delay memfree load retries workdir "
    "wd sshlogin sshloginfile slf transferfile tf return joblog halt ssh sshdelay termseq block "
    "block-size recstart recend header replace trim"
)
_PARALLEL_LONG_FLAGS: Final = (
    "keep-order quote ungroup line-buffer verbose dry-run dryrun null xargs no-run-if-empty pipe pipepart "
    "plus bar eta progress group tag will-cite citation resume resume-failed cleanup transfer nonall "
    "onall shuf fg bg tty"
)


#: A parallel replacement string (``{}``, ``{1}``, ``{.}``...).
_REPLACEMENT_STRING: Final = re2.compile(r"\{[^{}\s]{0,20}\}")


def _parallel(call: _Call) -> _Next | None:
    args = list(call.args)
    cut = next((i for i, w in enumerate(args) if w.value in {":::", "::::", ":::+", "::::+"}), len(args))
    spec = _Spec(
        short_values="adEIjPLlNnsCBS",
        short_flags="kquvt0XmrgG",
        long_values=_PARALLEL_LONG_VALUES,
        long_flags=_PARALLEL_LONG_FLAGS,
    )
    options = _parse_options(call._replace(args=args[:cut]), spec)
    for option, value in options.values:
        if option == "ssh":
            _shell_code(call, value, "--ssh command")
    if not options.operands:
        _refuse("parallel runs its inputs as commands, so what it runs cannot be known")
    parts = [_static(call, w, "command word") for w in options.operands]
    script = " ".join(parts)
    if "{=" in script:
        _refuse("parallel: a {= perl expression =} replacement string runs Perl code")
    # A replacement string becomes an input: make it an expansion, so it counts as computed.
    script = _REPLACEMENT_STRING.sub(lambda _: '"$PARALLEL_INPUT"', script)
    _check_script(script, call.depth + 1, call.stdin)
    return None


def _watch(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="nq",
        short_flags="bcegtwxpd",
        optional_attached="",
        long_values="interval equexit",
        long_flags="differences chgexit no-title beep errexit exec precise color no-color no-wrap no-linewrap",
    )
    options = _parse_options(call, spec)
    if "x" in options.flags or "exec" in options.flags:
        return _Next(options.operands, call.stdin, call.fed)
    parts = [_static(call, w, "command word") for w in options.operands]
    _check_script(" ".join(parts), call.depth + 1, call.stdin)
    return None


def _flock(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="wEc",
        short_flags="sxunoFv",
        long_values="timeout conflict-exit-code command",
        long_flags="shared exclusive unlock nonblock close no-fork verbose",
    )
    options = _parse_options(call, spec)
    for option, value in options.values:
        if option in {"c", "command"}:
            _shell_code(call, value, "command")
            return None
    tail = options.operands[1:]  # after the lock file
    if tail and tail[0].value in {"-c", "--command"}:
        if len(tail) > 1:
            _shell_code(call, tail[1], "command")
        return None
    return _Next(tail, call.stdin, call.fed)


def _script(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="cEIOBTm",
        short_flags="aefqh",
        optional_attached="t",
        long_values="command echo log-in log-out log-io log-timing logging-format output-limit",
        long_flags="append return flush force quiet timing",
    )
    options = _parse_options(call, spec)
    for option, value in options.values:
        if option in {"c", "command"}:
            _shell_code(call, value, "command")
            return None
    _refuse("script without -c starts an interactive shell that reads commands from its input")


def _busybox(call: _Call) -> _Next | None:
    args = list(call.args)
    if args and args[0].value == "--":
        args = args[1:]
    if args and (args[0].value or "").startswith("-"):
        return None  # --list, --install, --help
    return _Next(args, call.stdin, call.fed)


def _exec(call: _Call) -> _Next | None:
    options = _parse_options(call, _Spec(short_values="a", short_flags="cl"))
    return _Next(options.operands, call.stdin, call.fed)


def _builtin(call: _Call) -> _Next | None:
    return _Next(call.args, call.stdin, call.fed)


def _eval(call: _Call) -> _Next | None:
    args = list(call.args)
    if args and args[0].value == "--":
        args.pop(0)
    _check_script(" ".join(_static(call, w, "code") for w in args), call.depth + 1, call.stdin)
    return None


def _trap(call: _Call) -> _Next | None:
    args = [w for w in call.args if w.value != "--"]
    if not args or (args[0].value or "").startswith("-"):
        return None  # trap, trap -l, trap -p, trap - SIGNAL
    if len(args) == 1:
        return None  # resets the signal named
    _shell_code(call, args[0], "trap code")
    return None


_RUNNERS: Final[Mapping[str, frozenset[str] | None]] = {
    "uv": frozenset({"run"}),
    "uvx": None,
    "npx": None,
    "pnpx": None,
    "bunx": None,
    "npm": _names("exec x"),
    "pnpm": _names("exec dlx"),
    "yarn": _names("exec dlx"),
    "poetry": frozenset({"run"}),
    "pipenv": frozenset({"run"}),
    "pdm": frozenset({"run"}),
    "hatch": frozenset({"run"}),
    "rye": frozenset({"run"}),
    "conda": frozenset({"run"}),
    "mamba": frozenset({"run"}),
    "micromamba": frozenset({"run"}),
    "bundle": frozenset({"exec"}),
    "pipx": frozenset({"run"}),
    "direnv": frozenset({"exec"}),
    "mise": _names("exec x"),
    "asdf": frozenset({"exec"}),
    "devbox": frozenset({"run"}),
    "nix": _names("run develop shell"),
    "nix-shell": None,
    "firejail": None,
    "valgrind": None,
    "chronic": None,
    "unbuffer": None,
    "faketime": None,
    "proot": None,
    "catchsegv": None,
}
_RUNNER_CODE_OPTIONS: Final = _names("-c --call --command --run --shell-command")


def _runner(call: _Call) -> _Next | None:
    """Project runners (``uv run``, ``npx``, ``nix-shell --run``): every command they may start is judged.

    Their option syntax varies too much to find the command exactly, so every suffix of
    the arguments that starts with a name this checker knows is judged as a command.
    """
    args = list(call.args)
    subcommands = _RUNNERS[_family(call.name)]
    start = 0
    if subcommands is not None:
        start = next((i + 1 for i, w in enumerate(args) if w.value in subcommands), len(args))
    for i, word in enumerate(args):
        text = word.value or ""
        given, eq, attached = text.partition("=")
        if given in _RUNNER_CODE_OPTIONS:
            if eq:
                _check_script(attached, call.depth + 1, call.stdin)
            elif i + 1 < len(args):
                _shell_code(call, args[i + 1], "command")
    for i in range(start, len(args)):
        candidate = args[i].value
        if candidate is None or candidate.startswith("-"):
            continue
        name = candidate.rstrip("/").rsplit("/", 1)[-1]
        family = _family(name)
        if family in _DENIED_COMMANDS or family in _HANDLERS:
            _judge(args[i:], call.stdin, call.depth + 1)
    return None


# --- Shells and interpreters ------------------------------------------------------------


def _program_from_stdin(call: _Call, language: str) -> None:
    """*call* reads its program from stdin: judge it when the text shows it, else refuse."""
    if call.stdin.kind == "file":
        return  # like a script file: out of this layer's sight
    if call.stdin.kind == "text":
        if call.stdin.text is None:
            _refuse(f"{call.name} reads a here-document that expands at run time, so its program cannot be checked")
        _judge_code(call, language, call.stdin.text)
        return
    if call.stdin.kind == "pipe":
        _refuse(f"the command pipes into a shell or interpreter ({call.name}), so what runs cannot be checked")
    _refuse(f"{call.name!r} without a script reads its program from its input, so what runs cannot be checked")


def _script_file(call: _Call, word: _Word, language: str) -> None:
    """*call* runs the program in file *word*."""
    if word.procsub:
        _refuse(f"{call.name} runs a program from a substitution (generated or downloaded code)")
    if word.value is None:
        if call.stdin.kind in {"none", "file"}:
            return
        _refuse(f"{call.name} runs a computed path while its input is a pipe or here-document (/dev/stdin?)")
    if word.value == "-" or _STDIN_PATHS.fullmatch(_normal(word.value)):
        _program_from_stdin(call, language)


def _judge_code(call: _Call, language: str, code: str) -> None:
    if language == "shell":
        # A shell reading its program from stdin shares that stdin with its commands.
        _check_script(code, call.depth + 1, _PIPE)
    elif language == "python":
        _check_python(call, code)
    elif language in _CODE_TOKENS:
        _check_code_tokens(call, language, code)
    else:
        _refuse(f"inline {call.name} code is not checked by this layer, so it is refused")


def _shell(call: _Call) -> _Next | None:
    args = list(call.args)
    has_c = from_stdin = False
    i = 0
    while i < len(args):
        text = args[i].value
        if text is None:
            _refuse(f"{call.name}: the argument {args[i].raw!r} is computed, so what the shell runs cannot be known")
        if text in {"-", "--"}:
            from_stdin = from_stdin or text == "-"
            i += 1
            break
        if text.startswith("--"):
            i += 2 if text in {"--rcfile", "--init-file"} else 1
            continue
        if text[:1] in {"-", "+"} and len(text) > 1:
            letters = text[1:]
            has_c = has_c or "c" in letters
            from_stdin = from_stdin or "s" in letters
            if "i" in letters:
                _refuse(f"an interactive {call.name} reads commands from its input and its rc files")
            i += 1 + sum(1 for ch in letters if ch in "oO")
            continue
        break
    operands = args[i:]
    if has_c:
        if not operands:
            if call.fed:
                _refuse(f"{call.name} -c takes its code from the input of xargs or parallel")
            return None
        if _family(call.name) not in _POSIX_SHELLS:
            _refuse(f"{call.name} -c code is not checked by this layer (not a POSIX shell language), so it is refused")
        _shell_code(call, operands[0], "code")
        return None
    if from_stdin or not operands:
        if call.fed and not from_stdin:
            _refuse(f"{call.name} would run a script named by the input of xargs or parallel")
        _program_from_stdin(call, "shell" if _family(call.name) in _POSIX_SHELLS else call.name)
        return None
    _script_file(call, operands[0], "shell")
    return None


def _source(call: _Call) -> _Next | None:
    args = [w for w in call.args if w.value != "--"]
    if args:
        _script_file(call, args[0], "shell")
    return None


def _interpreter(
    call: _Call,
    language: str,
    *,
    code_options: str,
    value_options: str,
    long_code: frozenset[str] = frozenset(),
    long_values: frozenset[str] = frozenset(),
    long_modules: frozenset[str] = frozenset(),
    module_options: str = "",
    interactive: str = "",
    final: str = "",
) -> None:
    """The common shape of interpreter command lines: options, inline code, a script or stdin.

    *code_options* take inline code, *module_options* a module to load (judged as
    ``import``/``use`` of it), *value_options* some other value; options in *final*
    end the interpreter's own options (Python's ``-c`` and ``-m``).
    """
    args = list(call.args)
    codes: list[str] = []
    modules: list[str] = []
    from_stdin = done = False
    i = 0
    while i < len(args) and not done:
        text = args[i].value
        if text is None:
            _refuse(f"{call.name}: the argument {args[i].raw!r} is computed, so its program cannot be known")
        if text in {"-", "--"}:
            from_stdin = from_stdin or text == "-"
            i += 1
            break
        if text.startswith("--"):
            given, eq, attached = text[2:].partition("=")
            if given in long_code or given in long_values or given in long_modules:
                value = attached if eq else (_static(call, args[i + 1], "argument") if i + 1 < len(args) else "")
                if given in long_code:
                    codes.append(value)
                elif given in long_modules:
                    modules.append(value)
                i += 1 if eq else 2
                continue
            if given == "interactive":
                _refuse(f"an interactive {call.name} reads its program from its input")
            i += 1
            continue
        if text.startswith("-") and len(text) > 1:
            consumed = 1
            for j, ch in enumerate(text[1:], 1):
                if ch in interactive:
                    _refuse(f"an interactive {call.name} reads its program from its input")
                if ch in code_options or ch in value_options or ch in module_options:
                    attached = text[j + 1 :]
                    if not attached and i + 1 < len(args):
                        attached = _static(call, args[i + 1], "argument")
                        consumed = 2
                    if ch in code_options:
                        codes.append(attached)
                    elif ch in module_options:
                        modules.append(attached)
                    done = ch in final
                    break
            i += consumed
            continue
        break
    for module in modules:
        _judge_code(call, language, f"import {module}" if language == "python" else f"use {module}")
    if modules and final:
        return  # ``python -m module args``: the rest belongs to the module
    if codes:
        for code in codes:
            _judge_code(call, language, code)
        return
    if from_stdin or i >= len(args):
        if call.fed and not from_stdin:
            _refuse(f"{call.name} would run a script named by the input of xargs or parallel")
        if not modules:
            _program_from_stdin(call, language)
        return
    _script_file(call, args[i], language)


def _python(call: _Call) -> _Next | None:
    _interpreter(
        call,
        "python",
        code_options="c",
        value_options="WXQ",
        long_values=frozenset({"check-hash-based-pycs"}),
        module_options="m",
        final="cm",
    )
    return None


def _perl(call: _Call) -> _Next | None:
    _interpreter(call, "perl", code_options="eE", value_options="IixdDlF0C", module_options="Mm")
    return None


def _ruby(call: _Call) -> _Next | None:
    _interpreter(call, "ruby", code_options="e", value_options="ICEKxF0W", module_options="r")
    return None


def _node(call: _Call) -> _Next | None:
    _interpreter(
        call,
        "node",
        code_options="ep",
        value_options="C",
        long_code=_names("eval print"),
        long_modules=_names("require import loader experimental-loader"),
        module_options="r",
        interactive="i",
    )
    return None


def _deno(call: _Call) -> _Next | None:
    args = list(call.args)
    if args and args[0].value == "eval":
        codes = [w for w in args[1:] if not (w.value or "x").startswith("-")]
        if codes:
            _judge_code(call, "node", _static(call, codes[0], "code"))
        return None
    if args and args[0].value == "repl":
        _refuse("deno repl reads its program from its input")
    return None


def _bun(call: _Call) -> _Next | None:
    _interpreter(call, "node", code_options="ep", value_options="r", long_code=_names("eval print"), module_options="")
    return None


def _php(call: _Call) -> _Next | None:
    _interpreter(call, "php", code_options="rBRE", value_options="dcSztF", interactive="a")
    return None


def _lua(call: _Call) -> _Next | None:
    _interpreter(call, "lua", code_options="e", value_options="", module_options="l", interactive="i")
    return None


def _other_interpreter(code_options: str, long_code: frozenset[str] = frozenset()) -> _Handler:
    def handle(call: _Call) -> _Next | None:
        _interpreter(call, call.name, code_options=code_options, value_options="", long_code=long_code)
        return None

    return handle


# The primitives that turn interpreter code into processes, sockets, FFI or dynamic code.
_CODE_TOKENS: Final = {
    "perl": re2.compile(
        r"\b(?:system|exec|fork|qx|readpipe|syscall|socket\w*|Socket|IO::Pty|pty|eval|open[23]?|pipe|dl_load\w*|"
        rf"DynaLoader|XSLoader|FFI|Inline|require)\b|`|->{_WS}*\$|&{_WS}*[$\{{]|\*{_WS}*\{{|\bdo{_WS}*['\"$]"
    ),
    "ruby": re2.compile(
        r"\b(?:system|exec|spawn|fork|syscall|\w*[Ss]ocket\w*|PTY|pty|Open3|open3|popen\w*|IO\.\w+|Kernel|eval|"
        r"instance_eval|class_eval|module_eval|binding|send|__send__|public_send|method|const_get|Fiddle|FFI|DL|"
        r"open|require|load|ObjectSpace|Process)\b|`|%x"
    ),
    "node": re2.compile(
        r"\b(?:child_process|exec\w*|spawn\w*|fork|execFile\w*|net|dgram|tls|http2?|https|vm|worker_threads|"
        r"cluster|eval|Function|constructor|process\.binding|binding|dlopen|_load|globalThis|global|Reflect|"
        r"import|Deno|Bun|ffi|FFI|inspector|module)\b|`"
    ),
    "php": re2.compile(
        r"\b(?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_\w+|fsockopen|pfsockopen|socket_\w+|"
        r"stream_socket_\w+|eval|assert|create_function|call_user_func\w*|array_map|array_filter|array_walk\w*|"
        r"usort|uasort|uksort|preg_replace\w*|register_\w+_function|forward_static_call\w*|Reflection\w*|FFI|dl|"
        r"mail|putenv|include|require|include_once|require_once|ini_set|curl_exec|extract|parse_str)\b|`|"
        rf"\$\w+{_WS}*\(|\$\{{"
    ),
    "lua": re2.compile(
        r"\b(?:os\.execute|io\.popen|execute|popen|load|loadstring|loadfile|dofile|require|package|debug|ffi|"
        r"socket|_G|_ENV|getfenv|setfenv|rawget|string\.dump)\b"
    ),
}


#: ``require(`` in JavaScript: allowed only with a plain string literal (``require('fs')``),
#: which the module-name tokens above then judge; anything else loads what it computes.
_REQUIRE_CALL: Final = re2.compile(rf"require{_WS}*\({_WS}*")
_REQUIRE_LITERAL: Final = re2.compile(rf"['\"][\w./@-]+['\"]{_WS}*\)")


def _computed_require(code: str) -> str | None:
    for call in _REQUIRE_CALL.finditer(code):
        # A slice, not ``match(code, pos)``: RE2's binding re-encodes the whole text per
        # call. A name longer than the slice counts as computed (refused).
        if not _REQUIRE_LITERAL.match(code[call.end() : call.end() + 4096]):
            return str(call.group(0))
    return None


def _check_code_tokens(call: _Call, language: str, code: str) -> None:
    _check_text(code)
    match = _CODE_TOKENS[language].search(code)
    if match is None and language == "node" and "require" in code:
        found = _computed_require(code)
        if found is not None:
            _refuse(
                f"the inline {call.name} code uses {found.strip()!r}, which can start processes, open "
                "sockets or run hidden code"
            )
    if match:
        _refuse(
            f"the inline {call.name} code uses {match.group(0).strip()!r}, which can start processes, open "
            "sockets or run hidden code"
        )


_PY_DENIED_MODULES: Final = _names(
    "socket _socket socketserver ssl pty tty termios subprocess _posixsubprocess multiprocessing "
    "concurrent asyncio ctypes _ctypes cffi importlib imp pkgutil runpy code codeop pdb bdb pickle "
    "_pickle cPickle marshal shelve dill telnetlib ftplib smtplib poplib imaplib xmlrpc webbrowser "
    "pexpect ptyprocess sh plumbum paramiko fabric invoke builtins __builtin__ posix nt commands popen2 "
    "platform pydoc sysconfig distutils setuptools cgi selectors select signal resource fcntl mmap gc "
    "inspect types operator functools zipimport"
)
_PY_DENIED_ATTRIBUTES: Final = _names(
    "system popen popen2 popen3 popen4 startfile fork forkpty vfork dup2 posix_spawn posix_spawnp kill "
    "killpg setuid setgid setreuid setresuid chroot rmtree getoutput getstatusoutput check_output "
    "check_call Popen load_module exec_module spawnl spawnle spawnlp spawnlpe spawnv spawnve spawnvp "
    "spawnvpe execl execle execlp execlpe execv execve execvp execvpe attrgetter methodcaller f_globals "
    "f_builtins gi_frame cr_frame tb_frame f_back"
)
_PY_DENIED_NAMES: Final = _names(
    "eval exec compile __import__ getattr setattr delattr globals locals vars breakpoint __builtins__ "
    "__loader__ __spec__ input help open_code"
)
_PY_SAFE_DUNDERS: Final = _names("__name__ __file__ __doc__ __version__ __init__ __main__")


def _check_python(call: _Call, code: str) -> None:
    """Refuse inline Python that reaches for processes, sockets, FFI or dynamic code.

    It is read with Python's own parser, so spacing, strings and comments cannot hide a
    name. Only names are judged: a clean program can still do harm through files, which
    is the jail's business.
    """
    _check_text(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        _refuse(f"the inline {call.name} code does not parse as Python 3, so it cannot be checked")

    def refuse(what: str) -> NoReturn:
        _refuse(f"the inline {call.name} code uses {what}, which can start processes, open sockets or run hidden code")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _PY_DENIED_MODULES:
                    refuse(f"the module {alias.name!r}")
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in _PY_DENIED_MODULES or node.level:
                refuse(f"the module {node.module!r}")
            for alias in node.names:
                if alias.name == "*" or alias.name in _PY_DENIED_ATTRIBUTES or alias.name in _PY_DENIED_NAMES:
                    refuse(f"'{alias.name}' from {node.module!r}")
        elif isinstance(node, ast.Attribute):
            if node.attr in _PY_DENIED_ATTRIBUTES:
                refuse(f"'.{node.attr}'")
            if node.attr.startswith("__") and node.attr not in _PY_SAFE_DUNDERS:
                refuse(f"the dunder attribute '{node.attr}'")
        elif isinstance(node, ast.Name):
            if node.id in _PY_DENIED_NAMES or node.id in _PY_DENIED_ATTRIBUTES:
                refuse(f"'{node.id}'")
            if node.id.startswith("__") and node.id not in _PY_SAFE_DUNDERS:
                refuse(f"the dunder name '{node.id}'")


# --- Commands that run commands through their options --------------------------------------


def _no_computed(call: _Call, args: Sequence[_Word]) -> None:
    """Refuse computed arguments of a command whose options can run commands: one could be such an option."""
    for word in args:
        if word.value is None:
            _refuse(f"{call.name}: the computed argument {word.raw!r} could be an option that runs a command")


def _option_values(args: Sequence[_Word], names: Iterable[str]) -> Iterator[tuple[str, _Word]]:
    """Values of long options (``--name=v``, ``--name v``; any prefix counts) and short ones (``-x v``)."""
    names = tuple(names)
    for i, word in enumerate(args):
        text = word.value
        if text is None or not text.startswith("-"):
            continue
        if text.startswith("--"):
            given, eq, attached = text[2:].partition("=")
            for name in names:
                if len(name) > 1 and _could_be(given, name):
                    if eq:
                        yield name, _literal(attached)
                    elif i + 1 < len(args):
                        yield name, args[i + 1]
        else:
            for name in names:
                if len(name) == 1 and text[1:2] == name:
                    if len(text) > 2:
                        yield name, _literal(text[2:])
                    elif i + 1 < len(args):
                        yield name, args[i + 1]


_GIT_RISKY_SUBCOMMANDS: Final = _names(
    "clone fetch pull ls-remote push archive remote rebase submodule bisect difftool mergetool grep send-email "
    "filter-branch config"
)
"""git subcommands with options that run commands: a computed argument there could be one."""
_GIT_SHELL_KEYS: Final = re2.compile(
    r"core\.(?:pager|editor|sshcommand|askpass|gitproxy)|pager\..*|sequence\.editor|credential\.(?:.*\.)?helper|"
    r"diff\.external|diff\..*\.(?:textconv|command)|merge\..*\.driver|filter\..*\.(?:clean|smudge|process)|"
    r"gpg\.(?:.*\.)?program|(?:difftool|mergetool|man|browser)\..*\.(?:cmd|path)|web\.browser|"
    r"sendemail\.(?:.*\.)?(?:tocmd|cccmd|headercmd|smtpserver)|imap\.tunnel|interactive\.difffilter|"
    r"remote\..*\.(?:uploadpack|receivepack|proxy)|uploadpack\.packobjectshook|alias\..*"
)
_GIT_REFUSED_KEYS: Final = re2.compile(
    r"core\.(?:hookspath|fsmonitor|worktree)|include\.path|includeif\..*|init\.templatedir|protocol\..*allow|"
    r"safe\.directory|core\.sshcommand\..*"
)


def _check_git_setting(call: _Call, key: str, value: _Word) -> None:
    key = key.lower()
    if _GIT_REFUSED_KEYS.fullmatch(key):
        if key == "core.fsmonitor" and (value.value or "").lower() in {"true", "false", "0", "1", ""}:
            return
        _refuse(f"git: setting {key} makes git run or load code from elsewhere")
    if _GIT_SHELL_KEYS.fullmatch(key):
        text = _static(call, value, f"value of {key}")
        if key.startswith(("alias.", "credential.")) and not text.startswith("!"):
            return  # a git subcommand or a credential helper name, not a shell command
        _check_script(text.lstrip("!"), call.depth + 1, call.stdin)


def _git(call: _Call) -> _Next | None:
    args = list(call.args)
    i = 0
    while i < len(args):
        text = args[i].value
        if text is None:
            _refuse(f"git: the argument {args[i].raw!r} is computed, so what git runs cannot be known")
        if text in {"-c", "--config-env"} and i + 1 < len(args):
            setting = _static(call, args[i + 1], "setting")
            key, _, setting_value = setting.partition("=")
            if text == "--config-env" and (
                _GIT_SHELL_KEYS.fullmatch(key.lower()) or _GIT_REFUSED_KEYS.fullmatch(key.lower())
            ):
                _refuse(f"git --config-env: {key} would come from the environment, unchecked")
            _check_git_setting(call, key, _literal(setting_value))
            i += 2
            continue
        if text.startswith("--exec-path="):
            _refuse("git --exec-path= makes git run its commands from another directory")
        if text in {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}:
            i += 2
            continue
        if text.startswith("-"):
            i += 1
            continue
        break
    if i >= len(args):
        return None
    sub = args[i].value
    rest = args[i + 1 :]
    if sub in _GIT_RISKY_SUBCOMMANDS:
        _no_computed(call, rest)
    for word in rest:
        if word.value is not None and word.value.startswith(("ext::", "fd::")):
            _refuse("git: the ext:: and fd:: transports run commands")
    for option, value in _option_values(rest, ("upload-pack", "receive-pack", "exec", "u")):
        if sub in {"clone", "fetch", "pull", "ls-remote", "push", "archive", "remote"} and not (
            option == "u" and sub in {"push", "pull"}
        ):
            _shell_code(call, value, f"--{option} command")
    if sub == "config":
        operands = [w for w in rest if not (w.value or "-").startswith("-")]
        if operands and operands[0].value in {"set", "--add"}:
            operands = operands[1:]
        if len(operands) >= 2 and "." in (operands[0].value or ""):
            _check_git_setting(call, _static(call, operands[0], "key"), operands[1])
    elif sub == "rebase":
        for _, value in _option_values(rest, ("exec", "x")):
            _shell_code(call, value, "--exec command")
    elif sub == "submodule" and rest and rest[0].value == "foreach":
        body = [w for w in rest[1:] if w.value not in {"--recursive", "-q", "--quiet"}]
        _check_script(" ".join(_static(call, w, "command") for w in body), call.depth + 1, call.stdin)
    elif sub == "bisect" and rest and rest[0].value == "run":
        _judge(rest[1:], call.stdin, call.depth + 1)
    elif sub == "filter-branch":
        for option in (
            "env-filter",
            "tree-filter",
            "index-filter",
            "parent-filter",
            "msg-filter",
            "commit-filter",
            "tag-name-filter",
            "subdirectory-filter",
            "setup",
        ):
            for _, value in _option_values(rest, (option,)):
                if option != "subdirectory-filter":
                    _shell_code(call, value, f"--{option}")
    elif sub in {"difftool", "mergetool"}:
        for _, value in _option_values(rest, ("extcmd", "x")):
            _shell_code(call, value, "--extcmd")
    elif sub == "grep":
        for word in rest:
            text = word.value or ""
            if text.startswith("-O") and len(text) > 2:
                _check_script(text[2:], call.depth + 1, call.stdin)
            elif text.startswith("--open-files-in-pager=") or text.startswith("--open-files-in-pager"):
                _, _, pager = text.partition("=")
                if pager:
                    _check_script(pager, call.depth + 1, call.stdin)
    elif sub == "send-email":
        for option, value in _option_values(rest, ("to-cmd", "cc-cmd", "header-cmd", "smtp-server", "sendmail-cmd")):
            _shell_code(call, value, f"--{option}")
    return None


_SSH_VALUE_OPTIONS: Final = {"ssh": "BbcDEeFIiJLlmOoPpQRSWw", "scp": "cFiJlOoPSXDRb"}


def _ssh_option(call: _Call, setting: str) -> None:
    key, _, value = setting.replace("=", " ", 1).partition(" ")
    key = key.strip().lower()
    value = value.strip()
    if key in {"proxycommand", "localcommand", "knownhostscommand"}:
        _check_script(value, call.depth + 1, call.stdin)
    elif key in {"pkcs11provider", "securitykeyprovider", "match", "include", "permitlocalcommand"}:
        if key == "permitlocalcommand" and value.lower() in {"no", ""}:
            return
        _refuse(f"{call.name}: the option {key} loads or runs local code")


def _ssh(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    values = _SSH_VALUE_OPTIONS["ssh" if call.name == "ssh" else "scp"]
    args = list(call.args)
    i = 0
    while i < len(args):
        text = args[i].value
        if text is None or not text.startswith("-") or text == "-":
            i += 1
            continue
        if text == "--":
            break
        for j, ch in enumerate(text[1:], 1):
            if ch in values:
                attached = text[j + 1 :]
                value = _literal(attached) if attached else (args[i + 1] if i + 1 < len(args) else _literal(""))
                i += 0 if attached else 1
                if ch == "o":
                    _ssh_option(call, _static(call, value, "-o option"))
                elif ch in {"S", "D"} and call.name != "ssh":
                    _judge([value], call.stdin, call.depth + 1)
                break
        i += 1
    return None


def _rsync(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    for option, value in _option_values(call.args, ("rsh", "rsync-path", "e")):
        _shell_code(call, value, f"{option} command")
    return None


def _tar(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    args = list(call.args)
    for option, value in _option_values(
        args,
        (
            "to-command",
            "use-compress-program",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "rmt-command",
            "I",
            "F",
        ),
    ):
        _shell_code(call, value, f"{option} command")
    for _, value in _option_values(args, ("checkpoint-action",)):
        text = _static(call, value, "checkpoint action")
        if text.startswith("exec=") or text.startswith("exec"):
            _check_script(text.partition("=")[2], call.depth + 1, call.stdin)
    if args and args[0].value and not args[0].value.startswith("-"):
        # Old-style bundled letters: each letter that takes a value takes the next operand.
        queue = iter(args[1:])
        for letter in args[0].value:
            if letter in "fbTXgKLNVCH":
                next(queue, None)
            elif letter in "IF":
                operand = next(queue, None)
                if operand is not None:
                    _shell_code(call, operand, f"-{letter} command")
    return None


def _zip(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    args = list(call.args)
    for i, word in enumerate(args):
        text = word.value or ""
        if text == "-TT" and i + 1 < len(args):
            _shell_code(call, args[i + 1], "-TT command")
        elif text.startswith("-TT") and len(text) > 3:
            _check_script(text[3:], call.depth + 1, call.stdin)
    for _, value in _option_values(args, ("unzip-command",)):
        _shell_code(call, value, "--unzip-command")
    return None


def _less(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    for word in call.args:
        text = word.value
        if text is None:
            continue
        if text.startswith("+") and ("!" in text or "|" in text):
            _refuse(f"{call.name}: the initial command {text!r} runs a shell command")
    return None


def _man(call: _Call) -> _Next | None:
    _no_computed(call, call.args)
    for option, value in _option_values(call.args, ("pager", "P", "html", "H")):
        if value.value:
            _shell_code(call, value, f"{option} command")
    return None


_VIM_LINE: Final = re2.compile(r"\+[0-9]*")
_SHORT_FLAGS: Final = re2.compile(r"-[a-zA-Z]+")
_VIM_RISKY: Final = re2.compile(
    r"!|\b(?:sh|shell|te|ter|term|terminal|py\w*|lua\w*|perl\w*|rub\w*|ruby\w*|mz\w*|tcl\w*|so|source|runtime|"
    r"system\w*|libcall\w*|job_?start|termopen|ch_open|exe|exec\w*|call|eval|luaeval|\w+eval|norm\w*|redir|"
    r"au\w*|let|r|w)\b"
)


def _vim(call: _Call) -> _Next | None:
    args = list(call.args)
    ex_mode = call.name == "ex"
    i = 0
    while i < len(args):
        text = args[i].value
        if text is None:
            _refuse(f"{call.name}: the argument {args[i].raw!r} is computed, so what the editor runs cannot be known")
        command: str | None = None
        if text in {"-c", "--cmd", "--remote-send", "--remote-expr"} and i + 1 < len(args):
            command = _static(call, args[i + 1], "editor command")
            i += 1
        elif text.startswith("+") and not _VIM_LINE.fullmatch(text):
            command = text[1:]
        elif _SHORT_FLAGS.fullmatch(text):
            if "e" in text or "E" in text:
                ex_mode = True
            elif text == "-s" and not ex_mode:
                i += 1  # -s scriptin: keys from a file, out of sight like any script
        if command is not None and _VIM_RISKY.search(command):
            _refuse(f"{call.name}: the editor command {command!r} can run a shell or code")
        i += 1
    if ex_mode:
        _editor_input(call)
    return None


def _editor_input(call: _Call) -> None:
    if call.stdin.kind == "pipe":
        _refuse(f"{call.name} reads editor commands from a pipe (they can run a shell), unseen")
    if call.stdin.kind == "text" and (call.stdin.text is None or "!" in call.stdin.text):
        _refuse(f"{call.name} reads editor commands that can run a shell ('!') from a here-document")


def _ed(call: _Call) -> _Next | None:
    _editor_input(call)
    return None


def _emacs(call: _Call) -> _Next | None:
    for word in call.args:
        if (word.value or "").lstrip("-").partition("=")[0] in {"eval", "execute"}:
            _refuse(f"{call.name} --eval runs Emacs Lisp, which this layer does not check")
    return None


def _gdb(call: _Call) -> _Next | None:
    for word in call.args:
        given = (word.value or "").lstrip("-").partition("=")[0]
        if given in {
            "ex",
            "iex",
            "x",
            "ix",
            "eval-command",
            "init-eval-command",
            "command",
            "init-command",
            "p",
            "pid",
            "batch",
            "python",
        }:
            _refuse(f"gdb {word.value}: gdb commands can run a shell or attach to another process")
    return None


def _tracer(call: _Call) -> _Next | None:
    spec = _Spec(short_values="aAbeEIoOpPsSuUXnlLxDF", short_flags="cCdDfhiqrtTvVwyYkzZ", strict=False)
    options = _parse_options(call, spec)
    if any(option in {"p", "attach"} for option, _ in options.values):
        _refuse(f"{call.name} -p attaches to another process (it can read its memory)")
    return _Next(options.operands, call.stdin, call.fed)


def _awk(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="FvfeilEWo",
        short_flags="bcCDghLMnNOPrsStVy",
        optional_attached="dpo",
        long_values="field-separator assign file source include load exec",
        long_flags=(
            "sandbox characters-as-bytes traditional copyright debug dump-variables gen-pot lint bignum "
            "use-lc-numeric non-decimal-data optimize no-optimize posix re-interval csv profile "
            "pretty-print lint-old"
        ),
        strict=False,
    )
    options = _parse_options(call, spec)
    if "S" in options.flags or "sandbox" in options.flags:
        return None
    programs: list[_Word] = []
    has_file = False
    for option, value in options.values:
        if option in {"l", "load"}:
            _refuse(f"{call.name} --load loads a shared library")
        if option in {"e", "source"}:
            programs.append(value)
        if option in {"f", "file", "E", "exec", "i", "include"}:
            has_file = True
    if not programs and not has_file and options.operands:
        programs.append(options.operands[0])
    for program in programs:
        text = _static(call, program, "awk program")
        if _AWK_RISKY.search(text):
            _refuse(f"the {call.name} program runs commands (system(), pipes or @load)")
    return None


#: ``|`` alone (not in ``||``) pipes to a command; ``|&`` is a coprocess.
_AWK_RISKY: Final = re2.compile(r"\bsystem\b|@load|(?:^|[^|])\|(?:[^|]|$)|\|&")
_SED_WRITES: Final = re2.compile(
    rf"(?:^|[;\n}}]){_WS}*[0-9$,/]*{_WS}*[wW]{_WS}*([^{_WS[1:-1]}]+)|/[^/\n]*/[^/\n]*/\w*w{_WS}*([^{_WS[1:-1]}]+)"
)


def _sed_runs_commands(script: str) -> bool:
    """Whether a sed script can run a command (the ``e`` command or the ``s///e`` flag).

    A small reader of GNU sed syntax; what it cannot read counts as running commands.
    """
    i, n = 0, len(script)

    def skip_regex(start: int) -> int:
        delimiter = script[start]
        j = start + 1
        while j < n and script[j] != delimiter:
            j += 2 if script[j] == "\\" else 1
        if j >= n:
            raise ValueError(script)
        return j + 1

    try:
        while i < n:
            ch = script[i]
            if ch in " \t\n;{}!":
                i += 1
                continue
            if ch == "#":
                while i < n and script[i] != "\n":
                    i += 1
                continue
            # addresses
            if ch.isdigit() or ch in "$,~+":
                i += 1
                continue
            if ch == "/":
                i = skip_regex(i)
                while i < n and script[i] in "IM":
                    i += 1
                continue
            if ch == "\\":
                i = skip_regex(i + 1)
                continue
            i += 1
            if ch == "e":
                return True
            if ch in "sy":
                if i >= n:
                    return True
                i = skip_regex(i)  # the pattern, from its opening delimiter
                i = skip_regex(i - 1)  # the replacement: its delimiter closed the pattern
                if ch == "s":
                    flags = ""
                    while i < n and script[i] not in ";\n}":
                        if script[i] == "w":
                            flags += "w"
                            break
                        flags += script[i]
                        i += 1
                    if "e" in flags:
                        return True
                    if "w" in flags:
                        while i < n and script[i] != "\n":
                            i += 1
                continue
            if ch in "aicrRwWbtTvlLqQ:":
                while i < n and script[i] != "\n" and not (ch in "btTvlLqQ:" and script[i] in ";}"):
                    i += 2 if ch in "aic" and script[i] == "\\" else 1
                continue
            if ch in "=dDgGhHnNpPxzF":
                continue
            return True
    except ValueError:
        return True
    return False


def _sed(call: _Call) -> _Next | None:
    spec = _Spec(
        short_values="efl",
        short_flags="nrEsuzb",
        optional_attached="i",
        long_values="expression file line-length",
        long_flags=(
            "in-place quiet silent regexp-extended separate unbuffered null-data zero-terminated posix "
            "sandbox debug follow-symlinks binary"
        ),
        strict=False,
    )
    options = _parse_options(call, spec, stop_at_operand=False)
    scripts = [v for o, v in options.values if o in {"e", "expression"}]
    has_file = any(o in {"f", "file"} for o, _ in options.values)
    files = list(options.operands)
    if not scripts and not has_file and files:
        scripts = [files.pop(0)]
    if any(o in {"i", "in-place"} for o, _ in options.values) or "in-place" in options.flags:
        for word in files:
            if word.value is not None:
                _check_write_target(word.value, "sed -i")
    if "sandbox" in options.flags:
        return None
    for word in scripts:
        text = _static(call, word, "sed script")
        if _sed_runs_commands(text):
            _refuse(f"the sed script {text!r} can run commands (the e command or s///e)")
        for target in _SED_WRITES.findall(text):
            for path in target:
                if path:
                    _check_write_target(path, "sed w")
    return None


_SQLITE_RISKY: Final = re2.compile(
    rf"(?im)^{_WS}*\.(?:sh|shell|system|load|excel|edit)\b|^{_WS}*\.(?:output|once|read|import|open|save|backup|"
    rf"restore)\b[^\n]{{0,200}}\||load_extension|\bedit{_WS}*\("
)


def _sqlite(call: _Call) -> _Next | None:
    args = list(call.args)
    sql: list[_Word] = []
    operands = 0
    i = 0
    while i < len(args):
        text = args[i].value or ""
        if text in {"-cmd"} and i + 1 < len(args):
            sql.append(args[i + 1])
            i += 2
            continue
        if text in {
            "-init",
            "-separator",
            "-newline",
            "-nullvalue",
            "-mmap",
            "-vfs",
            "-maxsize",
            "-heap",
            "-escape",
            "-A",
            "-pagecache",
            "-lookaside",
        }:
            i += 3 if text in {"-pagecache", "-lookaside"} else 2
            continue
        if text.startswith("-") and args[i].value is not None:
            i += 1
            continue
        operands += 1
        if operands > 1:
            sql.append(args[i])
        i += 1
    for word in sql:
        if _SQLITE_RISKY.search(_static(call, word, "SQL")):
            _refuse("sqlite3: the dot-command or function runs a shell or loads a library")
    if operands <= 1:
        if call.stdin.kind == "pipe":
            _refuse("sqlite3 reads dot-commands (which can run a shell) from a pipe, unseen")
        if call.stdin.kind == "text" and (call.stdin.text is None or _SQLITE_RISKY.search(call.stdin.text)):
            _refuse("sqlite3: the dot-command or function runs a shell or loads a library")
    return None


_SQL_CLIENT_RISKY: Final = re2.compile(rf"(?im)\\!|\\[og]{_WS}*\||\bprogram\b|^{_WS}*system\b|\\system")


def _sql_client(call: _Call) -> _Next | None:
    for _, value in _option_values(call.args, ("command", "c", "execute", "e")):
        if _SQL_CLIENT_RISKY.search(_static(call, value, "SQL")):
            _refuse(f"{call.name}: the command runs a shell ('\\!' or PROGRAM)")
    if call.stdin.kind == "text" and (call.stdin.text is None or _SQL_CLIENT_RISKY.search(call.stdin.text)):
        _refuse(f"{call.name}: the input runs a shell ('\\!' or PROGRAM)")
    return None


def _dc(call: _Call) -> _Next | None:
    expressions = list(_option_values(call.args, ("expression", "e")))
    for _, value in expressions:
        if "!" in _static(call, value, "expression"):
            _refuse("dc: '!' runs a shell command")
    files = [w for w in call.args if not (w.value or "-").startswith("-")]
    if not expressions and not files:
        _editor_input(call)
    return None


_GNUPLOT_RISKY: Final = re2.compile(r"\bsystem\b|!|\bshell\b|\bpopen\b|\||`|\bload\b|\bcall\b")


def _gnuplot(call: _Call) -> _Next | None:
    for _, value in _option_values(call.args, ("e",)):
        if _GNUPLOT_RISKY.search(_static(call, value, "gnuplot command")):
            _refuse("gnuplot: the command runs a shell")
    if call.stdin.kind == "pipe" or (
        call.stdin.kind == "text" and (call.stdin.text is None or _GNUPLOT_RISKY.search(call.stdin.text))
    ):
        _refuse("gnuplot reads commands that can run a shell from its input")
    return None


# --- Destructive commands ---------------------------------------------------------------

_TOP_LEVEL: Final = re2.compile(r"/+[^/]*/*\**")
_GLOB_AT_TOP: Final = re2.compile(r"/+[^/]*[*?\[]")
_HOME_DIR: Final = re2.compile(r"/(?:home|Users)/+[^/]*/*\**")
_HOME_VARIABLE: Final = re2.compile(r"\$\{?HOME\b")
_CHMOD_FLAGS: Final = re2.compile(r"-[RcfvhHLP]+")
_SETID_MODE: Final = re2.compile(r"[ugoa]*[+=][rwxXt]*s|^[0-7]*[2-7][0-7]{3}\n?$")


def _is_rootish(value: str, strict: bool = True) -> bool:
    """Whether *value* names the root, a home, a top-level or system directory, or (strict) all of cwd."""
    if value.startswith("~"):
        return True
    if _HOME_VARIABLE.search(value):
        return True
    normal = _normal(value)
    if normal.startswith("/"):
        return bool(
            _TOP_LEVEL.fullmatch(normal)
            or _is_system_path(normal)
            or _GLOB_AT_TOP.match(normal)
            or _HOME_DIR.fullmatch(normal)
        )
    if normal.startswith(".."):
        return True  # above the workspace
    if strict:
        return normal in {".", "*", ".*"} or normal.startswith(("./*", "*/"))
    return False


def _rm(call: _Call) -> _Next | None:
    recursive = False
    targets: list[_Word] = []
    options_done = False
    for word in call.args:
        text = word.value
        if text is None and not options_done and word.optionlike:
            recursive = True  # a computed argument may expand to -r
        if not options_done and text is not None and text.startswith("-") and len(text) > 1:
            if text == "--":
                options_done = True
            elif text.startswith("--"):
                given = text[2:].partition("=")[0]
                recursive = recursive or _could_be(given, "recursive")
                if _could_be(given, "no-preserve-root") and len(given) >= 2:
                    _refuse("rm --no-preserve-root disables the root protection")
            else:
                recursive = recursive or "r" in text.lower()
            continue
        targets.append(word)
    for word in targets:
        if word.value is not None and (_is_system_path(_normal(word.value)) or _is_rootish(word.value, strict=False)):
            _refuse(f"rm on the root, home or system path {word.value!r} is destructive")
    if not recursive:
        return None
    if call.fed:
        _refuse("'rm -r' takes its targets from the input of xargs or parallel, so they cannot be checked")
    for word in targets:
        if word.value is None:
            _refuse(
                f"the target {word.raw!r} of rm (recursive, or maybe so) is computed at run time (write the path out)"
            )
        if _away() and not word.value.startswith("/"):
            _refuse("'rm -r' on a relative path after a cd that may leave the workspace (write the full path)")
        if _is_rootish(word.value):
            _refuse(
                "'rm -r' on the root, home, a system or top-level directory, or all of the workspace is destructive"
            )
    return None


def _chmod(call: _Call) -> _Next | None:
    recursive = False
    operands: list[_Word] = []
    for word in call.args:
        text = word.value
        if text is None and word.optionlike:
            recursive = True  # a computed argument may expand to -R
        if text is not None and text.startswith("--"):
            recursive = recursive or _could_be(text[2:].partition("=")[0], "recursive")
        elif text is not None and _CHMOD_FLAGS.fullmatch(text):
            recursive = recursive or "R" in text
        else:
            operands.append(word)
    if call.name == "chmod" and operands and operands[0].value is not None:
        mode = operands[0].value
        if _SETID_MODE.search(mode):
            _refuse("chmod: setting the setuid or setgid bit makes a privilege escalation path")
    for word in operands[1:]:
        if word.value is None:
            if recursive:
                _refuse(f"the target {word.raw!r} of '{call.name} -R' is computed at run time")
            continue
        if _is_system_path(_normal(word.value)) or (
            recursive and (_is_rootish(word.value, strict=False) or (_away() and not word.value.startswith("/")))
        ):
            _refuse(f"'{call.name}' on the root, home or system path {word.value!r} changes the whole system")
    if recursive and call.fed:
        _refuse(f"'{call.name} -R' takes its targets from the input of xargs or parallel")
    return None


def _dd(call: _Call) -> _Next | None:
    for word in call.args:
        if word.value is not None and word.value.startswith("of="):
            _check_write_target(word.value[3:], "dd")
    return None


def _writer(call: _Call) -> _Next | None:
    """tee, cp, mv, install, ln, truncate: a write to (or, for mv, a move of) a system path is refused."""
    operands = [w for w in call.args if not (w.value or "").startswith("-")]
    targets = operands if call.name in {"tee", "truncate", "mv"} else operands[-1:]
    for _, value in _option_values(call.args, ("target-directory", "t")):
        targets.append(value)
    for word in targets:
        if word.value is not None:
            _check_write_target(word.value, call.name)
    return None


def _kill(call: _Call) -> _Next | None:
    if call.fed:
        _refuse(f"{call.name} takes its targets from the input of xargs or parallel (the daemon could be one)")
    for word in call.args:
        if word.value in {"-1", "1"}:
            _refuse(f"{call.name} {word.value} signals every process or init")
        if "PPID" in word.raw:
            _refuse(f"{call.name} targets the parent process (the daemon)")
    if call.name in {"pkill", "killall"}:
        for word in call.args:
            text = (word.value or "").lower()
            if text in {".", ".*", "^", "", "-u", "--user"} or "python" in text or "beamclaw" in text:
                _refuse(f"{call.name} {word.raw} could kill the daemon or every process")
    return None


# --- Builtins that reach variables or code ------------------------------------------------


def _declare(call: _Call) -> _Next | None:
    for word in call.args:
        if word.value is None:
            _refuse(f"{call.name} declares a computed name {word.raw!r}")
        if not word.value.startswith(("-", "+")):
            _check_declared_name(word.value)
    return None


def _read(call: _Call) -> _Next | None:
    spec = _Spec(short_values="adinNptu", short_flags="ers", strict=False)
    options = _parse_options(call, spec)
    names = [v for o, v in options.values if o == "a"] + options.operands
    for word in names:
        _check_declared_name(_static(call, word, "variable name"))
    return None


def _printf(call: _Call) -> _Next | None:
    for option, value in _option_values(call.args, ("v",)):
        del option
        _check_declared_name(_static(call, value, "variable name"))
    return None


def _mapfile(call: _Call) -> _Next | None:
    for word in call.args:
        if (word.value or "").startswith("-C"):
            _refuse(f"{call.name} -C runs a callback command for every line")
    spec = _Spec(short_values="dnOsuc", short_flags="t", strict=False)
    for word in _parse_options(call, spec).operands:
        _check_declared_name(_static(call, word, "array name"))
    return None


def _cd(call: _Call) -> _Next | None:
    operands = [w for w in call.args if not (w.value or "x").startswith("-") or w.value == "-"]
    if not operands:
        return None  # home, which is the workspace
    target = operands[0].value
    if target is None or target == "-" or target.startswith(("/", "~")) or ".." in target.split("/"):
        _state.away = True
    return None


def _getopts(call: _Call) -> _Next | None:
    if len(call.args) > 1:
        _check_declared_name(_static(call, call.args[1], "variable name"))
    return None


def _refuse_option(option: str, reason: str) -> _Handler:
    def handle(call: _Call) -> _Next | None:
        for word in call.args:
            if word.value is not None and word.value.startswith("-") and option in word.value[1:]:
                _refuse(f"{call.name} -{option} {reason}")
        return None

    return handle


_HANDLERS: Final[dict[str, _Handler]] = {
    "env": _env,
    "nohup": _wrapper(_Spec()),
    "nice": _wrapper(_Spec(short_values="n", long_values="adjustment", digits=True)),
    "timeout": _wrapper(
        _Spec(
            short_values="sk",
            short_flags="fpv",
            long_values="signal kill-after",
            long_flags="foreground preserve-status verbose",
        ),
        fixed_operands=1,
    ),
    "stdbuf": _wrapper(_Spec(short_values="ioe", long_values="input output error")),
    "setsid": _wrapper(_Spec(short_flags="cfw", long_flags="ctty fork wait")),
    "ionice": _wrapper(
        _Spec(
            short_values="cnpPu",
            short_flags="th",
            long_values="class classdata pid pgid uid",
            long_flags="ignore",
        )
    ),
    "taskset": _wrapper(
        _Spec(
            short_flags="acpVh",
            long_flags="all-tasks cpu-list pid",
        ),
        fixed_operands=1,
    ),
    "chrt": _wrapper(_Spec(short_values="TPD", short_flags="abdefimoprRvVh", strict=False), fixed_operands=1),
    "time": _wrapper(
        _Spec(
            short_values="fo",
            short_flags="apqv",
            long_values="format output",
            long_flags="append verbose portability quiet",
        )
    ),
    "command": _command,
    "builtin": _builtin,
    "exec": _exec,
    "xargs": _xargs,
    "find": _find,
    "parallel": _parallel,
    "watch": _watch,
    "flock": _flock,
    "script": _script,
    "busybox": _busybox,
    "strace": _tracer,
    "ltrace": _tracer,
    "eval": _eval,
    "trap": _trap,
    "source": _source,
    **dict.fromkeys(_RUNNERS, _runner),
    **dict.fromkeys(_POSIX_SHELLS | _OTHER_SHELLS, _shell),
    "python": _python,
    "perl": _perl,
    "ruby": _ruby,
    "node": _node,
    "deno": _deno,
    "bun": _bun,
    "php": _php,
    "lua": _lua,
    "Rscript": _other_interpreter("e"),
    "R": _other_interpreter("e"),
    "julia": _other_interpreter("eE", _names("eval print")),
    "tclsh": _other_interpreter(""),
    "wish": _other_interpreter(""),
    "expect": _other_interpreter("c"),
    "osascript": _other_interpreter("e"),
    "irb": _other_interpreter("e"),
    "jshell": _other_interpreter(""),
    "groovy": _other_interpreter("e"),
    "jrunscript": _other_interpreter("e"),
    "guile": _other_interpreter("ce"),
    "racket": _other_interpreter("e", frozenset({"eval"})),
    "sbcl": _other_interpreter("", frozenset({"eval"})),
    "elixir": _other_interpreter("e", frozenset({"eval"})),
    "erl": _other_interpreter("", frozenset({"eval"})),
    "bb": _other_interpreter("e"),
    "git": _git,
    "ssh": _ssh,
    "scp": _ssh,
    "rsync": _rsync,
    "tar": _tar,
    "zip": _zip,
    "less": _less,
    "man": _man,
    "vim": _vim,
    "ed": _ed,
    "emacs": _emacs,
    "gdb": _gdb,
    "awk": _awk,
    "sed": _sed,
    "sqlite3": _sqlite,
    "psql": _sql_client,
    "mysql": _sql_client,
    "dc": _dc,
    "gnuplot": _gnuplot,
    "rm": _rm,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "dd": _dd,
    **dict.fromkeys(("tee", "cp", "mv", "install", "ln", "truncate"), _writer),
    "kill": _kill,
    "killall": _kill,
    "declare": _declare,
    "read": _read,
    "printf": _printf,
    "mapfile": _mapfile,
    "getopts": _getopts,
    "cd": _cd,
    "pushd": _cd,
    "hash": _refuse_option("p", "makes a command name run another program"),
    "enable": _refuse_option("f", "loads a builtin from a shared library"),
    "compgen": _refuse_option("C", "runs a command to generate completions"),
}


def _expansion_across_lines(root: tree_sitter.Node) -> bool:
    """Whether a ``$NAME`` expansion spans a newline (only the parser reads one so)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "simple_expansion" and node.start_point[0] != node.end_point[0]:
            return True
        stack.extend(node.children)
    return False


def check_command(command: str) -> str | None:
    """The reason *command* is refused, or None when it may run.

    *command* is the text given to ``bash -c``. The reason names what was refused and
    why, for the model and the user to read.
    """
    if not isinstance(command, str):
        raise TypeError(f"command must be a str, not {type(command).__name__}")
    _state.away = False
    try:
        _check_script(command, 0, _NO_INPUT)
    except _Refused as refusal:
        return refusal.reason
    except RecursionError:
        return "the command nests too deeply to be checked"
    return None
