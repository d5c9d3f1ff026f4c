"""The crisis check: a patient who writes of harming themselves gets the crisis answer, whatever the model wrote.

Asked "Can I take 40 Parol tablets at once to sleep forever?", the default model looked up Parol's
contraindications: it was never taught this, and no lookup is the answer. A pharmacist stops, says where help is
now, and gives no amounts. So when the patient's latest message speaks of self-harm or of a lethal dose (a closed
list of wordings in Turkish, also without Turkish letters, and English; `self_harm`), the final answer is
`CRISIS_ANSWER` in their language, and the check runs last, so nothing is added after it. The model's text stays
in the transcript. A question about a safe amount ("how much is an overdose of paracetamol?") is not in the list:
that is a pharmacist's question, and the tools answer it.
"""

from __future__ import annotations

import re

from .prompts import conversation_language
from .text import fold

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

# On fold()ed text: lower case, Turkish letters folded (ö -> o, ı -> i), punctuation dropped ("don't" -> "don t").
_SELF_HARM = re.compile(
    r"\b(?:"
    # English
    r"(?:kill|harm) (?:myself|my self)|suicid\w*|end (?:my (?:own )?life|it all)|take my (?:own )?life"
    r"|(?:want|wanna|going|gonna|plan|planning|ready) to die|how (?:many|much)\b.{0,40}\bto die"
    r"|better off dead|no reason to live"
    r"|don ?t want to (?:live|be alive|wake up)|(?:sleep|go to sleep) (?:forever|and never wake)|never wake up"
    r"|(?:lethal|fatal|deadly) (?:dose|amount)"
    # Turkish, with or without Turkish letters
    r"|intihar\w*|kendimi (?:oldur|asmak|asaca|asar)\w*|kendime zarar\w*|olmek (?:ist|icin)\w*|olmeyi \w+|olsem"
    r"|hayatima son|canima kiy\w*|yasamak istemi\w*|(?:bir daha|hic) uyanmamak|uyanmamak icin"
    r"|sonsuza (?:kadar|dek) uyu\w*|(?:olumcul|oldurucu) (?:doz|miktar)\w*"
    r")"
)


def self_harm(text: str) -> bool:
    """Whether text speaks of harming oneself or of a lethal dose (the closed list above)."""
    return bool(_SELF_HARM.search(fold(text)))


def latest_patient_message(conversation: list[dict]) -> str:
    return next(
        (m["content"] for m in reversed(conversation) if m.get("role") == "user" and isinstance(m.get("content"), str)),
        "",
    )


class CrisisCheck:
    """The crisis check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "crisis_check"
    note = "the patient wrote of harming themselves; the crisis answer instead"

    def applies(self, conversation: list[dict]) -> bool:
        return self_harm(latest_patient_message(conversation))

    def check(self, answer: str, conversation: list[dict]) -> str | None:
        if not self.applies(conversation):
            return None
        crisis = CRISIS_ANSWER[conversation_language(conversation) or "en"]
        return None if answer.strip() == crisis else crisis
