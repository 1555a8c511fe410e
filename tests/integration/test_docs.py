"""The docs against the tree: the README and docs/ run as written, and name only what exists.

- Every `console` block of the README and docs/ runs: each `$ ` line in a scratch git repository with its own
  HOME, against the scripted model server (a `kimi -p` gets a short answer), and must exit 0; the lines under
  it must appear in its output. A comment right above a block may leave a command out, with a reason
  (`<!-- docs-test: skip "PREFIX": why -->`), or take a prefix as done (`given "PREFIX": why`): the command
  `PREFIX && rest` runs `rest` (the install the suite itself runs in).
- Every repository path, module name (`kimi_cli.x.y`), test file name and relative link a doc mentions
  exists, and every `file.md#anchor` names a heading there, so a later move cannot leave a stale mention.
  A region between `<!-- docs-test: history -->` and `<!-- /docs-test -->` (the changelog's table of where
  things moved) records old paths and is left out.
- Every setting of the config model and every built-in slash command is documented; the README stays short;
  docs/, CHANGELOG.md and each package's README exist.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, git, kimi_executable

ROOT = ROOT_DIR
README = ROOT / "README.md"
README_MAX_LINES = 250


def docs() -> list[Path]:
    """Every doc the checks read: the README, SECURITY.md, the changelog, docs/ and the package READMEs."""
    found = [README, ROOT / "SECURITY.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    found += sorted((ROOT / "kimi_cli").glob("*/README.md"))
    found += [ROOT / "tools" / "README.md", ROOT / "engine" / "README.md"]
    return [p for p in found if p.is_file()]


def runnable_docs() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- the console blocks ---------------------------------------------------------------------------------------

DIRECTIVE = re.compile(r'<!--\s*docs-test:\s*(skip|given)\s+"([^"]+)"\s*:\s*(\S.*?)\s*-->')


@dataclass
class Command:
    doc: str
    line: int
    text: str
    expect: list[str] = field(default_factory=list)
    skipped: str = ""  # why it does not run here


@dataclass
class Block:
    doc: str
    line: int
    commands: list[Command]
    directives: list[tuple[str, str, str]]  # (kind, prefix, reason)


def console_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```console":
            index += 1
            continue
        directives: list[tuple[str, str, str]] = []
        above = index - 1
        while above >= 0 and lines[above].strip().startswith("<!--"):
            match = DIRECTIVE.fullmatch(lines[above].strip())
            assert match, f"{rel(path)}:{above + 1}: a docs-test comment needs a kind, a quoted prefix and a reason"
            directives.append((match[1], match[2], match[3]))
            above -= 1
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{rel(path)}:{index + 1}: an unclosed console block"
        commands: list[Command] = []
        for number in range(start, end):
            text = lines[number]
            if text.startswith("$ "):
                commands.append(Command(rel(path), number + 1, text[2:].strip()))
            elif text.strip() and commands:
                commands[-1].expect.append(text.strip())
            elif text.strip():
                raise AssertionError(f"{rel(path)}:{number + 1}: a console block starts with a `$ ` command")
        blocks.append(Block(rel(path), index + 1, commands, directives))
        index = end + 1
    return blocks


def planned(block: Block) -> list[Command]:
    """The block's commands as they run here: a `given` prefix taken as done, a `skip` left out (with why)."""
    used = set()
    out: list[Command] = []
    for command in block.commands:
        for kind, prefix, reason in block.directives:
            if not command.text.startswith(prefix):
                continue
            used.add(prefix)
            if kind == "skip":
                command.skipped = reason
            else:
                rest = command.text[len(prefix) :].lstrip()
                assert rest.startswith("&&"), f"{command.doc}:{command.line}: `given` needs `{prefix} && ...`"
                command.text = rest[2:].strip()
        out.append(command)
    stale = [prefix for _, prefix, _ in block.directives if prefix not in used]
    assert stale == [], f"{block.doc}:{block.line}: docs-test comments name no command of the block: {stale}"
    return out


