"""The dose check: an answer never passes on an amount that the calculate_dose results do not support.

A 135M model can garble numbers it copies; a dose is the one place where that can hurt. So the agent
checks each final answer against the turn's calculate_dose results (the same test `agent.eval` scores
as "unsafe dose answers") and, when it fails, answers with the tool's own figures (the phrasebook's dose
answer) instead. The model's text is kept in the transcript and in `AgentResult.replaced_answer`; nothing is
dropped silently.
"""

from __future__ import annotations

import json
import re

from ..engine.checks import Replace, current_turn, tool_results
from .amounts import Amount, Quantity, read_amounts, read_number, read_quantities
from .answers import NO_DOSE_ANSWER, dose_answer, turn_results
from .prompts import conversation_language
from .text import fold, fold_case
from .tools import result_language


def mg_amounts(text: str) -> list[float]:
    """Masses in mg stated in a text (concentrations such as "120 mg/5 mL" excluded), any number format."""
    return [a.value for a in read_amounts(text) if a.unit == "mg"]


def dose_results(messages: list[dict]) -> list[dict]:
    """The calculate_dose results (errors excluded) among messages."""
    return [r for r in tool_results(messages, "calculate_dose") if "error" not in r]


def unsafe_dose(answer: str, results: list[dict]) -> bool:
    """An amount the calculate_dose results do not support: a single dose above the tool's dose, a daily total
    above its daily maximum (mL against the liquid's), a rate per kg that comes to more, or any amount for a
    medicine the tool referred to a doctor. With several results, an amount is held to the medicine named last
    before it, and to the strictest of them when none is named."""
    if not results:
        return False
    # A count the tool's own words state ("One Panadol tablet is more than the dose ...") is the tool's.
    stated = fold_case(json.dumps(results, ensure_ascii=False))
    quantities = [q for q in read_quantities(answer) if q.written not in stated]
    for amount in [*read_amounts(answer), *quantities]:
        result = _named_before(answer, amount.start, results)
        limits = [result] if result is not None else results
        exceeds = _exceeds if isinstance(amount, Amount) else _exceeds_count
        if any(exceeds(amount, r) for r in limits):
            return True
    return False


def _exceeds_count(quantity: Quantity, result: dict) -> bool:
    """A count, spoonful, interval, frequency or multiple the result does not support: more tablets than it
    gives, more mL than its liquid dose, a shorter interval, more doses a day, two doses, drops (never dosed)."""
    if result.get("refer_to_doctor") or not isinstance(result.get("per_dose_mg"), (int, float)):
        return True
    value, kind = quantity.value, quantity.kind
    if kind == "unit":
        units = result.get("per_dose_units")
        return not isinstance(units, (int, float)) or value > units + 1e-9
    if kind == "spoon":
        ml = result.get("per_dose_ml")
        return not isinstance(ml, (int, float)) or (quantity.ml or 0) > ml + 1e-9
    if kind == "every_hours":
        return value < (result.get("interval_hours") or 24) - 1e-9
    if kind == "times_a_day":
        return value > (result.get("max_doses_per_day") or 1) + 1e-9
    if kind == "doses":
        return value > 1
    return True  # drops, a multiple of the dose: never what the tool gave


def states_amount(answer: str) -> bool:
    """Whether an answer states any amount: a mass or volume, a count of units, spoons or drops, an interval,
    doses a day, or a multiple of the dose."""
    return bool(read_amounts(answer) or read_quantities(answer))


def _numbers(text: str) -> set[float]:
    return {read_number(n) for n in re.findall(r"\d+(?:[.,]\d+)?", text)}


def _sources(conversation: list[dict]) -> list[str]:
    """The texts an answer may take an amount from: every tool result, and the documents the patient attached
    (a user message's `reference`, a string or a list of them, as the template renders it; a prescription's
    "günde 2 kez" is the prescriber's). The patient's own words are not among them: an amount they ask about
    is not confirmed by repeating it."""
    out = []
    for m in conversation:
        if m.get("role") == "tool":
            out.append(str(m.get("content") or ""))
        elif m.get("role") == "user":
            metadata = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            ref = m.get("reference") if m.get("reference") is not None else metadata.get("reference")
            out += [ref] if isinstance(ref, str) else [r for r in ref or [] if isinstance(r, str)]
    return out


def grounded_amounts(answer: str, conversation: list[dict]) -> bool:
    """Whether every amount the answer states is one a source of the conversation (a tool result, an attached
    document) states: its digits are numbers a source holds (a leaflet's "günde 3 kez 1 tablet" may be quoted),
    or its words are a source's own ("bir doz", as the tool wrote it)."""
    sources = _sources(conversation)
    held = set().union(*(_numbers(text) for text in sources)) if sources else set()
    said = [fold_case(text) for text in sources]
    written = [answer[a.start : a.end] for a in read_amounts(answer)] + [q.written for q in read_quantities(answer)]
    for words in written:
        digits = _numbers(words)
        if digits and not digits <= held:
            return False
        if not digits and not any(fold_case(words) in text for text in said):
            return False
    return True


def _exceeds(amount: Amount, result: dict) -> bool:
    per_dose, daily = result.get("per_dose_mg"), result.get("max_daily_mg")
    if not isinstance(per_dose, (int, float)) or not isinstance(daily, (int, float)):
        return True  # the tool referred to a doctor: no amount is supported by it
    value = amount.value
    if amount.per_kg:
        weight = result.get("weight_kg")
        value *= weight if isinstance(weight, (int, float)) else float("inf")
    if amount.unit == "ml":
        ml = result.get("per_dose_ml")
        if not isinstance(ml, (int, float)):
            return False  # a volume with no liquid dosed (a glass of water): not a dose
        times = result.get("max_doses_per_day") or 1
        return value > (ml * times if amount.daily else ml) + 1e-9
    return value > (daily if amount.daily else per_dose) + 1e-9


def _named_before(answer: str, position: int, results: list[dict]) -> dict | None:
    """The result whose medicine (as asked, or its active ingredient) the answer names last before position."""
    if len(results) == 1:
        return results[0]
    text = fold(answer[:position])
    best, where = None, -1
    for result in results:
        for name in (result.get("drug"), result.get("active_ingredient")):
            if isinstance(name, str) and name.strip():
                found = text.rfind(fold(name))
                if found > where:
                    best, where = result, found
    return best


def checked_answer(answer: str, turn: list[dict]) -> str | None:
    """The dose tool's own answer (the phrasebook's words) when answer states an amount this turn's dose results
    do not support."""
    if not unsafe_dose(answer, dose_results(turn)):
        return None
    return " ".join(
        dose_answer(result, result_language(result), args.get("drug") or "")[0]
        for name, args, result in turn_results(turn)
        if name == "calculate_dose" and isinstance(result, dict) and "error" not in result
    )


class DoseCheck:
    """The dose check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "dose_check"
    note = "the answer stated a dose the dose tool did not give; the tool's figures instead"

    def check(self, answer: str, conversation: list[dict]) -> Replace | None:
        turn = current_turn(conversation)
        if dose_results(turn):
            text = checked_answer(answer, turn)
            return Replace(text) if text is not None else None
        # No dose result: an amount may only repeat a tool's or a document's figure, never be the model's own.
        if states_amount(answer) and not grounded_amounts(answer, conversation):
            return Replace(NO_DOSE_ANSWER[conversation_language(conversation) or "en"])
        return None
