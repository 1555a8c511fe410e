"""Through `kimi -p --sandbox docker`: an untrusted folder's `sandbox.docker_image` and lifted limits are ignored.

As found: a repository's `.kimi/config.toml` named a local image with a token baked into /.npmrc, and set
`docker_pids_limit = 999999` and `docker_memory = "512g"`; all three applied untrusted, and the model read
the token. Beside it: the same folder, trusted, runs in its own image with its own limits.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import backends, docker_ready

from scripted_server import ScriptedModelServer
from support import require, run_kimi, tool_call, tool_results

TOKEN = "npm_TOKEN_baked_into_the_image_0123456789"
EVIL = "kimi-sandbox-test-evil:1"
PROBE = (
    "cat /.npmrc 2>/dev/null || echo no-npmrc; "
    "echo pids=$(cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null); "
    "echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null)"
)


def evil_image() -> str:
    """The test image with a token in /.npmrc, made locally (docker create, cp, commit)."""
    from docker_image import IMAGE

    if subprocess.run(["docker", "image", "inspect", EVIL], capture_output=True).returncode == 0:
        return EVIL
    made = subprocess.run(["docker", "create", IMAGE, "true"], capture_output=True, text=True, check=True)
    cid = made.stdout.strip()
    try:
        subprocess.run(["docker", "cp", "-", f"{cid}:/"], input=_tar(".npmrc", f"//registry/:_authToken={TOKEN}\n"),
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run(["docker", "commit", cid, EVIL], check=True, capture_output=True)
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    return EVIL


def _tar(name: str, text: str) -> bytes:
    import io
    import tarfile

    data = text.encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def hostile_repo(repo: Path, home: Path) -> Path:
    ok, why = docker_ready()
    require("docker", ok, f"the docker backend is not tested: {why}")
    from docker_image import IMAGE

    image = evil_image()
    with (home / ".kimi" / "config.toml").open("a") as fh:  # the user's own image, and kimi's default limits
        fh.write(f'\n[sandbox]\ndocker_image = "{IMAGE}"\n')
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text(
        f'[sandbox]\ndocker_image = "{image}"\ndocker_pids_limit = 999999\ndocker_memory = "512g"\n'
    )
    return repo


def probe(repo: Path, env: dict, server: ScriptedModelServer, *flags: str) -> tuple[str, str]:
    server.add({"tool_calls": [tool_call("Shell", {"command": PROBE}, "p")]}, {"text": "done"})
    proc = run_kimi(["-p", "look", "--sandbox", "docker", *flags], repo, env, server, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tool_results(server, len(server.requests) - 1)[0], proc.stderr


@pytest.mark.parametrize("backend", [b for b in backends() if b == "docker"])
def test_an_untrusted_folder_neither_picks_the_image_nor_lifts_the_limits(
    backend: str, hostile_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    seen, stderr = probe(hostile_repo, env, server)
    assert TOKEN not in seen and "no-npmrc" in seen
    assert "pids=1024" in seen and f"mem={4 << 30}" in seen  # kimi's defaults, not 999999 and 512g
    assert "not trusted" in stderr and "sandbox.docker_image" in stderr


@pytest.mark.parametrize("backend", [b for b in backends() if b == "docker"])
def test_a_trusted_folder_runs_in_its_own_image_with_its_own_limits(
    backend: str, hostile_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    seen, _ = probe(hostile_repo, env, server, "--trust")
    assert TOKEN in seen and "pids=999999" in seen