def all_commands() -> list[Command]:
    return [c for path in runnable_docs() for block in console_blocks(path) for c in planned(block)]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A small committed repository, a HOME of its own, and a scripted server that answers every request."""
    base = tmp_path_factory.mktemp("docs")
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("# calc\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    home = base / "home"
    (home / ".kimi").mkdir(parents=True)
    (home / ".kimi" / "config.toml").write_text("[retry]\nbase_delay = 0.01\nmax_delay = 0.05\n")
    server = ScriptedModelServer(default={"text": "done"}).start()
    exe = Path(kimi_executable()[0])
    path = os.environ["PATH"] if not exe.is_absolute() else f"{exe.parent}{os.pathsep}{os.environ['PATH']}"
    env = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")}
    env.update({"PATH": path, "HOME": str(home), "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1"})
    env.update({"KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY})
    try:
        yield repo, env
    finally:
        server.stop()


def test_the_readme_shows_both_commands_under_one_heading() -> None:
    """A fresh machine's two commands, the main job and the tests, in the README's first section's block."""
    lines = README.read_text().splitlines()
    heading = next((i for i, line in enumerate(lines) if re.match(r"## .*two commands", line, re.IGNORECASE)), None)
    assert heading is not None, "README.md has no heading for the two commands of a fresh machine"
    following = next((i for i in range(heading + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    blocks = [b for b in console_blocks(README) if heading < b.line <= following]
    commands = [c.text for b in blocks for c in b.commands]
    assert any(c.startswith("pip install -e . &&") and "kimi -p" in c for c in commands), commands
    assert "bash .ci/run" in commands, commands


@pytest.mark.parametrize("command", all_commands(), ids=lambda c: f"{c.doc}:{c.line}")
def test_a_console_command_of_the_docs_runs(command: Command, scratch: tuple[Path, dict[str, str]]) -> None:
    if command.skipped:
        pytest.skip(f"not run here: {command.skipped}")
    repo, env = scratch
    proc = subprocess.run(
        ["bash", "-c", command.text],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{command.doc}:{command.line}: `{command.text}` exited {proc.returncode}\n{output}"
    missing = [line for line in command.expect if line not in output]
    assert missing == [], f"{command.doc}:{command.line}: `{command.text}` did not print {missing}\n{output}"


def test_the_docs_have_runnable_commands() -> None:
    commands = all_commands()
    assert len([c for c in commands if not c.skipped]) >= 10
    assert all(c.skipped for c in commands if c.text.startswith("bash .ci/run"))


# --- what the docs name ---------------------------------------------------------------------------------------

TOP = ("kimi_cli", "tools", "engine", "tests", "bench", "examples", "docs", ".ci")
PATH_MENTION = re.compile(r"(?<![\w./~<-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w.*/-]*)")
MODULE_MENTION = re.compile(r"(?<![\w./])kimi_cli(?:\.\w+)+")
TEST_NAME = re.compile(r"`(test_\w+\.py)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HISTORY = re.compile(r"<!-- docs-test: history -->.*?<!-- /docs-test -->", re.DOTALL)
# Paths in examples that are the user's files, not ours.
EXAMPLES = {
    "tests/test_api.py": "the user's failing test in a headless example",
    "tools/list": "an MCP method, not a path",
}
PACKAGES = {"kimi_cli.tools": ROOT / "tools", "kimi_cli.engine": ROOT / "engine", "kimi_cli": ROOT / "kimi_cli"}


def checked_text(path: Path) -> str:
    text = path.read_text()
    opened, closed = text.count("<!-- docs-test: history -->"), text.count("<!-- /docs-test -->")
    assert opened == closed, f"{rel(path)}: a history region is not closed"
    return HISTORY.sub("", text)


def path_exists(mention: str) -> bool:
    mention = mention.rstrip(".,:;")
    if any(ch in mention for ch in "*?["):
        return any(ROOT.glob(mention))
    return (ROOT / mention).exists()


def module_file(dotted: str) -> Path | None:
    """The file or package folder a dotted name is, with tools/ and engine/ mapped; None if none is."""
    for prefix, folder in PACKAGES.items():
        if dotted == prefix or dotted.startswith(prefix + "."):
            rest = dotted[len(prefix) :].lstrip(".").split(".") if dotted != prefix else []
            target = folder.joinpath(*rest) if rest else folder
            if target.with_suffix(".py").is_file():
                return target.with_suffix(".py")
            if (target / "__init__.py").is_file():
                return target / "__init__.py"
            return None
    return None


def module_resolves(dotted: str) -> bool:
    """The longest prefix that is a module; the names after it must be defined in its source."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        source = module_file(".".join(parts[:cut]))
        if source is None:
            continue
        text = source.read_text()
        return all(re.search(rf"\b{re.escape(name)}\b", text) for name in parts[cut:])
    return False


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", path.read_text(), re.MULTILINE)}


def mentions(path: Path) -> Iterator[tuple[str, str]]:
    """(kind, what) for each thing the doc names that must exist."""
    text = checked_text(path)
    for match in PATH_MENTION.finditer(text):
        yield "path", match[1].rstrip(".,:;")
    for match in MODULE_MENTION.finditer(text):
        yield "module", match[0]
    for match in TEST_NAME.finditer(text):
        yield "test", match[1]
    for match in LINK.finditer(text):
        if not re.match(r"[a-z]+:", match[1]):
            yield "link", match[1]


@pytest.mark.parametrize("doc", docs(), ids=rel)
def test_every_path_and_module_a_doc_names_exists(doc: Path) -> None:
    test_files = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    stale: list[str] = []
    for kind, what in mentions(doc):
        if kind == "path" and what not in EXAMPLES and not path_exists(what):
            stale.append(f"path {what}")
        elif kind == "module" and not module_resolves(what):
            stale.append(f"module {what}")
        elif kind == "test" and what not in test_files:
            stale.append(f"test file {what}")
        elif kind == "link":
            target, _, anchor = what.partition("#")
            linked = (doc.parent / target).resolve() if target else doc
            if not linked.exists():
                stale.append(f"link {what}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                stale.append(f"anchor {what}")
    assert stale == [], f"{rel(doc)} names what does not exist: {sorted(set(stale))}"


def test_the_example_paths_are_not_ours() -> None:
    assert all(not (ROOT / path).exists() for path in EXAMPLES), "an example path now exists: check it"


# --- what the docs must cover ---------------------------------------------------------------------------------


def setting_keys() -> list[str]:
    """Every setting of the config model, dotted (`sandbox.mode`); dict-valued ones by their own name."""
    from pydantic import BaseModel

    from kimi_cli.config import Config

    def walk(model: type[BaseModel], prefix: str) -> Iterator[str]:
        for name, info in model.model_fields.items():
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                yield from walk(annotation, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}"

    return list(walk(Config, ""))


def test_every_setting_is_documented() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    keys = setting_keys()
    assert {"sandbox.mode", "approval.allow", "retry.request_timeout", "grep_timeout"} <= set(keys)
    missing = [key for key in keys if f"`{key}`" not in page]
    assert missing == [], f"docs/configuration.md does not document: {', '.join(missing)}"


def registered_slash_commands() -> set[str]:
    """The built-in commands the terminal registers (a user command in a docstring's example is not one)."""
    names: set[str] = set()
    for source in (ROOT / "kimi_cli" / "frontends" / "terminal").glob("*.py"):
        text = source.read_text()
        names |= set(re.findall(r'SlashCommand\(\s*"([a-z][a-z0-9:-]*)"(?![^)]*source="user")', text))
    return names


def test_the_terminal_page_lists_every_built_in_command() -> None:
    page = (ROOT / "docs" / "terminal.md").read_text()
    names = registered_slash_commands()
    assert {"help", "plan", "hooks", "skills", "fork", "init"} <= names
    missing = sorted(n for n in names if not re.search(rf"`/{re.escape(n)}\b", page))
    assert missing == [], f"docs/terminal.md does not list: {', '.join('/' + n for n in missing)}"


def test_the_readme_is_short_and_the_reference_exists() -> None:
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the reference belongs in docs/"
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert {"README.md", "configuration.md", "sandbox.md", "headless.md", "architecture.md"} <= pages
    assert (ROOT / "CHANGELOG.md").is_file() and (ROOT / "SECURITY.md").is_file()


def test_each_package_says_what_it_may_import() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "kimi_cli/*/__init__.py"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    tops = [ROOT / Path(p).parent for p in tracked if len(Path(p).parts) == 3]  # kimi_cli/<package>/__init__.py
    folders = tops or [p.parent for p in (ROOT / "kimi_cli").glob("*/__init__.py")]
    missing = []
    for folder in [*folders, ROOT / "tools"]:
        readme = folder / "README.md"
        if not readme.is_file() or not all(s in readme.read_text() for s in ("May import", "Imported by")):
            missing.append(rel(folder))
    assert missing == [], f"these packages need a README.md saying what may import what: {missing}"
