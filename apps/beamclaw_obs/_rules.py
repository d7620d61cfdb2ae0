"""Secret-detection rules as data: gitleaks' TOML format, compiled with RE2.

The rules are gitleaks' default set (``rules/gitleaks.toml``, vendored with its
license in ``rules/NOTICE``) and a few of our own for chat text
(``rules/beamclaw.toml``), in the same format so that one loader reads both and a
newer gitleaks file drops in unchanged. A rule means here what it means to gitleaks
(``config/`` and ``detect/detect.go`` at the vendored commit):

- ``regex`` is Go RE2 syntax; we compile it with RE2 too, so every rule runs in time
  linear in the text, whatever the text. A rule RE2 refuses is skipped and listed in
  `RuleSet.skipped` (the caller logs it), never fatal: the other rules still protect.
- ``keywords`` (lower case) are a cheap prefilter: a rule's regex runs only on a text
  whose lower-cased form contains one of them. One RE2 set finds them all in one pass.
- ``secretGroup`` picks the capture group that is the secret; unset, the first
  capture group that matched something non-empty; with no capture group, the match.
- ``entropy``: a secret whose Shannon entropy is not above it is ignored.
- allowlists (global and per rule): ``regexes`` against the secret, the match or the
  line (``regexTarget``), ``stopwords`` against the secret. ``paths`` and ``commits``
  never match a text (it has neither), so an ``AND`` allowlist that needs one never
  allows, and a rule with a ``path`` and no ``regex`` (a file-name rule) is skipped.

``[extend] disabledRules`` in any source leaves those rules of every source out (a
source can replace a rule of another), and they are named in `RuleSet.disabled`.

One key is ours (gitleaks ignores keys it does not know): ``skipGlobalAllowlists =
true`` exempts a rule from the global allowlists, for a rule whose secret may be as
short as one letter (a URL's password), which gitleaks' global allowlist lets through.

One adaptation for chat text, the same for every rule: most gitleaks rules end a
secret at a quote, a blank, a semicolon or the end of the text. In prose a key is as
often followed by a full stop, a comma or a closing bracket, and there the rule would
not match at all; those characters end a secret too (`_CHAT_TERMINATORS`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, final

import attrs
import re2

#: The character class gitleaks ends most secrets with, and what we widen it to.
_GITLEAKS_TERMINATOR: Final = r"""(?:[\x60'"\s;]|\\[nr]|$"""
_CHAT_TERMINATORS: Final = r"""(?:[\x60'"\s;.,:!?)\]}>*|<]|\\[nr]|$"""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported by us, once, not on stderr
    return options


def compile_re2(pattern: str) -> Any:
    """Compile *pattern* with RE2 (linear-time matching); raises `re2.error` if RE2 refuses it."""
    return re2.compile(pattern, _options())


def _join(patterns: Iterable[str]) -> Any:
    """One RE2 regex matching where any of *patterns* does.

    Each is wrapped in its own group so that a flag it sets (``(?i)``) stays inside it.
    """
    return compile_re2("|".join(f"(?:{p})" for p in patterns))


def _found(regex: Any, text: str) -> bool:
    # gitleaks counts a regex as matching only if it matches something non-empty.
    match = regex.search(text)
    return match is not None and match.end() > match.start()


@final
@attrs.frozen
class Allowlist:
    """What a rule (or every rule) must not report, as gitleaks decides it for a text."""

    target: Literal["secret", "match", "line"]
    regexes: Any  # one RE2 regex, or None
    stopwords: Any  # one RE2 regex of the lower-cased stop words, or None
    require_all: bool  # condition = "AND"
    needs_path_or_commit: bool  # an AND allowlist with paths or commits: cannot hold for a text

    def allows(self, secret: str, match: str, line: str) -> bool:
        """True if this allowlist lets the finding go (it is not a secret)."""
        target = {"secret": secret, "match": match, "line": line}[self.target]
        checks: list[bool] = []
        if self.regexes is not None:
            checks.append(bool(target) and _found(self.regexes, target))
        if self.stopwords is not None:
            checks.append(bool(secret) and self.stopwords.search(secret.lower()) is not None)
        if self.require_all:
            return not self.needs_path_or_commit and bool(checks) and all(checks)
        return any(checks)


@final
@attrs.frozen(eq=False)  # compared and hashed by identity: a cache key
class Rule:
    """One detection rule: a regex, which part of a match is the secret, and its filters.

    The regex is compiled on its first use, by the caller and before it returns: no text
    is scanned without it, and a daemon's start compiles only the few rules whose
    keywords its first texts hold, not all of them (a tenth of a second of CPU).
    """

    id: str
    pattern: str  # RE2 syntax
    secret_group: int
    entropy: float
    keywords: tuple[str, ...]
    allowlists: tuple[Allowlist, ...]
    global_allowlists: bool = True
    #: Whether some allowlist of the rule (or a global one) looks at the line.
    line_allowlists: bool = False
    _regex: Any = attrs.field(init=False, default=None, repr=False)

    @property
    def regex(self) -> Any:
        """The compiled RE2 regex."""
        if self._regex is None:
            object.__setattr__(self, "_regex", compile_re2(self.pattern))
        return self._regex


@final
@attrs.frozen(eq=False)  # compared and hashed by identity: a cache key
class RuleSet:
    """Rules, the allowlists that apply to all of them, and the keyword prefilter.

    `skipped` names each rule that could not be used and why, for the caller to log.
    """

    rules: tuple[Rule, ...]
    allowlists: tuple[Allowlist, ...]
    skipped: tuple[tuple[str, str], ...]
    disabled: tuple[str, ...] = ()
    _keyword_set: Any = attrs.field(init=False, default=None)
    _keyword_rules: tuple[tuple[int, ...], ...] = attrs.field(init=False, default=())
    _always: tuple[int, ...] = attrs.field(init=False, default=())

    def __attrs_post_init__(self) -> None:
        keywords: dict[str, list[int]] = {}
        always: list[int] = []
        for index, rule in enumerate(self.rules):
            if not rule.keywords:
                always.append(index)
            for keyword in rule.keywords:
                keywords.setdefault(keyword, []).append(index)
        keyword_set = None
        if keywords:
            options = _options()
            keyword_set = re2.Set.SearchSet(options)
            for keyword in keywords:
                keyword_set.Add(re2.escape(keyword))
            keyword_set.Compile()
        object.__setattr__(self, "_keyword_set", keyword_set)
        object.__setattr__(self, "_keyword_rules", tuple(tuple(rules) for rules in keywords.values()))
        object.__setattr__(self, "_always", tuple(always))

    def candidates(self, lowered: str | bytes) -> list[Rule]:
        """The rules worth running on a text, given its lower-cased form (one pass over it)."""
        chosen = set(self._always)
        if self._keyword_set is not None:
            for found in self._keyword_set.Match(lowered) or ():
                chosen.update(self._keyword_rules[found])
        return [self.rules[i] for i in sorted(chosen)]


_TARGETS: Final[dict[str, Literal["secret", "match", "line"]]] = {"secret": "secret", "match": "match", "line": "line"}


def _allowlist(table: Mapping[str, Any]) -> Allowlist:
    target = _TARGETS.get(table.get("regexTarget") or "secret")
    if target is None:
        raise ValueError(f"unknown regexTarget {table['regexTarget']!r}")
    condition = str(table.get("condition") or "OR").upper()
    if condition not in ("AND", "&&", "OR", "||"):
        raise ValueError(f"unknown allowlist condition {condition!r}")
    regexes = list(table.get("regexes") or ())
    stopwords = sorted({str(w).lower() for w in table.get("stopwords") or ()}, key=len, reverse=True)
    return Allowlist(
        target=target,
        regexes=_join(regexes) if regexes else None,
        stopwords=_join(re2.escape(w) for w in stopwords) if stopwords else None,
        require_all=condition in ("AND", "&&"),
        needs_path_or_commit=bool(table.get("paths") or table.get("commits")),
    )


def _chat_text(regex: str) -> str:
    """The regex with gitleaks' end-of-secret class widened to sentence punctuation."""
    return regex.replace(_GITLEAKS_TERMINATOR, _CHAT_TERMINATORS)


def _rule(table: Mapping[str, Any], extra: Sequence[Allowlist]) -> Rule:
    allowlists = [table["allowlist"]] if "allowlist" in table else []  # gitleaks' older spelling
    allowlists += table.get("allowlists") or []
    return Rule(
        id=table["id"],
        pattern=_chat_text(table["regex"]),
        secret_group=int(table.get("secretGroup") or 0),
        entropy=float(table.get("entropy") or 0.0),
        keywords=tuple(str(k).lower() for k in table.get("keywords") or ()),
        allowlists=(*(_allowlist(a) for a in allowlists), *extra),
        global_allowlists=not table.get("skipGlobalAllowlists", False),
    )


def load_rules(sources: Iterable[str]) -> RuleSet:
    """Parse gitleaks-format TOML *sources* (texts) into one `RuleSet`.

    Global allowlists of every source apply to the rules of every source (as with
    gitleaks' ``[extend]``), except those with ``targetRules``, which join the named rules.
    A rule that cannot be used is left out and named in `RuleSet.skipped`; a rule's own
    regex is compiled on its first use (`Rule.regex`: the packaged ones all compile, as
    their test checks), its allowlists here.
    """
    tables = [tomllib.loads(source) for source in sources]
    global_lists: list[Allowlist] = []
    targeted: dict[str, list[Allowlist]] = {}
    for table in tables:
        lists = [table["allowlist"]] if "allowlist" in table else []
        for entry in lists + list(table.get("allowlists") or ()):
            allowlist = _allowlist(entry)
            for rule_id in entry.get("targetRules") or ():
                targeted.setdefault(rule_id, []).append(allowlist)
            if not entry.get("targetRules"):
                global_lists.append(allowlist)
    disabled = {str(i) for table in tables for i in (table.get("extend") or {}).get("disabledRules") or ()}
    rules: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for table in tables:
        for entry in table.get("rules") or ():
            rule_id = str(entry.get("id", "?"))
            if rule_id in disabled:
                continue
            if not entry.get("regex"):
                skipped.append((rule_id, "matches file paths only; a text has none"))
                continue
            try:
                rules.append(_rule(entry, targeted.get(rule_id, ())))
            except (re2.error, ValueError, KeyError, TypeError) as error:
                skipped.append((rule_id, f"{type(error).__name__}: {error}"))
    global_line = any(a.target == "line" for a in global_lists)
    rules = [
        attrs.evolve(
            rule,
            line_allowlists=any(a.target == "line" for a in rule.allowlists)
            or (rule.global_allowlists and global_line),
        )
        for rule in rules
    ]
    return RuleSet(
        rules=tuple(rules), allowlists=tuple(global_lists), skipped=tuple(skipped), disabled=tuple(sorted(disabled))
    )
