"""Routing: a classifier chooses how the model's reply to a patient's message starts (the tool it calls
first, or an answer), and the model writes the rest (the call's arguments, or the answer).

A small model picks the right tool less often than it fills the arguments of the right one (the pharmacy's
free-text misses were mostly the wrong tool); a classifier trained for the choice makes it, as Octopus v2's
functional tokens and TinyAgent's tool retrieval make it a step of its own. The engine forces the reply's
first block marker and, for a call, its tool name, as the template renders them (`reply_start`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Route:
    """tool: the tool the reply calls first, None: the reply answers without one; confidence: the router's
    probability for that choice; arguments: values the router chose for some of the call's arguments (a choice
    among a schema's enum values, say), set in the reply's calls to that tool over what the model wrote."""

    tool: str | None
    confidence: float
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def label(self) -> str:
        return self.tool or "none"

    def apply(self, calls: list[dict]) -> list[dict]:
        """calls (parsed: name, arguments) with this route's arguments set in each call to the routed tool."""
        if not self.arguments:
            return calls
        return [
            {**c, "arguments": {**c["arguments"], **self.arguments}}
            if c.get("name") == self.tool and isinstance(c.get("arguments"), dict)
            else c
            for c in calls
        ]


class Router(Protocol):
    """Chooses how the reply to the latest patient message starts; None leaves the choice to the model."""

    name: str

    def route(self, messages: list[dict]) -> Route | None: ...


def reply_start(render, tool: str | None) -> str:
    """The text a reply starts with for a route, as the chat template renders it: a call's block up to its
    arguments' opening brace (the brace and the first key are left to the model: byte-level BPE writes them as one
    token, ' {"', and a prompt cut inside it puts the model off its own tokens), or the answer's block marker.
    render(messages) renders a conversation."""
    user = {"role": "user", "content": "x"}
    head = render([user])
    if tool is None:
        reply = {"role": "assistant", "content": "\x00"}
        text = render([user, reply])[len(head) :]
        return text[: text.index("\x00")]
    call = {"type": "function", "function": {"name": tool, "arguments": {"\x00": 0}}}
    text = render([user, {"role": "assistant", "content": None, "tool_calls": [call]}])[len(head) :]
    key = text.find('"\\u0000"') if '"\\u0000"' in text else text.index('"\x00"')
    return text[: text.rindex("{", 0, key)].rstrip(" ")
