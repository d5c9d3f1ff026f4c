"""The tool router: which tool the reply to the patient's latest message calls first, or none, read by the
linear classifier of agent.pharmacy.textclass (training/router.py trains it on patient-written and composed
messages). The agent starts the model's reply with the routed choice (agent.engine.routing) and the model
writes the arguments: choosing the tool is one classification, learned as one.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from ..engine.routing import Route
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


class ToolRouter:
    """`route(messages)` -> Route, or None when the top label's probability is below `threshold` (the model
    then chooses alone)."""

    name = "tool_router"

    def __init__(self, weight: np.ndarray, bias: np.ndarray, threshold: float = 0.0) -> None:
        self.weight, self.bias, self.threshold = weight, bias, threshold

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> ToolRouter:
        tensors, metadata = load_weights(path)
        if tuple(json.loads(metadata.get("labels", "[]"))) != LABELS:
            raise ValueError(f"{path}: its labels are not the router's {LABELS}; retrain it (training/router.py)")
        return cls(tensors["weight"], tensors["bias"], float(metadata.get("threshold", 0.0)))

    def route_messages(self, messages: list[dict]) -> Route:
        probs = softmax(head_logits(self.weight, self.bias, features(route_text(messages))))
        best = max(range(len(LABELS)), key=lambda i: probs[i])
        return Route(None if best == 0 else LABELS[best], probs[best])

    def route(self, messages: list[dict]) -> Route | None:
        route = self.route_messages(messages)
        return route if route.confidence >= self.threshold else None


@functools.cache
def tool_router() -> ToolRouter:
    """The shipped router (agent/pharmacy/data/tool_router.safetensors), loaded once."""
    return ToolRouter.load()
