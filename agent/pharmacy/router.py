"""The tool router: which tool the reply to the patient's latest message calls first, or none, read by the
linear classifier of agent.pharmacy.textclass (training/router.py trains it on patient-written and composed
messages). The agent starts the model's reply with the routed choice (agent.engine.routing) and the model
writes the arguments: choosing the tool is one classification, learned as one. A choice among an argument's
enum values (get_drug_info's section) is one too: a head per such argument chooses it for the routed tool, and
the model copies only what the patient wrote (names, numbers).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.routing import Route
from ..engine.toolbox import tool_schema
from .textclass import features, head_logits, load_weights, softmax
from .tools import PHARMACY_TOOLS

# The router's labels: "none" (the reply answers without a tool) and the pharmacy tools, by name (a tool added
# changes them, and the shipped weights then refuse to load until the router is retrained).
LABELS = ("none", *(tool.__name__ for tool in PHARMACY_TOOLS))
WEIGHTS = Path(__file__).with_name("data") / "tool_router.safetensors"


def route_text(messages: list[dict]) -> str:
    """What the router reads of a conversation: the patient's latest message (a follow-up's own words say which
    check it asks for; the medicine it refers to is the model's to copy from earlier turns)."""
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):  # content parts: their text
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content if isinstance(content, str) else ""
    return ""


def enum_arguments() -> dict[str, dict[str, list[str]]]:
    """{tool: {argument: its enum values}} of the pharmacy tools' schemas as the model sees them (the agent's
    context arguments left out): what an argument head may choose."""
    out: dict[str, dict[str, list[str]]] = {}
    for tool in PHARMACY_TOOLS:
        props = tool_schema(tool)["function"]["parameters"]["properties"]
        enums = {name: list(p["enum"]) for name, p in props.items() if "enum" in p}
        if enums:
            out[tool.__name__] = enums
    return out


@dataclass(frozen=True)
class ArgumentHead:
    """Chooses one argument of one tool among values (a subset of its schema's enum)."""

    tool: str
    argument: str
    values: tuple[str, ...]
    weight: np.ndarray
    bias: np.ndarray

    @property
    def key(self) -> str:
        return f"{self.tool}.{self.argument}"


class ToolRouter:
    """`route(messages)` -> Route, or None when the top label's probability is below `threshold` (the model
    then chooses alone); the route's arguments come from the routed tool's argument heads."""

    name = "tool_router"

    def __init__(
        self, weight: np.ndarray, bias: np.ndarray, threshold: float = 0.0, heads: tuple[ArgumentHead, ...] = ()
    ) -> None:
        self.weight, self.bias, self.threshold, self.heads = weight, bias, threshold, heads

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> ToolRouter:
        tensors, metadata = load_weights(path)
        if tuple(json.loads(metadata.get("labels", "[]"))) != LABELS:
            raise ValueError(f"{path}: its labels are not the router's {LABELS}; retrain it (training/router.py)")
        enums, heads = enum_arguments(), []
        for key, values in json.loads(metadata.get("arguments", "{}")).items():
            tool, _, argument = key.partition(".")
            if not set(values) <= set(enums.get(tool, {}).get(argument, ())):
                raise ValueError(
                    f"{path}: argument head {key!r} chooses {values}, not all values of that argument's enum in the "
                    "tools' schemas; retrain it (training/router.py)"
                )
            heads.append(ArgumentHead(tool, argument, tuple(values), tensors[f"{key}.weight"], tensors[f"{key}.bias"]))
        return cls(tensors["weight"], tensors["bias"], float(metadata.get("threshold", 0.0)), tuple(heads))

    def route_messages(self, messages: list[dict]) -> Route:
        ids = features(route_text(messages))
        probs = softmax(head_logits(self.weight, self.bias, ids))
        best = max(range(len(LABELS)), key=lambda i: probs[i])
        tool = None if best == 0 else LABELS[best]
        arguments = {}
        for head in self.heads:
            if head.tool == tool:
                scores = head_logits(head.weight, head.bias, ids)
                arguments[head.argument] = head.values[max(range(len(head.values)), key=lambda i: scores[i])]
        return Route(tool, probs[best], arguments)

    def route(self, messages: list[dict]) -> Route | None:
        route = self.route_messages(messages)
        return route if route.confidence >= self.threshold else None


@functools.cache
def tool_router() -> ToolRouter:
    """The shipped router (agent/pharmacy/data/tool_router.safetensors), loaded once."""
    return ToolRouter.load()
