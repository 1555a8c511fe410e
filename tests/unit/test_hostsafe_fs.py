"""kimi_cli.hostsafe.fs, walk, files, protected and settings_read on real folders: every open starts at the
workspace's descriptor and refuses a link on the way; the one atomic write; the bounded walk; listings.

The tests of fs run twice: with openat2 (Linux 5.6+) and with the per-component walk kimi falls back to where
the kernel or a seccomp profile lacks openat2 (chosen through the module's probe result, as such a kernel
would set it)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_cli.hostsafe import fs
from kimi_cli.hostsafe.files import is_git_repo, list_files, looks_binary
from kimi_cli.hostsafe.protected import protected_part, refusal
from kimi_cli.hostsafe.settings_read import MAX_SETTINGS_BYTES, read_settings_bytes, read_settings_text
from kimi_cli.hostsafe.walk import MAX_DEPTH, list_tree, walk


@pytest.fixture(params=["openat2", "per-component"])
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openat2":
        if not fs._have_openat2():
            pytest.skip("this kernel has no openat2")
    else:
        monkeypatch.setattr(fs, "_openat2_ok", False)  # what the probe finds on a kernel without openat2
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a nested file, a folder link and a file link to an outside secret."""
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("SECRET\n")
    (root / "out").symlink_to(outside)
    (root / "secret-link").symlink_to(outside / "secret")
    return root


@pytest.fixture
def root_fd(ws: Path) -> Iterator[int]:
    with fs.rooted(ws) as fd:
        yield fd


def fds_open() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_nested_file_is_read_and_capped(resolution: str, ws: Path) -> None:
    assert fs.read_bytes(ws, "src/pkg/mod.py") == b"x = 1\n"
    assert fs.read_bytes(ws, "./src//pkg/mod.py", max_bytes=2) == b"x "
    with fs.rooted(ws) as root_fd:
        data, st = fs.read_at(root_fd, "src/pkg/mod.py")
        assert data == b"x = 1\n" and st.st_size == 6
        dir_fd = fs.open_at(root_fd, "", fs.DIR_FLAGS)  # "" is the root itself
        try:
            assert sorted(os.listdir(dir_fd)) == ["out", "secret-link", "src"]
        finally:
            os.close(dir_fd)


@pytest.mark.parametrize("rel", ["out/secret", "secret-link", "src/../out/secret", "/etc/passwd"])
def test_a_link_on_the_way_dotdot_and_absolute_paths_are_refused(resolution: str, ws: Path, rel: str) -> None:
    with pytest.raises(fs.UnsafePath):
        fs.read_bytes(ws, rel)


def test_a_file_where_a_folder_should_be_is_an_ordinary_error(resolution: str, ws: Path) -> None:
    with pytest.raises(NotADirectoryError):
        fs.read_bytes(ws, "src/pkg/mod.py/x")
    with pytest.raises(FileNotFoundError):
        fs.read_bytes(ws, "src/missing.py")


