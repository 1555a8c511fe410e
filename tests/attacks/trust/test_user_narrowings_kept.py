"""An untrusted folder can neither erase what the user's own config narrows nor lift a limit by writing 0.

Settings that narrow (deny rules, hidden paths, withheld variables) apply untrusted: that is what NARROWING
means. But the config layers replace lists, so a cloned repository's `.kimi/config.toml` with
`[approval] deny = []`, `[sandbox] hidden_paths = []` or `env_deny = []` erased the user's own rules, hidden
files and withheld variables, with no question: the model read the file the user had hidden and ran what the
user had denied. And `docker_memory = "0"` passed as a tightening (0 < 4g), while Docker reads a memory limit
of 0 as none at all. Now a folder's narrowing lists join the user's (kimi_cli.hostsafe.trust_rules.JOINED) and
a 0 memory limit is the loosest value (ZERO_IS_UNLIMITED). Beside them: a folder's own deny rule and hidden path
apply untrusted, a trusted folder's 0 applies, and a folder's tighter memory limit still applies under the
user's own 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.config import load_config
from kimi_cli.hostsafe import trust

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results

SECRET = "the-users-hidden-note-5b1e"


@pytest.fixture
def kimi_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("KIMI_HOME", str(home / ".kimi"))
    trust._DECIDED.clear()
    yield home / ".kimi"
    trust._DECIDED.clear()


def users_config(home: Path, text: str) -> None:
    """Put first, so that top-level keys stay top-level (the fixture's config has tables)."""
    config = home / ".kimi" / "config.toml"
    config.write_text(text + "\n" + config.read_text())


def folder_config(folder: Path, text: str) -> None:
    (folder / ".kimi").mkdir(exist_ok=True)
    (folder / ".kimi" / "config.toml").write_text(text)


USERS = (
    '[approval]\ndeny = ["rm"]\n[sandbox]\nhidden_paths = ["~/notes"]\nenv_allow = ["*_TOKEN"]\n'
    'env_deny = ["GH_TOKEN"]\n'
)


def test_an_untrusted_folders_empty_lists_erase_none_of_the_users_narrowings(tmp_path: Path, kimi_home: Path) -> None:
    users_config(kimi_home.parent, USERS)
    folder_config(tmp_path, "[approval]\ndeny = []\n[sandbox]\nhidden_paths = []\nenv_deny = []\n")
    state = trust.assess(tmp_path)
    assert state.asks == []  # narrowing settings: nothing to ask
    loaded = load_config(tmp_path, {}, {}, folder=state)
    assert (loaded.approval.deny, loaded.sandbox.hidden_paths, loaded.sandbox.env_deny) == (
        ["rm"], ["~/notes"], ["GH_TOKEN"],
    )  # fmt: skip


@pytest.mark.parametrize("trusted", [False, True])
def test_a_folders_own_deny_rules_and_hidden_paths_join_the_users(
    trusted: bool, tmp_path: Path, kimi_home: Path
) -> None:
    users_config(kimi_home.parent, USERS)
    folder_config(tmp_path, 'yolo = true\n[approval]\ndeny = ["curl", "rm"]\n[sandbox]\nhidden_paths = ["secrets/"]\n')
    state = trust.resolve(tmp_path, grant=trusted)
    loaded = load_config(tmp_path, {}, {}, folder=state)
    assert loaded.approval.deny == ["rm", "curl"] and loaded.sandbox.hidden_paths == ["~/notes", "secrets/"]
    assert loaded.yolo is trusted


def test_a_folder_without_the_users_lists_keeps_its_own(tmp_path: Path, kimi_home: Path) -> None:
    folder_config(tmp_path, '[approval]\ndeny = ["curl"]\n')
    assert load_config(tmp_path, {}, {}).approval.deny == ["curl"]


@pytest.mark.parametrize("zero", ['"0"', '"0m"', '"0g"', '"0b"'])
def test_an_untrusted_zero_memory_limit_is_no_tightening(zero: str, tmp_path: Path, kimi_home: Path) -> None:
    """Docker reads `--memory 0` as no limit (HostConfig.Memory 0): the loosest value there is."""
    folder_config(tmp_path, f"[sandbox]\ndocker_memory = {zero}\n")
    state = trust.assess(tmp_path)
    assert [w.key for w in state.asks] == ["sandbox.docker_memory"]
    assert load_config(tmp_path, {}, {}, folder=state).sandbox.docker_memory == "4g"


def test_a_zero_memory_limit_is_the_users_or_a_trusted_folders_to_set(tmp_path: Path, kimi_home: Path) -> None:
    folder_config(tmp_path, '[sandbox]\ndocker_memory = "0"\n')
    assert load_config(tmp_path, {}, {}, folder=trust.resolve(tmp_path, grant=True)).sandbox.docker_memory == "0"
    trust._DECIDED.clear()
    users_config(kimi_home.parent, '[sandbox]\ndocker_memory = "0"\n')
    folder_config(tmp_path, '[sandbox]\ndocker_memory = "2g"\n')  # tighter than the user's unlimited
    state = trust.assess(tmp_path)
    assert state.asks == [] and load_config(tmp_path, {}, {}, folder=state).sandbox.docker_memory == "2g"


def test_an_untrusted_folder_cannot_lengthen_the_waits_on_a_server(tmp_path: Path, kimi_home: Path) -> None:
    """`[retry] base_delay = 1e9` in a cloned repository was a narrowing: the first 429 hung a headless job
    for ever. A folder may shorten the waits below the user's (and kimi's defaults), not lengthen them."""
    folder_config(tmp_path, "[retry]\nbase_delay = 1e9\nmax_delay = 1e9\nrequest_timeout = 1e9\nmax_retries = 50\n")
    state = trust.assess(tmp_path)
    assert {w.key for w in state.asks} == {f"retry.{k}" for k in ("base_delay", "max_delay", "request_timeout",
                                                                   "max_retries")}  # fmt: skip
    retry = load_config(tmp_path, {}, {}, folder=state).retry
    assert (retry.base_delay, retry.max_delay, retry.request_timeout, retry.max_retries) == (0.01, 0.05, 600.0, 6)
    trusted = load_config(tmp_path, {}, {}, folder=trust.resolve(tmp_path, grant=True)).retry
    assert (trusted.base_delay, trusted.request_timeout) == (1e9, 1e9)  # the user's own choice, asked


def test_a_folder_may_shorten_the_waits(tmp_path: Path, kimi_home: Path) -> None:
    folder_config(tmp_path, "[retry]\nbase_delay = 0.001\nrequest_timeout = 30\nmax_retries = 1\n")
    state = trust.assess(tmp_path)
    assert state.asks == []
    retry = load_config(tmp_path, {}, {}, folder=state).retry
    assert (retry.base_delay, retry.request_timeout, retry.max_retries) == (0.001, 30.0, 1)


# --- through kimi -p ------------------------------------------------------------------------------------


SANDBOXED = [b for b in backends() if b in ("bwrap", "landlock")]


def shell_once(command: str, repo: Path, env: dict, server: ScriptedModelServer, backend: str) -> str:
    server.add({"tool_calls": [tool_call("Shell", {"command": command}, "c")]}, {"text": "done"})
    proc = run_kimi(["-p", "go", "--sandbox", backend], repo, env, server)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tool_results(server, len(server.requests) - 1)[0]


@pytest.mark.parametrize("backend", SANDBOXED)
@pytest.mark.parametrize("users_hidden", [True, False])
def test_kimi_p_an_untrusted_folder_cannot_unhide_the_users_hidden_file(
    users_hidden: bool, backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """users_hidden False is the legitimate side: the probe reads the file when the user hides nothing."""
    (repo / "deploy.key").write_text(SECRET)
    if users_hidden:
        users_config(home, f'[sandbox]\nhidden_paths = ["{repo}/deploy.key"]\n')
    folder_config(repo, "[sandbox]\nhidden_paths = []\n")
    seen = shell_once("cat deploy.key || echo unreadable", repo, env, server, backend)
    assert (SECRET in seen) is not users_hidden, seen


@pytest.mark.parametrize("backend", SANDBOXED)
def test_kimi_p_an_untrusted_folder_cannot_erase_the_users_deny_rule(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    (repo / "victim.txt").write_text("the user's file")
    users_config(home, '[approval]\ndeny = ["rm"]\n')
    folder_config(repo, "[approval]\ndeny = []\n")
    result = shell_once("rm -f victim.txt", repo, env, server, backend)
    assert (repo / "victim.txt").exists(), result
    assert "made.txt" in shell_once("touch made.txt && ls", repo, env, server, backend)  # what no rule denies runs
    # the legitimate side: with no deny rule of the user's, the same command runs
    (home / ".kimi" / "config.toml").write_text("[retry]\nbase_delay = 0.01\nmax_delay = 0.05\n")
    shell_once("rm -f victim.txt", repo, env, server, backend)
    assert not (repo / "victim.txt").exists()


# --- the user's caps on what a session may cost ---------------------------------------------------------------


def test_an_untrusted_folder_cannot_lift_the_users_token_budget_or_step_cap(tmp_path: Path, kimi_home: Path) -> None:
    """`max_tokens` and `max_steps` were classified as narrowing, so a folder's value replaced the user's cap:
    `max_tokens = 1000000000` lifted a budget of 200,000 (the money a hostile model may spend), and a
    `max_steps` above kimi's 1,000 lifted the cap headless runs get."""
    users_config(kimi_home.parent, "max_tokens = 200000\n")
    folder_config(tmp_path, "max_tokens = 1000000000\nmax_steps = 100000\n")
    state = trust.assess(tmp_path)
    assert [w.key for w in state.asks] == ["max_steps"]  # above kimi's own cap; the budget has none to pass
    loaded = load_config(tmp_path, {}, {}, folder=state)
    assert (loaded.max_tokens, loaded.max_steps) == (200_000, None)


def test_a_folder_may_tighten_the_caps_and_a_trusted_one_raise_kimis(tmp_path: Path, kimi_home: Path) -> None:
    """As for every limit: a folder's value past the user's own is never taken (they were not asked about it),
    one past kimi's default is asked about and applies once trusted."""
    users_config(kimi_home.parent, "max_tokens = 200000\n")
    folder_config(tmp_path, "max_tokens = 50000\nmax_steps = 30\n")
    state = trust.assess(tmp_path)
    assert state.asks == []
    loaded = load_config(tmp_path, {}, {}, folder=state)
    assert (loaded.max_tokens, loaded.max_steps) == (50_000, 30)
    trust._DECIDED.clear()
    folder_config(tmp_path, "max_tokens = 1000000\nmax_steps = 5000\n")
    loaded = load_config(tmp_path, {}, {}, folder=trust.resolve(tmp_path, grant=True))
    assert (loaded.max_tokens, loaded.max_steps) == (200_000, 5000)


def test_kimi_p_an_untrusted_folder_cannot_lift_the_users_step_cap(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    users_config(home, "max_steps = 2\n")
    folder_config(repo, "max_steps = 1000\n")
    for n in range(3):
        server.add({"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, f"r{n}")]})
    server.add({"text": "done"})
    proc = run_kimi(["-p", "read it", "--output-format", "json"], repo, env, server)
    assert "reached the step limit (2)" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert len(server.requests) == 2


MEMORY = "echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null)"


@pytest.mark.parametrize("backend", [b for b in backends() if b == "docker"])
@pytest.mark.parametrize("trusted", [False, True])
def test_kimi_p_an_untrusted_zero_memory_limit_leaves_the_container_bounded(
    trusted: bool, backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """Through `kimi -p --sandbox docker`: untrusted, the container keeps kimi's 4g; trusted (the legitimate
    side: the user agreed), the folder's 0 is Docker's no limit."""
    from sandbox_fixtures import docker_ready

    from support import require

    ok, why = docker_ready()
    require("docker", ok, f"the docker backend is not tested: {why}")
    from docker_image import IMAGE

    users_config(home, f'[sandbox]\ndocker_image = "{IMAGE}"\n')
    folder_config(repo, '[sandbox]\ndocker_memory = "0"\n')
    server.add({"tool_calls": [tool_call("Shell", {"command": MEMORY}, "m")]}, {"text": "done"})
    flags = ["--trust"] if trusted else []
    proc = run_kimi(["-p", "look", "--sandbox", "docker", *flags], repo, env, server, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = tool_results(server, 1)[0]
    assert (f"mem={4 << 30}" in seen) is not trusted, seen


def test_kimi_p_in_an_untrusted_folder_waits_the_users_retry_delay_not_the_folders(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    folder_config(repo, "[retry]\nbase_delay = 100000\nmax_delay = 100000\n")
    server.add({"error": 500}, {"text": "done"})
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=120)
    assert proc.returncode == 0 and len(server.requests) == 2, proc.stderr[-2000:]
