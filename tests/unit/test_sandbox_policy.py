"""The policy as data, and the exact argv / container options it turns into."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kimi_cli.sandbox.backends.bwrap import BwrapSandbox, bwrap_argv
from kimi_cli.sandbox.backends.docker import KEEPER, container_options
from kimi_cli.sandbox.base import OutputCollector
from kimi_cli.sandbox.policy import HiddenPath, SandboxPolicy, build_policy, scrub_env


def policy(network: bool = False) -> SandboxPolicy:
    return SandboxPolicy(
        workspace=Path("/w"),
        private_tmp=Path("/t"),
        read_only=(Path("/w/.git"),),
        hidden=(HiddenPath(Path("/h/.ssh"), True), HiddenPath(Path("/h/.netrc"), False)),
        network=network,
        env={"PATH": "/bin", "HOME": "/h"},
        sockets=(Path("/run/docker.sock"), Path("/var/lib/app/app.sock"), Path("/h/.ssh/agent"), Path("/tmp/x.sock")),
    )


def test_bwrap_argv_is_exact() -> None:
    masks = (["/run"], ["/run/systemd/resolve/stub-resolv.conf"])
    assert bwrap_argv(policy(), ["bash", "-c", "ls"], seccomp_fd=7, masks=masks) == [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        # the host-wide corners of /proc, read-only whatever bwrap's own check decides (sysctls as root)
        "--ro-bind-try", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
        "--ro-bind-try", "/proc/irq", "/proc/irq", "--ro-bind-try", "/proc/bus", "/proc/bus",
        "--ro-bind-try", "/proc/fs", "/proc/fs",
        "--tmpfs", "/run",  # host sockets: docker, D-Bus, systemd, the user's runtime dir
        "--ro-bind", "/run/systemd/resolve/stub-resolv.conf", "/run/systemd/resolve/stub-resolv.conf",
        "--bind", "/t", "/tmp",
        "--bind", "/w", "/w",
        "--ro-bind", "/w/.git", "/w/.git",
        "--tmpfs", "/h/.ssh", "--remount-ro", "/h/.ssh",
        "--ro-bind", "/dev/null", "/h/.netrc",
        "--ro-bind-try", "/dev/null", "/var/lib/app/app.sock",  # the only socket not under a covered folder
        "--unshare-net",
        "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--seccomp", "7",
        "--clearenv", "--setenv", "HOME", "/h", "--setenv", "PATH", "/bin",
        "--chdir", "/w", "--", "bash", "-c", "ls",
    ]  # fmt: skip


def test_bwrap_argv_keeps_the_network_only_when_allowed() -> None:
    assert "--unshare-net" not in bwrap_argv(policy(network=True), ["true"])


def test_scrub_env_drops_secrets_and_keeps_basics() -> None:
    env = scrub_env({
        "KIMI_API_KEY": "k", "MOONSHOT_API_KEY": "k", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s",
        "DB_PASSWORD": "p", "MY_SECRET": "s", "SSH_KEY": "k", "BASH_ENV": "/x", "EDITOR": "vi", "PATH": "/bin",
    })  # fmt: skip
    assert set(env) == {"EDITOR", "PATH", "HOME", "LANG"}


def test_build_policy_hides_existing_credential_stores_and_git(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x")
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    pol = build_policy(
        ws, tmp_path / "t", environ={"HOME": str(home), "KIMI_API_KEY": "k"}, extra_hidden=[str(tmp_path / "vault")]
    )
    in_home = [h for h in pol.hidden if h.path.is_relative_to(tmp_path)]
    assert in_home == [HiddenPath(home / ".ssh", True), HiddenPath(home / ".netrc", False)]
    from kimi_cli.sandbox.hidden import real_home
    from kimi_cli.util.paths import private_dirs

    # /etc/shadow & co, /run/user and /run/secrets, Kerberos tickets, kimi's own folders, the real home's entries
    system = ("/etc/", "/var/lib/", "/run/", "/var/run/", "/tmp/krb5cc_", *(str(p) for p in private_dirs()),
              f"{real_home()}/")  # fmt: skip
    assert all(str(h.path).startswith(system) for h in pol.hidden if h not in in_home)
    assert pol.read_only == (ws / ".git",)
    assert "KIMI_API_KEY" not in pol.env and pol.network is False


def test_build_policy_never_hides_the_workspace_itself(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = home / ".kimi" / "project"
    ws.mkdir(parents=True)
    pol = build_policy(ws, tmp_path / "t", environ={"HOME": str(home)})
    assert not any(h.path.is_relative_to(tmp_path) for h in pol.hidden)


def test_container_options_map_the_policy() -> None:
    opts = container_options(policy(), "img:1", "1g", 128, "sid")
    assert opts["network_mode"] == "none"
    assert opts["volumes"] == {"/w": {"bind": "/w", "mode": "rw"}, "/w/.git": {"bind": "/w/.git", "mode": "ro"}}
    assert not any("sock" in str(v) for v in opts["volumes"])  # no host socket is ever mounted
    assert (opts["stdin_open"], opts["stdin_once"], opts["auto_remove"]) == (True, True, True)  # dies with kimi
    assert opts["read_only"] is True and opts["cap_drop"] == ["ALL"]
    assert (opts["mem_limit"], opts["pids_limit"], opts["command"]) == ("1g", 128, KEEPER)
    assert "KIMI_API_KEY" not in opts["environment"]
    assert container_options(policy(network=True), "img", "1g", 128, "s")["network_mode"] == "host"


def test_output_collector_keeps_head_and_tail_in_bounded_memory() -> None:
    collector = OutputCollector(cap=100)
    collector.feed(b"H" * 80)
    for _ in range(10_000):
        collector.feed(b"x" * 1000)
    collector.feed(b"T" * 33)
    collector.feed(b"T")
    assert collector.tail_len < 2_000
    text, cut = collector.result()
    assert text.startswith("H" * 66 + "\n") and text.endswith(" ...]\n\n" + "T" * 34)
    assert cut == 80 + 10_000_000 + 34 - 100


def test_sandbox_command_lists_what_each_backend_enforces_and_cannot(tmp_path: Path) -> None:
    """What `/sandbox` prints: the same table docs/sandbox.md mirrors, per backend, with this machine's caveats."""
    from kimi_cli.sandbox.backends.none import NoSandbox
    from kimi_cli.sandbox.limits import describe

    ws = tmp_path / "ws"
    ws.mkdir()
    pol = build_policy(ws, tmp_path / "t", environ={"HOME": str(tmp_path)})
    lines = describe(BwrapSandbox(pol, 1000))
    assert any("host sockets" in line for line in lines) and any(line.startswith("  cannot:") for line in lines)
    assert describe(NoSandbox(pol, 1000)) == [
        "  cannot:   no isolation at all: every command needs approval (or --yolo)"
    ]
    from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

    landlock = LandlockSandbox(pol, 1000)
    try:
        text = "\n".join(describe(landlock))
        assert "connect() reaches only sockets in the workspace" in text and "chmod, chown and timestamps" in text
    finally:
        landlock.close_sync()


