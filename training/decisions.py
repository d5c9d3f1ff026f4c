"""Training examples that end at the model's decision: a conversation cut into one example per decision.

The agent's model decides and the tools speak (docs/agent.md): after the patient's message it writes a call or,
for a turn no tool answers, a short text; after the tools' results it writes another call or opens the answer
block, which the phrasebook then writes (`answers="tools"`). So an example is the fixed prefix (system prompt and
tools block), at most one earlier exchange for context, the patient's message and, for a decision after results,
the calls and results before it; the loss is on that one decision: the call or the text and its stop marker, or
only the `@PHARMACIST` marker the phrasebook's answer follows. Tokens after the last loss token are cut away
(`train_lora.tokenize`): in a causal model they cannot change the loss, and they are most of what a whole
conversation costs to train on.

A row is a conversation row ({"messages", "tools", "meta"}) with "loss": "decision" (the last assistant turn
only) or "marker" (only the marker of the last assistant turn: an answer the tools write).
"""

from __future__ import annotations

import random
from collections.abc import Iterator


def exchanges(messages: list[dict]) -> tuple[list[dict], list[list[dict]]]:
    """(the system messages, the exchanges): each exchange is a user message and every message up to the next."""
    start = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    head, out = messages[:start], []
    for m in messages[start:]:
        if m["role"] == "user" or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return head, out


def decisions(exchange: list[dict]) -> Iterator[tuple[int, str]]:
    """(index of the deciding assistant message, "decision" | "marker") for each decision in one exchange."""
    for i, m in enumerate(exchange):
        if m["role"] != "assistant":
            continue
        after_results = i > 0 and exchange[i - 1]["role"] == "tool"
        yield i, "marker" if after_results and not m.get("tool_calls") and m.get("content") else "decision"


def decision_rows(row: dict, rng: random.Random, context: float, after_results: float) -> list[dict]:
    """The decision examples of one conversation row: every first decision of an exchange, and each decision
    after results with probability after_results; with probability context, the exchange before comes too."""
    head, turns = exchanges(row["messages"])
    out = []
    for k, turn in enumerate(turns):
        for i, loss in decisions(turn):
            if i > 1 and rng.random() >= after_results:
                continue
            before = turns[k - 1] if k > 0 and rng.random() < context else []
            # The message after the decision renders its stop marker (@TOOL_RESPONSE, @PATIENT); the tokens after
            # that marker are cut in tokenize, so what the next message holds is never trained on.
            following = turn[i + 1 : i + 2] or (turns[k + 1][:1] if k + 1 < len(turns) else [])
            messages = head + before + turn[: i + 1] + following
            out.append({"messages": messages, "tools": row["tools"], "meta": row["meta"], "loss": loss})
    return out
