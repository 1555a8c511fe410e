"""Host git: the one way kimi runs git outside the sandbox, with the repository's config treated as hostile.

A repository's `.git/config` is data an attacker may have written (a downloaded tarball with its `.git`, or
a sandboxed command on a backend that can write `.git`). Git reads it on every call, and several keys name
programs that git then runs on the host: `core.fsmonitor`, hooks (through `core.hooksPath`), filter drivers,
`diff.external`, textconv, `gpg.program`, pagers and editors, ssh and credential helpers. So every call:

- runs with a fixed set of command-scope overrides (`GIT_CONFIG_PARAMETERS`, what `git -c` uses, which beats
  repository config and reaches the child gits of submodules), an environment that names no helper, and no
  system config (kimi_cli.hostsafe.git.hardening);
- neutralises each `filter.<name>` driver the config declares, read right before the call (driver names
  cannot be enumerated in advance);
- gets `--no-ext-diff --no-textconv` where git would otherwise run diff drivers (`diff`, `log`, `show`);
- names the repository itself (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`), as repo_guard found it without
  running git, so that `core.worktree` cannot send a checkout into another folder; GIT_DIR and GIT_COMMON_DIR are
  descriptors of the folders open_repo checked (kimi_cli.hostsafe.git.pin), so that a `.git` swapped for a link
  meanwhile cannot send git, or confine.py's write grant, into another repository;
- refuses a repository whose links changed since the session started, or that belongs to another user
  (kimi_cli.hostsafe.git.repo_guard: open_repo finds the repository, this module runs git in it;
  kimi_cli.hostsafe.git.workspace does both, for callers that want git's answer or nothing).

With `[git] allow_hooks = true`, commit hooks run, but only the hook files seen when the session started:
their content is kept then and written into a private folder for each commit (see `commit_hooks_dir`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kimi_cli.hostsafe.git import pin as git_pin
from kimi_cli.hostsafe.git.confine import run_confined
from kimi_cli.hostsafe.git.hardening import HARDENING, base_env, config_parameters
from kimi_cli.hostsafe.git.location import RepoLocation
from kimi_cli.hostsafe.git.pin import Pinned, is_pinned
from kimi_cli.hostsafe.secrets import ALL_KEY_VARIABLES

__all__ = ["SafeGit", "repo_env", "run_git", "spawn"]

# Porcelain that runs diff drivers and textconv unless told not to.
DIFF_PORCELAIN = {"diff", "log", "show", "whatchanged"}
DIFF_FLAGS = ("--no-ext-diff", "--no-textconv")
FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process|required)$", re.IGNORECASE | re.DOTALL)
# A repository's own info/attributes with exactly this content runs no filter driver and converts nothing, for
# any path (see conversions_off).
NO_CONVERSION_ATTRIBUTES = b"* -filter -text -eol -crlf -ident -working-tree-encoding\n"


def git_program(roots: Iterable[Path | str] = ()) -> str:
    """The git binary to run on the host: found on PATH outside every folder a sandboxed command may write
    (`roots` are noted as such first). A `.venv/bin/git` planted in the workspace is never it."""
    from kimi_cli.hostsafe.programs import host_which, sandbox_writable

    sandbox_writable(*roots)
    found = host_which("git")
    if found is None:
        raise FileNotFoundError(2, "git is not installed outside the workspace (PATH entries inside it are skipped)")
    return found


def repo_env(
    location: RepoLocation | None,
    extra: Sequence[tuple[str, str]] = (),
    pinned: Pinned | None = None,
    **paths: str,
) -> dict[str, str]:
    """The full environment for one call: hardened, the repository named, and every filter driver off.

    With `pinned` (git_pin.pinned(location)) the repository is named by its descriptors, which the spawn
    must pass on (`pinned.fds`). `paths` may give GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE directly (the
    checkpoint shadow repository)."""
    env = base_env()
    if location is not None:
        env["GIT_DIR"] = pinned.git_dir if pinned else str(location.git_dir)
        env["GIT_COMMON_DIR"] = pinned.common_dir if pinned else str(location.common_dir)
        env["GIT_WORK_TREE"] = str(location.work_tree)
    env.update(paths)
    pairs = list(HARDENING)
    env["GIT_CONFIG_PARAMETERS"] = config_parameters(pairs)
    if "GIT_DIR" in env and not conversions_off(env):
        pairs += driver_overrides(env, pinned.fds if pinned else ())
    pairs += list(extra)
    env["GIT_CONFIG_PARAMETERS"] = config_parameters(pairs)
    return env


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | str | None,
    writable: Iterable[Path | str] = (),
    *,
    input: bytes | None = None,
    timeout: float | None = 120,
    fds: Sequence[int] = (),
) -> subprocess.CompletedProcess[bytes]:
    """The one place host git starts: inside confine.py's Landlock domain (execute only git, write only
    beneath `writable`) where the kernel has Landlock. `fds` are passed to git (a pinned repository's)."""
    writable = list(writable)
    roots = [p for p in (*writable, *(env[k] for k in ("GIT_WORK_TREE",) if env.get(k))) if not is_pinned(p)]
    argv = [git_program(roots) if argv[0] == "git" else argv[0], *argv[1:]]
    env = {**env, "PATH": trusted_path_for(env, roots)}

    def start() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, input=input, timeout=timeout,
                              pass_fds=tuple(fds))  # fmt: skip

    return run_confined(start, writable)


