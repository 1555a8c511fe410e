"""Token counts: o200k (bundled, offline) as the estimate, scaled by a factor learned from the server.

The bpe-openai extension is loaded directly: its Python wrapper builds a registry at import (~0.45 s
measured), while the Rust tokenizer itself loads in ~50 ms.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

from kimi_cli.context.cache_db import ContentCache

CHUNK_CHARS = 500_000  # the tokenizer refuses inputs over 1M chars
ENCODING = "o200k_base"
TESTED_BPE = ((0, 1, 4), (0, 2))  # bpe-openai versions whose private binding is known to work: [low, high)
TESTED_RANGE = ">=0.1.4,<0.2"  # the same range, as pyproject.toml pins it
FALLBACK = f"token counts fall back to characters/4 (pip install 'bpe-openai{TESTED_RANGE}')"
log = logging.getLogger("kimi.tokens")
_told: set[str] = set()


def _load_tokenizer() -> Any | None:
    """o200k from bpe-openai's private binding, or None (token counts then fall back to characters/4).
    The binding is not public API, so every way it can go missing says so on stderr, once."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        _warn(f"bpe-openai is not installed; {FALLBACK}")
        return None
    version = bpe_version()
    if version is not None and not TESTED_BPE[0] <= version < TESTED_BPE[1]:
        _warn(f"bpe-openai {'.'.join(map(str, version))} is outside the tested range {TESTED_RANGE}; its private "
              "binding may have changed")  # fmt: skip
    for folder in spec.submodule_search_locations:
        for lib in sorted(Path(folder).glob("_bindings*.so")):
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(lib))
            mod_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", lib, loader=loader)
            if mod_spec is None:
                continue
            try:
                module = importlib.util.module_from_spec(mod_spec)
                loader.exec_module(module)
                return module.tokenizer_for_encoding(ENCODING)
            except Exception as exc:  # renamed function, changed signature, a broken build
                _warn(f"bpe-openai's binding {lib.name} did not give the {ENCODING} tokenizer ({exc!r}); {FALLBACK}")
                return None
    _warn(f"bpe-openai's tokenizer binding (_bindings*.so) is not where it was; {FALLBACK}")
    return None


def bpe_version() -> tuple[int, ...] | None:
    from importlib import metadata

    try:
        raw = metadata.version("bpe-openai")
    except metadata.PackageNotFoundError:
        return None
    return tuple(int(part) for part in re.findall(r"\d+", raw)[:3]) or None


def _warn(message: str) -> None:
    log.warning(message)
    if message not in _told:  # the user sees it without -v: estimates that are 10-30% off change budgets
        _told.add(message)
        sys.stderr.write(f"kimi: warning: {message}\n")


def cache_dir() -> Path:
    from kimi_cli.util.paths import cache_dir as kimi_cache_dir  # one definition: paths keeps it private

    return kimi_cache_dir()


class TokenCounter:
    """Counts tokens with a per-content cache; falls back to chars/4 if the tokenizer is missing."""

    def __init__(self, cache_path: Path | None = None, factor: float | None = None) -> None:
        self._tok_loaded = False
        self._tok_obj: Any = None
        self.factor = factor if factor is not None else load_factor()
        self._cache = ContentCache(cache_path or cache_dir() / "tokens.sqlite", "counts", ("n",))
        self._pending: list[tuple[str, int]] = []

    @property
    def _tok(self) -> Any:
        """The tokenizer, loaded on first use (~50 ms): a pack served from the cache never needs it."""
        if not self._tok_loaded:
            self._tok_obj = _load_tokenizer()
            self._tok_loaded = True
        return self._tok_obj

    @property
    def exact(self) -> bool:
        return self._tok is not None

    def raw(self, text: str) -> int:
        """o200k tokens, uncorrected."""
        if self._tok is None:
            return (len(text) + 3) // 4
        if len(text) <= CHUNK_CHARS:
            return int(self._tok.count(text))
        total = 0
        start = 0
        while start < len(text):
            end = text.rfind("\n", start, start + CHUNK_CHARS) + 1 or start + CHUNK_CHARS
            end = end if end > start else start + CHUNK_CHARS
            total += int(self._tok.count(text[start:end]))
            start = end
        return total

    def raw_within(self, text: str, limit: int) -> int | None:
        """o200k tokens if there are at most `limit`, else None. The tokenizer stops at the limit: a file
        too big for what is left of the budget costs a fraction of a full count (compiler.py: 3 ms, not 18)."""
        if self._tok is None:
            estimate = (len(text) + 3) // 4
            return estimate if estimate <= limit else None
        if limit < 0:
            return None
        if not hasattr(self._tok, "count_till_limit"):  # an older bpe-openai: a full count, then the check
            raw = self.raw(text)
            return raw if raw <= limit else None
        total, start = 0, 0
        while start < len(text):
            end = len(text) if len(text) - start <= CHUNK_CHARS else text.rfind("\n", start, start + CHUNK_CHARS) + 1
            end = end if end > start else start + CHUNK_CHARS
            part = self._tok.count_till_limit(text[start:end], limit - total)
            if part is None:
                return None
            total += int(part)
            start = end
        return total

    def count(self, text: str) -> int:
        """Tokens for the target model (o200k scaled by the learned factor)."""
        return round(self.raw(text) * self.factor)

    def count_cached(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        raw = self._lookup(key)
        if raw is None:
            raw = self.raw(text)
            self._pending.append((key, raw))
        return round(raw * self.factor)

    def raw_cached(self, text: str) -> int:
        """o200k tokens, uncorrected, kept by digest in the on-disk cache and written at once: a pack's
        system message counted by one run is one lookup for the next, which then loads no tokenizer."""
        key = content_key(text)
        raw = self._lookup(key)
        if raw is None:
            raw = self.raw(text)
            self._cache.store([(key, raw)])
        return raw

    @property
    def loaded(self) -> bool:
        """Whether the tokenizer was loaded already (a count then costs no load)."""
        return self._tok_loaded

    def lookup_many(self, keys: list[str]) -> dict[str, int]:
        return {k: int(v[0]) for k, v in self._cache.lookup_many(keys).items()}

    def _lookup(self, key: str) -> int | None:
        return self.lookup_many([key]).get(key)

    def store(self, items: list[tuple[str, int]]) -> None:
        self._pending.extend(items)

    def flush(self) -> None:
        self._cache.store(self._pending)
        self._pending.clear()


def content_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _calibration() -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / "calibration.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_factor(model: str | None = None) -> float:
    """The learned ratio of the model's tokens to o200k tokens (1.0 until a server has reported usage)."""
    data = _calibration()
    value = (data.get("models") or {}).get(model) if model else data.get("last")
    try:
        factor = float(value) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0
    return factor if 0.3 < factor < 3.0 else 1.0


def record_calibration(model: str, estimated_raw: int, reported: int) -> float:
    """Fold one observation (our o200k estimate vs the server's prompt_tokens) into the model's factor."""
    if estimated_raw <= 0 or reported <= 0 or not 0.3 < reported / estimated_raw < 3.0:
        return load_factor(model)
    ratio = reported / estimated_raw
    data = _calibration()
    models = dict(data.get("models") or {})
    old = models.get(model)
    new = ratio if old is None else 0.8 * float(old) + 0.2 * ratio
    models[model] = round(new, 4)
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        (cache_dir() / "calibration.json").write_text(json.dumps({"models": models, "last": round(new, 4)}))
    except OSError:
        pass
    return new