def test_folders_fifos_are_not_regular_files_and_a_fifo_never_blocks(resolution: str, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(fs.NotRegularFile) as folder:
        fs.open_regular(ws, "src")
    assert folder.value.errno == errno.EISDIR
    with pytest.raises(fs.NotRegularFile) as fifo:
        fs.read_bytes(ws, "pipe")  # O_NONBLOCK: the open returns at once, fstat refuses it
    assert fifo.value.errno == errno.EINVAL


def test_lstat_describes_a_final_link_and_refuses_one_before_it(resolution: str, root_fd: int) -> None:
    assert stat.S_ISLNK(fs.lstat_at(root_fd, "out").st_mode)
    assert stat.S_ISREG(fs.lstat_at(root_fd, "src/pkg/mod.py").st_mode)
    with pytest.raises(fs.UnsafePath):
        fs.lstat_at(root_fd, "out/secret")


def test_open_dir_makes_missing_folders_but_never_through_a_link(resolution: str, ws: Path, root_fd: int) -> None:
    os.close(fs.open_dir_at(root_fd, "new/deeper", create=True))
    assert (ws / "new" / "deeper").is_dir()
    with pytest.raises(FileNotFoundError):
        fs.open_dir_at(root_fd, "absent")
    with pytest.raises(fs.UnsafePath):
        fs.open_dir_at(root_fd, "out/made", create=True)
    with pytest.raises(fs.UnsafePath):
        fs.open_dir_at(root_fd, "out")  # the link itself, where a folder is wanted
    assert not (ws.parent / "outside" / "made").exists()


def test_the_atomic_write_creates_parents_and_keeps_an_existing_files_mode(
    resolution: str, ws: Path, root_fd: int
) -> None:
    fs.write_atomic_at(root_fd, "made/here/new.txt", b"new\n", new_mode=0o640)
    made = ws / "made" / "here" / "new.txt"
    assert made.read_bytes() == b"new\n"
    assert stat.S_IMODE(made.stat().st_mode) == 0o640 & ~_umask()
    target = ws / "src" / "pkg" / "mod.py"
    target.chmod(0o604)
    fs.write_atomic_at(root_fd, "src/pkg/mod.py", b"x = 2\n")
    assert target.read_bytes() == b"x = 2\n" and stat.S_IMODE(target.stat().st_mode) == 0o604
    fs.write_atomic_at(root_fd, "src/pkg/mod.py", b"x = 3\n", new_mode=0o600, keep_mode=False)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 & ~_umask()
    assert not [n for n in os.listdir(ws / "src" / "pkg") if n.endswith(".kimi-tmp")]


def test_the_atomic_write_replaces_a_link_and_never_writes_through_it(resolution: str, ws: Path, root_fd: int) -> None:
    fs.write_atomic_at(root_fd, "secret-link", b"mine\n")
    assert not (ws / "secret-link").is_symlink() and (ws / "secret-link").read_bytes() == b"mine\n"
    assert (ws.parent / "outside" / "secret").read_text() == "SECRET\n"
    with pytest.raises(fs.UnsafePath):
        fs.write_atomic_at(root_fd, "out/secret", b"through the link\n")
    with pytest.raises(IsADirectoryError):
        fs.write_atomic_at(root_fd, "src", b"a folder\n")
    with pytest.raises(IsADirectoryError):
        fs.write_atomic_at(root_fd, "", b"the root\n")
    assert (ws.parent / "outside" / "secret").read_text() == "SECRET\n"


def test_replace_in_sets_the_exact_mode_and_a_failure_before_the_rename_leaves_nothing(ws: Path) -> None:
    dir_fd = os.open(ws, fs.DIR_FLAGS)
    try:
        ran: list[str] = []
        fs.replace_in(dir_fd, "exact", b"1", 0o751, exact=True, owner=(os.getuid(), os.getgid()),
                      before_rename=lambda: ran.append("last"))  # fmt: skip
        assert stat.S_IMODE((ws / "exact").stat().st_mode) == 0o751 and ran == ["last"]

        def squatter() -> None:
            raise OSError(errno.EBUSY, "a folder squats on the name")

        with pytest.raises(OSError, match="squats"):
            fs.replace_in(dir_fd, "exact", b"2", before_rename=squatter)
        assert (ws / "exact").read_bytes() == b"1"
        assert not [n for n in os.listdir(ws) if n.endswith(".kimi-tmp")]
    finally:
        os.close(dir_fd)


def test_private_files_are_0600_in_a_0700_folder(tmp_path: Path) -> None:
    path = tmp_path / "kimi-home" / "state" / "trusted.json"
    fs.write_private(path, "{}\n")
    fs.write_private(path, '{"v": 1}\n')
    assert path.read_text() == '{"v": 1}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_append_refuses_a_hard_linked_file_and_a_link(resolution: str, ws: Path, root_fd: int) -> None:
    fs.append_at(root_fd, "src/pkg/mod.py", b"y = 2\n")
    assert (ws / "src" / "pkg" / "mod.py").read_text() == "x = 1\ny = 2\n"
    os.link(ws / "src" / "pkg" / "mod.py", ws.parent / "outside" / "twin.py")
    with pytest.raises(OSError) as linked:
        fs.append_at(root_fd, "src/pkg/mod.py", b"z = 3\n")
    assert linked.value.errno == errno.EMLINK
    with pytest.raises(fs.UnsafePath):
        fs.append_at(root_fd, "secret-link", b"more\n")
    assert (ws.parent / "outside" / "twin.py").read_text() == "x = 1\ny = 2\n"


def test_links_are_made_replaced_and_read_as_links(resolution: str, ws: Path, root_fd: int) -> None:
    fs.symlink_at(root_fd, "links/to-mod", "../src/pkg/mod.py")
    assert fs.readlink_at(root_fd, "links/to-mod") == "../src/pkg/mod.py"
    fs.symlink_at(root_fd, "links/to-mod", "elsewhere")  # replaced, not followed
    assert os.readlink(ws / "links" / "to-mod") == "elsewhere"
    assert (ws / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"


def test_remove_unlinks_a_link_itself_and_prunes_the_folders_it_empties(
    resolution: str, ws: Path, root_fd: int
) -> None:
    assert fs.remove_at(root_fd, "secret-link") and (ws.parent / "outside" / "secret").exists()
    assert fs.remove_at(root_fd, "src/pkg/mod.py")
    assert not (ws / "src").exists()  # src/pkg and src were left empty
    assert not fs.remove_at(root_fd, "src/pkg/mod.py")  # its folder is gone
    assert not fs.remove_at(root_fd, "absent.txt")
    (ws / "keep").mkdir()
    (ws / "keep" / "a").write_text("a")
    (ws / "keep" / "b").write_text("b")
    assert fs.remove_at(root_fd, "keep/a", prune=True) and (ws / "keep").is_dir()
    with pytest.raises(fs.UnsafePath):
        fs.remove_at(root_fd, "out/secret")
    assert (ws.parent / "outside" / "secret").exists()


def test_existing_drops_names_under_a_linked_folder(resolution: str, ws: Path) -> None:
    names = ["src/pkg/mod.py", "out/secret", "secret-link", "src", "gone.txt", "../escape"]
    assert fs.existing(ws, names) == ["src/pkg/mod.py", "secret-link", "src"]
    assert fs.existing(ws, names, dirs=False) == ["src/pkg/mod.py", "secret-link"]
    assert fs.relative_to_root(ws, ws) == "" and fs.relative_to_root(ws, ws / "src" / "pkg") == "src/pkg"
    fd = fs.open_file(ws, "src/pkg/mod.py")
    os.close(fd)


def test_the_walk_is_sorted_lists_links_without_entering_them_and_can_be_pruned(ws: Path) -> None:
    (ws / "src" / "b.txt").write_text("b")
    (ws / "src" / "a.txt").write_text("a")
    (ws / "skip" / "inner").mkdir(parents=True)
    folders = []
    for folder in walk(ws):
        folders.append((folder.rel, folder.dirs[:], folder.files[:], folder.links[:]))
        folder.dirs[:] = [d for d in folder.dirs if d != "skip"]
    assert folders == [
        ("", ["skip", "src"], [], ["out", "secret-link"]),
        ("src/", ["pkg"], ["a.txt", "b.txt"], []),
        ("src/pkg/", [], ["mod.py"], []),
    ]
    assert [f.rel for f in walk(ws, start="src")] == ["src/", "src/pkg/"]
    assert [f.rel for f in walk(ws, max_depth=0)] == [""]
    assert list(walk(ws, start="absent")) == []
    assert list_tree(ws, skip_dirs=frozenset({"pkg"})) == ["out", "secret-link", "src/a.txt", "src/b.txt"]


def test_a_folder_read_in_the_walk_is_a_small_regular_file_only(ws: Path) -> None:
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "ignore-link").symlink_to(ws / ".gitignore")
    folders = walk(ws)
    top = next(folders)  # its descriptor is valid while the walk is at it
    assert top.read(".gitignore") == b"*.log\n"
    assert top.read(".gitignore", max_bytes=1) == b"*"
    assert top.read("ignore-link") is None and top.read("src") is None and top.read("absent") is None
    folders.close()
    assert top.fd == -1


def test_a_tree_deeper_than_the_bound_is_walked_to_the_bound_without_recursion(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    path = deep
    for _ in range(MAX_DEPTH + 20):
        path = path / "d"
    path.mkdir(parents=True)
    before = fds_open()
    depths = [f.depth for f in walk(deep)]
    assert max(depths) == MAX_DEPTH and len(depths) == MAX_DEPTH + 1
    assert fds_open() == before


def test_a_walk_stopped_early_closes_its_folders(ws: Path) -> None:
    before = fds_open()
    for folder in walk(ws):
        if folder.rel == "src/pkg/":
            break
    assert fds_open() == before


def test_a_folder_swapped_for_a_link_during_the_walk_is_not_entered(ws: Path, tmp_path: Path) -> None:
    seen = []
    for folder in walk(ws):
        seen.append(folder.rel)
        if folder.rel == "src/":  # scanned; now a command swaps pkg for a link out
            os.rename(ws / "src" / "pkg", tmp_path / "pkg-moved")
            (ws / "src" / "pkg").symlink_to(tmp_path / "outside")
    assert seen == ["", "src/"]


def test_files_outside_git_follow_gitignore_and_kimiignore_and_skip_vcs_folders(ws: Path) -> None:
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / ".kimiignore").write_text("secret-link\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.bin").write_bytes(b"\0")
    (ws / "run.log").write_text("log")
    (ws / ".hg").mkdir()
    (ws / ".hg" / "store").write_text("x")
    assert not is_git_repo(ws)
    assert list_files(ws) == [".gitignore", ".kimiignore", "out", "src/pkg/mod.py"]


def test_files_in_git_are_the_tracked_and_unignored_ones_with_real_folders_above(ws: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "run.log").write_text("log")
    for args in (["init", "-q"], ["add", "src", ".gitignore"], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)
    (ws / "new.txt").write_text("untracked, not ignored")
    assert is_git_repo(ws)
    assert list_files(ws) == [".gitignore", "new.txt", "out", "secret-link", "src/pkg/mod.py"]
    os.rename(ws / "src", ws / "src-real")
    (ws / "src").symlink_to(ws.parent / "outside")  # git still lists src/pkg/mod.py: it names nothing now
    assert "src/pkg/mod.py" not in list_files(ws)


def test_binary_sniffing_looks_at_the_head_only() -> None:
    assert looks_binary(b"abc\x00def") and not looks_binary(b"plain text\n")
    assert not looks_binary(b"a" * 9000 + b"\x00")


@pytest.mark.parametrize(
    ("rel", "part"),
    [(".git/config", ".git"), ("a/.KIMI/x", ".KIMI"), ("sub\\.Git\\hooks", ".Git"), ("src/git/x", None), ("", None)],
)
def test_protected_names_at_any_depth_in_any_case(rel: str, part: str | None) -> None:
    assert protected_part(rel) == part


def test_the_refusal_says_what_to_do() -> None:
    text = refusal(".git/hooks/pre-commit", ".git")
    assert ".git/hooks/pre-commit is inside .git/" in text and "Git tool" in text


def test_settings_reads_are_bounded_regular_files_and_links_to_them_are_followed(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(b"model = 'k2'\n\xff\n")
    (tmp_path / "link.toml").symlink_to(config)
    assert read_settings_bytes(tmp_path / "link.toml") == b"model = 'k2'\n\xff\n"
    assert read_settings_text(config) == "model = 'k2'\n\ufffd\n"
    assert read_settings_bytes(config, limit=5, head=True) == b"model"
    with pytest.raises(OSError) as big:
        read_settings_bytes(config, limit=5)
    assert big.value.errno == errno.EFBIG and "over the 5-byte limit" in str(big.value)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    for name, code in (("fifo", errno.EINVAL), ("zero", errno.EINVAL), ("", errno.EISDIR)):
        with pytest.raises(OSError) as refused:
            read_settings_bytes(tmp_path / name)
        assert refused.value.errno == code
    assert MAX_SETTINGS_BYTES == 4 * 1024 * 1024


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_a_gitignore_that_is_a_folder_is_no_ignore_file_and_the_listing_goes_on(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").mkdir()
    (tmp_path / "a.txt").write_text("a")
    assert list_files(tmp_path) == ["a.txt"]  # raised IsADirectoryError before
