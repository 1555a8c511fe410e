"""Trim test output for the model: failing tests' names and tracebacks first, then the rest, within a budget."""

from __future__ import annotations

import re

FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)
COUNTS = re.compile(r"(\d+) (failed|passed|errors?)\b")
SECTION = re.compile(r"^=+ (FAILURES|ERRORS) =+$", re.MULTILINE)
NEXT_SECTION = re.compile(r"^=+ .* =+$", re.MULTILINE)


def failing_tests(output: str) -> list[str]:
    return sorted({m.group(2) for m in FAILED_LINE.finditer(output)})


def counts(output: str) -> dict[str, int]:
    """pytest-style totals from the last summary line ({'failed': 1, 'passed': 197}); {} when absent."""
    found: dict[str, int] = {}
    for number, word in COUNTS.findall(output):
        found["errors" if word.startswith("error") else word] = int(number)
    return found


def trim_failures(output: str, limit: int = 20_000) -> str:
    """Names of failing tests, then the FAILURES/ERRORS sections, then the output's tail."""
    parts: list[str] = []
    names = failing_tests(output)
    if names:
        parts.append("Failing tests:\n" + "\n".join(f"- {n}" for n in names))
    for match in SECTION.finditer(output):
        end = NEXT_SECTION.search(output, match.end())
        parts.append(output[match.start() : end.start() if end else len(output)].strip())
    tail = "\n".join(output.splitlines()[-30:])
    parts.append("End of the output:\n" + tail)
    text = "\n\n".join(parts)
    if len(text) > limit:
        text = text[: limit * 2 // 3] + "\n[... cut ...]\n" + text[-limit // 3 :]
    return text
