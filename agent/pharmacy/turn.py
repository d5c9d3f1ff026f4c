"""The facts of a patient's turn, read once from the conversation: language, words, weights and ages as written,
pregnancy, breastfeeding and conditions with their negation and whose they are, and whom the medicine is for.

The agent reads a Turn (read_turn) and hands it to the tools (agent.pharmacy.prompts.tool_context); the tools
keep only what the patient's words give ground for. A fact whose person is unclear counts for the person the
medicine is for: a pregnancy is dropped only when the words name someone else as pregnant and another as the one
who takes the medicine ("Eşim hamile, ben ibuprofen alabilir miyim?").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .amounts import among_numbers, compound_ages, names_age, names_weight, stated_numbers, written_numbers
from .drugdb import load_db
from .text import as_written, clauses, fold, fold_case, patient_language, state_mentions

SELF = "self"
# Whose an age is where it is no person's own: a pregnancy's months ("5 aylık hamileyim"); and the one breastfed, the
# baby (a key of RELATIONS) in a clause about breastfeeding ("3 aylık bebeğimi emziriyorum").
PREGNANCY = "pregnancy"
BREASTFED = "baby"

# The people a patient asks for, by one key per person, as written folded (no Turkish letters, lower case): a
# Turkish word with its 1st person possessive ("eşim", "kızım"), an English noun after "my". Closed lists:
# Turkish case endings are read below, not listed.
RELATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "spouse": (("esim", "karim", "kocam", "hanimim"), ("wife", "husband", "partner", "spouse", "girlfriend")),
    "mother": (("annem",), ("mother", "mom", "mum")),
    "father": (("babam",), ("father", "dad")),
    "daughter": (("kizim",), ("daughter",)),
    "son": (("oglum",), ("son",)),
    "child": (("cocugum",), ("child", "kid")),
    "baby": (("bebegim",), ("baby", "infant")),
    "sibling": (("kardesim", "ablam", "abim"), ("sister", "brother")),
    "friend": (("arkadasim",), ("friend",)),
    "grandparent": (("anneannem", "babaannem", "ninem", "dedem"), ("grandmother", "grandfather", "grandma")),
}
_TR_RELATION = {word: key for key, (tr, _) in RELATIONS.items() for word in tr}
_EN_RELATION = {word: key for key, (_, en) in RELATIONS.items() for word in en}
# A Turkish relation word and its case: none or genitive (the one who is or has: "eşim hamile", "annemin
# böbrek hastalığı"), dative (the one given to: "eşime", "kızıma"), accusative (an object: "bebeğimi emziriyorum").
_TR_WORD = re.compile(r"(?<!\w)(" + "|".join(sorted(_TR_RELATION, key=len, reverse=True)) + r")(in|un|a|e|i|u)?(?!\w)")
_EN_WORD = re.compile(
    r"\bmy\s+(?:[\w'-]+\s+){0,3}?(" + "|".join(sorted(_EN_RELATION, key=len, reverse=True)) + r")s?\b"
)
# The asker as the one who is or has: "ben", "benim", "I", "I'm", "me".
_SELF_WORD = re.compile(r"\b(?:ben|benim|i|i'm|im|i've|ive|me|myself)\b")
# A Turkish word in the 1st person: "hamileyim", "emziriyorum", "gebeyim", "değilim", "haftasındayım".
_TR_FIRST_PERSON = re.compile(r"\w*(?:yim|yum|im|um|yiz|iz|uz)\b")

# Who takes the medicine, as a question says it; the last one the patient writes wins (their latest question).
# The asker: "alabilir miyim", "kullanabilir miyim" (any verb but "ver-", give), "can I take", "for me".
_TAKER_SELF = re.compile(
    r"\b(?!ver)\w+[ae]bilir\s?miyim\b|\b(?:alsam|kullansam|icsem|bana|benim icin)\b"
    r"|\b(?:can|could|may|should|shall|do|am)\s+i\b|\bfor\s+me\b"
)
# Someone else, named by the nearest relation written before: "ona", "kullanabilir mi", "verebilir miyim", "can
# she take", "give her" (a relation as the one given to or who takes, "eşime", "can my wife take", is one too).
_TAKER_OTHER = re.compile(
    r"\b(?:ona|onun icin|kendisine)\b|\b\w+[ae]bilir\s?mi\b(?!\w)|\bver\w*[ae]bilir\s?miyim\b"
    r"|\b(?:can|could|may|should|does|is|will)\s+(?:she|he|they)\b|\b(?:give|giving|for|to)\s+(?:her|him|them)\b"
)
# What before "my X" makes X the one who takes the medicine ("can my wife take", "give my son", "for my mother").
_EN_TAKER = re.compile(r"(?<!\w)(?:can|could|may|should|does|is|will|to|for|give|giving)\s+$")


@dataclass(frozen=True)
class Stated:
    """One mention of a state in the patient's words: which, whether its clause denies it, and whose it is."""

    state: str  # "pregnant", "breastfeeding", or a condition id of the drug data ("kidney_disease")
    denied: bool
    subject: str | None  # SELF, a key of RELATIONS, or None where the words name no one


