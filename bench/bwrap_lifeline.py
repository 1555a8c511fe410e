"""Cost of the bwrap lifeline (kimi_cli/sandbox/backends/bwrap.py): the same `true` in the same sandbox, with
and without the /bin/sh watcher in front, alternating call by call. Usage: python3 bench/bwrap_lifeline.py [CALLS]"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kimi_cli.sandbox.backends.bwrap import BwrapSandbox, bwrap_argv, with_lifeline
from kimi_cli.sandbox.policy import build_policy

ws, pt = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
sb = BwrapSandbox(build_policy(ws, pt, network=False, environ=dict(os.environ)), 1000)


def once(life: bool) -> float:
    fd = sb._program_fd()
    assert fd is not None
    r, w = os.pipe()
    inner = with_lifeline("bash", "true") if life else ["bash", "-c", "true"]
    t = time.perf_counter()
    subprocess.run(bwrap_argv(sb._now(), inner, sb.exe, fd), stdin=r if life else subprocess.DEVNULL,
                   pass_fds=(fd,), env=sb.policy.env, check=True)  # fmt: skip
    took = time.perf_counter() - t
    for x in (fd, r, w):
        os.close(x)
    return took


a: list[float] = []
b: list[float] = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 60):
    a.append(once(False))
    b.append(once(True))
ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
fastest = f"{min(a) * 1000:.1f} / {min(b) * 1000:.1f}"
print(f"without {ma:.1f} ms, with lifeline {mb:.1f} ms, +{mb - ma:.1f} ms; fastest {fastest}")
