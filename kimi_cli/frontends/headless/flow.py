"""What a headless run does around the loop for issue 30's features: a prompt that names a custom command
(`kimi -p "/review HEAD~1"`) is expanded as the terminal would; `--output-schema` checks the final answer
and gives the model one more try; plan mode (`--plan`) needs nothing more here: the answer is the plan.
`--visual-check` (kimi_cli.frontends.headless.visual) shows the model its page after each edit."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kimi_cli.agent.events import Notice
from kimi_cli.agent.loop import Agent, RunOutcome
from kimi_cli.errors import ExitCode
from kimi_cli.frontends.headless.output_schema import OutputSchema
from kimi_cli.llm.types import Message

CHECK_TIMEOUT = 600  # seconds for --check's command


@dataclass
class HeadlessFlow:
    runtime: Any
    prompt: str
    images: list[str] = field(default_factory=list)
    schema: OutputSchema | None = None
    structured: Any = None  # the validated value (--output-schema)
    command: str = ""  # the custom command the prompt named
    visual: Any = None  # --visual-check (kimi_cli.frontends.headless.visual.VisualCheck)
    check: str | None = None  # --check CMD: run in the session's sandbox once the agent ends (an attempt's verdict)
    checked: Any = None  # its kimi_cli.worktrees.attempts.CheckResult

    async def run(self, agent: Agent, message: Message, preamble: list[Message]) -> RunOutcome:
        message, scope = await self._expand(agent, message)
        if self.visual is not None:  # the page's screenshot after each edit, through the loop's seams
            self.visual.attach(agent)
        try:
            outcome = await agent.run(message, preamble)
            if self.visual is not None:
                outcome = await self.visual.finish(agent, outcome)
            if self.schema is not None and outcome.reason == "done":
                outcome = await self._check(agent, outcome)
            if self.check is not None:
                self.checked = await self._run_check(self.check)
                if not self.checked.passed and outcome.exit_code == ExitCode.OK:
                    # the check decides, not the model's word: "Tests pass." with a red check is a failure
                    state = "timed out" if self.checked.exit_code is None else f"exited {self.checked.exit_code}"
                    outcome = replace(outcome, reason="check_failed", exit_code=ExitCode.ERROR,
                                      message=f"the check `{self.check}` {state}")  # fmt: skip
            return outcome
        finally:
            if scope is not None:
                scope.exit()

    async def _expand(self, agent: Agent, message: Message) -> tuple[Message, Any]:
        """The custom command the prompt names, expanded (with its turn's model and allowed tools)."""
        if not self.prompt.startswith("/"):
            return self._with_schema(message), None
        from kimi_cli.extensions.custom_commands.session import CommandSet, TurnScope, prepare
        from kimi_cli.frontends.attachments import build_user_message

        commands = CommandSet.load(self.runtime.workdir, folder=self.runtime.folder_trust)
        found = commands.find(self.prompt)
        if found is None:
            return self._with_schema(message), None
        command, args = found
        self.command = command.name
        expansion = await prepare(commands, command, args, agent.registry)
        scope = TurnScope(command, commands.trusted)
        shell = agent.registry.get("Shell")
        notes = expansion.notes + scope.enter(getattr(shell, "approver", None), agent.provider, self.runtime)
        for note in notes:
            agent.emit(Notice(note))
        limits = self.runtime.image_limits()
        built = build_user_message(expansion.prompt, self.images, self.runtime.workdir, limits)
        return self._with_schema(built), scope

    def _with_schema(self, message: Message) -> Message:
        if self.schema is None:
            return message
        content = message.get("content")
        rule = self.schema.instructions()
        if isinstance(content, list):
            return {**message, "content": [*content, {"type": "text", "text": rule}]}
        return {**message, "content": f"{content}\n\n{rule}"}

    async def _check(self, agent: Agent, outcome: RunOutcome) -> RunOutcome:
        assert self.schema is not None
        value, errors = self.schema.check(outcome.text)
        if errors:
            agent.emit(Notice(f"the answer does not match {self.schema.path}; the model gets one more try"))
            outcome = await agent.run({"role": "user", "content": self.schema.retry_message(errors)})
            if outcome.reason != "done":
                return outcome
            value, errors = self.schema.check(outcome.text)
        if errors:
            why = f"the final answer does not match {self.schema.path}: " + "; ".join(errors)
            return RunOutcome("schema_mismatch", ExitCode.ERROR, outcome.text, outcome.steps, why)
        self.structured = value
        return outcome

    async def _run_check(self, command: str) -> Any:
        """The check command in this session's sandbox: the workspace's own code runs only in there."""
        from kimi_cli.worktrees.attempts import CheckResult

        result = await self.runtime.sandbox.run(command, CHECK_TIMEOUT)
        return CheckResult(command, None if result.timed_out else result.exit_code, result.output[-2000:])

    def result_fields(self) -> dict[str, Any]:
        """Extra fields of the headless result object."""
        out: dict[str, Any] = {"mode": self.runtime.mode.current}
        if self.schema is not None:
            out["structured_output"] = self.structured
        if self.command:
            out["command"] = self.command
        if self.visual is not None:
            out["visual_check"] = self.visual.result_fields()
        if self.check is not None:
            out["check"] = self.checked.as_dict() if self.checked is not None else None
        return out