@dataclass(frozen=True)
class Age:
    """One age the patient's words state: its value, its unit ("years" or "months"), and whose it is."""

    value: float
    unit: str
    subject: str | None  # SELF, a key of RELATIONS (BREASTFED among them), PREGNANCY, or None: its clause names no one


@dataclass(frozen=True)
class Turn:
    """The facts of the patient's turn, each as they wrote it (read_turn)."""

    language: str | None  # "tr", "en", or None where no message shows one (conversation_language)
    words: str | None  # the patient's messages, each after the question of ours it answers (patient_words)
    weights_kg: tuple[float, ...]
    weights_lb: tuple[float, ...]
    ages_years: tuple[float, ...]
    ages_months: tuple[float, ...]
    age_word: bool  # a word of age ("yaşında", "months", "old"), durations left out (amounts.gives_age)
    numbers: tuple[float, ...]  # every number written, durations left out
    states: tuple[Stated, ...]  # pregnancy and breastfeeding
    conditions: tuple[Stated, ...]  # the drug data's conditions ("böbrek hastalığım yok": denied)
    about: str | None  # who takes the medicine: SELF, a key of RELATIONS, or None where the words do not say
    ages: tuple[Age, ...] = ()  # each age stated with its unit, and whose it is
    weight_word: bool = False  # a word of weight ("kilosu", "weighs", "pounds": amounts.names_weight)
    compound_ages: tuple[tuple[float, float], ...] = ()  # (years, months) of "2 yaş 3 aylık" (amounts.compound_ages)

    def stated_numbers(self) -> dict[str, list[float]]:
        """Weights ("kg", "lb") and ages ("years", "months") as amounts.stated_numbers gives them."""
        return {
            "kg": list(self.weights_kg),
            "lb": list(self.weights_lb),
            "years": list(self.ages_years),
            "months": list(self.ages_months),
        }

    def gives_age(self, *values: float | None) -> bool:
        """Whether the words give ground for an age: a word of age, or one of values among their numbers."""
        if self.age_word:
            return True
        return among_numbers(self.numbers, *values)

    def gives_weight(self, value: float | None) -> bool:
        """Whether the words give ground for a weight: one stated with its unit ("13 kg", "kilosu 13"), or a word of
        weight and value among their numbers ("Kilosu kaç?" answered "15 civarı")."""
        if self.weights_kg or self.weights_lb:
            return True
        return self.weight_word and among_numbers(self.numbers, value)

    def months_beyond(self, years: float | None) -> float | None:
        """The months the patient writes after years, as one age ("2 yaş 3 aylık": 3 for 2), else None."""
        found = {m for y, m in self.compound_ages if years is not None and abs(y - years) < 1e-9}
        return found.pop() if len(found) == 1 else None

    def fits(self, subject: str | None) -> bool:
        """Whether a fact of subject's is one of the person the medicine is for (either unnamed: it may be)."""
        return subject is None or self.about is None or subject == self.about

    def counts(self, state: str) -> bool:
        """Whether state ("pregnant", "breastfeeding") is stated, not denied, of the person the medicine is for."""
        return any(s.state == state and not s.denied and self.fits(s.subject) for s in self.states)

    def stated_conditions(self) -> list[tuple[str, str]]:
        """(condition id, the patient's words for it) of each condition stated, not denied, of the person the
        medicine is for, in the order written."""
        ids = [s.state for s in self.conditions if not s.denied and self.fits(s.subject) and not self.denies(s.state)]
        if not ids or not self.words:
            return []
        spans = load_db().condition_spans(fold(self.words))
        out: dict[str, str] = {}
        for start, end, cid in spans:
            if cid in ids and cid not in out:
                out[cid] = as_written(self.words, start, end)
        return list(out.items())

    def is_takers(self, age: Age) -> bool:
        """Whether age may be that of the one who takes the medicine: of them or of no one named, and not a
        pregnancy's months, nor the breastfed baby's age when the one breastfeeding takes it."""
        if age.subject == PREGNANCY or (age.subject == BREASTFED and self.counts("breastfeeding")):
            return False
        return self.fits(age.subject)

    def stated_age(self) -> Age | None:
        """The age the patient states of the person the medicine is for, where they state exactly one (one value
        in one unit, however often written); None where they state none or several."""
        ages = [a for a in self.ages if self.is_takers(a)]
        return ages[0] if len({(a.value, a.unit) for a in ages}) == 1 else None

    def someone_elses_age(self, value: float | None) -> bool:
        """Whether the words state value only as the breastfed baby's age or a pregnancy's months, where the one
        breastfeeding or pregnant takes the medicine. (Not a relation's age: who takes it is read less surely,
        "can i giv it to my 5 yr old".)"""
        same = [a for a in self.ages if value is not None and abs(a.value - value) < 1e-9]
        return bool(same) and all(
            a.subject == PREGNANCY or (a.subject == BREASTFED and self.counts("breastfeeding")) for a in same
        )

    def denies(self, condition: str) -> bool:
        """Whether the patient denies condition (an id) for the person the medicine is for and never states it."""
        mine = [s for s in self.conditions if s.state == condition and self.fits(s.subject)]
        return any(s.denied for s in mine) and not any(not s.denied for s in mine)


