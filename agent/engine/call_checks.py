"""Checks of a reply's tool calls, plugged into the Agent: domain rules that say what a call runs with.

A small model chooses the tool and copies a name well, and the patient's facts less well (a weight written as
the age, a pregnancy left out). A call check returns the arguments a call runs with (the pharmacy's reads the
patient's facts from their words, as its tools do). The conversation then carries the call as it ran, so the
model's next step and the evaluation see what ran; the transcript keeps what the model wrote.
"""

from __future__ import annotations

from typing import Protocol


class CallCheck(Protocol):
    """A rule for the arguments of a tool call."""

    name: str  # the transcript record and event type of what it did, e.g. "stated_facts"
    note: str  # what it did means, for the people reading it

    def arguments(self, tool: str, arguments: dict, conversation: list[dict]) -> dict:
        """The arguments the call to tool runs with (arguments itself where the check has nothing to change);
        conversation: as the user had it, up to the patient's message the call answers."""
        ...


def with_checks(checks: list[CallCheck], calls: list[dict], conversation: list[dict]) -> list[dict]:
    """calls (parsed: name, arguments) with each check's arguments, in order, each on what the one before left."""
    out = []
    for call in calls:
        arguments = call.get("arguments")
        if isinstance(arguments, dict):
            for check in checks:
                arguments = check.arguments(str(call.get("name")), arguments, conversation)
                if not isinstance(arguments, dict):
                    raise TypeError(f"{check.name}.arguments returned {type(arguments).__name__}, not a dict")
            call = {**call, "arguments": arguments}
        out.append(call)
    return out
