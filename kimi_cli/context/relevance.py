"""Lexical relevance of each file to the task: BM25 over the task's words, in the file's text and path.

Identifiers are split on case and `_` (`getFixtureDefs` -> get, fixture, defs), so a bug report's prose
meets the code's names. Term frequency is a substring count on the lowered text (C speed, and `fixture`
also meets `fixtures`); the path counts double, since a file named for the topic usually is the topic.
"""

from __future__ import annotations

import math
import re

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_STOPWORDS_TEXT = (
    "the and for that this with from into when then than have has had are was were not but can cannot could "
    "would should will which what where who how why its it's also now only more most some such very via "
    "use used uses using fix fixed fixes fixing add added adds make makes made bug issue error errors test "
    "tests case cases file files new old value values return returns true false none null self cls def class "
    "import function functions method methods call called calling object objects type types instead being "
    "been does doesn't don't didn't wasn't isn't there their they them these those other because while"
)
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
K1, B = 1.2, 0.75
PATH_WEIGHT = 2.0


def split_identifier(word: str) -> list[str]:
    parts = [p.lower() for p in PART.findall(word)]
    return [p for p in parts if len(p) >= 3]


def query_terms(task: str) -> dict[str, float]:
    """Terms of the task with weights: whole identifiers count more than the parts they split into."""
    terms: dict[str, float] = {}
    for word in WORD.findall(task):
        lowered = word.lower()
        if len(lowered) >= 3 and lowered not in STOPWORDS:
            distinctive = "_" in word or any(c.isupper() for c in word[1:]) or word.startswith("--")
            terms[lowered] = max(terms.get(lowered, 0.0), 1.5 if distinctive else 1.0)
        parts = split_identifier(word)
        if len(parts) > 1:
            for part in parts:
                if part not in STOPWORDS:
                    terms.setdefault(part, 0.6)
    return terms


def lexical_scores(texts: dict[str, str], terms: dict[str, float]) -> dict[str, float]:
    """BM25 of each file for the weighted terms; files with no term score 0 and are left out."""
    if not terms or not texts:
        return {}
    counts: dict[str, dict[str, int]] = {term: {} for term in terms}
    for path, text in texts.items():  # one lowered copy at a time: memory stays flat on big trees
        lowered = text.lower()
        for term in terms:
            found = lowered.count(term)
            if found:
                counts[term][path] = found
    return bm25(counts, {p: max(1, len(t) // 6) for p, t in texts.items()}, terms)


def bm25(counts: dict[str, dict[str, int]], lengths: dict[str, int], terms: dict[str, float]) -> dict[str, float]:
    """BM25 from term counts per file (`counts[term][path]`) and file lengths in ~words; every file in
    `lengths` is a document, and its path counts too (PATH_WEIGHT)."""
    if not terms or not lengths:
        return {}
    avg = sum(lengths.values()) / len(lengths)
    n = len(lengths)
    scores: dict[str, float] = {}
    for term, weight in terms.items():
        row = counts.get(term) or {}
        if not row:
            continue
        idf = math.log(1 + (n - len(row) + 0.5) / (len(row) + 0.5))
        for path, tf in row.items():
            norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[path] / avg))
            scores[path] = scores.get(path, 0.0) + weight * idf * norm
    for path in lengths:
        path_lower = path.lower()
        hits = [(t, w) for t, w in terms.items() if t in path_lower]
        if hits:
            bonus = sum(w * math.log(1 + n / (1 + len(counts.get(t) or {}))) for t, w in hits)
            scores[path] = scores.get(path, 0.0) + PATH_WEIGHT * bonus
    return scores
