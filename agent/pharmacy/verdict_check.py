"""The verdict check: an answer never gives a medicine a verdict the check_contraindications tool did not.

The model copies the tool's verdict into a fixed phrase ("Buscopan (Hiyosin butilbromür): uygun (ok)"). With a
verdict it rarely saw it mixes two ("uygun (unknown)"): a patient reads "uygun", suitable, for a medicine
nothing was checked against. So each final answer's verdict words (what it quotes of
the tools set aside) are held to this turn's check_contraindications verdicts; a word for another verdict
puts the tool's own verdict and reasons, as the phrasebook words them, in place of the answer. The model's
text stays in the transcript.
"""

from __future__ import annotations

import json
import re

from ..engine.checks import Replace, current_turn, tool_results
from .answers import contra_answer
from .text import fold_case
from .tools import result_language

# The words that state a verdict, on fold_case text. English ones only as the answer's verdict slot
# (": ok", "(ok)"), since "ok" and "avoid" are also plain English; "uygun değil" is no "uygun".
_STATED = {
    "ok": r"\buygun(?:dur)?\b(?!\s+degil)|\(ok\)|:\s*ok\b",
    "caution": r"\bdikkatli\s+kullanilmali(?:dir)?\b|\(caution\)|:\s*caution\b",
    "avoid": r"\bkullanilmamali(?:dir)?\b|\buygun\s+degil|\(avoid\)|:\s*avoid\b",
    "unknown": r"\bbelirsiz\b|\(unknown\)|:\s*unknown\b",
}
_STATED_RE = {verdict: re.compile(pattern) for verdict, pattern in _STATED.items()}


def verdict_results(messages: list[dict]) -> list[dict]:
    """The check_contraindications results (errors excluded) among messages."""
    return [r for r in tool_results(messages, "check_contraindications") if r.get("verdict") in _STATED]


def _quoted(value: object) -> list[str]:
    """The sentences a tool result holds (strings of three words or more), which an answer may quote."""
    if isinstance(value, str):
        return [value] if len(value.split()) >= 3 else []
    if isinstance(value, dict):
        value = list(value.values())
    return [t for item in value for t in _quoted(item)] if isinstance(value, list) else []


def stated_verdicts(answer: str, turn: list[dict]) -> set[str]:
    """The verdicts answer's own words state: any tool result's sentences it quotes (a leaflet's "kullanılmamalı",
    a reason's "should not be used") set aside."""
    text = fold_case(answer)
    quoted = set()
    for m in turn:
        if m.get("role") == "tool":
            try:
                quoted.update(fold_case(t) for t in _quoted(json.loads(m.get("content") or "")))
            except (TypeError, ValueError):
                quoted.add(fold_case(m.get("content") or ""))
    for sentence in sorted(quoted, key=len, reverse=True):
        text = text.replace(sentence, " ")
    return {verdict for verdict, pattern in _STATED_RE.items() if pattern.search(text)}


def checked_answer(answer: str, turn: list[dict]) -> str | None:
    """The tools' own verdicts, worded by the phrasebook, when answer states a verdict none of this turn's
    results gave."""
    results = verdict_results(turn)
    if not results or stated_verdicts(answer, turn) <= {r["verdict"] for r in results}:
        return None
    return " ".join(contra_answer(r, result_language(r), r["drug"])[0].rstrip() for r in results)


class VerdictCheck:
    """The verdict check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "verdict_check"
    note = "the answer gave a verdict the contraindication tool did not; the tool's verdict instead"

    def check(self, answer: str, conversation: list[dict]) -> Replace | None:
        text = checked_answer(answer, current_turn(conversation))
        return Replace(text) if text is not None else None
