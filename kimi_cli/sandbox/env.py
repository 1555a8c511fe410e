"""A sandboxed command's environment: an allowlist of what builds need, and a second net for credentials.

The environment kimi starts with holds the user's secrets (API keys, cloud credentials, database URLs,
the ssh-agent socket). A name-based denylist misses most of them (AWS_ACCESS_KEY_ID, GH_PAT,
DATABASE_URL), so a command gets only variables on the allowlist below or in `[sandbox] env_allow`,
never those in `env_deny`, and never a value that looks like a credential whatever its name.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.hostsafe.secrets import ALL_KEY_VARIABLES

SANE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Names (fnmatch patterns) a build, a test suite or a toolchain reads. None of them names a secret; any
# value that looks like one is still refused below.
ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_*",
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES", "EDITOR", "VISUAL", "PAGER",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
    # certificates and proxies (a proxy URL with a password in it is refused by value)
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NIX_SSL_CERT_FILE",
    "AWS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy",
    # Python
    "VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
    "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYENV_ROOT",
    "PYENV_VERSION", "PYENV_DIR", "PYENV_HOOK_PATH", "PIPX_HOME", "PIPX_BIN_DIR", "POETRY_HOME",
    "POETRY_VIRTUALENVS_*", "UV_CACHE_DIR", "UV_PYTHON", "UV_PROJECT_ENVIRONMENT", "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL", "PIP_*", "PYTEST_ADDOPTS",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "CONDA_PYTHON_EXE", "CONDA_SHLVL", "CONDA_PROMPT_MODIFIER",
    "MAMBA_ROOT_PREFIX", "MAMBA_EXE",
    # JavaScript
    "NODE_PATH", "NODE_ENV", "NODE_OPTIONS", "NODE_EXTRA_CA_CERTS", "NVM_DIR", "NVM_BIN", "NVM_INC", "PNPM_HOME",
    "BUN_INSTALL", "DENO_DIR", "DENO_INSTALL", "VOLTA_HOME", "COREPACK_HOME", "npm_config_cache",
    "npm_config_prefix", "NPM_CONFIG_CACHE", "NPM_CONFIG_PREFIX", "YARN_CACHE_FOLDER",
    # JVM, Go, Rust, C/C++, Ruby, .NET
    "JAVA_HOME", "JDK_HOME", "JRE_HOME", "JAVA_TOOL_OPTIONS", "MAVEN_HOME", "M2_HOME", "MAVEN_OPTS", "GRADLE_HOME",
    "GRADLE_USER_HOME", "GRADLE_OPTS", "SDKMAN_DIR", "KOTLIN_HOME", "SCALA_HOME",
    "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOPROXY",
    "GONOSUMDB", "GOSUMDB", "GOTOOLCHAIN", "GO111MODULE", "CGO_ENABLED", "GOOS", "GOARCH",
    "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTUP_AUTO_INSTALL", "RUSTFLAGS", "RUSTDOCFLAGS",
    "RUST_BACKTRACE", "RUST_LOG",
    "CARGO_TARGET_DIR", "CARGO_BUILD_JOBS", "CARGO_INCREMENTAL", "CARGO_TERM_COLOR",
    "CC", "CXX", "CPP", "LD", "AR", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS", "PKG_CONFIG_PATH",
    "CMAKE_PREFIX_PATH", "CMAKE_GENERATOR", "CMAKE_BUILD_PARALLEL_LEVEL", "CCACHE_DIR", "LIBRARY_PATH", "CPATH",
    "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "RBENV_VERSION", "BUNDLE_PATH", "BUNDLE_GEMFILE", "RUBYOPT",
    "DOTNET_ROOT", "DOTNET_CLI_TELEMETRY_OPTOUT", "DOTNET_NOLOGO", "NUGET_PACKAGES",
    "ASDF_DIR", "ASDF_DATA_DIR", "MISE_DATA_DIR", "DEBIAN_FRONTEND",
    # CI markers (not their tokens: GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN and the like are not on this list)
    "CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_REPOSITORY",
    "GITHUB_SHA", "GITHUB_REF", "GITHUB_REF_NAME", "GITHUB_BASE_REF", "GITHUB_HEAD_REF", "GITHUB_EVENT_NAME",
    "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_JOB", "GITHUB_WORKFLOW", "RUNNER_OS", "RUNNER_ARCH",
    "RUNNER_TEMP", "GITLAB_CI", "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_PROJECT_DIR", "CI_PIPELINE_ID",
    "BUILDKITE", "CIRCLECI", "TRAVIS", "TF_BUILD", "JENKINS_HOME", "TEAMCITY_VERSION", "BITBUCKET_BUILD_NUMBER",
)  # fmt: skip
# Never, not even through env_allow: kimi's own key (every provider's key variable, kimi_cli.hostsafe.secrets),
# what would run code in every shell, what names a host socket or a credential cache.
NEVER = ("BASH_ENV", "ENV", "PROMPT_COMMAND", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "SSH_AUTH_SOCK",
         "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "XDG_RUNTIME_DIR",
         "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "KRB5CCNAME", *ALL_KEY_VARIABLES)  # fmt: skip
# Shell bookkeeping: withheld without a word (the note is for variables someone might miss).
QUIET = ("_", "SHLVL", "OLDPWD", "PWD", "HOSTNAME", "HOSTTYPE", "MACHTYPE", "OSTYPE", "PS1", "PS2", "PS4", "MAIL",
         "LS_COLORS", "LESSOPEN", "LESSCLOSE", "MOTD_SHOWN", "SHELL_SESSION_ID", "SSH_CONNECTION", "SSH_CLIENT",
         "SSH_TTY", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM_SESSION_ID", "WINDOWID", "INVOCATION_ID",
         "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID")  # fmt: skip

# Values that are credentials whatever the variable's name: a URL with a user (and maybe a password) in it,
# and the prefixes of well-known token formats.
CREDENTIAL_VALUE = re.compile(
    r"[a-z][a-z0-9+.\-]*://[^/\s@]+@"  # scheme://user[:password]@host, or ://:token@host (no user)
    r"|(pass(word|wd|phrase)?|secret|token|api[_\-]?key|access[_\-]?key|credentials?)[\s\"']*[=:][\s\"']*[^\s\"'$]{4}"
    # ^ a setting inside a value: GRADLE_OPTS=-Dsonatype.password=..., MAVEN_OPTS=-Dgpg.passphrase=...
    r"|\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_\-]{16,}"  # GitLab
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|\bsk-[A-Za-z0-9_\-]{20,}"  # OpenAI-style and many others
    r"|\b(sk|rk)_(live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|\bAIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|\bnpm_[A-Za-z0-9]{36}"
    r"|\bpypi-[A-Za-z0-9_\-]{50,}"
    r"|\bhf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\."  # a JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----",
    re.IGNORECASE,
)


def looks_like_credential(value: str) -> bool:
    return CREDENTIAL_VALUE.search(value) is not None


def _matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    # A name without *, ? or [ matches only itself: compared as a string, not compiled into a regular expression
    # (fnmatch compiled each of ALLOW's ~190 names once a process: ~30 ms of every start-up, issue 47).
    for pattern in patterns:
        if pattern == name:
            return True
        if ("*" in pattern or "?" in pattern or "[" in pattern) and fnmatch.fnmatchcase(name, pattern):
            return True
    return False


@dataclass
class EnvNotice:
    """Which of kimi's variables the sandbox withheld. The user is told once a session (a start notice: the
    terminal, stderr); the model is told only about a name a failed command's own output mentions, never
    the list (the host's variable names are the user's, not the model's to read)."""

    withheld: tuple[str, ...] = ()
    given: bool = field(default=False, compare=False)
    named: set[str] = field(default_factory=set, compare=False)  # names the model was already told of

    def take(self) -> str:
        """The user's notice, once a session; empty when nothing was withheld or it was given."""
        if self.given or not self.withheld:
            return ""
        self.given = True
        shown = ", ".join(self.withheld[:12]) + (
            f" and {len(self.withheld) - 12} more" if len(self.withheld) > 12 else ""
        )
        return (
            f"{len(self.withheld)} environment variable(s) are withheld from sandboxed commands ({shown}): the "
            "sandbox passes an allowlist, never credential-looking values. Pass one with "
            '`[sandbox] env_allow = ["NAME"]` in ~/.kimi/config.toml.'
        )

    def missing_in(self, output: str) -> str:
        """For a failed command's result: the withheld variables its output names (as whole words), each told
        once a session, so the model knows why and that the user can pass it. Empty otherwise."""
        if not self.withheld or not output:
            return ""
        found = [n for n in self.withheld if n not in self.named and _word(n).search(output)]
        if not found:
            return ""
        self.named.update(found)
        names = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        verb = "is" if len(found) == 1 else "are"
        return (
            f"\n[kimi: {names} {verb} withheld from sandboxed commands (kimi passes an allowlist of variables); "
            'the user can pass a variable with `[sandbox] env_allow = ["NAME"]` in ~/.kimi/config.toml.]'
        )


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")


def sandbox_env(
    environ: dict[str, str], allow: list[str] | None = None, deny: list[str] | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """(the command's environment, the names withheld that someone might miss).

    `allow` (env_allow) adds names and patterns and is the user's explicit choice: it passes the value
    as it is. `deny` (env_deny) and NEVER win over everything. The built-in allowlist never passes a
    value that looks like a credential.
    """
    allow, deny = list(allow or []), list(deny or [])
    out: dict[str, str] = {}
    withheld: list[str] = []
    for name, value in environ.items():
        if name in NEVER or _matches(name, deny):
            ok = False
        elif _matches(name, allow):
            ok = True
        else:
            ok = _matches(name, ALLOW) and not looks_like_credential(value)
        if ok:
            out[name] = value
        elif name not in QUIET and name not in NEVER:  # NEVER: no setting would pass it, nothing to say
            withheld.append(name)
    out.setdefault("PATH", SANE_PATH)
    out.setdefault("HOME", str(Path.home()))
    out.setdefault("LANG", "C.UTF-8")
    return out, tuple(sorted(withheld))


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def pass_env_refusal(name: str) -> str:
    """Why a command line's `--pass-env NAME` cannot pass that variable; empty when it can. One name, no
    pattern, and never what NEVER holds (kimi's own key variables among them)."""
    if not NAME.fullmatch(name):
        return "not a variable name (one name, no pattern)"
    if name in NEVER:
        return "never passed to sandboxed commands (an API key, or a variable that runs code or names a host socket)"
    return ""
