"""The medicines in a reply's calls as the patient's latest message names them.

The model chooses the tool; which medicine a call is about is what the patient wrote. A 135M model copies the
medicine of an earlier turn after the patient has moved on ("tamam. bi de arveles ne işe yarıyo" looked up as
the Delix asked about before), writes a name with the Turkish ending left on ("cipralexin"), and answers "Aerius
ile losartan ne işe yarıyor?" with one lookup. So a call about one medicine (a `drug` argument) is about the
only medicine the latest message names, when the call names another, and medicines written side by side, joined
only by "ile", "ve", "and", "or", a comma and the like, each get the call the model wrote for one of them. An
active ingredient written for the one product the patient named with it is that product (the dose of "parasetamol"
for the Calpol they have is Calpol's). A message that names no medicine, or several, leaves the call to the model:
nothing is guessed.

A list of medicines (check_interactions' `drugs`) is held to the same words: the model writes a phrase beside the
food ("her sabah" for "greyfurt suyu"), one medicine twice ("augmentin", "augmentin"; Zocor and its simvastatin),
or keeps the medicine of an earlier turn when the latest message names two others. So an entry that the data reads
as nothing (no medicine, food or condition), the same medicine again, and a medicine only an earlier message
names, is replaced by what the latest message names that the list lacks: its medicines, then its foods and
conditions as the data reads them ("greyfurt", "alkol"); a medicine only by what can be taken with it, not by a
disease ("i'm diabetic"). Where the message names nothing more, the entry stays as the model wrote it (the tool
lists an unknown name as unchecked).
And a list asked of one medicine ("is that ok with the other two") gets the medicines the patient named before,
one of which a small model leaves out (with_earlier), as does a message that asks of the patient's medicines
together ("hepsini beraber", "ikisinin de muadili": group_asked), where a call about one medicine gets a call for
each.
"""

from __future__ import annotations

import re

from .drugdb import Target, load_db
from .named import Named, distinct, medicine_spans, named_medicines, patient_medicines, same_medicine
from .router import route_text
from .text import fold
from .turn import patient_words

# What may stand between two medicines written side by side as one list ("X ile Y", "X, Y and Z", "X ya da Y").
# The conjunctions are a closed class of each language: Turkish (folded) and English.
_JOINED = re.compile(r"[\s,/&+]*(?:(?:ile|ve|veya|ya da|yada|and|or|with|plus)[\s,]*)?")


def _joined(text: str, a: Named, b: Named) -> bool:
    return _JOINED.fullmatch(fold(text[a.end : b.start])) is not None


def side_by_side(text: str) -> list[list[Named]]:
    """The groups of two or more medicines text writes side by side (joined by a conjunction or a comma), in
    order; each medicine once in a group."""
    spans = medicine_spans(text)
    groups: list[list[Named]] = []
    for prev, span in zip([None, *spans], spans, strict=False):
        if prev is not None and _joined(text, prev, span):
            if not any(same_medicine(n.target, span.target) for n in groups[-1]):
                groups[-1].append(span)
        else:
            groups.append([span])
    return [g for g in groups if len(g) > 1]


def _their_product(drug: str, conversation: list[dict]) -> str | None:
    """The product the patient named whose active ingredient drug is, where drug is an ingredient they did not name
    and exactly one product they named has it (a dose of "parasetamol" for the Calpol they have is Calpol's)."""
    db = load_db()
    target = db.resolve(drug).target
    if target is None or target.kind != "ingredient":
        return None
    named = [(n, db.resolve(n).target) for n in named_medicines(patient_words(conversation) or "")]
    if any(t == target for _, t in named):
        return None
    products = [n for n, t in named if t is not None and t.kind == "product" and target.id in db.ingredient_ids(t)]
    return products[0] if len(products) == 1 else None


_WORD = re.compile(r"\w+")


