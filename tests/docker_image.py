"""Build a tiny local image for the docker sandbox tests: busybox-static plus bash, via `docker import`.

No registry is reachable here, so the rootfs is assembled from this machine's own binaries.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile

IMAGE = "kimi-sandbox-test:3"
APPLETS = (
    "sh",
    "sleep",
    "touch",
    "env",
    "mount",
    "yes",
    "head",
    "cat",
    "echo",
    "ls",
    "kill",
    "id",
    "rm",
    "mkdir",
    "true",
    "false",
    "wc",
    "ps",
    "nc",
    "wget",
    "chmod",
    "grep",
    "sed",
    "printf",
    "test",
    "timeout",
    "tty",
    "tr",
    "seq",
    "ln",
    "stat",
    "cp",
    "mv",
    "find",
    "xargs",
    "sort",
    "readlink",
    "unshare",
    "setsid",
)


def _libs(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return sorted(set(re.findall(r"(/\S+\.so[.\d]*)", out)))


def build_rootfs_tar() -> bytes:
    busybox = shutil.which("busybox")
    bash = shutil.which("bash")
    if not busybox or not bash:
        raise RuntimeError("busybox and bash are needed to build the test image")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in (
            "bin",
            "tmp",
            "root",
            "etc",
            "proc",
            "sys",
            "dev",
            "usr",
            "usr/bin",
            "lib",
            "lib64",
            "lib/x86_64-linux-gnu",
        ):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(busybox, "bin/busybox")
        tar.add(bash, "bin/bash")
        for lib in _libs(bash):
            tar.add(os.path.realpath(lib), lib.lstrip("/"))
        for applet in APPLETS:
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            tar.addfile(info)
        passwd = b"root:x:0:0:root:/root:/bin/sh\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buf.getvalue()


def ensure_image() -> str:
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        subprocess.run(["docker", "import", "-", IMAGE], input=build_rootfs_tar(), check=True, capture_output=True)
    return IMAGE