def conversation_language(messages: list[dict]) -> str | None:
    """The patient's language: that of their latest message that shows one ("tr", "en"), else None."""
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            if lang := patient_language(message["content"]):
                return lang
    return None


def patient_words(messages: list[dict]) -> str | None:
    """The patient's messages, each after the question of ours it answers ("Hamile misiniz?" before "evet"):
    a short reply means what it was asked."""
    said: list[str] = []
    for before, m in zip([{}, *messages], messages, strict=False):
        if m.get("role") != "user" or not isinstance(m.get("content"), str):
            continue
        asked = before.get("content") if before.get("role") == "assistant" else None
        if isinstance(asked, str) and asked.rstrip().endswith("?"):
            said.append(re.split(r"(?<=[.!?\n])\s+", asked.strip())[-1])  # its last sentence: the question
        said.append(m["content"])
    return "\n".join(said) or None


def read_turn(messages: list[dict]) -> Turn:
    """The facts of the patient's words in messages (chat messages: role and content)."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise TypeError("messages must be a list of chat messages (dicts with role and content)")
    words = patient_words(messages)
    text = words or ""
    stated = stated_numbers(text)
    # Line by line: a message ends a clause (patient_words writes one a line), which fold_case's spaces would hide.
    folded = "\n".join(fold_case(line) for line in text.split("\n"))
    relations, mentions = _relations(folded), state_mentions(folded)
    return Turn(
        language=conversation_language(messages),
        words=words,
        weights_kg=tuple(stated["kg"]),
        weights_lb=tuple(stated["lb"]),
        ages_years=tuple(stated["years"]),
        ages_months=tuple(stated["months"]),
        age_word=names_age(text),
        numbers=tuple(written_numbers(text)),
        states=tuple(Stated(m.state, m.denied, _subject(folded, m.start, m.end, m.clause)) for m in mentions),
        conditions=_conditions(folded, relations),
        about=_about(folded),
        ages=_ages(folded, relations, mentions),
        weight_word=names_weight(text),
        compound_ages=tuple(compound_ages(text)),
    )


def read_text(text: str) -> Turn:
    """The facts of one patient message (for a caller with the words alone)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, not {type(text).__name__}")
    return read_turn([{"role": "user", "content": text}])


def _relations(folded: str) -> list[tuple[int, int, str, bool, bool]]:
    """(start, end, key, subject, taker) of every relation word in folded: subject where it may be the one who is
    or has (Turkish without a case or genitive, "eşim hamile", "annemin"; English "my X"), taker where it is the
    one given to or who takes (Turkish dative or "için", "eşime", "kızım için"; "can my wife take", "for my son");
    an accusative ("bebeğimi emziriyorum") is neither."""
    found = []
    for m in _TR_WORD.finditer(folded):
        case = m.group(2) or ""
        subject = case in ("", "in", "un")
        taker = case in ("a", "e") or (not case and bool(re.match(r"\s+icin\b", folded[m.end() :])))
        found.append((m.start(), m.end(), _TR_RELATION[m.group(1)], subject and not taker, taker))
    for m in _EN_WORD.finditer(folded):
        taker = bool(_EN_TAKER.search(folded, 0, m.start()))
        found.append((m.start(), m.end(), _EN_RELATION[m.group(1)], True, taker))
    return sorted(found)


