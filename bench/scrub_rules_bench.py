"""The scrubber's throughput with the packaged rules against the rules of an earlier commit.

    python -m bench.scrub_rules_bench [--quick]

Issue 22 added rules that find prefixed keys bare (``rules/beamclaw.toml``); this
measures what they cost. Both rule sets run in one process, in turns, through the same
``scrub`` (the one rule loader is swapped), so the figures compare the rules and nothing
else: MB/s on ordinary text (the README and the Python source of this repository), and
on 64 KB of the credential corpus and of the bare corpus (``tests.support.credentials``).
CPU time (``time.process_time``), the best of several turns, so that other work on a
shared machine counts less. Written to bench/results/scrub_rules.json.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import beamclaw_obs._scrubber as scrubber_module
from beamclaw_obs import scrub
from beamclaw_obs._detector import default_rules
from beamclaw_obs._rules import RuleSet, load_rules
from tests.support.credentials import bare_corpus, credential_corpus

from ._cli import quick_flag, save

ROOT = Path(__file__).parents[1]
#: The last commit before issue 22's bare-prefix rules.
_BEFORE_COMMIT = "4a2e0b40dd4a49ba83c012f1b4457f6f9fb817b1"
_RULES = "apps/beamclaw_obs/rules"


def _rules_at(commit: str) -> RuleSet:
    def show(name: str) -> str:
        command = ["git", "-C", str(ROOT), "show", f"{commit}:{_RULES}/{name}"]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    return load_rules([show("gitleaks.toml"), show("beamclaw.toml")])


def _sized(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


def _cpu_seconds(function: Callable[[], object]) -> float:
    started = time.process_time()
    function()
    return time.process_time() - started


def main() -> None:
    quick = quick_flag(__doc__)
    files = [ROOT / "README.md", *sorted((ROOT / "apps").rglob("*.py"))]
    texts = {
        "ordinary": "\n".join(f.read_text(encoding="utf-8") for f in files),
        "credential_corpus_64KB": _sized("\n".join(c.text for c in credential_corpus(1)), 64 * 1024),
        "bare_corpus_64KB": _sized("\n".join(c.text for c in bare_corpus(1)), 64 * 1024),
    }
    rule_sets = {"before": _rules_at(_BEFORE_COMMIT), "after": default_rules()}
    best: dict[tuple[str, str], float] = {}
    for _ in range(2 if quick else 5):
        for label, rules in rule_sets.items():
            # find_spans reads the rules through this module-level name.
            setattr(scrubber_module, "default_rules", lambda rules=rules: rules)  # noqa: B010
            scrub("warm up " * 10)
            for name, text in texts.items():
                seconds = _cpu_seconds(lambda text=text: scrub(text))  # type: ignore[misc]
                best[name, label] = min(best.get((name, label), float("inf")), seconds)
    setattr(scrubber_module, "default_rules", default_rules)  # noqa: B010
    result: dict[str, Any] = {"before_commit": _BEFORE_COMMIT}
    for name, text in texts.items():
        megabytes = len(text.encode()) / (1024 * 1024)
        before, after = best[name, "before"], best[name, "after"]
        result[name] = {
            "before_mb_s": round(megabytes / before, 2),
            "after_mb_s": round(megabytes / after, 2),
            "after_vs_before_time": round(after / before, 2),
        }
        print(f"  {name:24} " + "  ".join(f"{k}={v}" for k, v in result[name].items()))
    save("scrub_rules", result)


if __name__ == "__main__":
    main()
