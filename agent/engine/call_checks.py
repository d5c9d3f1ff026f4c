"""Checks of a reply's tool calls, plugged into the Agent: domain rules that say what a call runs with.

A small model chooses the tool well, and copies the patient's facts less well (a weight written as the age, a
pregnancy left out, an earlier turn's medicine). A CallCheck returns the arguments one call runs with (the
pharmacy's reads the patient's facts from their words, as its tools do); a CallsCheck returns the reply's calls
as a whole, and may set a call's tool where its arguments ask another's, or add a call (a lookup for each of two
medicines asked about at once), never drop one. The conversation then carries the calls as they ran, so the
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


class CallsCheck(Protocol):
    """A rule for a reply's calls as a whole: it may set their tools and arguments and add calls, never drop one."""

    name: str
    note: str

    def calls(self, calls: list[dict], conversation: list[dict]) -> list[dict]:
        """The calls the reply runs (calls itself where the check has nothing to change), each of calls first,
        in order, then any it adds; conversation as for CallCheck.arguments."""
        ...


def with_checks(checks: list[CallCheck | CallsCheck], calls: list[dict], conversation: list[dict]) -> list[dict]:
    """calls (parsed: name, arguments) as each check leaves them, in order, each on what the one before left.
    A call whose arguments are not an object is left as it is, for the engine to refuse."""
    for check in checks:
        if hasattr(check, "calls"):
            out = check.calls(calls, conversation)
            if not isinstance(out, list) or len(out) < len(calls):
                raise TypeError(
                    f"{check.name}.calls must return a list of at least the {len(calls)} calls it was given"
                )
            calls = out
            continue
        checked = []
        for call in calls:
            arguments = call.get("arguments")
            if isinstance(arguments, dict):
                arguments = check.arguments(str(call.get("name")), arguments, conversation)
                if not isinstance(arguments, dict):
                    raise TypeError(f"{check.name}.arguments returned {type(arguments).__name__}, not a dict")
                call = {**call, "arguments": arguments}
            checked.append(call)
        calls = checked
    return calls
