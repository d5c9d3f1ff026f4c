"""Triage: rules that read the conversation before the model or any tool runs.

A triage rule may answer the turn itself (an emergency: nothing is generated, no tool runs) and may refuse a
tool call for the rest of a conversation (no amounts once it holds an emergency). The engine consults its rules
first, in order; the domain (agent.pharmacy.triage) decides what they recognise and what they answer.
"""

from __future__ import annotations

from typing import Any, Protocol


class Triage(Protocol):
    """A rule consulted before generation."""

    name: str  # the event type and transcript record of its answer, e.g. "emergency_triage"
    note: str  # what its answer means, for the people reading the transcript

    def answer(self, conversation: list[dict]) -> str | None:
        """The answer to the conversation's latest user message, given before any generation; None: not ours."""
        ...

    def refuses(self, conversation: list[dict], tool: str, arguments: dict[str, Any]) -> str | None:
        """Why this call must not run in this conversation (it becomes the call's error result), or None."""
        ...


def message_text(message: dict) -> str:
    """The text of a message's content, whatever its shape: a string, or a list of parts (OpenAI's
    {"type": "text", "text": ...}, or plain strings); other parts carry no text."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""
