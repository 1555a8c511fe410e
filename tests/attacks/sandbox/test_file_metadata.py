"""Modes, owners, timestamps and attributes of files outside the workspace.

Landlock does not mediate chmod, chown, utime, xattrs or chattr flags. Unguarded, a command on
landlock could `chmod 666` any file of the user's (and, as root, any file of the host: root owns /etc/shadow,
so no capability is needed), `touch` it, chgrp it, set ACLs and chattr flags on it. Now chmod/chown/utime
go to the supervisor, which applies them only inside the workspace and private tmp (supervise_meta.py),
and xattrs and FS_IOC_SETFLAGS are refused. bwrap and Docker never mounted the outside writable: the same
attacks fail there by read-only mounts. Beside each attack: the same calls inside the workspace work.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, need_probe

from kimi_cli.kernel.restrict import seccomp_program

from seccomp_bpf import X86, decide

ALLOW, EPERM, NOTIFY, EOPNOTSUPP = 0x7FFF0000, 0x00050001, 0x7FC00000, 0x0005005F
OLD = 946684800  # 2000-01-01, the victims' mtime


@pytest.fixture
def victim() -> Iterator[Path]:
    """A file of the user running the tests (root: a root-owned one, like every system file), outside
    /tmp (bwrap's /tmp is private, which would hide it for the wrong reason)."""
    folder = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    folder.mkdir()
    os.chmod(folder, 0o755)
    target = folder / "tool"
    target.write_text("#!/bin/sh\necho host tool\n")
    os.chmod(target, 0o755)
    os.utime(target, (OLD, OLD))
    yield target
    subprocess.run(["chattr", "-A", "-d", str(target)], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def _state(path: Path) -> tuple[int, int, int, int]:
    st = path.lstat()
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, int(st.st_mtime)


def _flags(path: Path) -> str:
    out = subprocess.run(["lsattr", "-d", str(path)], capture_output=True, text=True)
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout else ""


def test_modes_owners_and_times_outside_the_workspace_do_not_change(rig: Rig, victim: Path) -> None:
    probe = need_probe(rig)
    key = rig.home / ".ssh" / "id_rsa"
    os.chmod(key, 0o600)
    before, key_before = _state(victim), _state(key)
    gid = os.getgid()
    rig.run(
        f"chmod 666 {victim}; chmod o+w {victim}; chmod 700 {victim}; {probe} fchmod {victim} 777;"
        f" touch {victim}; touch -d 2011-11-11 {victim}; chgrp {gid} {victim}; chown {os.getuid()} {victim};"
        f" ln -s {victim} link; chmod 777 link; touch -d 2012-12-12 link; cd {victim.parent} && chmod 777 tool;"
        f" chmod 644 {key}; touch {key}"
    )
    assert _state(victim) == before, oct(victim.stat().st_mode)
    assert _state(key) == key_before


def test_the_same_calls_inside_the_workspace_work(rig: Rig) -> None:
    """A build's chmod +x, a tar extraction's modes and times, touch -h on a link, chgrp to your own group
    (tar and chgrp where the image has them: the Docker test image is busybox with a few applets)."""
    probe = need_probe(rig)
    result = rig.run(
        f"touch f && chmod +x f && chmod 640 f && {probe} fchmod f 600 && touch -t 200101010000 f && ln -s f l &&"
        " touch -h l && mkdir -p d/e && chmod 700 d && echo portable-done &&"
        " if command -v tar >/dev/null; then"
        f"   chgrp {os.getgid()} f && chown {os.getuid()} f && mkdir src && echo hi > src/a && chmod 751 src/a &&"
        "   touch -t 200202020000 src/a && tar cf t.tar src && mkdir out && cd out && tar xf ../t.tar && echo tar-done;"
        " fi"
    )
    assert "portable-done" in result.output and result.output.startswith("exit code: 0"), result.output
    assert stat.S_IMODE((rig.ws / "f").stat().st_mode) == 0o600
    assert int((rig.ws / "f").stat().st_mtime) == 978307200
    assert stat.S_IMODE((rig.ws / "d").stat().st_mode) == 0o700
    if rig.backend != "docker":
        assert "tar-done" in result.output, result.output
        extracted = rig.ws / "out" / "src" / "a"
        assert stat.S_IMODE(extracted.stat().st_mode) & 0o111 and int(extracted.stat().st_mtime) == 1012608000


def test_extended_attributes_and_chattr_flags_outside_are_refused(rig: Rig, victim: Path) -> None:
    probe = need_probe(rig)
    flags = _flags(victim)
    result = rig.run(f"{probe} setxattr {victim}; {probe} setflags {victim}; echo done")
    assert "xattr-set" not in result.output and "flags-set" not in result.output, result.output
    assert os.listxattr(victim) == []
    assert _flags(victim) == flags
    legit = rig.run("echo data > kept.txt && cp -a kept.txt copy.txt && cat copy.txt")  # cp -a copes
    assert legit.output.startswith("exit code: 0") and "data" in legit.output, legit.output


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the files every system program trusts")
def test_as_root_a_root_owned_system_file_keeps_its_mode(rig: Rig, victim: Path) -> None:
    """The brief's worst case: root on landlock, `chmod 777` of a binary root owns. Root has no
    capability in the sandbox, but owning the file was enough for chmod; the supervisor says no."""
    assert victim.stat().st_uid == 0
    before = _state(victim)
    result = rig.run(f"chmod 777 {victim}; chmod o+w {victim}; chown 0:0 {victim}; echo tried")
    assert "tried" in result.output
    assert _state(victim) == before


def test_the_filter_sends_metadata_calls_to_the_supervisor_on_landlock_only() -> None:
    supervised = seccomp_program("x86_64", network=False, connect="notify", metadata="notify")
    for nr, args in ((90, (0, 0o755)), (91, (3, 0o644)), (268, (0, 0, 0o700)), (452, (0, 0, 0o700, 0)),
                     (92, ()), (93, ()), (94, ()), (260, ()), (132, ()), (235, ()), (261, ()), (280, ())):  # fmt: skip
        assert decide(supervised, X86, nr, *args) == NOTIFY, nr
    assert decide(supervised, X86, 90, 0, 0o4755) == EPERM  # a setuid bit never reaches the supervisor
    assert decide(supervised, X86, 257, 0, 0, 0o101, 0o644) == ALLOW  # openat's mode: Landlock decides
    denied = seccomp_program("x86_64", network=False, connect="deny", metadata="deny")  # root, no supervisor
    assert decide(denied, X86, 90, 0, 0o755) == EPERM and decide(denied, X86, 280) == EPERM
    for nr in (188, 189, 190, 197, 198, 199, 463, 466, 469):  # xattrs (ACLs), file_setattr
        assert decide(supervised, X86, nr) == EOPNOTSUPP, nr
    assert decide(supervised, X86, 16, 3, 0x40086602) == EPERM  # FS_IOC_SETFLAGS
    assert decide(supervised, X86, 16, 3, 0x80086601) == ALLOW  # FS_IOC_GETFLAGS: reading is fine
    bwrap = seccomp_program("x86_64", network=True, host_ns=False, metadata="notify")  # mounts do the job there
    assert decide(bwrap, X86, 90, 0, 0o755) == ALLOW and decide(bwrap, X86, 188) == ALLOW
    for arch in ("x86_64", "aarch64"):
        assert seccomp_program(arch, network=False, connect="notify", metadata="notify")  # jumps fit
