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
from .named import medicine_spans
from .textclass import features, head_logits, load_weights, softmax
from .tools import PHARMACY_TOOLS
from .triage import held_intent, latest_reading, user_messages

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
        """The classifier's choice for the latest message, as it is."""
        ids, probs = self._read(messages)
        return self._route(ids, probs, range(len(LABELS)))

    def _read(self, messages: list[dict]) -> tuple[list[int], list[float]]:
        """The latest message's feature ids and the tool head's probabilities."""
        ids = features(route_text(messages))
        return ids, softmax(head_logits(self.weight, self.bias, ids))

    def _route(self, ids: list[int], probs: list[float], labels: range) -> Route:
        """The route of the likeliest of labels (indices into LABELS), its arguments from the argument heads."""
        best = max(labels, key=lambda i: probs[i])
        tool = None if best == 0 else LABELS[best]
        arguments = {}
        for head in self.heads:
            if head.tool == tool:
                scores = head_logits(head.weight, head.bias, ids)
                arguments[head.argument] = head.values[max(range(len(head.values)), key=lambda i: scores[i])]
        return Route(tool, probs[best], arguments)

    def route(self, messages: list[dict]) -> Route | None:
        ids, probs = self._read(messages)
        route = self._route(ids, probs, range(len(LABELS)))
        if route.tool is None and route.confidence < _none_sure(messages) and _about_a_medicine(messages):
            route = self._route(ids, probs, range(1, len(LABELS)))  # the likeliest tool
        return route if route.confidence >= self.threshold else None


# A reply without a tool to a patient who asks about a medicine is a refusal ("I can't help with that") where the
# medicine's own data would answer: the router's "none" also holds prices, stock and ways to get a medicine, and
# a follow-up's own words ("these two together?", "how many ml of it") name no medicine. So where the router is
# unsure of "none" (below NONE_SURE), the conversation's patient messages name a medicine of the data, and the
# emergency detector reads the latest message as ordinary with a margin (score below CALM, under half of its
# alarm threshold) and no earlier one as an emergency, the reply calls the router's likeliest tool instead.
# A latest message that names no medicine itself may have moved on from the one named before ("ok and whats good
# for a sore throat", "ok got it bye"), so there the router need only be surer of "none" than FOLLOW_UP_SURE.
# Chosen on the dev sets (docs/agent.md, "The router's none"): free-text, multi-turn and templated dev and the
# patient-written dev_b sets, with the emergency dev sets for what it must not turn into a lookup.
NONE_SURE = 0.9
FOLLOW_UP_SURE = 0.7
CALM = 0.1


def _none_sure(messages: list[dict]) -> float:
    """How sure of "none" the router must be to answer without a tool: NONE_SURE where the latest message names
    a medicine, FOLLOW_UP_SURE where only an earlier one does."""
    return NONE_SURE if medicine_spans(route_text(messages)) else FOLLOW_UP_SURE


def _about_a_medicine(messages: list[dict]) -> bool:
    """Whether a patient message names a medicine of the data, and the latest reads as no emergency, nor any."""
    if not any(medicine_spans(text) for text in user_messages(messages)):
        return False
    reading = latest_reading(messages)
    return reading is not None and reading.score < CALM and held_intent(messages) is None


@functools.cache
def tool_router() -> ToolRouter:
    """The shipped router (agent/pharmacy/data/tool_router.safetensors), loaded once."""
    return ToolRouter.load()
