"""What an endpoint says about itself: its context window, and which /tokenize it speaks (llm/server_tokens.py),
each asked once and cached per endpoint and model.

Sources, first that answers: `--context-length` / KIMI_CONTEXT_LENGTH / config; the server's
`/v1/models` (vLLM `max_model_len`, Moonshot `context_length`, llama.cpp `meta.n_ctx_train`); llama.cpp's
`/props` (`n_ctx`); the model table's window (kimi_cli/llm/models.toml; a safe 128k for an unknown model).
Plain urllib: no client import on the start-up path.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.config import Endpoint
from kimi_cli.util import jsonsafe
from kimi_cli.util.paths import kimi_home

if TYPE_CHECKING:
    from kimi_cli.llm.models import ModelInfo

DEFAULT_CONTEXT = 1_048_576  # Kimi K3.1 Pro
CACHE_NAME = "endpoints.json"
CACHE_SECONDS = 7 * 24 * 3600
ASK_TIMEOUT = 3.0
MODEL_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length", "max_sequence_length")


def _get_json(url: str, key: str, timeout: float) -> Any:
    from kimi_cli.util.redact import without_user_info  # urllib refuses user info in the URL

    request = urllib.request.Request(without_user_info(url), headers={"accept": "application/json"})
    if key and key != "EMPTY":
        request.add_header("authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return jsonsafe.loads(response.read(2_000_000))  # the server's answer: bounded


def context_from_models(data: Any, model: str, include_training: bool = True) -> int | None:
    """The window from a /v1/models answer, for `model` (or the only model served). llama.cpp's
    `n_ctx_train` is what the model was trained with, not what the server runs: used only as a last resort."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    chosen = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    if chosen is None and len(entries) == 1 and isinstance(entries[0], dict):
        chosen = entries[0]
    if chosen is None:
        return None
    for key in MODEL_KEYS:
        value = chosen.get(key)
        if isinstance(value, int) and value > 0:
            return value
    meta = chosen.get("meta")
    if isinstance(meta, dict):
        for key in ("n_ctx", "n_ctx_train") if include_training else ("n_ctx",):
            if isinstance(meta.get(key), int) and meta[key] > 0:
                return int(meta[key])
    return None


def context_from_props(data: Any) -> int | None:
    """llama.cpp's /props: default_generation_settings.n_ctx (or n_ctx at the top)."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    for holder in (settings, data):
        if isinstance(holder, dict) and isinstance(holder.get("n_ctx"), int) and holder["n_ctx"] > 0:
            return int(holder["n_ctx"])
    return None


def ask_server(endpoint: Endpoint, timeout: float = ASK_TIMEOUT) -> tuple[int | None, str]:
    models: Any = None
    with contextlib.suppress(Exception):
        models = _get_json(endpoint.base_url + "/models", endpoint.api_key, timeout)
        found = context_from_models(models, endpoint.model, include_training=False)
        if found:
            return found, "the server's /v1/models"
    root = endpoint.base_url[: -len("/v1")] if endpoint.base_url.endswith("/v1") else endpoint.base_url
    with contextlib.suppress(Exception):
        found = context_from_props(_get_json(root + "/props", endpoint.api_key, timeout))
        if found:
            return found, "the server's /props"
    found = context_from_models(models, endpoint.model) if models is not None else None
    if found:
        return found, "the server's /v1/models (training context)"
    return None, ""


def _cache_path() -> Path:
    return kimi_home() / CACHE_NAME


def _read_cache() -> dict[str, Any]:
    """The cache, without an entry keyed by a URL with user info (kept before keys dropped it): the file is
    written again at once when one was there, so an old password does not stay on disk."""
    from kimi_cli.util.redact import without_user_info

    try:
        data = json.loads(_cache_path().read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    clean = {k: v for k, v in data.items() if without_user_info(k.split(" ", 1)[0]) == k.split(" ", 1)[0]}
    if len(clean) != len(data):
        _write_cache(clean)
    return clean


def _write_cache(cache: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        from kimi_cli.hostsafe.fs import write_private  # the one atomic write

        write_private(_cache_path(), json.dumps(cache, indent=1))


def _fallback(endpoint: Endpoint, info: ModelInfo | None) -> tuple[int, str]:
    if info is None:
        from kimi_cli.llm.models import lookup

        info = lookup(endpoint.model, endpoint.provider)
    if info.known:
        return info.context_window, f"the model table ({info.id}; the server does not say)"
    return info.context_window, "a safe default for an unknown model (the server does not say)"


def _cache_key(endpoint: Endpoint) -> str:
    """The cache's key: the URL without its user info (a password never lands in endpoints.json)."""
    return _key(endpoint.base_url, endpoint.model)


def _key(base_url: str, model: str) -> str:
    from kimi_cli.util.redact import without_user_info

    return f"{without_user_info(base_url)} {model}"


def known_tokenizer(base_url: str, model: str) -> str | None:
    """Which /tokenize the server answered a recent session ("llama", "vllm", or "" for none), or None."""
    entry = _read_cache().get(_key(base_url, model))
    if isinstance(entry, dict) and time.time() - float(entry.get("tokenize_checked", 0)) < CACHE_SECONDS:
        found = entry.get("tokenize")
        return found if found in ("llama", "vllm", "") else None
    return None


def remember_tokenizer(base_url: str, model: str, dialect: str) -> None:
    """What this session found of the server's /tokenize, beside the window the entry holds."""
    cache = _read_cache()
    key = _key(base_url, model)
    entry = cache.get(key)
    cache[key] = {**(entry if isinstance(entry, dict) else {}), "tokenize": dialect, "tokenize_checked": time.time()}
    _write_cache(cache)


def _kept(cache: dict[str, Any], key: str) -> dict[str, Any]:
    """The entry's /tokenize finding, which a new window figure keeps."""
    entry = cache.get(key)
    if not isinstance(entry, dict):
        return {}
    return {k: entry[k] for k in ("tokenize", "tokenize_checked") if k in entry}


def resolve_context_length(
    endpoint: Endpoint, configured: int | None, info: ModelInfo | None = None
) -> tuple[int, str]:
    """(tokens, where the figure came from)."""
    if configured:
        return configured, "configuration (--context-length, KIMI_CONTEXT_LENGTH or context_length)"
    cache = _read_cache()
    key = _cache_key(endpoint)
    entry = cache.get(key)
    if isinstance(entry, dict) and time.time() - float(entry.get("checked", 0)) < CACHE_SECONDS:
        if isinstance(entry.get("context_length"), int):
            return int(entry["context_length"]), str(entry.get("source", "the server")) + " (cached)"
        return _fallback(endpoint, info)
    found, source = ask_server(endpoint)
    cache[key] = {**_kept(cache, key), "context_length": found, "source": source, "checked": time.time()}
    _write_cache(cache)
    if found:
        return found, source
    return _fallback(endpoint, info)


def remember_window(endpoint: Endpoint, window: int, source: str) -> None:
    """A window the server stated in an error (kimi_cli/llm/window.py): the next session starts from it
    instead of the larger figure it had cached or assumed."""
    cache = _read_cache()
    key = _cache_key(endpoint)
    cache[key] = {
        **_kept(cache, key), "context_length": int(window), "source": source, "checked": time.time(),
    }  # fmt: skip
    _write_cache(cache)
