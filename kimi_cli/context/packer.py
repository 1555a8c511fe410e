"""RepoPacker: full text while the budget lasts, then tree-sitter outlines, then a tree of every file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.context.analysis import Analyzer, Outline, keys_for
from kimi_cli.context.enumerate import DEFAULT_MAX_BYTES, FileRecord, list_paths, read_record
from kimi_cli.context.pack_cache import Fingerprint, PackState, fingerprint, load_state, save_state, state_path
from kimi_cli.context.pack_layout import (  # noqa: F401  (re-exported: tests and tools read them here)
    COLLAPSE_AT,
    FULL_HEADING,
    LISTING_SHARE,
    MAX_CHARS_PER_TOKEN,
    MAX_OUTLINED,
    MAX_PARSE_CHARS,
    OUTLINE_HEADING,
    OUTLINE_SHARE,
    SAFETY,
    TREE_HEADING,
    Mode,
    overhead,
    render_tree,
)
from kimi_cli.context.pack_markup import block, boundary_for, close_repository, open_repository
from kimi_cli.context.tags import skeleton
from kimi_cli.context.tokens import TokenCounter


@dataclass
class PackEntry:
    path: str
    mode: Mode
    size: int
    tokens: int = 0  # tokens this entry costs in the pack
    file_tokens: int | None = None  # tokens of the whole file, when known
    reason: str = ""
    rank: int | None = None  # place in the ranking for the task (0 = most relevant); None: not ranked


@dataclass
class Pack:
    """The packed repository: the text for the prompt and an account of every file."""

    root: str
    budget: int
    text: str
    tokens: int
    entries: list[PackEntry] = field(default_factory=list)
    repo_tokens: int = 0  # all packable text, in full
    repo_tokens_exact: bool = True  # False: files never counted are estimated from the ones that were

    def by_mode(self, mode: Mode) -> list[PackEntry]:
        return [e for e in self.entries if e.mode == mode]


class RepoPacker:
    """Packs a folder for a task within a token budget. The same input always gives the same bytes."""

    def __init__(
        self,
        root: Path,
        counter: TokenCounter | None = None,
        analyzer: Analyzer | None = None,
        max_file_bytes: int = DEFAULT_MAX_BYTES,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.root = root.resolve()
        self.counter = counter or TokenCounter()
        self.analyzer = analyzer or Analyzer(self.counter)
        self.max_file_bytes = max_file_bytes
        self.progress = progress or (lambda _stage, _done, _total: None)
        self._memory: dict[Path, PackState] = {}
        self.last_fingerprint: Fingerprint | None = None

    def read(self, paths: list[str] | None = None) -> list[FileRecord]:
        paths = list_paths(self.root) if paths is None else paths
        from kimi_cli.hostsafe.fs import rooted

        records = []
        with rooted(self.root) as root_fd:  # every read is a no-follow open beneath this descriptor
            for n, path in enumerate(paths):
                records.append(read_record(self.root, path, self.max_file_bytes, root_fd))
                if n % 500 == 0:
                    self.progress("reading", n, len(paths))
        return records

    def pack(self, task: str = "", budget: int = 600_000, use_cache: bool = True, persist: bool = True) -> Pack:
        """Pack the repository for a task. An unchanged tree comes from the cache; a few edits re-render.

        The last state is also kept in memory, so a session that re-packs skips the disk (persist=False).
        """
        paths = list_paths(self.root)
        fp = fingerprint(self.root, paths)
        self.last_fingerprint = fp  # the state this pack was made from: the watcher's baseline, no second listing
        cache_file = state_path(self.root, task, budget, self.counter.factor)
        state = None
        if use_cache:
            state = self._memory.get(cache_file) or load_state(cache_file)
        if state is not None and state.fingerprint == fp:
            self._memory[cache_file] = state
            return self._from_state(state, budget)
        fresh: PackState | None = None
        if state is not None and state.fingerprint.keys() == fp.keys():
            changed = [p for p in paths if state.fingerprint[p] != fp[p]]
            if len(changed) <= max(5, len(paths) // 50):
                fresh = self._refresh(state, changed)
        if fresh is None:
            fresh = self._cold(paths, task, budget, sum(max(0, v[0]) for v in fp.values()))
        fresh.fingerprint = fp
        self._memory[cache_file] = fresh
        if persist:
            save_state(cache_file, fresh)
        return self._from_state(fresh, budget)

    def _cold(self, paths: list[str], task: str, budget: int, disk_bytes: int) -> PackState:
        """Plan and choose (kimi_cli.context.cold: one scan, no text held), then render."""
        from kimi_cli.context.cold import cold_pack

        cold = cold_pack(self, paths, task, budget, disk_bytes)
        self._render_state(cold.state, cold.sizes, cold.texts, cold.outlines)
        return cold.state

    def _refresh(self, state: PackState, changed: list[str]) -> PackState | None:
        """Re-render after edits to a few files, keeping the ranking; None when a full pack is needed."""
        fresh = {r.path: r for r in self.read(changed)}
        if any((r.text is None) != (r.path in state.skipped) for r in fresh.values()):
            return None  # a file became binary or too large (or the reverse): re-plan everything
        texts = {p: r.text for p, r in fresh.items() if r.text is not None}
        keys = keys_for(texts)
        new_tokens = self.analyzer.tokens(texts, keys, sorted(texts))
        state.keys.update(keys)
        state.tokens.update(new_tokens)
        outlines = self.analyzer.outlines(texts, keys)
        for path in texts:
            if state.modes.get(path) == "full":
                state.costs[path] = new_tokens[path] + overhead(path)
            elif state.modes.get(path) == "outline":
                if path not in outlines or not outlines[path].defs:
                    del state.modes[path]
                else:
                    state.costs[path] = self.counter.count(skeleton(outlines[path].defs)) + overhead(path)
        while sum(state.costs[p] for p in state.modes) > state.room:
            last = next(p for p in reversed(state.order) if p in state.modes)
            del state.modes[last]
        sizes = {p: v[0] for p, v in state.fingerprint.items()}
        sizes.update({p: r.size for p, r in fresh.items()})
        shown = [p for p in state.modes]
        texts.update({r.path: r.text for r in self.read([p for p in shown if p not in texts]) if r.text is not None})
        outline_paths = [p for p in shown if state.modes[p] == "outline" and p not in outlines]
        outlines.update(self.analyzer.outlines({p: texts[p] for p in outline_paths}, state.keys))
        self._render_state(state, sizes, texts, outlines)
        return state

    def _render_state(
        self, state: PackState, sizes: dict[str, int], texts: dict[str, str], outlines: dict[str, Outline]
    ) -> None:
        """Write the pack text and entries into the state. Token totals are summed from exact block counts."""
        records = [FileRecord(p, sizes.get(p, 0), text="") for p in state.order]
        records += [FileRecord(p, int(v[0]), reason=str(v[1])) for p, v in state.skipped.items()]
        modes: dict[str, Mode] = {p: m for p, m in state.modes.items()}  # type: ignore[misc]
        full = [p for p in state.order if modes.get(p) == "full"]
        outlined = [p for p in state.order if modes.get(p) == "outline"]
        tree = render_tree(records, modes, collapse=state.collapse)
        skeletons = {p: skeleton(outlines[p].defs) for p in outlined}
        # Markers carry a boundary that none of the shown texts contains (kimi_cli.context.pack_markup).
        shown = [self.root.name, tree, *full, *outlined, *(texts[p] for p in full), *skeletons.values()]
        state.boundary = bnd = boundary_for(shown, state.boundary)
        parts = [open_repository(bnd, self.root.name, len(records))]
        if full:
            parts.append(FULL_HEADING)
            parts += [block("file", bnd, p, texts[p]) for p in full]
        if outlined:
            parts.append(OUTLINE_HEADING)
            parts += [block("outline", bnd, p, skeletons[p]) for p in outlined]
        if state.collapse:
            state.tree_tokens = self.counter.count(tree)
        parts += [TREE_HEADING, tree, close_repository(bnd)]
        state.text = "\n".join(parts) + "\n"
        state.tokens_total = sum(state.costs[p] for p in modes) + state.tree_tokens + 64
        entries: list[dict[str, Any]] = []
        ranks = {path: index for index, path in enumerate(state.order)}
        for rec in sorted(records, key=lambda r: r.path):
            if rec.text is None:
                entry = {"mode": "skipped", "tokens": 0, "file_tokens": None, "reason": rec.reason or ""}
            else:
                mode = modes.get(rec.path, "listed")
                listed = mode == "listed"
                entry = {
                    "mode": mode,
                    "tokens": 0 if listed else state.costs[rec.path],
                    "file_tokens": state.tokens.get(rec.path),
                    "reason": _listed_reason(state.why.get(rec.path, "")) if listed else state.why.get(rec.path, ""),
                }
            entries.append({"path": rec.path, "size": rec.size, **entry, "rank": ranks.get(rec.path)})
        state.entries = entries

    def _from_state(self, state: PackState, budget: int) -> Pack:
        pack = Pack(
            str(self.root),
            budget,
            state.text,
            state.tokens_total,
            [PackEntry(**e) for e in state.entries],
            state.repo_tokens,
        )
        pack.repo_tokens_exact = state.repo_tokens_exact
        return pack


def _listed_reason(why: str) -> str:
    return why if why.startswith("listed only") else "over budget"