def test_the_withheld_notice_is_told_once_and_names_only_what_a_failure_mentions() -> None:
    from kimi_cli.sandbox.env import EnvNotice

    assert EnvNotice().take() == ""  # nothing withheld: nothing to say
    names = tuple(f"VAR_{i:02d}" for i in range(14))
    notice = EnvNotice(withheld=("DATABASE_URL", *names))
    told = notice.take()
    assert told.startswith("15 environment variable(s) are withheld") and "and 3 more" in told
    assert "env_allow" in told and notice.take() == ""  # once a session
    assert notice.missing_in("") == "" and notice.missing_in("all good") == ""
    assert notice.missing_in("MY_DATABASE_URL_X unset") == ""  # a whole word only
    said = notice.missing_in("KeyError: 'DATABASE_URL'")
    assert "DATABASE_URL is withheld" in said and "env_allow" in said
    assert notice.missing_in("DATABASE_URL again") == ""  # each name once
    many = notice.missing_in(" ".join(names[:7]))
    assert "VAR_00, VAR_01, VAR_02, VAR_03, VAR_04 and 2 more are withheld" in many


def test_pass_env_refuses_patterns_and_the_never_table() -> None:
    from kimi_cli.sandbox.env import pass_env_refusal

    assert pass_env_refusal("DATABASE_URL") == ""
    assert "not a variable name" in pass_env_refusal("AWS_*")
    assert "never passed" in pass_env_refusal("LD_PRELOAD")
    assert "never passed" in pass_env_refusal("MOONSHOT_API_KEY")


def test_host_sockets_lists_a_real_listener_unless_it_is_inside(tmp_path: Path) -> None:
    import socket

    from kimi_cli.sandbox.policy import host_sockets

    path = tmp_path / "app.sock"
    idle = tmp_path / "idle.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener, socket.socket(socket.AF_UNIX) as bound:
        listener.bind(str(path))
        listener.listen(1)
        bound.bind(str(idle))  # bound, never listening: nothing to connect to
        assert path in host_sockets([])
        assert idle not in host_sockets([])
        assert path not in host_sockets([tmp_path])  # inside the workspace: the sandbox sees it anyway
    assert host_sockets([], table=str(tmp_path / "no-such-table")) == []


def test_bwrap_covers_a_hidden_entry_as_it_is_now_and_skips_one_removed(tmp_path: Path) -> None:
    """A hidden folder removed after the session began (another program's `rm -r ~/.ssh`) failed every later
    command with "bwrap: Can't mkdir ... Read-only file system": the mount point had to be made."""
    import shutil
    import socket
    import tempfile

    store = tmp_path / "store"
    store.mkdir()
    pol = SandboxPolicy(
        workspace=tmp_path,
        private_tmp=tmp_path / "t",
        read_only=(),
        hidden=(HiddenPath(store, True),),
        network=False,
        env={},
        sockets=(),
    )
    sandbox = BwrapSandbox(pol, 1000)
    argv = sandbox.argv("true", None)
    assert argv[argv.index(str(store)) - 1] == "--tmpfs"
    shutil.rmtree(store)
    assert str(store) not in sandbox.argv("true", None)
    folder = Path(tempfile.mkdtemp(prefix="kimi-unit-", dir="/var/tmp"))  # outside /tmp: bound one by one
    sock = folder / "agent.sock"
    try:
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(sock))
            listener.listen(1)
            with_socket = BwrapSandbox(dataclasses.replace(pol, sockets=(sock,)), 1000)
            assert str(sock) in with_socket.argv("true", None)
    finally:
        shutil.rmtree(folder)  # its server stopped and its folder removed since the session began
    assert str(sock) not in with_socket.argv("true", None)
    store.write_text("token")  # back, as a file now
    argv = sandbox.argv("true", None)
    at = argv.index(str(store))
    assert argv[at - 2 : at + 1] == ["--ro-bind", "/dev/null", str(store)]
