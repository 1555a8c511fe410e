"""`/init` and `kimi init`: the agent writes AGENTS.md (or improves the one there) from the packed repository.

It is an ordinary turn with a task of its own, so the file is written with the file tools: the step is
checkpointed and `/undo` (or `kimi undo`) takes it back. Afterwards the diff of AGENTS.md is shown.
"""

from __future__ import annotations

import difflib
from pathlib import Path

WRITE = (
    "Write AGENTS.md at the repository root: the instructions a coding agent (and a new contributor) needs "
    "before changing this repository. Use the packed repository in your context, and read or run what you need "
    "to be sure (a build or test command you name must be one the repository really uses). Cover, briefly and "
    "concretely:\n"
    "- how to install, build, lint and test (the exact commands; how to run one test);\n"
    "- the layout: the main folders and what lives in each, entry points;\n"
    "- the conventions the code follows (style, naming, error handling, testing habits) that are not obvious;\n"
    "- anything surprising: generated files, things not to touch, required services or environment.\n"
    "Keep it short (usually under 80 lines), in Markdown, with no filler and nothing you are unsure of. "
    "{existing}Write the file with WriteFile (or StrReplaceFile for small changes), then answer with one line "
    "saying what you wrote."
)
IMPROVE = (
    "AGENTS.md exists already (below): improve it rather than starting over. Keep what is right, fix what is "
    "wrong or stale, add what is missing.\n\n<current AGENTS.md>\n{text}\n</current AGENTS.md>\n\n"
)
FROM_OTHER = "{name} exists (below): carry over what is right from it.\n\n<{name}>\n{text}\n</{name}>\n\n"


def read_instructions(workdir: Path, name: str = "AGENTS.md") -> str | None:
    """The file's text as the no-follow reader sees it; None when there is none."""
    from kimi_cli.context.agents_md import read_instructions as read

    return read(workdir.resolve(), workdir.resolve() / name)


def init_prompt(workdir: Path) -> str:
    current = read_instructions(workdir)
    if current is not None:
        return WRITE.format(existing=IMPROVE.format(text=current.strip()))
    for other in ("CLAUDE.md", "GEMINI.md"):
        text = read_instructions(workdir, other)
        if text is not None:
            return WRITE.format(existing=FROM_OTHER.format(name=other, text=text.strip()))
    return WRITE.format(existing="")


def agents_diff(before: str | None, after: str | None) -> str:
    """A unified diff of AGENTS.md, or a line saying nothing changed."""
    if before == after:
        return "AGENTS.md is unchanged" if after is not None else "no AGENTS.md was written"
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        "a/AGENTS.md" if before is not None else "/dev/null",
        "b/AGENTS.md" if after is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n")


def run_init(workdir: Path, flags: dict[str, object], output_format: str = "text") -> int:
    """`kimi init`: a headless run of the init task, then the diff on stdout. Undo: `kimi undo`."""
    import sys

    from kimi_cli.frontends.headless.app import RunOptions, run_headless

    before = read_instructions(workdir)
    code = run_headless(
        RunOptions(prompt=init_prompt(workdir), workdir=workdir, output_format=output_format, config_flags=flags)  # type: ignore[arg-type]
    )
    after = read_instructions(workdir)
    if output_format == "text":  # the model wrote this text: escapes (OSC 52, SGR 8, cursor moves) shown, not obeyed
        from kimi_cli.util.sanitize import visible

        sys.stdout.write(visible(agents_diff(before, after)) + "\n")
        if before != after:
            sys.stderr.write("kimi: `kimi undo` takes it back\n")
    return code
