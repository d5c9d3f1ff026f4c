"""The interaction check: no answer leaves out a serious interaction between medicines the patient names.

A pharmacist who hears two medicines checks them together, whatever the question was. A 135M model does
not always: "my father takes Coumadin and drank an aspirin" went to a contraindication lookup of Coumadin
alone, and the answer never said "bleeding". So the agent reads the medicine names the patient wrote
(exact names of the drug data, or one with a Turkish ending: nothing is guessed), checks every pair with
the check_interactions tool, and when a pair is contraindicated, major, or the same active ingredient twice,
and no answer of the conversation has said so (both medicines and the severity named), adds the tool's own
words to the answer. The model's text is kept in front of it and in the transcript.
"""

from __future__ import annotations

import functools
from itertools import combinations

from ..engine.checks import Append
from .answers import SEVERITY_WORDS, duplicate_sentence, pair_sentence
from .drugdb import load_db
from .named import patient_medicines
from .prompts import conversation_language
from .text import fold
from .tools import check_interactions

SERIOUS = ("contraindicated", "major")
_HEAD = {"tr": "Önemli, yazdığınız ilaçlar birlikte:", "en": "Important, the medicines you mention together:"}


@functools.lru_cache(maxsize=256)
def serious_findings(a: str, b: str, lang: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(sentence, words that show an answer said it) for each serious finding of check_interactions on a, b:
    a contraindicated or major interaction, or an active ingredient in both."""
    result = check_interactions([a, b], language=lang)
    out = []
    for pair in result.get("pairs", []):
        if pair["severity"] in SERIOUS:
            said = (SEVERITY_WORDS["tr"][pair["severity"]].split()[0], pair["severity"])
            out.append((pair_sentence(pair, lang), said))
    for dup in result.get("duplicates", []):
        out.append((duplicate_sentence(dup), (dup["ingredient"],)))
    return tuple(out)


def _names_of(name: str) -> set[str]:
    """Every name an answer may call a medicine by: as written, its names in the data, its ingredients'."""
    db = load_db()
    target = db.resolve(name).target
    names = {fold(name)}
    if target is not None:
        for lang in ("tr", "en"):
            names.add(fold(db.display_name(target, lang)))
            names.update(fold(db.ingredients[i][f"name_{lang}"]) for i in db.ingredient_ids(target))
    return names


def _said(answer: str, a: str, b: str, words: tuple[str, ...]) -> bool:
    text = fold(answer)
    return (
        any(n in text for n in _names_of(a))
        and any(n in text for n in _names_of(b))
        and any(fold(w) in text for w in words)
    )


def _missing(conversation: list[dict]) -> tuple[str, list[str]]:
    """(the patient's language, the serious findings no answer of the conversation has said)."""
    names = patient_medicines(conversation)
    db = load_db()
    # Where the patient's words show no language, the names' (as check_interactions chooses).
    lang = conversation_language(conversation) or ("tr" if any(db.resolve(n).lang == "tr" for n in names) else "en")
    answers = [m["content"] for m in conversation if m.get("role") == "assistant" and isinstance(m.get("content"), str)]
    missing = []
    for a, b in combinations(names, 2):
        for text, words in serious_findings(a, b, lang):
            if not any(_said(answer, a, b, words) for answer in answers):
                missing.append(text)
    return lang, missing


def missing_warnings(conversation: list[dict]) -> list[str]:
    """The serious findings between the medicines the patient names that no answer of the conversation (its
    last message included) has said, as sentences in the patient's language."""
    return _missing(conversation)[1]


def warnings_to_add(conversation: list[dict]) -> Append | None:
    """The serious findings the answer (conversation[-1]) and the conversation leave out, to add; None: none."""
    lang, missing = _missing(conversation)
    return Append(f"{_HEAD[lang]} {' '.join(missing)}") if missing else None


class InteractionCheck:
    """The interaction check as an answer check of the engine (agent.engine.checks.AnswerCheck)."""

    name = "interaction_check"
    note = "the answer left out a serious interaction between medicines the patient names; the tool's words added"

    def check(self, answer: str, conversation: list[dict]) -> Append | None:
        return warnings_to_add(conversation)
