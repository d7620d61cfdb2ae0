"""The shell deny list on adversarial commands at the length cap.

    python -m bench.shell_policy_bench [--quick]

Figures (printed, and written to bench/results/shell_policy.json): for each command
shape, its length and the median time of `check_command` in milliseconds. Every pattern
the deny list applies is RE2, so the time grows with the length, never faster; before,
a run of 24,000 backslashes took 8.4 s (a backtracking regex).
"""

from __future__ import annotations

import statistics
import time

from beamclaw_tools import check_command
from beamclaw_tools._shell_policy import MAX_COMMAND_CHARS

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
    result = {}
    for name, command in SHAPES.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            check_command(command)
            times.append((time.perf_counter() - start) * 1000)
        result[name] = {"chars": len(command), "median_ms": round(statistics.median(times), 1)}
        print(f"{name:20} {len(command):>7} chars {result[name]['median_ms']:>9.1f} ms")
    save("shell_policy", result)


if __name__ == "__main__":
    main()
