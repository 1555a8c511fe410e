"""`kimi --help` and `kimi --version` as whole processes, beside `python -c pass`. Target: <= 0.15 s."""

from __future__ import annotations

import sys

from common import kimi_bin, median, table, time_process


def main(runs: int = 15) -> str:
    base = median(time_process([sys.executable, "-c", "pass"], runs))
    rows = [["`python -c pass`", f"{base * 1000:.0f} ms", "1.00x"]]
    for args in (["--help"], ["--version"]):
        t = median(time_process([kimi_bin(), *args], runs))
        rows.append([f"`kimi {' '.join(args)}`", f"{t * 1000:.0f} ms", f"{t / base:.2f}x"])
    return table(["command", f"median of {runs}", "ratio to python -c pass"], rows)


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15))
