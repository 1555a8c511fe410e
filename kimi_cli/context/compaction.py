"""Compaction: when the conversation nears the window, the model summarises it and the session goes on.

The original task stays verbatim, the repository is packed again from its current state, and the new
history holds no tool calls at all, so no tool-call id can dangle.
"""

from __future__ import annotations

from typing import Any

from kimi_cli.llm.types import Message

SUMMARY_SYSTEM = (
    "You are compacting the working memory of a coding agent. Write a concise but complete summary of the "
    "conversation below for the agent to continue from: what was done, decisions and their reasons, what "
    "was learned about the code, the current state of every file touched, commands that passed or failed, "
    "and what remains to do. Do not call tools. Do not drop details needed to finish the task."
)
TRANSCRIPT_CAP = 400_000  # characters of transcript sent to the summariser (fewer where the window is small)
IMAGES_NOTE_PREFIX = "Images returned by "  # the loop's message carrying tool images; not the user's words


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "[image]") if isinstance(p, dict) else str(p) for p in content)
    return ""


def transcript(messages: list[Message], cap: int = TRANSCRIPT_CAP) -> str:
    """The conversation (without the system prompt) as plain text for the summariser, at most about `cap`
    characters: its first quarter and its last three (the task's start and where the work stands)."""
    lines: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role == "system":
            continue
        text = _text_of(msg.get("content"))
        if role == "assistant":
            for call in msg.get("tool_calls") or []:
                fn = call.get("function", {})
                text += f"\n[tool call {fn.get('name')}({fn.get('arguments', '')[:2000]})]"
        elif role == "tool":
            text = text if len(text) < 4000 else text[:2000] + "\n[...]\n" + text[-1500:]
        lines.append(f"## {role}\n{text.strip()}")
    joined = "\n\n".join(lines)
    if len(joined) > cap:
        head, tail = joined[: cap // 4], joined[-cap * 3 // 4 :]
        joined = f"{head}\n\n[... middle of the conversation cut ...]\n\n{tail}"
    return joined


def user_texts(messages: list[Message]) -> list[str]:
    return [_text_of(m.get("content")) for m in messages if m.get("role") == "user" and not _is_note(m)]


def _is_note(msg: Message) -> bool:
    return _text_of(msg.get("content")).startswith(("[kimi]", IMAGES_NOTE_PREFIX))


def summary_request(messages: list[Message], cap: int = TRANSCRIPT_CAP) -> list[Message]:
    return [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {
            "role": "user",
            "content": f"<conversation>\n{transcript(messages, cap)}\n</conversation>\n\nSummarise it now.",
        },
    ]


def compacted_history(
    system: Message,
    messages: list[Message],
    summary: str,
    todos: list[dict[str, str]],
    touched: list[str],
    image_budget: int = 32_768,
) -> list[Message]:
    """[system (fresh pack), one user message: the task verbatim, later requests, summary, todos, files,
    and the most recent images that fit `image_budget` tokens (a screenshot the task is built from stays)].
    `touched`: the files the agent wrote by name, as the tool registry read them from the calls."""
    asks = user_texts(messages)
    parts = [asks[0] if asks else ""]
    if len(asks) > 1:
        parts.append("Later messages from the user, verbatim:\n" + "\n---\n".join(asks[1:]))
    parts.append(f"<summary of the work so far (the conversation was compacted)>\n{summary.strip()}\n</summary>")
    if todos:
        marks = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}
        parts.append("Todo list:\n" + "\n".join(f"{marks.get(t['status'], '[ ]')} {t['title']}" for t in todos))
    if touched:
        parts.append("Files touched so far: " + ", ".join(touched))
    parts.append("The repository snapshot in the system prompt is current as of now. Continue the task.")
    from kimi_cli.media.pipeline import recent_images

    images = recent_images(messages, image_budget)
    if not images:
        return [system, {"role": "user", "content": "\n\n".join(parts)}]
    parts.append(f"The conversation's {len(images)} most recent image(s), kept as they were:")
    content: list[dict[str, Any]] = [{"type": "text", "text": "\n\n".join(parts)}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return [system, {"role": "user", "content": content}]
