"""Time from an edit to its diagnostics, per language and sandbox (issue 42; targets: an error reported within 3 s
of the edit, a later edit of the same file within 0.5 s), and what the language servers cost a session's start.

The edits go through the session's post-call hook (kimi_cli.extensions.lsp.manager.LspManager.after_call), as
a WriteFile's do, against the real servers in the real sandbox:
- "first edit, cold": the file was never read, so the edit starts the server and waits for its first answer
  (measured with a 60 s bound; kimi's default `lsp.start_timeout` is 10 s, past which the edit says nothing);
- "first edit after a read": the read started the server in the background (the model then thinks), the
  edit is the first change the server sees;
- "later edits": the same file, alternately broken and fixed (each reports 1 new or 1 fixed), and a clean
  edit (nothing to report: the time a quiet result waits).
And whole `kimi -p` processes to the first model request, with [lsp] on and off (nothing starts before a file
is touched; the difference is the manager's import and the servers' lookup), and `kimi --help`.
Usage: python3 bench/lsp_diagnostics.py [RUNS]   (needs basedpyright and .ci/node's typescript-language-server)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, first_request, kimi_bin, median, table, time_process

NODE_BIN = ROOT / ".ci" / "node" / "node_modules" / ".bin"
LANGS: dict[str, dict[str, Any]] = {
    "python": {
        "server": "basedpyright", "file": "app.py",
        "files": {"util.py": "def helper(x: int) -> int:\n    return x + 1\n",
                  "app.py": "from util import helper\n\n\ndef main() -> int:\n    return helper(3)\n"},
        "bad": ("helper(3)", "helper('3')"),
    },
    "typescript": {
        "server": "typescript-language-server", "file": "app.ts",
        "files": {"util.ts": "export function helper(x: number): number {\n  return x + 1;\n}\n",
                  "app.ts": 'import { helper } from "./util";\n\nexport function main(): number {\n'
                            "  return helper(3);\n}\n",
                  "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}}\n'},
        "bad": ("helper(3)", 'helper("3")'),
    },
}  # fmt: skip


class Rig:
    """One workspace, one sandbox, one manager, on one loop (as a session has them)."""

    def __init__(self, root: Path, backend: str, language: str, start_timeout: float = 10.0) -> None:
        from kimi_cli.config import LspSettings
        from kimi_cli.extensions.lsp import protocol
        from kimi_cli.extensions.lsp.manager import LspManager
        from kimi_cli.sandbox.policy import build_policy

        self.loop = asyncio.new_event_loop()
        self.ws, private_tmp = root / "ws", root / "tmp"
        self.ws.mkdir(parents=True)
        private_tmp.mkdir()
        for name, text in LANGS[language]["files"].items():
            (self.ws / name).write_text(text)
        policy = build_policy(self.ws, private_tmp)
        if backend == "bwrap":
            from kimi_cli.sandbox.backends.bwrap import BwrapSandbox

            self.sandbox: Any = BwrapSandbox(policy, 30_000)
        else:
            from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

            self.sandbox = LandlockSandbox(policy, 30_000)
        server = LANGS[language]["server"]
        settings = LspSettings.model_validate({"languages": {language: [server]}, "start_timeout": start_timeout})
        self.manager = LspManager(self.ws.resolve(), settings, self.sandbox, private_tmp)
        self.run(protocol.load())  # kimi's one-time import, once per process: not the server's time

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 120))

    def read(self, rel: str) -> None:
        from kimi_cli.tools.base import READS, ToolResult

        self.run(self.manager.after_call(READS.reading(rel), ToolResult("read")))
        self.run(asyncio.wait(list(self.manager._baselines.values()), timeout=60))  # the model thinks meanwhile

    def write(self, rel: str, text: str) -> tuple[float, str]:
        from kimi_cli.tools.base import ToolFacts, ToolResult
        from kimi_cli.tools.write_file import diff_display

        path = self.ws / rel
        old = path.read_text()
        path.write_text(text)
        result = ToolResult("wrote", display=diff_display(rel, old, text))
        began = time.perf_counter()
        self.run(self.manager.after_call(ToolFacts(writes=True).writing(rel), result))
        return time.perf_counter() - began, result.output.removeprefix("wrote").strip()

    def close(self) -> None:
        self.run(self.manager.aclose())
        self.run(self.sandbox.close())
        self.loop.close()


def one_language(backend: str, language: str, runs: int, later: int = 10) -> dict[str, list[float]]:
    spec = LANGS[language]
    rel, (good_word, bad_word) = spec["file"], spec["bad"]
    good = spec["files"][rel]
    bad = good.replace(good_word, bad_word)
    out: dict[str, list[float]] = {"cold": [], "after_read": [], "later": [], "clean": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            rig = Rig(Path(tmp), backend, language, start_timeout=60.0)  # how long it takes, past the 10 s bound
            try:
                seconds, said = rig.write(rel, bad)  # never read: the edit starts the server
                out["cold"].append(seconds if "1 new" in said else float("inf"))  # inf: nothing within the bound
            finally:
                rig.close()
        with tempfile.TemporaryDirectory() as tmp:
            rig = Rig(Path(tmp), backend, language)
            try:
                rig.read(rel)
                seconds, said = rig.write(rel, bad)
                out["after_read"].append(seconds if "1 new" in said else float("inf"))
                for n in range(later):
                    seconds, said = rig.write(rel, (good if n % 2 == 0 else bad) + f"// {n}\n".replace(
                        "//", "#" if language == "python" else "//"))  # fmt: skip
                    ok = ("1 fixed" if n % 2 == 0 else "1 new") in said
                    out["later"].append(seconds if ok else float("inf"))
                for n in range(3):  # the last edit was broken: fix it, then clean edits that change nothing
                    text = good + ("#" if language == "python" else "//") + f" clean {n}\n"
                    seconds, said = rig.write(rel, text)
                    if n:
                        out["clean"].append(seconds if said == "" else float("inf"))
            finally:
                rig.close()
    return out


def start_up(runs: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        homes = {"on": work / "home-on", "off": work / "home-off"}
        for which, home in homes.items():
            (home / ".kimi").mkdir(parents=True)
            (home / ".kimi" / "config.toml").write_text(f"[lsp]\nenabled = {'true' if which == 'on' else 'false'}\n")
        repo = work / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        for i in range(50):
            (repo / f"m{i}.py").write_text(f"def f{i}() -> int:\n    return {i}\n")
        times: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(runs + 1):  # in turn; the first round warms the caches and is dropped
            for which in times:
                times[which].append(first_request(work, repo, {**env, "HOME": str(homes[which])}))
        off, on = median(times["off"][1:]), median(times["on"][1:])
        help_on = median(time_process([kimi_bin(), "--help"], runs, env={**env, "HOME": str(homes["on"])}))
        help_off = median(time_process([kimi_bin(), "--help"], runs, env={**env, "HOME": str(homes["off"])}))
    return [
        ["`kimi -p` start to the first request, [lsp] off", f"{off * 1000:.0f} ms", "1.00x"],
        ["`kimi -p` start to the first request, [lsp] on (no file touched)", f"{on * 1000:.0f} ms", f"{on / off:.2f}x"],
        ["`kimi --help`, [lsp] off", f"{help_off * 1000:.0f} ms", "1.00x"],
        ["`kimi --help`, [lsp] on", f"{help_on * 1000:.0f} ms", f"{help_on / help_off:.2f}x"],
    ]


def cell(times: list[float]) -> str:
    """The median and the slowest; an edit whose report did not come within the bound counts as infinitely slow
    (and is counted)."""
    missed = sum(1 for t in times if t == float("inf"))
    text = f"{median(times) * 1000:.0f} ms (max {max(times) * 1000:.0f})" if missed < len(times) / 2 else "—"
    return text.replace("inf", "∞") + (f", {missed} of {len(times)} not in time" if missed else "")


def main(runs: int = 5) -> str:
    os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # where `npm i -g` would put it
    from kimi_cli.hostsafe.programs import host_which

    rows = []
    for language, spec in LANGS.items():
        program = "basedpyright-langserver" if language == "python" else "typescript-language-server"
        if host_which(program) is None:
            rows.append([language, spec["server"], "not measured: not installed", "", "", ""])
            continue
        for backend in ("bwrap", "landlock"):
            got = one_language(backend, language, runs)
            cells = [cell(got[k]) for k in got]
            rows.append([language, f"{spec['server']}, {backend}", *cells])
    edits = table(["language", "server, sandbox", f"first edit, cold (median of {runs})",
                   "first edit after a read", f"later edits (median of {runs * 10})", "clean edit"], rows)  # fmt: skip
    starts = table(["start-up", f"median of {runs}", "ratio"], start_up(runs))
    return edits + "\n\n" + starts


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
