"""What hooks answered, read with Claude Code's rules, merged over every hook that ran for one event.

- exit 0: go on. A JSON object on stdout may say `continue: false` (+ `stopReason`), `decision: "block" |
  "approve"` (+ `reason`), `systemMessage`, and `hookSpecificOutput` with `permissionDecision` (allow, deny,
  ask), `permissionDecisionReason`, `updatedInput` and `additionalContext`. Plain stdout adds context for
  UserPromptSubmit and SessionStart.
- exit 2: block; stderr is the reason (the model reads it where a model can act on it).
- anything else (a crash, a timeout, a hook that could not start): a non-blocking error shown to the user,
  unless the hook says `on_failure = "block"`. A hook whose pinned script changed is never run, and blocks.
Several hooks merge: any block blocks, deny beats ask beats allow, the last `updatedInput` in config order wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kimi_cli.extensions.hooks.runner import HookRun
from kimi_cli.util import jsonsafe

PLAIN_STDOUT_IS_CONTEXT = ("UserPromptSubmit", "SessionStart")
PERMISSION_RANK = {"allow": 1, "ask": 2, "deny": 3}


@dataclass
class HookVerdict:
    """The merged answer of an event's hooks."""

    block: bool = False
    reasons: list[str] = field(default_factory=list)  # why it blocks (stderr of exit 2, `reason`)
    context: list[str] = field(default_factory=list)  # text for the model
    permission: str | None = None  # PreToolUse: allow | deny | ask
    permission_reasons: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    updated_by: str = "kimi"  # the dialect of the hook whose updatedInput won (hooks.claude reads it back)
    stop: bool = False  # `continue: false`: end the turn
    stop_reason: str = ""
    messages: list[str] = field(default_factory=list)  # for the user: errors, systemMessage
    ran: int = 0

    @property
    def reason(self) -> str:
        return "\n".join(r for r in self.reasons if r.strip()).strip()

    @property
    def permission_reason(self) -> str:
        return "\n".join(r for r in self.permission_reasons if r.strip()).strip()


def _json_answer(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = jsonsafe.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_runs(event: str, runs: list[HookRun]) -> HookVerdict:
    verdict = HookVerdict(ran=len(runs))
    for run in runs:
        _read_one(event, run, verdict)
    return verdict


def _read_one(event: str, run: HookRun, verdict: HookVerdict) -> None:
    label = f"{event} hook `{run.hook.command}`"
    if run.tampered:
        verdict.block = True
        verdict.reasons.append(f"blocked: the {label} was {run.error}")
        verdict.messages.append(f"{label} {run.error}")
        return
    if run.exit_code == 2:
        verdict.block = True
        verdict.reasons.append(run.stderr.strip() or f"blocked by the {label} (exit code 2)")
        return
    if run.failed:
        if run.hook.on_failure == "block":
            verdict.block = True
            verdict.reasons.append(f"blocked: the {label} failed ({run.problem()}) and says on_failure = block")
        verdict.messages.append(f"{label} failed: {run.problem()}")
        return
    answer = _json_answer(run.stdout)
    if answer is None:
        if event in PLAIN_STDOUT_IS_CONTEXT and run.stdout.strip():
            verdict.context.append(run.stdout.strip())
        return
    _read_json(event, answer, verdict, run.hook.dialect)


def _read_json(event: str, answer: dict[str, Any], verdict: HookVerdict, dialect: str = "kimi") -> None:
    if answer.get("continue") is False:
        verdict.stop = True
        verdict.stop_reason = verdict.stop_reason or str(answer.get("stopReason") or "a hook ended the turn")
    if isinstance(answer.get("systemMessage"), str) and answer["systemMessage"].strip():
        verdict.messages.append(answer["systemMessage"].strip())
    decision = answer.get("decision")
    reason = str(answer.get("reason") or "")
    if decision == "block":
        verdict.block = True
        verdict.reasons.append(reason or "blocked by a hook")
    elif decision == "approve" and event == "PreToolUse":  # the older form of permissionDecision "allow"
        _permission(verdict, "allow", reason)
    specific = answer.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    if event == "PreToolUse":
        wanted = specific.get("permissionDecision")
        if wanted in PERMISSION_RANK:
            _permission(verdict, str(wanted), str(specific.get("permissionDecisionReason") or ""))
        if isinstance(specific.get("updatedInput"), dict):
            verdict.updated_input, verdict.updated_by = specific["updatedInput"], dialect
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        verdict.context.append(extra.strip())


def _permission(verdict: HookVerdict, wanted: str, reason: str) -> None:
    if verdict.permission is None or PERMISSION_RANK[wanted] > PERMISSION_RANK[verdict.permission]:
        verdict.permission = wanted
        verdict.permission_reasons = [reason] if reason else []
    elif wanted == verdict.permission and reason:
        verdict.permission_reasons.append(reason)
