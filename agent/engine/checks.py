"""Checks of the final answer, plugged into the Agent: domain rules the model's text must pass.

A check may replace the answer (the pharmacy's dose check puts the dose tool's own figures in place of a
dose it did not give) or add to it (its interaction check adds a warning the answer left out). While a check
that may replace applies to the conversation, the answer's text is not streamed: it is shown only once it
has passed; what a check adds after the answer follows the streamed text. A check sees the
conversation as the user had it (no demonstration turns); `current_turn` gives the part since the last
user message.
"""

from __future__ import annotations

import json
from typing import Protocol


class AnswerCheck(Protocol):
    """A rule for the final answer of a turn."""

    name: str  # the event type and transcript record a replacement writes, e.g. "dose_check"
    note: str  # what a replacement means, for the people reading it ("the answer stated a dose the tool ...")

    def applies(self, conversation: list[dict]) -> bool:
        """Whether the check may replace the answer to come (so its text is held back until checked)."""
        ...

    def check(self, answer: str, conversation: list[dict]) -> str | None:
        """The text to answer with instead, or None when the answer passes; the answer is conversation[-1]."""
        ...


def named_results(messages: list[dict]) -> list[tuple[str, dict]]:
    """(tool name, result) of each tool message among messages whose content is a JSON object (errors too)."""
    out = []
    for m in messages:
        if m.get("role") != "tool":
            continue
        try:
            result = json.loads(m.get("content") or "")
        except (TypeError, ValueError):
            continue
        if isinstance(result, dict):
            out.append((str(m.get("name") or ""), result))
    return out


def tool_results(messages: list[dict], name: str) -> list[dict]:
    """The results (JSON objects, errors included) of the tool called name among messages."""
    return [result for tool, result in named_results(messages) if tool == name]


def current_turn(messages: list[dict]) -> list[dict]:
    """The messages after the last user message: the assistant's steps and tool results for it."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last_user + 1 :]
