"""What every host git call starts from: command-scope config that beats the repository's own, and an
environment that names no helper program and holds no GIT_* variable of the caller's.

host.py adds the repository's names and its filter drivers for each call; confine.py's probes of git and the
repository guard's reads of config start from these as they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from kimi_cli.hostsafe.secrets import without_keys

# Command-scope config for every host git call. /dev/null as the hooks folder: nobody can create a file
# inside it, so no hook is ever found there (a directory could be written to, by someone, some day).
HARDENING: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("credential.helper", ""),  # an empty value empties the helper list
    ("log.showSignature", "false"),
    ("log.mailmap", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("protocol.file.allow", "user"),
    ("protocol.ext.allow", "never"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("diff.ignoreSubmodules", "dirty"),  # do not run `git status` inside submodules (their config is theirs)
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("color.ui", "never"),
    ("safe.bareRepository", "explicit"),
)
# Environment that beats config for programs git may start. GIT_EDITOR ":" is special-cased by git: no exec.
HARDENED_ENV: dict[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_SSH_COMMAND": "false",
    "GIT_SSH": "false",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    # No transport at all (kimi never fetches or pushes): a partial clone's promisor remote would otherwise
    # fetch missing objects on `show`/`diff`, from a URL and through an `http.proxy` the repository names, with
    # the user's ~/.netrc credentials for that host. An empty list allows no protocol, helpers included.
    "GIT_ALLOW_PROTOCOL": "",
}
# The user's own identity variables survive; every other GIT_* variable (GIT_DIR, GIT_EXTERNAL_DIFF, ...) goes.
KEEP_ENV = {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_CONFIG_GLOBAL"}  # fmt: skip


def _sq(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def config_parameters(pairs: Iterable[tuple[str, str]]) -> str:
    """GIT_CONFIG_PARAMETERS in the `'key'='value'` form git itself writes for `git -c`."""
    return " ".join(f"{_sq(k)}={_sq(v)}" for k, v in pairs)


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without GIT_* variables (the identity ones stay), plus the hardened ones."""
    from kimi_cli.hostsafe.programs import trusted_path

    src = os.environ if environ is None else environ
    # Git never needs kimi's API key; an allowed hook (and whatever project code it runs) must not get it either.
    env = {k: v for k, v in without_keys(src).items() if not k.startswith("GIT_") or k in KEEP_ENV}
    env.update(HARDENED_ENV)
    env["PATH"] = trusted_path(src.get("PATH", os.defpath))  # no folder a sandboxed command can write
    return env
