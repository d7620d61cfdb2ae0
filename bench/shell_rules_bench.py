"""The shell permission rules on adversarial commands at the length cap.

    python -m bench.shell_rules_bench [--quick]

Figures (printed, and written to bench/results/shell_rules.json): for each command
shape, its length, the verdict and the median time of `ShellRules.judge` (tree-sitter's
split, then the default patterns) in milliseconds. A long line is judged in a worker
thread (`BashTool`), so what this costs never stalls the event loop; the deny list it
replaced took up to a second on the same shapes.
"""

from __future__ import annotations

import statistics
import time

from beamclaw_tools import ShellRules
from beamclaw_tools._shell_rules import MAX_COMMAND_CHARS

from ._cli import quick_flag, save

N = MAX_COMMAND_CHARS - 100
SHAPES = {
    "backslashes": "echo " + "\\" * N,
    "backslash-newlines": "echo a " + "\\\n" * (N // 2),
    "single-quotes": "echo " + "'" * N,
    "mixed-quotes": "echo " + "'\"'" * (N // 3),
    "substitutions": "echo " + "$(" * (N // 2),
    "assignments": "a=" * (N // 2) + " ls",
    "braces": "echo {" + "a," * (N // 2),
    "proc-slashes": "cat /proc/" + "/" * N,
    "pipeline": "ls|" * (N // 3) + "ls",
    "commands": "ls -la; " * (N // 8),
    "here-document": "cat <<'EOF'\n" + "line with $dollars and 'quotes'\n" * (N // 32) + "EOF",
}


def main() -> None:
    runs = 1 if quick_flag(__doc__) else 5
    rules, result = ShellRules(), {}
    for name, command in SHAPES.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            verdict = rules.judge(command)
            times.append((time.perf_counter() - start) * 1000)
        outcome = "denied" if verdict.denied else "allowed" if verdict.allowed else "asks"
        result[name] = {"chars": len(command), "verdict": outcome, "median_ms": round(statistics.median(times), 1)}
        print(f"{name:20} {len(command):>7} chars {outcome:>8} {result[name]['median_ms']:>9.1f} ms")
    save("shell_rules", result)


if __name__ == "__main__":
    main()
