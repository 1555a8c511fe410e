"""A racing attacker for tests: a separate process that swaps two names (renameat2 RENAME_EXCHANGE) as fast as it
can, e.g. a workspace folder and a link to a fake ~/.ssh, the way a sandboxed background command would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FLIPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, target = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), os.fsencode(sys.argv[3])
print("ready", flush=True)
n = 0
while True:
    n += 1
    if n % 15 == 0:  # odd: the pauses fall on both states
        time.sleep(0.0001)  # still thousands of swaps a second, without taking a whole core from the code under test
    if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        if not target:
            os._exit(3)
        for name in (a, b):  # the code under test removed one (a restore may): the attacker makes it again
            if not os.path.lexists(name):
                try:
                    os.symlink(target, name)
                except OSError:
                    pass
    if target and n % 200 == 0 and not (os.path.islink(a) or os.path.islink(b)):
        try:  # both names are real folders now: bring the link back beside them
            os.rename(b, b + b".%d" % n)
            os.symlink(target, b)
        except OSError:
            pass
"""


def start_swapper(a: Path, b: Path, relink_to: Path | None = None) -> subprocess.Popen[str]:
    """Swap a and b until killed. With relink_to, a name that disappears comes back as a link to it."""
    target = str(relink_to) if relink_to is not None else ""
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(a), str(b), target], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def stop_swapper(proc: subprocess.Popen[str], real: Path, link: Path) -> None:
    """Stop it and leave the real folder under its own name (`real`), the link under `link`."""
    proc.kill()
    proc.wait(timeout=10)
    assert proc.returncode != 3, "the swap itself failed"
    if real.is_symlink():
        spare = real.with_name(real.name + ".spare")
        os.rename(real, spare)
        os.rename(link, real)
        os.rename(spare, link)
