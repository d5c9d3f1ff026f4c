"""What the pharmacist agent says on its own: the system prompt, the worked example, the no-answer reply."""

from __future__ import annotations

import json
from typing import Any

from ..engine.checks import current_turn, named_results
from .turn import conversation_language, patient_words, read_turn

__all__ = ["conversation_language", "patient_words", "tool_context", "no_answer", "demo_examples", "SYSTEM_PROMPT"]

SYSTEM_PROMPT = (
    "Sen dikkatli bir eczacı asistanısın. İlaçlar hakkında önce araçlarla bilgi al, yalnızca araç "
    "sonuçlarına dayanarak hastanın dilinde kısa ve doğru yanıt ver. You are a careful pharmacist: "
    "look drugs up with the tools first, answer briefly in the patient's language, only from the results."
)


def demo_examples() -> list[dict]:
    """One worked exchange (call, real tool result, grounded answer) for a model not tuned on PPSF."""
    from .tools import search_drug

    result = search_drug("Majezik")
    return [
        {"role": "user", "content": "Majezik ne için kullanılır?"},
        {"role": "assistant", "tool_calls": [{"name": "search_drug", "arguments": {"drug": "Majezik"}}]},
        {"role": "tool", "name": "search_drug", "content": json.dumps(result, ensure_ascii=False)},
        {"role": "assistant", "content": f"Majezik ({result['active_ingredient']}): {result['usage']}."},
    ]


def tool_context(messages: list[dict]) -> dict[str, Any]:
    """What the agent tells every tool (the model never sets it): the patient's language, and the facts of their
    words (a Turn, read once; for the tools that keep only what the patient gives ground for)."""
    patient = read_turn(messages)
    return {"language": patient.language, "patient": patient}


# What each tool did, in words a patient reads: an answer never names the tools themselves
# (agent.engine.internals_check).
TOOL_WORDS = {
    "search_drug": ("ilaç araması", "a drug search"),
    "get_drug_info": ("prospektüs bilgisi", "the leaflet"),
    "check_interactions": ("etkileşim kontrolü", "an interaction check"),
    "calculate_dose": ("doz hesabı", "a dose calculation"),
    "find_alternatives": ("muadil araması", "a search for alternatives"),
    "check_contraindications": ("uygunluk kontrolü", "a suitability check"),
}


def no_answer(messages: list[dict], outcomes: list[tuple[str, bool]], max_steps: int, ran_out: bool) -> str:
    """A plain answer in the patient's language when the model gives none: what was tried, what to do."""
    turkish = conversation_language(messages) == "tr"
    done = [
        TOOL_WORDS[name][0 if turkish else 1] for name in dict.fromkeys(n for n, _ in outcomes) if name in TOOL_WORDS
    ]
    errors = any(not ok for _, ok in outcomes)
    # What only the patient can fix (a weight out of range), as the tools wrote it for them.
    fix = "".join(f" {e['message']}" for e in _for_patient(current_turn(messages)))
    if turkish:
        within = f" {max_steps} adımda" if ran_out else ""
        return (
            f"Üzgünüm,{within} kesin bir yanıta ulaşamadım."
            + (f" Baktıklarım: {', '.join(done)}." if done else "")
            + (" Bazı sorgular hata verdi." if errors and not fix else fix)
            + " Lütfen sorunuzu ilaç adıyla daha açık sorun ya da bir eczacıya danışın."
        )
    within = f" within {max_steps} steps" if ran_out else ""
    return (
        f"Sorry, I could not reach a reliable answer{within}."
        + (f" What I checked: {', '.join(done)}." if done else "")
        + (" Some lookups failed." if errors and not fix else fix)
        + " Please ask again naming the drug, or consult a pharmacist."
    )


def _for_patient(turn: list[dict]) -> list[dict]:
    """The errors of turn's tool results written for the patient (for_patient), each message once."""
    errors = [r["error"] for _, r in named_results(turn) if isinstance(r.get("error"), dict)]
    found = [e for e in errors if e.get("for_patient") is True and isinstance(e.get("message"), str)]
    return list({e["message"]: e for e in found}.values())
