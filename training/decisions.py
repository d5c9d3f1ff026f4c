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

Routed examples (`routed=True`) show the model the tools block the agent shows a model trained so
(agent.engine.agent, `tools_shown` "routed"): the tool the router chose for the reply (none for an answer) and
those called since, as TinyAgent shows only retrieved tools; a 241-token prompt instead of 763. The exchange
before is then the patient's message and the answer (its calls and results dropped), as a conversation's
history reaches the agent from a chat window.
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


def decision_rows(
    row: dict, rng: random.Random, context: float, after_results: float, routed: bool = False
) -> list[dict]:
    """The decision examples of one conversation row: every first decision of an exchange, and each decision
    after results with probability after_results; with probability context, the exchange before comes too.
    routed: each example's tools block is the routed one (shown_tools), its context exchange without calls."""
    head, turns = exchanges(row["messages"])
    out = []
    for k, turn in enumerate(turns):
        for i, loss in decisions(turn):
            if i > 1 and rng.random() >= after_results:
                continue
            before = turns[k - 1] if k > 0 and rng.random() < context else []
            if routed and before:
                before = [m for m in before if m["role"] == "user" or (m["role"] == "assistant" and m.get("content"))]
            # The message after the decision renders its stop marker (@TOOL_RESPONSE, @PATIENT); the tokens after
            # that marker are cut in tokenize, so what the next message holds is never trained on.
            following = turn[i + 1 : i + 2] or (turns[k + 1][:1] if k + 1 < len(turns) else [])
            messages = head + before + turn[: i + 1] + following
            tools = shown_tools(row["tools"], turn[: i + 1]) if routed else row["tools"]
            out.append({"messages": messages, "tools": tools, "meta": row["meta"], "loss": loss})
    return out


def shown_tools(tools: list[dict], turn: list[dict]) -> list[dict]:
    """The tools block the agent shows a routed model when it writes turn's last message (the agent's
    shown_schemas): the tool of the first reply's first call (the router's label; none for an answer) and the
    tools of every call before the last message."""
    replies = [m for m in turn if m["role"] == "assistant"]
    first = (replies[0].get("tool_calls") or [])[:1] if replies else []
    called = [c for m in replies[:-1] for c in m.get("tool_calls") or []]
    names = {c["function"]["name"] for c in first + called}
    return [t for t in tools if t["function"]["name"] in names]
