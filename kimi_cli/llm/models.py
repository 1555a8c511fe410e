"""The model table (models.toml, package data): what each known model takes and costs, as one ModelInfo.

Data, not code: a new model or a price change is an edit to models.toml (or `[models."ID"]` in the user's
config). Lookup never fails: an unknown model gets the table's safe defaults and sends no model-specific
field, so any OpenAI-compatible server keeps working.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, fields, replace
from importlib import resources
from typing import Any, Literal

Effort = Literal["low", "high", "max"]
EFFORTS: tuple[str, ...] = ("low", "high", "max")
Reasoning = Literal["effort", "thinking", "none"]
# Who runs the session decides the default effort; the reasons are in docs/models.md ("Reasoning effort").
DEFAULT_EFFORT: dict[str, str] = {"interactive": "high", "acp": "high", "headless": "max", "ci": "max"}


@dataclass(frozen=True)
class ModelInfo:
    """One row of the table, with the defaults filled in."""

    id: str
    name: str
    known: bool
    context_window: int
    image_input: bool
    reasoning: str
    effort_levels: tuple[str, ...]
    thinking_can_disable: bool
    price_input: float
    price_cached_input: float
    price_output: float
    price_cache_write: float
    price_cache_write_1h: float
    price_source: str
    answer_field: str
    max_output: int
    min_answer: int
    token_ratio: float
    token_margin: float
    max_tools: int
    max_request_bytes: int
    image_patch: int
    image_long_edge: int
    image_max_pixels: int
    tools_in_messages: bool = False  # tools added mid-conversation go in a system message's `tools` (K3 family)
    source: str = "the model table"  # which layers made this entry (the table, the local engine, your config)
    facts_source: str = ""  # the entry's own `source`: where its prices, window and fields come from

    @property
    def priced(self) -> bool:
        return any((self.price_input, self.price_cached_input, self.price_output))

    def answer_room(self, window: int) -> int:
        """The smallest answer budget worth sending in a window this size: the table's `min_answer`, but
        never more than an eighth of a small window (a 4k server still gets its 512)."""
        return max(64, min(self.min_answer, window // 8))

    def describe(self) -> str:
        """One line for `kimi doctor`, `/model` and `/cost`."""
        if self.reasoning == "effort":
            control = "reasoning_effort " + "|".join(self.effort_levels)
        elif self.reasoning == "thinking":
            control = "thinking enabled" + ("|disabled" if self.thinking_can_disable else " (always)")
        else:
            control = "no reasoning control sent"
        writes = (
            f" / ${self.price_cache_write:g} cache write (5 min), ${self.price_cache_write_1h:g} (1 h)"
            if self.price_cache_write or self.price_cache_write_1h
            else ""
        )
        prices = (
            f"${self.price_input:g} in / ${self.price_cached_input:g} cached{writes} / ${self.price_output:g} out "
            "per 1M"
            if self.priced
            else "no price"
        )
        images = f"images <= {self.image_long_edge}px" if self.image_input else "no images"
        return (
            f"{self.name} [{self.id}] ({self.source}): window {self.context_window:,}; {control}; {prices}; "
            f"answers <= {self.max_output:,} tokens as {self.answer_field}; {images}; <= {self.max_tools} tools"
        )


_FIELDS = {f.name for f in fields(ModelInfo)} - {"id", "known", "source", "facts_source"}


@functools.cache
def model_table() -> dict[str, Any]:
    """models.toml, parsed once. A broken table is a packaging bug, so it raises."""
    text = resources.files("kimi_cli.llm").joinpath("models.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def known_ids() -> list[str]:
    return list(model_table().get("models", {}))


def _find(model: str, entries: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    wanted = model.strip().lower()
    candidates = [wanted]
    if "/" in wanted:  # "moonshotai/kimi-k3.1-pro" on a router
        candidates.append(wanted.rsplit("/", 1)[1])
    for candidate in candidates:
        for key, entry in entries.items():
            names = [key.lower(), *(str(a).lower() for a in entry.get("aliases", []))]
            if candidate in names:
                return key, entry
    return None


def _build(model: str, layers: list[dict[str, Any]], known: bool, source: str) -> ModelInfo:
    merged: dict[str, Any] = {}
    facts = ""
    for layer in layers:
        merged.update({k: v for k, v in layer.items() if k in _FIELDS and v is not None})
        facts = str(layer.get("source") or facts)  # the entry's own `source` key: where its facts come from
    merged["effort_levels"] = tuple(str(x) for x in merged.get("effort_levels", ()))
    return ModelInfo(id=model, known=known, source=source, facts_source=facts, **merged)


def lookup(model: str, provider: str = "", overrides: dict[str, dict[str, Any]] | None = None) -> ModelInfo:
    """The entry for `model`: the table's row (or the defaults), the local engine's layer when the provider
    is `local`, then the user's `[models."ID"]` overrides."""
    table = model_table()
    layers: list[dict[str, Any]] = [table["defaults"]]
    found = _find(model, table.get("models", {}))
    known = found is not None
    source = "the model table" if known else "defaults for an unknown model"
    if found is not None:
        layers.append(found[1])
    if provider == "local":
        layers.append(table.get("local", {}))
        source += " + the local engine"
    user = _find(model, overrides or {})
    if user is not None:
        layers.append(user[1])
        known = True
        source += " + your config"
    return _build(model, layers, known, source)


def with_context(info: ModelInfo, window: int) -> ModelInfo:
    return replace(info, context_window=window)


def resolve_effort(requested: str | None, mode: str) -> str:
    """The effort for this session: configured (flag > env > config) or the default for how kimi runs."""
    if requested in EFFORTS:
        return str(requested)
    return DEFAULT_EFFORT.get(mode, "high")


def reasoning_fields(info: ModelInfo, effort: str) -> tuple[dict[str, Any], str]:
    """The request fields that carry `effort` to this model, and a note when the model cannot honour it."""
    if info.reasoning == "effort":
        levels = info.effort_levels or EFFORTS
        if effort in levels:
            return {"reasoning_effort": effort}, ""
        chosen = levels[-1] if effort == "max" else levels[0]
        return {"reasoning_effort": chosen}, f"{info.id} has no effort {effort!r}; using {chosen!r}"
    if info.reasoning == "thinking":
        if effort == "low" and info.thinking_can_disable:
            return {"thinking": {"type": "disabled"}}, ""
        note = "" if effort != "low" else f"{info.id} always thinks (it refuses thinking: disabled)"
        return {"thinking": {"type": "enabled"}}, note
    return {}, ""
