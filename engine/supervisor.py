"""EngineSupervisor: run the server in its own process group, wait until it answers, stop it cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.util.paths import kimi_home

DIAGNOSES = (
    (("CUDA out of memory", "OutOfMemoryError", "torch.OutOfMemoryError", "not enough memory"),
     "the GPUs ran out of memory: run `kimi engine plan` for what fits (more nodes, shorter --context, fp8 KV)"),
    (("Address already in use", "address already in use"),
     "the port is taken: pass another --port, or stop what listens there (`kimi engine stop`)"),
    (("No CUDA GPUs are available", "Found no NVIDIA driver", "CUDA driver initialization failed",
      "no GPU", "nvidia-smi"), "no usable GPU was found: check the driver (`nvidia-smi`) and CUDA_VISIBLE_DEVICES"),
    (("ModuleNotFoundError: No module named 'vllm'", "vllm: command not found", "No such file or directory"),
     "vLLM is not installed: pip install 'kimi-cli-agent[engine]'"),
)  # fmt: skip


class EngineError(Exception):
    """The engine did not come up; the message carries the log tail and a diagnosis."""


def engine_dir() -> Path:
    return kimi_home() / "engine"


def diagnose(log_tail: str) -> str:
    for needles, advice in DIAGNOSES:
        if any(n in log_tail for n in needles):
            return advice
    return "see the log above"


def engine_key() -> str | None:
    """The key a vLLM started with VLLM_API_KEY requires on /v1 (its /health needs none)."""
    return os.environ.get("VLLM_API_KEY") or None


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (localhost, 127.0.0.0/8, ::1)."""
    import ipaddress

    if host.strip().lower() in ("localhost", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def get_json(url: str, timeout: float = 2.0, key: str | None = None) -> object | None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def healthy(base: str, timeout: float = 2.0) -> bool:
    return probe(base, timeout)[0] == "healthy"


def probe(base: str, timeout: float = 2.0) -> tuple[str, str]:
    """What /health says: ("healthy", ""), ("unhealthy", "HTTP 503"), ("nothing-listening", why) when the
    connection is refused, or ("unreachable", why) for a timeout or a name that does not resolve."""
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=timeout) as resp:
            return ("healthy", "") if 200 <= resp.status < 300 else ("unhealthy", f"HTTP {resp.status}")
    except urllib.error.HTTPError as exc:
        return "unhealthy", f"HTTP {exc.code}"
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            return "nothing-listening", "connection refused"
        return "unreachable", str(reason)
    except ConnectionRefusedError:
        return "nothing-listening", "connection refused"
    except (OSError, ValueError) as exc:
        return "unreachable", str(exc) or type(exc).__name__


@dataclass
class Served:
    base_url: str
    model: str
    pid: int
    log: str

    def save(self) -> None:
        engine_dir().mkdir(parents=True, exist_ok=True)
        (engine_dir() / "served.json").write_text(json.dumps(vars(self), indent=1))


class EngineSupervisor:
    """Owns one server process; its whole process group goes when the supervisor stops it."""

    def __init__(self, argv: list[str], host: str, port: int, served_name: str, log_name: str = "vllm") -> None:
        self.argv = argv
        self.root = f"http://{host}:{port}"
        self.served_name = served_name
        engine_dir().mkdir(parents=True, exist_ok=True)
        self.log_path = engine_dir() / f"{log_name}-{port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("wb")
        try:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            log.write(f"{exc}\n".encode())
            log.close()
            raise EngineError(f"could not start {self.argv[0]}: {exc}\n{diagnose(str(exc))}") from None
        log.close()

    def wait_ready(self, timeout: float, on_stage: Callable[[str, float], None] | None = None) -> Served:
        """Wait for /health, then for /v1/models to list the served model."""
        assert self.proc is not None
        started = time.monotonic()
        stage = "loading weights (waiting for /health)"
        while True:
            elapsed = time.monotonic() - started
            if on_stage:
                on_stage(stage, elapsed)
            code = self.proc.poll()
            if code is not None:
                raise EngineError(self._failure(f"the server exited with code {code} after {elapsed:.0f} s"))
            if elapsed > timeout:
                self.stop()
                raise EngineError(self._failure(f"no answer from {self.root}/health within {timeout:.0f} s"))
            if stage.startswith("loading") and healthy(self.root):
                stage = "healthy; waiting for /v1/models"
            if stage.startswith("healthy"):
                models = get_json(f"{self.root}/v1/models", key=engine_key())
                listed = models.get("data", []) if isinstance(models, dict) else []
                ids = [m.get("id") for m in listed if isinstance(m, dict)]
                if self.served_name in ids:
                    served = Served(f"{self.root}/v1", self.served_name, self.proc.pid, str(self.log_path))
                    served.save()
                    return served
            time.sleep(0.2)

    def _failure(self, what: str) -> str:
        tail = self.log_tail()
        return f"{what}.\n--- last lines of {self.log_path} ---\n{tail}\n--- diagnosis: {diagnose(tail)}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to the whole group, then SIGKILL after `grace` seconds."""
        if self.proc is None or self.proc.poll() is not None:
            return
        stop_group(self.proc.pid, grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            served = engine_dir() / "served.json"
            if served.is_file() and json.loads(served.read_text()).get("pid") == self.proc.pid:
                served.unlink()


def stop_group(pid: int, grace: float = 15.0) -> bool:
    """Stop a process group politely, then firmly; True if something was running."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True
