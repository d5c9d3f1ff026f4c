"""Checks of the final answer, plugged into the Agent: domain rules the model's text must pass.

A check says what it does, as a typed verdict: Replace the answer (the pharmacy's dose check puts the dose
tool's own figures in place of a dose it did not give) or Append to it (its interaction check adds a warning
the answer left out); None lets the answer pass. The engine shows no answer before its checks have run,
so what a check replaced never reaches the patient; the transcript keeps it. A check sees the conversation as
the user had it (no demonstration turns); `current_turn` gives the part since the last user message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Replace:
    """A check's verdict: answer with text instead (the answer it replaces stays in the transcript)."""

    text: str


@dataclass(frozen=True)
class Append:
    """A check's verdict: the answer stands, and text follows it (after a blank line)."""

    text: str


class AnswerCheck(Protocol):
    """A rule for the final answer of a turn."""

    name: str  # the event type and transcript record of what it did, e.g. "dose_check"
    note: str  # what it did means, for the people reading it ("the answer stated a dose the tool ...")

    def check(self, answer: str, conversation: list[dict]) -> Replace | Append | None:
        """What to do with the answer (conversation[-1]): Replace it, Append to it, or None when it passes."""
        ...


def applied(answer: str, verdict: Replace | Append) -> str:
    """The answer's text once a check's verdict is applied."""
    if isinstance(verdict, Replace):
        return verdict.text
    return f"{answer.rstrip()}\n\n{verdict.text}".lstrip()


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