def prime_gitpython() -> None:
    """gitpython runs `git version` when it is first imported, with the git it finds on PATH (or the one
    GIT_PYTHON_GIT_EXECUTABLE names): name the trusted one before that import happens."""
    import sys

    if "git" in sys.modules or os.environ.get("GIT_PYTHON_GIT_EXECUTABLE"):
        return
    with contextlib.suppress(OSError):
        os.environ["GIT_PYTHON_GIT_EXECUTABLE"] = git_program()


def trusted_path_for(env: Mapping[str, str], roots: Iterable[Path | str]) -> str:
    """The PATH a host git call gets: the caller's, without folders a sandboxed command may write."""
    from kimi_cli.hostsafe.programs import trusted_path

    return trusted_path(env.get("PATH", os.defpath), roots)


def declared_filters(env: Mapping[str, str], fds: Sequence[int] = ()) -> set[str]:
    """Names of the filter drivers any config of this repository declares (includes followed)."""
    out = spawn(["git", "config", "--list", "-z"], env, env.get("GIT_WORK_TREE") or None, timeout=30, fds=fds)
    names: set[str] = set()
    for item in out.stdout.split(b"\0"):
        key = item.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        match = FILTER_KEY.match(key)
        if match:
            names.add(match.group(1))
    return names


def conversions_off(env: Mapping[str, str]) -> bool:
    """Whether the repository `env` names turns every filter driver off by its own info/attributes, read
    here right before the call (as the config would be). That file is the top of git's attribute stack:
    `* -filter` there beats every .gitattributes in the tree and any macro they define, so no driver runs
    whatever the config declares, and the config need not be listed for driver names (a git process less
    per call). kimi's checkpoint shadow repository writes it; any other content falls back to the names."""
    common = env.get("GIT_COMMON_DIR")
    if common is None:
        if os.path.lexists(os.path.join(env["GIT_DIR"], "commondir")):  # info/ would come from elsewhere
            return False
        common = env["GIT_DIR"]
    import stat

    try:  # non-blocking: a FIFO planted there must not hang kimi
        fd = os.open(os.path.join(common, "info", "attributes"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(NO_CONVERSION_ATTRIBUTES) + 1) == NO_CONVERSION_ATTRIBUTES
    except OSError:
        return False
    finally:
        os.close(fd)


def driver_overrides(env: Mapping[str, str], fds: Sequence[int] = ()) -> list[tuple[str, str]]:
    """Empty clean/smudge/process for each declared filter: git then copies the bytes as they are."""
    pairs: list[tuple[str, str]] = []
    for name in sorted(declared_filters(env, fds)):
        pairs += [(f"filter.{name}.{key}", "") for key in ("clean", "smudge", "process")]
        pairs.append((f"filter.{name}.required", "false"))
    return pairs


def safe_args(args: Sequence[str]) -> list[str]:
    """The argument list with diff drivers and textconv switched off where git would run them."""
    args = list(args)
    if args and args[0] in DIFF_PORCELAIN:
        return [args[0], *DIFF_FLAGS, *args[1:]]
    return args


def run_git(
    args: Sequence[str],
    cwd: Path,
    location: RepoLocation | None = None,
    *,
    extra: Sequence[tuple[str, str]] = (),
    input: bytes | None = None,
    timeout: float | None = 120,
    env_paths: Mapping[str, str] | None = None,
    also_writable: Sequence[Path | str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command on the host the safe way (bytes out; callers decode). UnsafeRepository when the
    repository's folders are no longer the ones open_repo checked. `also_writable`: folders beyond the
    repository's own that this one call writes (a new linked worktree's checkout)."""
    with git_pin.pinned(location) if location is not None else contextlib.nullcontext() as pinned:
        env = repo_env(location, extra, pinned, **dict(env_paths or {}))
        writable: list[Path | str] = [cwd, *also_writable]
        if location is not None:
            writable.append(location.work_tree)
        for key in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE"):
            if key in env:
                writable.append(env[key])
        if "GIT_INDEX_FILE" in env:
            writable.append(os.path.dirname(env["GIT_INDEX_FILE"]))
        fds = pinned.fds if pinned else ()
        return spawn(["git", *safe_args(args)], env, cwd, writable, input=input, timeout=timeout, fds=fds)


class SafeGit:
    """gitpython's command runner (`repo.git.status(...)` style) with the hardened environment on every call.

    gitpython's Repo object is not used: it reads `core.worktree` and friends from config by itself."""

    def __init__(self, workspace: Path, location: RepoLocation) -> None:
        prime_gitpython()
        import git

        self.location = location
        self._git = git.Git(str(workspace))
        self._workspace = workspace
        self._extra: list[tuple[str, str]] = []
        self._env: dict[str, str] = {}
        self._confined = True

    def with_config(
        self, extra: Sequence[tuple[str, str]], env: Mapping[str, str] | None = None, confined: bool = True
    ) -> SafeGit:
        """The same runner with more command-scope config and environment. `confined=False` only for a
        commit whose hooks the user allowed: they are programs, and may run any program."""
        clone = SafeGit.__new__(SafeGit)
        clone.location, clone._git, clone._workspace = self.location, self._git, self._workspace
        clone._extra, clone._env = [*self._extra, *extra], {**self._env, **dict(env or {})}
        clone._confined = self._confined and confined
        return clone

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        command = name.replace("_", "-")

        def call(*args: str, **kwargs: Any) -> Any:
            with git_pin.pinned(self.location) as pinned:
                return self._call(pinned, command, args, kwargs)

        return call

    def _call(self, pinned: Pinned, command: str, args: Sequence[str], kwargs: dict[str, Any]) -> Any:
        loc = self.location
        env = repo_env(loc, self._extra, pinned)
        if not self._confined:
            # Allowed hooks run git themselves (pre-commit, from a Python that closes descriptors): they need real
            # paths, the ones checked a moment ago. A swap during this one user-allowed commit is the residual risk.
            env.update(GIT_DIR=str(loc.git_dir), GIT_COMMON_DIR=str(loc.common_dir))
        env.update(self._env)
        # gitpython starts from os.environ: override every GIT_* variable it would otherwise pass through.
        for key in os.environ:
            if key.startswith("GIT_") and key not in env:
                env[key] = self._neutral(key, env["GIT_DIR"], env["GIT_COMMON_DIR"])
            elif key in ALL_KEY_VARIABLES:
                env[key] = ""  # gitpython merges os.environ back in: an empty value is what reaches git
        roots = (self._workspace, loc.work_tree)
        argv = [git_program(roots), *safe_args([command, *args])]
        if not self._confined:  # allowed hooks keep the user's PATH and transports (pre-commit clones)
            env["PATH"] = os.environ.get("PATH", os.defpath)
            env.pop("GIT_ALLOW_PROTOCOL", None)
            env.update({k: v for k, v in os.environ.items() if k == "GIT_ALLOW_PROTOCOL"})
            return self._git.execute(argv, env=env, **kwargs)
        writable = (*roots, pinned.git_dir, pinned.common_dir)
        env["PATH"] = trusted_path_for(env, roots)
        return run_confined(lambda: self._git.execute(argv, env=env, pass_fds=pinned.fds, **kwargs), writable)

    @staticmethod
    def _neutral(key: str, git_dir: str, common_dir: str) -> str:
        """A value for an inherited GIT_* variable that means what its absence would."""
        defaults = {
            "GIT_INDEX_FILE": f"{git_dir}/index",
            "GIT_OBJECT_DIRECTORY": f"{common_dir}/objects",
            "GIT_CONFIG_COUNT": "0",
        }
        return defaults.get(key, "")
