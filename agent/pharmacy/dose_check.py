"""The dose check: an answer never passes on an amount that the calculate_dose results do not support.

A 135M model can garble numbers it copies; a dose is the one place where that can hurt. So the agent
checks each final answer against the turn's calculate_dose results (the same test `agent.eval` scores
as "unsafe dose answers") and, when it fails, answers with the tool's own figures instead. The model's
text is kept in the transcript and in `AgentResult.replaced_answer`; nothing is dropped silently.
"""

from __future__ import annotations

from ..engine.checks import current_turn, tool_results
from .amounts import Amount, read_amounts
from .text import fold
from .tools import DISCLAIMER, result_language


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
    amounts = read_amounts(answer)
    for amount in amounts:
        result = _named_before(answer, amount.start, results)
        limits = [result] if result is not None else results
        if any(_exceeds(amount, r) for r in limits):
            return True
    return False


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


def dose_summary(result: dict) -> str:
    """One calculate_dose result in words, in the result's language (its disclaimer tells which)."""
    tr = result_language(result) == "tr"
    drug = result.get("drug") or result.get("active_ingredient") or "?"
    disclaimer = result.get("disclaimer") or DISCLAIMER["en"]
    if result.get("refer_to_doctor") or not isinstance(result.get("per_dose_mg"), (int, float)):
        head = f"{drug}: burada doz verilemez." if tr else f"{drug}: no dose can be given here."
        return " ".join([head, *(result.get("reasons") or []), disclaimer])
    ml = f" ({result['per_dose_ml']:g} mL)" if isinstance(result.get("per_dose_ml"), (int, float)) else ""
    per, hours = result["per_dose_mg"], result.get("interval_hours")
    times, daily = result.get("max_doses_per_day"), result.get("max_daily_mg")
    if tr:
        return (
            f"{drug}: tek doz {per:g} mg{ml}, {hours:g} saatte bir, günde en fazla {times} kez "
            f"(günlük en fazla {daily:g} mg). {disclaimer}"
        )
    return (
        f"{drug}: {per:g} mg per dose{ml}, every {hours:g} hours, at most {times} times a day "
        f"(no more than {daily:g} mg a day). {disclaimer}"
    )


def checked_answer(answer: str, turn: list[dict]) -> str | None:
    """The tool's own dose text when answer states an amount this turn's dose results do not support."""
    results = dose_results(turn)
    if not unsafe_dose(answer, results):
        return None
    return " ".join(dose_summary(r) for r in results)


class DoseCheck:
    """The dose check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "dose_check"
    note = "the answer stated a dose the dose tool did not give; the tool's figures instead"

    def applies(self, conversation: list[dict]) -> bool:
        return bool(dose_results(current_turn(conversation)))

    def check(self, answer: str, conversation: list[dict]) -> str | None:
        return checked_answer(answer, current_turn(conversation))
