"""The crisis check: self-harm or a medicine already taken in excess gets the emergency answer, whatever the
model wrote.

Asked "Can I take 40 Parol tablets at once to sleep forever?", the default model looked up Parol's
contraindications; told "annem yanlışlıkla 20 tane parol içmiş ne yapmalıyım" (20 tablets taken by mistake),
it answered what Parol is for. It was never taught these, and no lookup is the answer: a pharmacist says where
help is now and gives no amounts. So when the patient's latest message speaks of self-harm or a lethal dose
(`self_harm`), or of a medicine swallowed in excess or by mistake (`poisoning`; closed lists of wordings in
Turkish, also without Turkish letters, and English), the final answer is `CRISIS_ANSWER` or `POISONING_ANSWER`
in their language, and the check runs last, so nothing is added after it. The model's text stays in the
transcript. A question about a safe amount ("how much paracetamol is an overdose?", "dün 2 tane içtim, bugün
de içebilir miyim?") is not in the lists: that is a pharmacist's question, and the tools answer it.
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

# On fold()ed text: lower case, Turkish letters folded (ö -> o, ı -> i), punctuation dropped ("don't" -> "don t").
_SELF_HARM = re.compile(
    r"\b(?:(?P<en>"
    r"(?:kill|harm) (?:myself|my self)|suicid\w*|end (?:my (?:own )?life|it all)|take my (?:own )?life"
    r"|(?:want|wanna|going|gonna|plan|planning|ready) to die|how (?:many|much)\b.{0,40}\bto die"
    r"|better off dead|no reason to live"
    r"|don ?t want to (?:live|be alive|wake up)|(?:sleep|go to sleep) (?:forever|and never wake)|never wake up"
    r"|(?:lethal|fatal|deadly) (?:dose|amount)"
    r")|(?P<tr>"  # Turkish, with or without Turkish letters
    r"intihar\w*|kendimi (?:oldur|asmak|asaca|asar)\w*|kendime zarar\w*|olmek (?:ist|icin)\w*|olmeyi \w+|olsem"
    r"|hayatima son|canima kiy\w*|yasamak istemi\w*|(?:bir daha|hic) uyanmamak|uyanmamak icin"
    r"|sonsuza (?:kadar|dek) uyu\w*|(?:olumcul|oldurucu) (?:doz|miktar)\w*"
    r"))"
)


# A count of ten or more, or a whole pack, of a medicine, and within a few words a verb of swallowing in the
# past ("20 tane parol içmiş", "swallowed a whole bottle of calpol"); or "by mistake" with a verb of taking
# ("aldı" is also "bought": only with "by mistake").
_QUANTITY = (
    r"(?:[1-9]\d+ ?(?:tane|tablet\w*|hap\w*|kapsul\w*|pills?|tablets?|capsules?)"
    r"|(?:bir|butun|tum|yarim) (?:kutu|sise|paket)\w*|(?:a|the) whole (?:bottle|box|pack|packet|strip)"
    r"|all (?:of )?(?:my|his|her|their|the) (?:pills|tablets|medicines?|meds)|too many (?:pills|tablets))"
)
_SWALLOWED_WORDS = (
    r"icti|icmis|ictim|icmisim|yuttu|yutmus|yuttum|yutmusum|swallowed|took|has taken|have taken|had taken|ate"
    r"|drank|got into"
)
_SWALLOWED = rf"(?:{_SWALLOWED_WORDS})"
_TOOK = rf"(?:aldi|almis|aldim|almisim|{_SWALLOWED_WORDS})"
_MISTAKE = r"(?:yanlislikla|accidentally|by mistake)"


def _near(a: str, b: str, words: int) -> str:
    """a, then b within `words` words."""
    return a + r"\b(?:\W+\w+){0," + str(words) + r"}?\W+" + b


_POISONING = re.compile(
    r"\b(?:"
    + "|".join(
        (
            _near(_QUANTITY, _SWALLOWED, 4),
            _near(_SWALLOWED, _QUANTITY, 3),
            _near(_MISTAKE, _TOOK, 6),
            _near(_TOOK, _MISTAKE, 6),
            r"overdosed|(?:took|taken|had) an overdose|(?<!gida )zehirlen\w*|(?<!food )poisoned",
        )
    )
    + r")\b"
)


def poisoning(text: str) -> bool:
    """Whether text speaks of a medicine already swallowed in excess or by mistake (the closed list above)."""
    return bool(_POISONING.search(fold(text)))


def self_harm(text: str) -> bool:
    """Whether text speaks of harming oneself or of a lethal dose (the closed list above)."""
    return bool(_SELF_HARM.search(fold(text)))


def latest_patient_message(conversation: list[dict]) -> str:
    """The text of the last user message ("" when there is none)."""
    return next(
        (m["content"] for m in reversed(conversation) if m.get("role") == "user" and isinstance(m.get("content"), str)),
        "",
    )


class CrisisCheck:
    """The crisis check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "crisis_check"
    note = "the patient wrote of self-harm or of a medicine taken in excess; the emergency answer instead"

    def applies(self, conversation: list[dict]) -> bool:
        return emergency_answer(conversation) is not None

    def check(self, answer: str, conversation: list[dict]) -> str | None:
        emergency = emergency_answer(conversation)
        return None if emergency is None or answer.strip() == emergency else emergency


# Turkish words of the poisoning wordings: the language of a message too short to show one ("intihar",
# "olmek istiyorum" without Turkish letters) is that of the wording that matched.
_TURKISH_WORDING = re.compile(
    r"\b(?:icti|icmis|ictim|icmisim|yuttu|yutmus|yuttum|yutmusum|aldi|almis|aldim|almisim|yanlislikla|tane"
    r"|kutu\w*|sise\w*|paket\w*|hap\w*|kapsul\w*|zehirlen\w*)\b"
)


def emergency_answer(conversation: list[dict]) -> str | None:
    """CRISIS_ANSWER or POISONING_ANSWER in the patient's language when their latest message calls for one
    (in the language of the wording that matched when their messages show none)."""
    text = fold(latest_patient_message(conversation))
    if harm := _SELF_HARM.search(text):
        answers, wording = CRISIS_ANSWER, "tr" if harm.lastgroup == "tr" else "en"
    elif taken := _POISONING.search(text):
        answers, wording = POISONING_ANSWER, "tr" if _TURKISH_WORDING.search(taken.group(0)) else "en"
    else:
        return None
    return answers[conversation_language(conversation) or wording]
