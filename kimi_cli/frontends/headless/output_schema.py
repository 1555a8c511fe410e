"""`--output-schema FILE`: the final answer of `kimi -p` must be JSON that validates against a JSON Schema.

The model is told the schema with the task. When its answer does not parse or validate, it gets the errors
and one more try; a second mismatch ends the run with exit code 1 and the errors. The result object carries
the parsed value as `structured_output`. Validation is the `jsonschema` library (the schema's own `$schema`
picks the draft; 2020-12 when it names none).

Both the schema (a file a repository may ship for its CI) and the answer (the model's) are hostile input:
they are decoded within kimi_cli.util.jsonsafe's bounds, a schema whose `$ref`s loop without reading into the
value is refused when it loads (kimi_cli.frontends.headless.schema_refs), and a check that still recurses too far is a
mismatch with a message, never a traceback.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.errors import ExitCode, KimiError

FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*?)\n```\s*\Z", re.DOTALL)
MAX_ERRORS = 10
MAX_MESSAGE = 300


def _schema_error(path: str, why: str) -> KimiError:
    return KimiError(f"--output-schema {path}: {why}", ExitCode.USAGE)


@dataclass
class OutputSchema:
    schema: dict[str, Any] | bool
    path: str

    @classmethod
    def load(cls, path: str) -> OutputSchema:
        """Read and check the schema itself; a bad file is a usage error (exit 2) before anything runs."""
        try:
            from kimi_cli.hostsafe.settings_read import read_settings_text
            from kimi_cli.util.jsonsafe import loads

            data = loads(read_settings_text(Path(path).expanduser()))
        except OSError as exc:
            raise _schema_error(path, f"cannot read it ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise _schema_error(path, f"not valid JSON ({exc})") from None
        if not isinstance(data, dict | bool):
            raise _schema_error(path, "a JSON Schema is an object (or true/false)")
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for

        try:
            validator_for(data).check_schema(data)
        except SchemaError as exc:
            raise _schema_error(path, f"not a valid JSON Schema: {_short(exc.message)}") from None
        except RecursionError:
            raise _schema_error(path, "nested too deep to check") from None
        from kimi_cli.frontends.headless.schema_refs import endless_ref

        problem = endless_ref(data)
        if problem is not None:
            raise _schema_error(path, problem)
        return cls(data, path)

    def instructions(self) -> str:
        """Appended to the task: what the final answer must be."""
        return (
            "Your final answer must be a single JSON value that validates against the JSON Schema below, and "
            "nothing else: no prose before or after it, no code fence. Do the task first (with tools as "
            "needed); only the last answer is read.\n\n" + json.dumps(self.schema, indent=2)
        )

    def check(self, text: str) -> tuple[Any, list[str]]:
        """(the parsed value, []) when the answer validates, else (None or the value, the errors)."""
        try:
            value = parse_answer(text)
        except ValueError as exc:
            return None, [f"the answer is not JSON: {exc}"]
        from jsonschema.validators import validator_for

        validator = validator_for(self.schema)(self.schema)
        try:
            found = list(itertools.islice(validator.iter_errors(value), MAX_ERRORS * 10))
        except RecursionError:
            return value, ["the answer is nested too deep for the schema to be checked"]
        except Exception as exc:  # a reference that cannot be followed, say: the schema's fault, told plainly
            return value, [f"the schema could not be checked ({type(exc).__name__}: {_short(str(exc))})"]
        errors = sorted(found, key=lambda e: [_order(p) for p in e.absolute_path])
        return value, [f"at {_where(e.absolute_path)}: {_short(e.message)}" for e in errors[:MAX_ERRORS]]

    @staticmethod
    def retry_message(errors: list[str]) -> str:
        return (
            "Your final answer does not validate against the required JSON Schema:\n"
            + "\n".join(f"- {e}" for e in errors)
            + "\nAnswer again with only the corrected JSON value."
        )


def _order(part: Any) -> tuple[int, int, str]:
    return (0, part, "") if isinstance(part, int) else (1, 0, str(part))


def _short(text: str) -> str:
    """jsonschema quotes the offending value whole: a megabyte answer would make a megabyte message."""
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 20] + f"... ({len(text):,} characters)"


def _where(path: Any) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse_answer(text: str) -> Any:
    """The JSON value in an answer: the whole text, a fenced block, or the outermost object/array in it.
    ValueError (bounded: kimi_cli.util.jsonsafe) when there is none."""
    from kimi_cli.util.jsonsafe import loads

    stripped = text.strip()
    fenced = FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        return loads(stripped)
    except json.JSONDecodeError as first:
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = stripped.find(opener), stripped.rfind(closer)
            if 0 <= start < end:
                try:
                    return loads(stripped[start : end + 1])
                except ValueError:
                    continue
        raise ValueError(f"{first.msg} at line {first.lineno} column {first.colno}") from None
