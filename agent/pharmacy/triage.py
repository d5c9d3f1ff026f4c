"""Emergency triage: self-harm, a medicine swallowed in excess or by mistake, and misuse are answered before
the model or any tool runs, and once a conversation holds one, no amount reaches the patient again.

The emergency detector (agent.pharmacy.emergency, a trained classifier) reads every user message, whatever
the shape of its content. The latest message decides the turn: self-harm gets CRISIS_ANSWER, poisoning
POISONING_ANSWER, misuse REFUSAL_ANSWER, in the patient's language. An intent stated earlier holds for the
rest of the conversation: tools that give amounts are refused (`refuses`), and `AmountsAfterIntent`, an answer
check, answers with the emergency answer instead of any answer that states a quantity or follows a refusal.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ..engine.checks import Replace, current_turn, named_results
from ..engine.triage import message_text
from .answers import REFUSAL_ANSWER
from .emergency import Reading, detector
from .text import fold, patient_language

# Numbers a person in crisis can call now. Turkey: 112 (emergency), 114 (UZEM, the national poison centre).
CRISIS_ANSWER = {
    "tr": "Bunu yaşadığınız için çok üzgünüm. Kendinize zarar vermeyi düşünüyorsanız lütfen hemen 112'yi arayın "
    "ya da şu an yanınızdaki birine söyleyin. Biri fazla ilaç aldıysa 112'yi veya Ulusal Zehir Danışma Merkezi'ni "
    "(114) arayın. Bunun için ilaç miktarı veremem; ama yalnız değilsiniz ve yardım var.",
    "en": "I'm so sorry you are going through this. If you are thinking of harming yourself, please call your "
    "local emergency number now (112 in Europe, 911 in the US; in the US you can also call or text 988, in the UK "
    "and Ireland call Samaritans on 116 123), or tell someone near you right now. If someone has taken too much of "
    "a medicine, call emergency services or a poison centre. I can't give amounts of medicines for this, but you "
    "are not alone and help is available.",
}

# Poisoning: what to do now. US Poison Control 1-800-222-1222; UK 999 or NHS 111; Turkey 112 and UZEM 114.
POISONING_ANSWER = {
    "tr": "Bu acil bir durum olabilir. Belirti olmasa bile beklemeden 112'yi ya da Ulusal Zehir Danışma Merkezi'ni "
    "(114) arayın: bazı ilaçlar belirti vermeden zarar verir. İlacın kutusunu yanınızda bulundurun; ne kadar ve ne "
    "zaman alındığını söyleyin. Kendiliğinden kusturmaya çalışmayın.",
    "en": "This may be an emergency. Call your local emergency number or a poison centre now, even if there are no "
    "symptoms yet: some medicines do harm before any sign (112 in Europe; in the US 911 or Poison Control "
    "1-800-222-1222; in the UK 999 or NHS 111). Keep the medicine's box and say how much was taken and when. Do "
    "not try to make them vomit.",
}

ANSWERS = {"self_harm": CRISIS_ANSWER, "poisoning": POISONING_ANSWER, "misuse": REFUSAL_ANSWER}
# Tools whose results state amounts, and get_drug_info's sections that do.
AMOUNT_TOOLS = frozenset({"calculate_dose"})
AMOUNT_SECTIONS = frozenset({"dosage", "overdose", "pediatric"})
# A stronger intent outranks a weaker one when a conversation holds several.
_RANK = {"self_harm": 3, "poisoning": 2, "misuse": 1}

# Quantities in an answer, on fold()ed text: digits, and number words (Turkish and English: a closed class).
_QUANTITY = re.compile(
    r"\d|\b(?:iki|uc|dort|bes|alti|yedi|sekiz|dokuz|on|yirmi|otuz|kirk|elli|altmis|yetmis|seksen|doksan|yuz|bin"
    r"|yarim|bucuk|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred"
    r"|thousand|dozen|half|double|twice|triple)\b"
)


@functools.lru_cache(maxsize=4096)
def _read(text: str) -> Reading:
    return detector().read(text)


def user_messages(conversation: list[dict]) -> list[str]:
    """The text of every user message, in order (text parts of list contents included)."""
    return [message_text(m) for m in conversation if m.get("role") == "user"]


def latest_reading(conversation: list[dict]) -> Reading | None:
    texts = [t for t in user_messages(conversation) if t.strip()]
    return _read(texts[-1]) if texts else None


def held_readings(texts: list[str], read: Callable[[str], Reading]) -> list[Reading]:
    """What holds a conversation's intent: each user message read alone, and all of them together (the
    detector's trainer measures its false alarms on everyday conversations with this same reading)."""
    texts = [t for t in texts if t.strip()]
    return [read(t) for t in texts] + ([read("\n".join(texts))] if len(texts) > 1 else [])


def held_intent(conversation: list[dict]) -> tuple[str, str] | None:
    """(label, language) of the strongest emergency any user message, or all of them read together, states;
    None when the conversation holds none."""
    found = [r for r in held_readings(user_messages(conversation), _read) if r.label != "none"]
    if not found:
        return None
    top = max(found, key=lambda r: (_RANK[r.label], r.score))
    return top.label, answer_language(conversation, top)


def answer_language(conversation: list[dict], reading: Reading | None) -> str:
    """The patient's language: their latest message's function words, else what the detector read."""
    for text in reversed(user_messages(conversation)):
        if lang := patient_language(text):
            return lang
    return reading.language if reading is not None else "en"


def emergency_answer(conversation: list[dict]) -> str | None:
    """The answer to the latest user message when it is an emergency or misuse, in the patient's language."""
    reading = latest_reading(conversation)
    if reading is None or reading.label == "none":
        return None
    lang = patient_language(user_messages(conversation)[-1]) or reading.language
    return ANSWERS[reading.label][lang]


class EmergencyTriage:
    """The pharmacy's triage rule (agent.engine.triage.Triage)."""

    name = "emergency_triage"
    note = "the patient wrote of self-harm, a medicine taken in excess, or misuse: answered before any tool ran"

    def answer(self, conversation: list[dict]) -> str | None:
        return emergency_answer(conversation)

    def refuses(self, conversation: list[dict], tool: str, arguments: dict) -> str | None:
        if not (tool in AMOUNT_TOOLS or (tool == "get_drug_info" and arguments.get("section") in AMOUNT_SECTIONS)):
            return None
        if held_intent(conversation) is None:
            return None
        return "this conversation holds an emergency: no amounts are given"


class AmountsAfterIntent:
    """Once a conversation holds an emergency, an answer that states a quantity, or follows a refused call, is
    the emergency answer (an answer check of the engine, agent.engine.checks.AnswerCheck)."""

    name = "amounts_after_intent"
    note = "the conversation holds an emergency, and the answer stated an amount; the emergency answer instead"

    def check(self, answer: str, conversation: list[dict]) -> Replace | None:
        held = held_intent(conversation)
        if held is None:
            return None
        label, lang = held
        emergency = ANSWERS[label][lang]
        if answer.strip() == emergency:
            return None
        was_refused = any(
            isinstance(r.get("error"), dict) and r["error"].get("code") == "refused_call"
            for _, r in named_results(current_turn(conversation))
        )
        if was_refused or _QUANTITY.search(fold(answer)):
            return Replace(emergency)
        return None
