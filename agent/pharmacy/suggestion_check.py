"""The suggestion check: an answer offers, for a name the tools did not find, only the names they suggested.

A model that learnt to answer "'X' was not found. Did you mean: A, B?" keeps the question when the tools
suggest nothing, and fills it from the conversation: "'karnimin sag' ilaç veritabanında bulunamadı. Şunu mu
demek istediniz: 'karnimin sag'". So when this turn holds unknown_drug results, a "did you mean" in the final
answer that offers anything but their suggestions puts the tools' own answer in its place (unknown_name_answer,
as the training answers word it). The model's text stays in the transcript.
"""

from __future__ import annotations

import json
import re

from ..engine.checks import current_turn
from .answers import unknown_name_answer
from .prompts import conversation_language
from .text import fold

# "Did you mean: A, B?" as written in either language, up to its question mark or the end of the line.
_OFFER = re.compile(r"(?:şunu mu demek istediniz|sunu mu demek istediniz|did you mean)\s*:?\s*([^?\n]*)", re.IGNORECASE)


def unknown_names(turn: list[dict]) -> list[tuple[str, list[str]]]:
    """(the name asked, the tools' suggestions) for each unknown_drug result of turn, from the call it answers."""
    asked_by_id = {}
    for m in turn:
        for call in m.get("tool_calls") or []:
            try:
                arguments = json.loads(call["function"]["arguments"])
            except (KeyError, TypeError, ValueError):
                continue
            if isinstance(arguments, dict) and isinstance(arguments.get("drug"), str):
                asked_by_id[call.get("id")] = arguments["drug"]
    out = []
    for m in turn:
        if m.get("role") != "tool" or m.get("tool_call_id") not in asked_by_id:
            continue
        try:
            error = json.loads(m.get("content") or "").get("error")
        except (AttributeError, TypeError, ValueError):
            continue
        if isinstance(error, dict) and error.get("code") == "unknown_drug":
            suggestions = [s for s in error.get("suggestions") or [] if isinstance(s, str)]
            out.append((asked_by_id[m["tool_call_id"]], suggestions))
    return out


def offered_names(answer: str) -> list[str]:
    """The names an answer's "did you mean" offers (quotes and "or"/"veya" set aside)."""
    names = []
    for offer in _OFFER.finditer(answer):
        for part in re.split(r",|\bveya\b|\bya da\b|\bor\b", offer.group(1)):
            if name := part.strip(" '\"‘’“”.;"):
                names.append(name)
    return names


def checked_answer(answer: str, conversation: list[dict]) -> str | None:
    """The tools' own answer when answer offers a name none of this turn's unknown_drug results suggested."""
    unknown = unknown_names(current_turn(conversation))
    suggested = {fold(s) for _, suggestions in unknown for s in suggestions}
    if not unknown or all(fold(n) in suggested for n in offered_names(answer)):
        return None
    lang = conversation_language(conversation) or ("tr" if "demek istediniz" in fold(answer) else "en")
    return " ".join(unknown_name_answer(asked, suggestions, lang) for asked, suggestions in unknown)


class SuggestionCheck:
    """The suggestion check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "suggestion_check"
    note = "the answer offered a name the tools did not suggest; the tools' answer instead"

    def applies(self, conversation: list[dict]) -> bool:
        return bool(unknown_names(current_turn(conversation)))

    def check(self, answer: str, conversation: list[dict]) -> str | None:
        return checked_answer(answer, conversation)