def non_medicines(text: str) -> list[str]:
    """The foods and herbals of the reference and the conditions of the data that text writes, each as its fewest
    words from where it starts ("greyfurt" of "greyfurt suyu", "alkol" of "bi kadeh alkol"), in order, once each."""
    db = load_db()
    words = list(_WORD.finditer(text or ""))
    found: dict[str, tuple[int, str]] = {}
    for length in range(1, 4):  # the fewest words first: the data reads a name inside a longer span too
        for i in range(len(words) - length + 1):
            j = i + length - 1
            if any(not text[words[k].end() : words[k + 1].start()].isspace() for k in range(i, j)):
                continue  # words joined by spaces only, as a name is written
            span = text[words[i].start() : words[j].end()]
            key = db.food_of(span) or next(iter(db.match_conditions(span, fuzzy=False)), None)
            if key is not None and key not in found:
                found[key] = (words[i].start(), span)
    return [span for _, span in sorted(found.values())]


def grounded_list(names: list[str], conversation: list[dict]) -> list[str]:
    """names (a call's medicines) with each entry the data reads as nothing, the same medicine twice, and a medicine
    only an earlier message names replaced by what the latest message names that names lacks (module doc)."""
    db = load_db()
    text = route_text(conversation)
    named = distinct(named_medicines(text))
    latest = [db.resolve(n).target for n in named]
    targets = [db.resolve(n).target if isinstance(n, str) else None for n in names]

    def read(n: str) -> bool:  # a food or condition the data reads (check_interactions answers it as one)
        return db.food_of(n) is not None or bool(db.match_conditions(n, fuzzy=False))

    def replaced(i: int) -> tuple[bool, bool]:
        """(whether entry i gives way, whether it is a medicine the list already holds)."""
        name, target = names[i], targets[i]
        twice = target is not None and any(same_medicine(target, t) for t in targets[:i])
        nothing = target is None and isinstance(name, str) and not read(name)
        earlier = target is not None and bool(latest) and not any(same_medicine(target, t) for t in latest)
        return twice or nothing or earlier, twice

    verdicts = [replaced(i) for i in range(len(names))]
    if not any(gives_way for gives_way, _ in verdicts):
        return list(names)  # the usual list: the latest message's words are not read again
    wanted = [n for n, t in zip(named, latest, strict=True) if not any(same_medicine(x, t) for x in targets)]
    # a food or condition only where the list has none: one the model wrote as the data reads it stays
    if not any(isinstance(x, str) and read(x) for x in names):
        wanted += non_medicines(text)
    out: list[str] = []
    for i, (name, (gives_way, twice)) in enumerate(zip(names, verdicts, strict=True)):
        # A medicine gives way to what can be taken with it, not to a disease ("can i take it with my glucophage?
        # i'm diabetic": cipro stays); a phrase the data reads as nothing gives way to either ("inhaler": asthma).
        fits = [w for w in wanted if targets[i] is None or not db.diseases(w)] if gives_way else []
        if fits:
            out.append(fits[0])
            wanted.remove(fits[0])
        elif not twice:
            out.append(name)
    return out


# Words that refer to the medicines named before as a group: all of them, or a number of them ("ikisi", "both").
# Closed classes of each language (quantifiers, numerals as pronouns): Turkish (folded) and English.
_ALL = re.compile(r"\b(?:hepsi\w*|tumu\w*|all of (?:them|these|those)|them all|all together)\b")
_COUNTED = (
    (2, re.compile(r"\b(?:ikisi\w*|both|the two of them|(?:these|those) two)\b")),
    (3, re.compile(r"\b(?:ucu(?:nu|nun|ne)?|all three|the three of them|(?:these|those) three)\b")),
)


def group_asked(conversation: list[dict]) -> list[str]:
    """The medicines the patient named in the conversation, where their latest message asks of them together
    ("hepsini beraber", "ikisinin de muadili", "both of them") and the words say which: all of them for a word of
    all; the N they named for a word of N, where they named exactly N and the message itself names fewer (not
    "abim viagra ve nitrostat kullanıyor, ikisi beraber olur mu" after another medicine). Else []."""
    if sum(m.get("role") == "user" for m in conversation) < 2:
        return []
    text = route_text(conversation)
    latest, named = fold(text), patient_medicines(conversation)
    if len(named) > 1 and _ALL.search(latest):
        return named
    for count, words in _COUNTED:
        if words.search(latest) and len(named) == count and len(distinct(named_medicines(text))) < count:
            return named
    return []


