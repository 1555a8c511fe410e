"""ContentCache: a small SQLite table of values keyed by content hash. A cache: failures only cost recomputing."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any


class ContentCache:
    """One table, `key` plus value columns; every error degrades to 'not cached'."""

    def __init__(self, path: Path, table: str, columns: tuple[str, ...]) -> None:
        self.table = table
        self.columns = columns
        self._db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), isolation_level=None)
            self._db.execute("pragma journal_mode=wal")
            self._db.execute("pragma synchronous=off")  # losing the cache costs a recount, not data
            cols = ", ".join(f"{c} text" for c in columns)
            self._db.execute(f"create table if not exists {table} (key text primary key, {cols})")
        except (sqlite3.Error, OSError):
            self._db = None

    def lookup_many(self, keys: list[str]) -> dict[str, tuple[Any, ...]]:
        found: dict[str, tuple[Any, ...]] = {}
        if self._db is None:
            return found
        select = ", ".join(self.columns)
        try:
            for i in range(0, len(keys), 900):  # SQLite's limit on bound parameters
                part = keys[i : i + 900]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"select key, {select} from {self.table} where key in ({marks})", part)
                found.update({row[0]: tuple(row[1:]) for row in rows.fetchall()})
        except sqlite3.Error:
            return {}
        return found

    def store(self, rows: list[tuple[Any, ...]]) -> None:
        if self._db is not None and rows:
            marks = ",".join("?" * (len(self.columns) + 1))
            with contextlib.suppress(sqlite3.Error):
                self._db.executemany(f"insert or replace into {self.table} values ({marks})", rows)
