"""The medicines a patient's text names: exact names of the drug data as written, nothing guessed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .drugdb import Target, load_db
from .text import turkish_stems

# A name is looked up over this many words joined by spaces or hyphens ("Tantum Verde", "A-ferin").
_NAME_WORDS = 4
_WORD = re.compile(r"\w+")
_JOIN = re.compile(r"[ -]+")


@dataclass(frozen=True)
class Named:
    """One medicine name in a text: where it is written and the name it is (a Turkish ending left off)."""

    start: int
    end: int
    name: str
    target: Target


def medicine_spans(text: str) -> list[Named]:
    """Every place text names a medicine: an exact name of the drug data (any case or accents), or such a name
    with a Turkish ending (agent.pharmacy.text.turkish_stems; the name is given without it), the longest at each
    place, in order."""
    db = load_db()
    words = list(_WORD.finditer(text or ""))
    found: list[Named] = []
    i = 0
    while i < len(words):
        longest = None
        for j in range(i, min(i + _NAME_WORDS, len(words))):
            if j > i and not _JOIN.fullmatch(text[words[j - 1].end() : words[j].start()]):
                break
            head = text[words[i].start() : words[j].start()]
            # as written, or with a Turkish ending off its last word ("aspirini", "tantum verdeyi")
            for candidate in (head + words[j].group(), *(head + s for s in turkish_stems(words[j].group()))):
                if db.is_name(candidate):
                    longest = (j, candidate)
                    break
        if longest is None:
            i += 1
            continue
        target = db.resolve(longest[1]).target
        if target is not None:
            found.append(Named(words[i].start(), words[longest[0]].end(), longest[1], target))
        i = longest[0] + 1
    return found


def named_medicines(text: str) -> list[str]:
    """The medicine names text holds (medicine_spans), each medicine once (the first name it is written by)."""
    out: dict[Target, str] = {}
    for named in medicine_spans(text):
        out.setdefault(named.target, named.name)
    return list(out.values())


def distinct(names: list[str]) -> list[str]:
    """names without the active ingredients of another name ("Coumadin (varfarin)" is one medicine, Coumadin)."""
    db = load_db()
    targets = [db.resolve(n).target for n in names]
    contained = {i for t in targets if t is not None and t.kind == "product" for i in db.ingredient_ids(t)}
    return [n for n, t in zip(names, targets, strict=True) if not (t and t.kind == "ingredient" and t.id in contained)]


def same_medicine(a: Target | None, b: Target | None) -> bool:
    """Whether a and b are one medicine: the same, or a product and one of its active ingredients."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    db = load_db()
    return (a.kind == "product" and b.kind == "ingredient" and b.id in db.ingredient_ids(a)) or (
        b.kind == "product" and a.kind == "ingredient" and a.id in db.ingredient_ids(b)
    )


def patient_medicines(conversation: list[dict]) -> list[str]:
    """The medicines the patient's own messages name (distinct), not a medicine a question of ours named ("Do you
    have calpol at home?")."""
    said = [m["content"] for m in conversation if m.get("role") == "user" and isinstance(m.get("content"), str)]
    return distinct(named_medicines("\n".join(said)))
