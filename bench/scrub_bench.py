"""The scrubber's throughput, new against old, on ordinary and on hostile text.

    python -m bench.scrub_bench [--quick]

scrub
    MB/s of ``beamclaw_obs.scrub`` on ordinary text (the README and the Python source
    of this repository: prose and code full of key, token and password names) and on
    hostile strings at 64 KB and 1 MB (``eyJ-``, ``a``, ``sk-``, ``\\n``, ``password=``
    repeated, a private key without its END line, a long base64 run, and so on).
    The baseline, in the same run: the scrubber before gitleaks' rules (a dozen
    Python ``re`` patterns), loaded from git at `_OLD_COMMIT`. Its quadratic patterns
    make a megabyte of some hostile strings take minutes, so it runs those at 64 KB
    only (and nothing hostile above 64 KB with ``--quick``).

stream
    A reply streamed in 80-character chunks: `StreamScrubber` against what the drafter
    did before (scrub the whole accumulated text at every chunk, with the old scrubber),
    for a 30 KB reply (8 KB with ``--quick``); and the stream scrubber alone on 1 MB.

held
    Finding held secrets (each in 9 encoded forms) in 1 MB: RE2 alternations, as the
    scrubber does, against a ``str.find`` loop per form, with 5, 20 and 80 values held.

Figures are printed, and written to bench/results/scrub.json.
"""

from __future__ import annotations

import base64
import subprocess
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beamclaw_obs import StreamScrubber, scrub
from beamclaw_obs._held_secrets import _alternations, forms_of
from tests.support.credentials import credential_corpus

from ._cli import best_time, quick_flag, save

ROOT = Path(__file__).parents[1]
#: The last commit with the old scrubber (patterns in Python ``re``).
_OLD_COMMIT = "39ee7f7a1b288d52150ead9f9394010479df6e0c"
_KB = 1024
_MB = 1024 * 1024


def _old_scrub() -> Callable[[str], str] | None:
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{_OLD_COMMIT}:apps/beamclaw_obs/_scrubber.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("old_scrubber")
    exec(compile(source, "old_scrubber.py", "exec"), module.__dict__)  # our own file, from git
    scrub_old: Callable[[str], str] = module.scrub
    return scrub_old


def _mb_per_s(text: str, seconds: float) -> float:
    return round(len(text.encode()) / _MB / seconds, 2)


def _sized(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _ordinary() -> str:
    files = [ROOT / "README.md", *sorted((ROOT / "apps").rglob("*.py"))]
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def _hostile() -> dict[str, str]:
    key = base64.b64encode(bytes(range(256)) * 4).decode()
    return {
        "eyJ-": "eyJ-",
        "a": "a",
        "sk-": "sk-",
        "\\n": "\\n",
        "password=": "password=",
        "https://u:p": "https://u:p",
        "é": "é",
        "key-no-end": "-----BEGIN PRIVATE KEY-----\n" + "\n".join(key[i : i + 64] for i in range(0, len(key), 64)),
        "base64-run": base64.b64encode(bytes(range(256)) * 64).decode(),
        "credentials": "\n".join(c.text for c in credential_corpus(1)),
    }


def _scrub_section(quick: bool, old: Callable[[str], str] | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    ordinary = _ordinary()
    new = best_time(lambda: scrub(ordinary))
    result["ordinary"] = {"bytes": len(ordinary.encode()), "new_mb_s": _mb_per_s(ordinary, new)}
    if old is not None:
        before = best_time(lambda: old(ordinary))
        result["ordinary"] |= {"old_mb_s": _mb_per_s(ordinary, before), "new_vs_old_time": round(new / before, 2)}
    sizes = {"64KB": 64 * _KB} if quick else {"64KB": 64 * _KB, "1MB": _MB}
    for name, unit in _hostile().items():
        for label, size in sizes.items():
            text = _sized(unit, size)
            new = best_time(lambda text=text: scrub(text), budget=0.2)  # type: ignore[misc]
            row: dict[str, Any] = {"new_mb_s": _mb_per_s(text, new), "new_s": round(new, 4)}
            if old is not None and size <= 64 * _KB:
                before = best_time(lambda text=text: old(text), budget=0.2)  # type: ignore[misc]
                row |= {"old_mb_s": _mb_per_s(text, before), "old_s": round(before, 4)}
                row["new_vs_old_time"] = round(new / before, 3)
            result[f"{name} x {label}"] = row
    return result


def _drafter_before(text: str, old: Callable[[str], str]) -> None:
    """What the drafter did: the whole accumulated text scrubbed again at every chunk."""
    raw: list[str] = []
    for i in range(0, len(text), 80):
        raw.append(text[i : i + 80])
        old("".join(raw))


def _streamed(text: str) -> str:
    scrubber = StreamScrubber()
    out = [scrubber.feed(text[i : i + 80]) for i in range(0, len(text), 80)]
    return "".join(out) + scrubber.flush()


def _stream_section(quick: bool, old: Callable[[str], str] | None) -> dict[str, Any]:
    prose = _ordinary()
    label = "8KB_reply" if quick else "30KB_reply"
    reply = prose[: (8 if quick else 30) * _KB]
    new = best_time(lambda: _streamed(reply), budget=1.0)
    result: dict[str, Any] = {label: {"new_s": round(new, 4), "new_mb_s": _mb_per_s(reply, new)}}
    if old is not None:
        before = best_time(lambda: _drafter_before(reply, old), budget=0.0)
        result[label] |= {"old_s": round(before, 3), "new_vs_old_time": round(new / before, 4)}
    if not quick:
        big = (prose * (_MB // len(prose) + 1))[:_MB]
        whole = best_time(lambda: scrub(big), budget=0.0)
        streamed = best_time(lambda: _streamed(big), budget=0.0)
        result["1MB"] = {
            "stream_mb_s": _mb_per_s(big, streamed),
            "scrub_whole_mb_s": _mb_per_s(big, whole),
            "stream_vs_whole_time": round(streamed / whole, 2),
        }
    return result


def _held_section(quick: bool) -> dict[str, Any]:
    values = [c.secret for seed in range(3) for c in credential_corpus(seed)]
    text = _sized("The quick brown fox jumps over the lazy dog; token budget 42. ", _MB // (4 if quick else 1))
    result: dict[str, Any] = {}
    for count in (5, 20, 80):
        forms = sorted({f for v in values[:count] for part in forms_of(v) for f in part}, key=len, reverse=True)
        patterns = _alternations(forms)

        def with_re2(patterns: tuple[Any, ...] = patterns) -> None:
            for pattern in patterns:
                for _ in pattern.finditer(text):
                    pass

        def with_find(forms: list[str] = forms) -> None:
            for form in forms:
                at = text.find(form)
                while at >= 0:
                    at = text.find(form, at + 1)

        re2_s, find_s = best_time(with_re2, budget=0.3), best_time(with_find, budget=0.3)
        result[f"{count}_values"] = {
            "forms": len(forms),
            "alternations": len(patterns),
            "re2_ms": round(re2_s * 1000, 2),
            "find_loop_ms": round(find_s * 1000, 2),
        }
    return result


def main() -> None:
    quick = quick_flag(__doc__)
    old = _old_scrub()
    scrub("warm up: compile the rules " * 10)
    result = {
        "old_commit": _OLD_COMMIT if old else None,
        "scrub": _scrub_section(quick, old),
        "stream": _stream_section(quick, old),
        "held": _held_section(quick),
    }
    for section in ("scrub", "stream", "held"):
        print(f"== {section}")
        for name, row in result[section].items():
            print(f"  {name:28} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    save("scrub", result)


if __name__ == "__main__":
    main()