def with_earlier(names: list[str], conversation: list[dict]) -> list[str]:
    """names (a call's medicines) with every medicine the patient named earlier in the conversation that the list
    lacks, where the latest message names at most one medicine, food or condition: what it is to be taken with is
    then what the patient named before ("is that ok with the other two", "alongside the two heart tablets I
    mentioned"). A latest message that names two leaves the list to them ("another thing, can X and Y go
    together?"), unless it asks of the patient's medicines together (group_asked: "hepsini beraber")."""
    if sum(m.get("role") == "user" for m in conversation) < 2:
        return list(names)
    latest = route_text(conversation)
    if len(distinct(named_medicines(latest))) + len(non_medicines(latest)) > 1 and not group_asked(conversation):
        return list(names)
    db = load_db()
    targets = [db.resolve(n).target if isinstance(n, str) else None for n in names]
    if not any(targets):
        return list(names)  # nothing of the list is a medicine of the conversation to add to
    out = list(names)
    for name in patient_medicines(conversation):
        target = db.resolve(name).target
        if not any(same_medicine(target, t) for t in targets):
            out.append(name)
            targets.append(target)
    return out


def _drug(call: dict) -> str | None:
    """The call's `drug` argument (one medicine), or None where it has none."""
    args = call.get("arguments")
    drug = args.get("drug") if isinstance(args, dict) else None
    return drug if isinstance(drug, str) else None


class NamedMedicines:
    """CallsCheck: each call's medicine as the patient's latest message names it."""

    name = "named_medicines"
    note = (
        "a call's medicine was set to the one the patient's words name, a call added for each medicine written "
        "beside it or asked of together, or a list's entry set to what the latest message names"
    )

    def calls(self, calls: list[dict], conversation: list[dict]) -> list[dict]:
        text = route_text(conversation)
        db = load_db()
        names = distinct(named_medicines(text))
        out = []
        only = db.resolve(names[0]).target if len(names) == 1 else None
        # a call is about the named medicine when it names it exactly (a typo the tools correct is the patient's
        # name written wrong: "cipralexin" is written as "cipralex")
        exact = [d for c in calls if (d := _drug(c)) is not None and db.is_name(d)]
        asked = only is not None and any(same_medicine(db.resolve(d).target, only) for d in exact)
        for call in calls:
            drug = _drug(call)
            listed = call["arguments"].get("drugs") if isinstance(call.get("arguments"), dict) else None
            if isinstance(listed, list) and listed:
                drugs = with_earlier(grounded_list(listed, conversation), conversation)
                # an active ingredient for the one product the patient named with it, as for one medicine below
                drugs = [(_their_product(d, conversation) or d) if isinstance(d, str) else d for d in drugs]
                call = {**call, "arguments": {**call["arguments"], "drugs": drugs}}
            if drug is not None and only is not None and not asked:
                call = {**call, "arguments": {**call["arguments"], "drug": names[0]}}
            elif drug is not None and (product := _their_product(drug, conversation)) is not None:
                call = {**call, "arguments": {**call["arguments"], "drug": product}}
            out.append(call)

        def covered(tool: str | None, target: Target | None) -> bool:  # a call of tool about that medicine is there
            return any(
                c.get("name") == tool and (d := _drug(c)) is not None and same_medicine(db.resolve(d).target, target)
                for c in out
            )

        for group in side_by_side(text):
            for call in list(out):
                drug = _drug(call)
                if drug is None or not any(same_medicine(db.resolve(drug).target, n.target) for n in group):
                    continue
                for other in group:
                    if not covered(call.get("name"), other.target):
                        out.append({**call, "arguments": {**call["arguments"], "drug": other.name}})
        # a question of the patient's medicines together ("ikisinin de muadili var mı"): a call for each
        for other in group_asked(conversation):
            target = db.resolve(other).target
            for call in list(out):
                if _drug(call) is not None and not covered(call.get("name"), target):
                    out.append({**call, "arguments": {**call["arguments"], "drug": other}})
        return out