def _subject(folded: str, start: int, end: int, clause: tuple[int, int]) -> str | None:
    """Whose is the mention at start:end of folded: the asker's where its own word is in the 1st person
    ("hamileyim"), else the nearest one named before it in its clause ("eşim hamile", "my pregnant wife", "I'm"),
    else the asker's where one of the next two words is in the 1st person ("hamile değilim"), else None."""
    word_end = re.match(r"\w*", folded[end:]).end() + end  # type: ignore[union-attr]
    if _TR_FIRST_PERSON.fullmatch(folded[start:word_end]) and word_end > end:
        return SELF
    named = [(s, key) for s, _, key, subject, _ in _relations(folded) if subject and clause[0] <= s < start]
    named += [(m.start(), SELF) for m in _SELF_WORD.finditer(folded, clause[0], start)]
    if named:
        return max(named)[1]
    following = folded[word_end : clause[1]].split()[:2]
    if any(_TR_FIRST_PERSON.fullmatch(w) for w in following):
        return SELF
    return None


def _conditions(folded: str, relations: list) -> tuple[Stated, ...]:
    """The drug data's conditions each clause names, denied or not, with the one its clause names (or None)."""
    if not folded.strip():
        return ()
    db = load_db()
    found: list[Stated] = []
    for start, end in clauses(folded):
        present, negated = db.read_conditions(folded[start:end], fuzzy=False)
        if not (present or negated):
            continue
        subject = _named_in(folded, start, end, relations)
        found += [Stated(c, False, subject) for c in present] + [Stated(c, True, subject) for c in negated]
    return tuple(found)


def _named_in(folded: str, start: int, end: int, relations: list, *, any_case: bool = False) -> str | None:
    """The one the clause folded[start:end] names first as one who is or has (a relation or the asker), or None;
    any_case: a relation in any case counts ("oğluma ... 7 yaşında": the age is the son's)."""
    named = [(s, key) for s, _, key, subject, _ in relations if (subject or any_case) and start <= s < end]
    named += [(m.start(), SELF) for m in _SELF_WORD.finditer(folded, start, end)]
    return min(named)[1] if named else None


# "my 2 month old", "my 9 yo girl": an age written after "my" is a child's, whoever else the clause names.
_MY_AGED = re.compile(r"\bmy\s+\d")


def _ages(folded: str, relations: list, mentions: list) -> tuple[Age, ...]:
    """Each age each clause states ("babam 82 yaşında", "2 yaşındaki kızım"), with the one its clause names: the
    ages of a clause about breastfeeding are the breastfed baby's, its months of a pregnancy the pregnancy's."""
    found: list[Age] = []
    for start, end in clauses(folded):
        stated = stated_numbers(folded[start:end])
        states = {m.state for m in mentions if start <= m.start < end}
        for unit in ("years", "months"):
            for value in stated[unit]:
                if "breastfeeding" in states:
                    subject = BREASTFED
                elif "pregnant" in states and unit == "months":
                    subject = PREGNANCY
                elif _MY_AGED.search(folded, start, end):
                    subject = "child"
                else:
                    subject = _named_in(folded, start, end, relations, any_case=True)
                found.append(Age(value, unit, subject))
    return tuple(found)


def _about(folded: str) -> str | None:
    """Who takes the medicine, by the last question of it in folded: SELF, a relation, or None (not said, or
    someone the words do not name)."""
    markers = [(m.start(), m.end(), SELF) for m in _TAKER_SELF.finditer(folded)]
    markers += [(m.start(), m.end(), "other") for m in _TAKER_OTHER.finditer(folded)]
    relations = _relations(folded)
    markers += [(s, e, key) for s, e, key, _, taker in relations if taker]
    if not markers:
        return None
    start, end, who = max(markers)
    if who != "other":
        return who
    # The one named in the question ("can my wife take") or the nearest before it ("Eşim hamile, ona ...").
    named = [(s, key) for s, _, key, _, _ in relations if s < end]
    return max(named)[1] if named else None
