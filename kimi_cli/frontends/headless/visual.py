"""`kimi -p ... --visual-check FILE|URL`: the model sees its own page after every edit.

After a step that may have changed files (a write that succeeded, or a command), the page is rendered by
headless Chromium in the session's sandbox (kimi_cli.frontends.headless.chromium) and the screenshot goes
with the model's next request, through the loop's between-steps seam (Agent.between_steps). With a
reference picture (the first image attached to the prompt: --image, or an @ref) each rendering is scored
by SSIM (kimi_cli.media.similarity); with --visual-target the run goes on until the score reaches it or a
step limit (--max-steps) is hit: a model that stops short is told the score and asked to go on, and a run
that ends under the target exits 1 (`visual_target_missed`). A FILE is a page in the workspace, rendered
from disk; a URL is the user's (a dev server), which needs the sandbox's network (--allow-network).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.agent.events import Event, Notice, ToolCall, ToolOutput
from kimi_cli.errors import ConfigError, ExitCode, KimiError
from kimi_cli.llm.types import Message

DEFAULT_SIZE = (1280, 800)
MAX_EDGE = 4096  # a window larger than this is no screenshot anyone compares
MAX_FOLLOW_UPS = 5  # a model that stopped under the target is asked again at most this often
MAX_FAILURES = 3  # renders that failed in a row before the check gives up (and says so)
FINGERPRINT_ENTRIES = 5000  # files looked at to tell whether the page's folder changed


@dataclass(frozen=True)
class VisualOptions:
    """What the flags asked for, checked before any work (exit 2 when they make no sense)."""

    target: str  # a workspace-relative file, or an http(s) URL
    is_url: bool
    target_ssim: float | None = None
    size: tuple[int, int] | None = None


def parse_visual(
    target: str | None, target_ssim: float | None, size: str | None, workdir: Path
) -> VisualOptions | None:
    """--visual-check, --visual-target, --visual-size; KimiError (usage) for what cannot work."""
    if target is None:
        if target_ssim is not None or size is not None:
            raise KimiError("--visual-target and --visual-size need --visual-check FILE|URL", ExitCode.USAGE)
        return None
    if target_ssim is not None and not 0 < target_ssim <= 1:
        raise KimiError(f"--visual-target is an SSIM between 0 and 1, not {target_ssim}", ExitCode.USAGE)
    window = _size(size) if size is not None else None
    if re.match(r"^https?://[^\s/]", target, re.I):
        return VisualOptions(target, True, target_ssim, window)
    if "://" in target:
        raise KimiError(f"--visual-check takes a workspace file or an http(s) URL, not {target}", ExitCode.USAGE)
    path = Path(target).expanduser()
    lexical = Path(os.path.normpath(path if path.is_absolute() else workdir / path))
    base = Path(os.path.abspath(workdir))
    if not lexical.is_relative_to(base) or lexical == base:
        raise KimiError(f"--visual-check {target}: the page must be a file inside the workspace", ExitCode.USAGE)
    return VisualOptions(str(lexical.relative_to(base)), False, target_ssim, window)


def _size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", text.strip().lower())
    if not match or not all(64 <= int(n) <= MAX_EDGE for n in match.groups()):
        raise KimiError(f"--visual-size is WIDTHxHEIGHT, each 64 to {MAX_EDGE} pixels (1280x800), not {text}",
                        ExitCode.USAGE)  # fmt: skip
    return int(match.group(1)), int(match.group(2))


@dataclass
class VisualCheck:
    options: VisualOptions
    workdir: Path
    sandbox: Any
    limits: Any  # ImageLimits of the model in use
    chromium: str
    save_dir: Path
    reference: Any = None  # the reference picture, prepared (kimi_cli.media.image.Prepared)
    reference_name: str = ""
    size: tuple[int, int] = DEFAULT_SIZE
    renders: int = 0
    score: float | None = None
    screenshot: Path | None = None
    _agent: Any = None
    _calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # this step's calls: id -> (name, arguments)
    _errors: set[str] = field(default_factory=set)
    _fingerprint: object = None
    _digest: str = ""
    _failures: int = 0

    @classmethod
    def start(cls, options: VisualOptions, runtime: Any, prompt: str, images: list[str]) -> VisualCheck:
        """Ready to render: Chromium found, the network there for a URL, the reference read (ConfigError if not)."""
        from kimi_cli.frontends.headless.chromium import find_chromium

        if options.is_url and not runtime.config.sandbox.allow_network:
            raise KimiError(
                f"--visual-check {options.target} renders the page in the sandbox, which has no network: pass "
                "--allow-network (the page then has the network the model's commands have), or check a file",
                ExitCode.USAGE,
            )
        chromium = find_chromium((runtime.workdir, runtime.private_tmp))
        check = cls(options, runtime.workdir, runtime.sandbox, runtime.image_limits(), chromium,
                    runtime.session.path / "visual")  # fmt: skip
        check._load_reference(prompt, images)
        if options.target_ssim is not None and check.reference is None:
            raise KimiError("--visual-target needs a reference picture to score against: attach it with --image "
                            "(or @shot.png in the prompt)", ExitCode.USAGE)  # fmt: skip
        width, height = check.reference.original if check.reference is not None else DEFAULT_SIZE
        check.size = options.size or ((width, height) if max(width, height) <= MAX_EDGE else DEFAULT_SIZE)
        return check

    def _load_reference(self, prompt: str, images: list[str]) -> None:
        from kimi_cli.frontends.attachments import attachments, read_attachment
        from kimi_cli.media.pipeline import prepare

        found = attachments(prompt, images, self.workdir)
        if not found:
            return
        try:
            self.reference = prepare(read_attachment(found[0], self.workdir), self.limits, found[0].shown)
        except ValueError as exc:
            raise ConfigError(f"cannot attach image: {exc}") from None
        self.reference_name = found[0].shown

    # --- the loop's seams --------------------------------------------------------------------------------

    def attach(self, agent: Any) -> None:
        self._agent = agent
        agent.observers.append(self.observe)
        agent.between_steps.append(self.between_steps)

    def observe(self, event: Event) -> None:
        """The calls of the step that just ran, and which of them failed."""
        if isinstance(event, ToolCall):
            self._calls[event.id] = (event.name, event.arguments)
        elif isinstance(event, ToolOutput) and event.is_error:
            self._errors.add(event.id)

    async def between_steps(self) -> list[Message]:
        """Before the next request: the page as it looks now, when the last step may have changed it."""
        calls, errors = self._calls, self._errors
        self._calls, self._errors = {}, set()
        if not any(self._may_change(cid, name, args, cid in errors) for cid, (name, args) in calls.items()):
            return []
        message = await self.look(step=self._agent.steps - 1)  # the loop counts the coming step already
        return [message] if message is not None else []

    def _may_change(self, call_id: str, name: str, arguments: str, failed: bool) -> bool:
        facts = self._agent.registry.prepare(call_id, name, arguments).facts
        return bool(facts.writes and (facts.unknown_writes or not failed))

    # --- one look at the page ------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return self.options.target

    @property
    def reached(self) -> bool:
        target = self.options.target_ssim
        return target is not None and self.score is not None and self.score >= target

    async def look(self, step: int, force: bool = False) -> Message | None:
        """Render, score and describe the page as it is after `step`; None when nothing changed or nothing
        can be shown."""
        if self._failures >= MAX_FAILURES:
            return None
        if not self.options.is_url:
            page = self.workdir / self.options.target
            if not page.is_file():
                return None  # not written yet
            fingerprint = await asyncio.to_thread(folder_fingerprint, page.parent)
            if fingerprint == self._fingerprint and not force:
                return None
            self._fingerprint = fingerprint
        from kimi_cli.frontends.headless.chromium import RenderError, render
        from kimi_cli.media.image import ImageError
        from kimi_cli.media.pipeline import prepare

        url = self.options.target if self.options.is_url else (self.workdir / self.options.target).as_uri()
        offline = not self.options.is_url and getattr(self.sandbox, "name", "") == "none"
        cap = int(getattr(self.sandbox, "output_cap", 30_000) or 30_000)
        try:
            shot = await render(self.sandbox.run, self.chromium, url, self.size, cap, offline)
            prepared = prepare(shot.png, self.limits, f"the rendering of {self.label}")
        except (RenderError, ImageError) as exc:
            self._failures += 1
            gave_up = " (the visual check stops trying)" if self._failures >= MAX_FAILURES else ""
            self._tell(f"visual check: {exc}{gave_up}")
            return {"role": "user", "content": f"[kimi] visual check: could not render {self.label}: {exc}{gave_up}"}
        self._failures = 0
        self.renders += 1
        self._save(shot.png, step)
        if self.reference is not None:
            from kimi_cli.media.similarity import similarity

            self.score = await asyncio.to_thread(similarity, self.reference.data, prepared.data)
        digest = hashlib.sha256(prepared.data).hexdigest()
        unchanged, self._digest = digest == self._digest, digest
        text = self._describe(step, prepared, unchanged) + (f"\n{shot.extra}" if shot.extra else "")
        self._tell(
            f"visual check: rendered {self.label} after step {step} ({prepared.note()}"
            + (f", SSIM {self.score:.3f}" if self.score is not None else "")
            + ("; unchanged, not attached again" if unchanged else "; attached to the next request")
            + ")"
        )
        if unchanged:
            return {"role": "user", "content": text}
        image = {"type": "image_url", "image_url": {"url": prepared.data_url()}}
        return {"role": "user", "content": [{"type": "text", "text": text}, image]}

    def _describe(self, step: int, prepared: Any, unchanged: bool) -> str:
        width, height = self.size
        text = f"[kimi] visual check: {self.label} as rendered after step {step} ({width}x{height} window)"
        if unchanged:
            text += ": it looks the same as the last rendering"
        if self.score is not None:
            text += f"; SSIM {self.score:.3f} against {self.reference_name}"
            if self.options.target_ssim is not None:
                text += f" (target {self.options.target_ssim:.2f})"
        if self.reached:
            return text + ". The target is reached: stop editing and finish with a short summary."
        if self.reference is not None:
            return text + ". Compare it with the reference picture and keep editing where they differ."
        return text + "."

    def _save(self, png: bytes, step: int) -> None:
        try:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            self.screenshot = self.save_dir / f"step-{step:03d}.png"
            self.screenshot.write_bytes(png)
        except OSError:
            self.screenshot = None

    def _tell(self, line: str) -> None:
        if self._agent is not None:
            self._agent.emit(Notice(line))

    # --- the end of a run ------------------------------------------------------------------------------------

    async def finish(self, agent: Any, outcome: Any) -> Any:
        """With a target: ask a model that stopped short to go on, while its edits change the page; a run
        that still ends under the target is `visual_target_missed` (exit 1)."""
        from kimi_cli.agent.loop import RunOutcome

        target = self.options.target_ssim
        if target is None:
            return outcome
        if outcome.reason == "done" and self.score is None:
            first = await self.look(agent.steps, force=True)  # a page that was there before the run
            if first is not None and not self.reached:
                outcome = await agent.run(first)
        for _ in range(MAX_FOLLOW_UPS):
            if outcome.reason != "done" or self.reached or self.score is None or self._failures >= MAX_FAILURES:
                break
            renders = self.renders
            outcome = await agent.run({"role": "user", "content": self._follow_up(target)})
            if self.renders == renders:
                break  # the model changed nothing: asking again would not bring it closer
        if outcome.reason == "done" and not self.reached:
            scored = f"SSIM {self.score:.3f}" if self.score is not None else "no score (it was never rendered)"
            why = (f"the page scores {scored} against {self.reference_name}, under the --visual-target "
                   f"{target:.2f}, after {self.renders} rendering(s)")  # fmt: skip
            return RunOutcome("visual_target_missed", ExitCode.ERROR, outcome.text, outcome.steps, why)
        return outcome

    def _follow_up(self, target: float) -> str:
        return (f"[kimi] visual check: {self.label} scores SSIM {self.score:.3f} against {self.reference_name}, "
                f"under the target {target:.2f}. Keep editing it to bring it closer (you will see the next "
                "rendering after your next edit), or say why it cannot get closer.")  # fmt: skip

    def result_fields(self) -> dict[str, Any]:
        return {
            "target": self.label,
            "renders": self.renders,
            "ssim": None if self.score is None else round(self.score, 4),
            "target_ssim": self.options.target_ssim,
            "reached": self.reached if self.options.target_ssim is not None else None,
            "screenshot": str(self.screenshot) if self.screenshot is not None else None,
        }


def folder_fingerprint(folder: Path, limit: int = FINGERPRINT_ENTRIES) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime) of the files under the page's folder, links not followed, at most `limit` of them:
    whether a command changed what the page may load."""
    found: list[tuple[str, int, int]] = []
    stack = [folder]
    while stack and len(found) < limit:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if len(found) >= limit:
                break
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in (".git", "node_modules"):
                    stack.append(Path(entry.path))
            else:
                found.append((entry.path, info.st_size, info.st_mtime_ns))
    return tuple(sorted(found))
