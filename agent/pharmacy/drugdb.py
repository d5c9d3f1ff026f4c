"""Drug data for the pharmacy tools: loading, validation, name normalisation and matching.

The data ships as JSON in ``agent/pharmacy/data`` (``conditions``, ``drugs``, ``products``, ``interactions``,
``dosing``). Each file is validated against its ``*.schema.json`` and cross-checked (every reference must
resolve, names must be unique) the first time it is used; a broken file raises :class:`DrugDataError`
naming the file and the entry, e.g. ``agent/pharmacy/data/drugs.json: entry 'parol' (index 3): 'usage_tr' is a
required property``.

Names match regardless of case, Turkish dotted/dotless i, diacritics and INN spelling (English, French,
Turkish). A real medicine this data does not cover (one of the ~1,100 substances of the ANSM interaction
thesaurus, see ``reference.json``) is ``not_in_database``, never read as a neighbour. A typo is corrected only
when it is one or two letters from a single name with the same first letter and no reference substance is as
close; the result says it was corrected. Anything else comes back as candidates, never as a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

import jsonschema
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from .text import fold, inn_key, looks_turkish, squash, turkish_stems  # noqa: F401  (looks_turkish: part of this module's API)

DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_FILES = ("conditions", "drugs", "products", "interactions", "dosing")
# Derived from the ANSM thesaurus by scripts/build_reference.py (not hand-edited).
REFERENCE_FILE = "reference"
# A Literal (not str) so get_json_schema gives the tools an enum; SECTIONS is the same list as a tuple.
Section = Literal[
    "indications",
    "dosage",
    "contraindications",
    "warnings",
    "side_effects",
    "interactions",
    "pregnancy",
    "pediatric",
    "overdose",
]
SECTIONS: tuple[str, ...] = get_args(Section)
LIQUID_FORMS = frozenset({"syrup", "suspension", "oral_solution", "drops"})

Lang = Literal["tr", "en"]
Entry = dict[str, Any]

# A typo is corrected only in a name of at least MIN_CORRECT_LEN letters, by at most one edit (two from
# LONG_NAME letters: a transposition, a missing, extra or wrong letter), keeping the first letter: sibling
# medicines differ in their first letters (famciclovir/aciclovir, duloxetine/fluoxetine, lansoprazole/pantoprazole).
MIN_CORRECT_LEN = 5
LONG_NAME = 9
# rapidfuzz scores (0-100) of the names offered as candidates or suggestions (never acted on). At 55 nine in ten
# ordinary words of the dev questions ("karnimin sag", "defa") drew a suggestion, and unlisted medicines
# unrelated ones ("Ozempic": carbamazepine); at 70 one in four, while four in five names with two wrong letters
# (not corrected, "nurafin") still get theirs (scripts/suggestion_scores.py measures both).
CANDIDATE_SCORE = 70
SUGGEST_SCORE = 70
STEM_LEN = 3  # a suggestion starts with the same three letters as the name written
MIN_FUZZY_LEN = 4  # shorter queries (and names) are never partially matched

# Words that qualify a product name rather than name it ("Parol 500 mg tablet", "Parol'ün"). A bare
# number stays: "Calpol 6" must not silently become "Calpol" (another strength); so do "Forte" and "Plus"
# (A-ferin Forte is not A-ferin), and the first word ("A-ferin" is not "ferin").
_UNITS = frozenset("mg mcg g ml iu".split())
_NOISE_WORDS = _UNITS | frozenset(
    "tablet tablets tab tb film kapli draje enterik kapsul kaps capsule capsules surup syrup suspansiyon "
    "suspension pediatrik damla drops krem cream jel gel sprey spray ampul flakon efervesan effervescent "
    "bid ilac ilaci hap un in nin nun a e i u da de dan den ya ye yi".split()
)
_AMOUNT = re.compile(r"\d+(?:[.,]\d+)?(?:mg|mcg|g|ml|iu)?")


# Conditions: a clause ends at punctuation or "but"; a negation in it ("yok", "değil", "no", "without") means
# the patient does not have what it names, unless they say they are unsure.
_CLAUSE = re.compile(r"\s*(?:[,;.!?]|\b(?:ama|fakat|ancak|but|however)\b)\s*")
_NEGATION = re.compile(
    r"\b(?:yok|yoktur|degil\w*|olmadi|olmayan|bulunmuyor|hic|no|not|without|never|none|denies|dont|doesnt)\b"
    r"|\b(?:don|doesn|haven|hasn|didn) t\b"
)
_UNSURE = re.compile(r"\b(?:emin|belki|sanirim|galiba|bilmiyorum|sure|maybe|might|perhaps|unsure)\b")


_DIGITS = re.compile(r"\d+")


class DrugDataError(ValueError):
    """A data file is missing, malformed or inconsistent."""


def _same_words(words: list[str], name_key: str) -> bool:
    """Whether a name written as words can be a typo of name_key: one word either way (letters are read as
    typed), or word for word, each word the same or one letter from it ("A-ferin Hot" is not "A-ferin Fort")."""
    other = name_key.split()
    if len(words) == 1 and len(other) == 1:
        return True
    if len(words) != len(other):
        return len(words) == 1  # "aferinforte" typed as one word is read on its letters
    pairs = zip(words, other, strict=True)
    return all(a == b or (min(len(a), len(b)) >= 4 and OSA.distance(a, b) <= 1) for a, b in pairs)


def _strip_noise(key: str) -> str:
    words = key.split()
    kept = []
    for i, word in enumerate(words):
        unit_next = i + 1 < len(words) and words[i + 1] in _UNITS
        if i > 0 and word in _NOISE_WORDS or (_AMOUNT.fullmatch(word) and (unit_next or not word.isdigit())):
            continue
        kept.append(word)
    return " ".join(kept)


@dataclass(frozen=True)
class Target:
    """What a name refers to: a product (brand) or an active ingredient."""

    kind: Literal["product", "ingredient"]
    id: str


@dataclass(frozen=True)
class _Name:
    key: str
    target: Target
    lang: Lang | None  # None: spelled the same in Turkish and English


@dataclass
class Resolution:
    """Outcome of matching a user-supplied name."""

    status: Literal["found", "ambiguous", "unknown", "not_in_database"]
    target: Target | None = None
    lang: Lang = "en"
    corrected: bool = False  # found through typo tolerance, not an exact name
    candidates: list[Target] = field(default_factory=list)
    substance: str | None = None  # not_in_database: the reference substance the name is
    line_of: Target | None = None  # unknown: a name of ours with words added ("A-ferin Hot"), another product


# ---------------------------------------------------------------- loading and validation


def _show(path: Path) -> str:
    try:
        return path.resolve().relative_to(DATA_DIR.parents[2]).as_posix()
    except ValueError:
        return str(path)


def _entry_key(entry: Any) -> str:
    if not isinstance(entry, dict):
        return "?"
    if "id" in entry:
        return str(entry["id"])
    return f"{entry.get('a', '?')}+{entry.get('b', '?')}"


@cache
def _schema(name: str) -> jsonschema.Draft202012Validator:
    # Schemas always come from the package: a test pointing load_db at a copy validates the copy.
    schema = json.loads((DATA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _load_file(path: Path, name: str) -> Any:
    """The validated document (for entry files, its list of entries)."""
    shown = _show(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DrugDataError(f"{shown}: file is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DrugDataError(f"{shown}: not valid JSON: {exc}") from None

    def order(err: jsonschema.ValidationError) -> tuple[int, int]:
        p = list(err.absolute_path)
        return (p[1] if len(p) > 1 and isinstance(p[1], int) else -1, len(p))

    errors = sorted(_schema(name).iter_errors(doc), key=order)
    if errors:
        err = errors[0]
        p = list(err.absolute_path)
        message = err.message if len(err.message) <= 300 else err.message[:300] + "..."
        if len(p) > 1 and p[0] == "entries" and isinstance(p[1], int):
            where = f"entry '{_entry_key(doc['entries'][p[1]])}' (index {p[1]})"
            inner = "/".join(str(x) for x in p[2:])
            raise DrugDataError(f"{shown}: {where}: {message}" + (f" (at {inner})" if inner else ""))
        raise DrugDataError(f"{shown}: {message}")
    return doc["entries"] if name in DATA_FILES else doc


def load_db(data_dir: str | Path | None = None) -> DrugDB:
    """The validated data in data_dir (default: the packaged ``agent/pharmacy/data``), read once per directory."""
    return _cached_db(DATA_DIR if data_dir is None else Path(data_dir).resolve())


@lru_cache(maxsize=8)
def _cached_db(base: Path) -> DrugDB:
    return read_db(base)


def read_db(base: Path) -> DrugDB:
    """Load, validate and index the data files in base, without caching."""
    files = {name: _load_file(base / f"{name}.json", name) for name in DATA_FILES}
    return DrugDB(files, base, _load_file(base / f"{REFERENCE_FILE}.json", REFERENCE_FILE))


# ---------------------------------------------------------------- the database


class DrugDB:
    """Validated, indexed drug data. Build it with :func:`load_db`."""

    def __init__(self, files: dict[str, list[Entry]], base: Path, reference: dict[str, Any]) -> None:
        self._base = base
        self.reference = reference
        self.conditions = self._by_id("conditions", files["conditions"])
        self.ingredients = self._by_id("drugs", files["drugs"])
        self.products = self._by_id("products", files["products"])
        self.dose_rules = self._by_id("dosing", files["dosing"])
        self.interactions = files["interactions"]
        self._classes = {c for ing in self.ingredients.values() for c in ing["classes"]}
        self._check_references()
        self._build_name_index()
        self._build_condition_index()
        self._build_interaction_index()
        self._build_reference_index()
        self.by_ingredient_set: dict[frozenset[str], list[str]] = {}
        for pid, prod in self.products.items():
            self.by_ingredient_set.setdefault(frozenset(prod["ingredients"]), []).append(pid)

    # -- checks

    def _fail(self, file: str, index: int, entry: Entry, message: str) -> DrugDataError:
        where = f"entry '{_entry_key(entry)}' (index {index})"
        return DrugDataError(f"{_show(self._base / f'{file}.json')}: {where}: {message}")

    def _by_id(self, file: str, entries: list[Entry]) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for i, entry in enumerate(entries):
            if entry["id"] in out:
                raise self._fail(file, i, entry, "duplicate id")
            out[entry["id"]] = entry
        return out

    def _check_references(self) -> None:
        for i, ing in enumerate(self.ingredients.values()):
            for cond in ing["safety"]["conditions"]:
                if cond not in self.conditions:
                    raise self._fail("drugs", i, ing, f"unknown condition '{cond}' (not in conditions.json)")
        for i, prod in enumerate(self.products.values()):
            for ing_id in prod["ingredients"]:
                if ing_id not in self.ingredients:
                    raise self._fail("products", i, prod, f"unknown ingredient '{ing_id}'")
            if len(prod["ingredients"]) > 1 and any("mg_per_ml" in p for p in prod["presentations"]):
                raise self._fail("products", i, prod, "mg_per_ml is only meaningful for one ingredient")
            for pres in prod["presentations"]:
                if "mg_per_ml" in pres and pres["form"] not in LIQUID_FORMS:
                    raise self._fail("products", i, prod, f"mg_per_ml on a non-liquid form '{pres['form']}'")
        for i, ix in enumerate(self.interactions):
            for ref in (ix["a"], ix["b"]):
                if ref.startswith("class:"):
                    if ref[6:] not in self._classes:
                        raise self._fail("interactions", i, ix, f"unknown class '{ref}' (no ingredient has it)")
                elif ref not in self.ingredients:
                    raise self._fail("interactions", i, ix, f"unknown ingredient '{ref}'")
            if ix["a"] == ix["b"] and not ix["a"].startswith("class:"):
                raise self._fail("interactions", i, ix, "an ingredient cannot interact with itself")
        for i, rule in enumerate(self.dose_rules.values()):
            if rule["id"] not in self.ingredients:
                raise self._fail("dosing", i, rule, f"unknown ingredient '{rule['id']}'")
            if self.ingredients[rule["id"]]["high_risk"]:
                raise self._fail("dosing", i, rule, "high-risk ingredients must not have a dose rule")

    # -- names

    def _names_of(self) -> Iterable[tuple[str, int, Entry, str, Target, Lang | None]]:
        for i, ing in enumerate(self.ingredients.values()):
            target = Target("ingredient", ing["id"])
            for text in [ing["name_tr"], *ing["synonyms_tr"]]:
                yield "drugs", i, ing, text, target, "tr"
            for text in [ing["name_en"], *ing["synonyms_en"]]:
                yield "drugs", i, ing, text, target, "en"
        for i, prod in enumerate(self.products.values()):
            target = Target("product", prod["id"])
            for text in [prod["brand"], *prod["aliases"]]:
                yield "products", i, prod, text, target, prod["lang"]

    def _build_name_index(self) -> None:
        exact: dict[str, tuple[Target, Lang | None]] = {}
        for file, i, entry, text, target, lang in self._names_of():
            key = squash(fold(text))
            if not key:
                raise self._fail(file, i, entry, f"name {text!r} has no letters or digits")
            if key in exact and exact[key][0] != target:
                other = exact[key][0]
                raise self._fail(file, i, entry, f"name {text!r} is already used by {other.kind} '{other.id}'")
            if key in exact and exact[key][1] != lang:
                lang = None  # the same spelling in both languages says nothing about the user's language
            exact[key] = (target, lang)
        self._exact = exact
        # Fuzzy matching runs over the spaced keys; very short names (ASA, NAC) only match exactly.
        self._names = [
            _Name(fold(text), target, exact[squash(fold(text))][1])
            for _, _, _, text, target, _ in self._names_of()
            if len(squash(fold(text))) >= MIN_FUZZY_LEN
        ]
        self._keys = [n.key for n in self._names]
        self._squashed = [squash(n.key) for n in self._names]
        # INN spellings (ciprofloxacine, siprofloksasin) of our names, each with the targets it can mean.
        spelled: dict[str, dict[Target, Lang | None]] = {}
        for _, _, _, text, target, _ in self._names_of():
            if key := inn_key(text):
                spelled.setdefault(key, {})[target] = exact[squash(fold(text))][1]
        self._inn = {k: list(v.items()) for k, v in spelled.items()}

    def is_name(self, text: str) -> bool:
        """Whether text is a brand, alias, ingredient name or synonym, exactly once case, accents, spaces and
        punctuation are set aside ("loperamid-hidroklorür" is "Loperamid Hidroklorür")."""
        return bool(text) and squash(fold(text)) in self._exact

    def resolve(self, query: str) -> Resolution:
        """Match a brand or ingredient name (any case, Turkish, English or French spelling, small typos)."""
        key = fold(query)
        turkish = looks_turkish(query)
        stripped = _strip_noise(key)
        keys = [k for k in dict.fromkeys((key, stripped)) if k]

        def lang_of(name_lang: Lang | None) -> Lang:
            return "tr" if turkish or name_lang == "tr" else "en"

        for k in keys:
            if hit := self._exact.get(squash(k)):
                return Resolution("found", hit[0], lang_of(hit[1]))
        for k in keys:
            spelled = self._inn.get(inn_key(k), [])
            if len(spelled) == 1:
                return Resolution("found", spelled[0][0], lang_of(spelled[0][1]))
            if spelled:
                return Resolution("ambiguous", lang=lang_of(None), candidates=[t for t, _ in spelled])
            if substance := self._foreign.get(inn_key(k)):
                return Resolution("not_in_database", lang=lang_of(None), substance=substance)
        sq = squash(stripped or key)
        if not sq:
            return Resolution("unknown")
        # A typo is read in the name as written: with the qualifiers stripped, "Aerin Forte" would be one
        # letter from A-ferin (another product) instead of far from A-ferin Forte.
        if typo := self._typo(squash(key), inn_key(key), key.split()):
            return typo if typo.status != "found" else Resolution("found", typo.target, lang_of(typo.lang), True)
        # A brand with a word added or changed ("A-ferin Hot", "Zyrtec D", "Tylenol PM", "Delix Plus") is another
        # product of the line, with other ingredients: never a typo of a sibling, never suggested as one.
        if line := self._line_of(stripped or key):
            # the start of longer names of the line ("Nurofen Cold": Nurofen Cold & Flu) offers those, not the brand
            longer = list(dict.fromkeys(n.target for n in self._names if n.key.startswith((stripped or key) + " ")))
            if len(longer) > 1:
                return Resolution("ambiguous", lang=lang_of(None), candidates=longer[:5])
            return Resolution("unknown", lang=lang_of(None), candidates=longer, line_of=None if longer else line)
        return self._candidates(stripped or key, sq, lang_of(None))

    def _line_of(self, key: str) -> Target | None:
        """The product or ingredient whose exact name starts key, when key adds words with letters to it ("Calpol 6"
        adds a strength: offered with Calpol 6 Plus as candidates, not declared another product)."""
        words = key.split()
        for n in range(len(words) - 1, 0, -1):
            if not any(ch.isalpha() for w in words[n:] for ch in w):
                continue
            if hit := self._exact.get(squash(" ".join(words[:n]))):
                return hit[0]
        return None

    def _typo(self, sq: str, spelled: str, words: list[str] | None = None) -> Resolution | None:
        """The one name sq is a typo of, or the reference substance it is closer to; None when neither.
        words: the name as written, word by word; a typo keeps them (_same_words)."""
        words = words or [sq]
        if len(sq) < MIN_CORRECT_LEN:
            return None
        allowed = 1 if len(sq) < LONG_NAME else 2
        near: dict[Target, tuple[int, _Name]] = {}
        for _, dist, idx in process.extract(sq, self._squashed, scorer=OSA.distance, score_cutoff=allowed, limit=None):
            name = self._names[idx]
            if not _same_words(words, name.key):
                continue
            if dist < near.get(name.target, (allowed + 1, name))[0]:
                near[name.target] = (dist, name)
        foreign = (
            process.extractOne(spelled, self._foreign_keys, scorer=OSA.distance, score_cutoff=allowed)
            if spelled
            else None
        )
        best = min((d for d, _ in near.values()), default=allowed + 1)
        if foreign is not None and foreign[1] < best and foreign[0][0] == spelled[0]:
            # Closer to a medicine we do not cover than to any of ours. As close to both ("Mortin": Motrin,
            # morphine): neither is read; the names are offered.
            return Resolution("not_in_database", substance=self._foreign[foreign[0]], corrected=True)
        if len(near) != 1:
            return None
        target, (dist, name) = next(iter(near.items()))
        # Same first letter; and numbers are never corrected ("Calpol 6" is not "Calpol": another strength).
        if squash(name.key)[0] != sq[0] or _DIGITS.findall(squash(name.key)) != _DIGITS.findall(sq):
            return None
        # "sertra" is one letter from Septra but the start of sertraline: a guess either way.
        if any(other.target != target and squash(other.key).startswith(sq) for other in self._names):
            return None
        return Resolution("found", target, name.lang or "en", corrected=True)

    def _first_name(self, targets: Iterable[Target], sq: str) -> Iterable[tuple[Target, str]]:
        """The targets with a name starting like sq (its first two letters), with that name."""
        for target in targets:
            name = next((n.key for n in self._names if n.target == target and squash(n.key)[:2] == sq[:2]), None)
            if name is not None:
                yield target, name

    def _candidates(self, key: str, sq: str, lang: Lang) -> Resolution:
        """Close names offered, never chosen: ambiguous when several fit, unknown (with suggestions) otherwise."""
        whole: dict[Target, float] = {}
        for _, score, idx in process.extract(
            sq, self._squashed, scorer=fuzz.ratio, limit=20, score_cutoff=SUGGEST_SCORE
        ):
            # A candidate's name shares the stem written (its first three letters): a name that only shares letters
            # is another medicine (Concor: Zocor, Pradaxa: Apranax, Valtrex: divalproex), an ordinary word none.
            if self._squashed[idx][:STEM_LEN] != sq[:STEM_LEN]:
                continue
            target = self._names[idx].target
            whole[target] = max(whole.get(target, 0.0), score)
        best = dict(whole)
        # Partial matches ("Nurofen Cold and Flu" holds "Nurofen") are suggested, never offered as a match.
        if len(sq) >= MIN_FUZZY_LEN:
            for _, score, idx in process.extract(
                key, self._keys, scorer=fuzz.WRatio, limit=20, score_cutoff=SUGGEST_SCORE
            ):
                # only a name the query holds as its first word: "Valtrex" partly matches "valproic acid"
                if self._names[idx].key.split()[0] != key.split()[0]:
                    continue
                target = self._names[idx].target
                best[target] = max(best.get(target, 0.0), score)
        ranked = sorted(best, key=lambda t: -best[t])
        # Offered as matches: names close as a whole that start the same way ("Calpol 6": Calpol, Calpol 6 Plus).
        close = sorted(
            (t for t, n in self._first_name(whole, sq) if whole[t] >= CANDIDATE_SCORE), key=lambda t: -whole[t]
        )
        if close:
            close = [t for t in close if whole[t] >= whole[close[0]] - 15][:5]
        if len(close) > 1:
            return Resolution("ambiguous", lang=lang, candidates=close)
        return Resolution("unknown", lang=lang, candidates=(close or ranked)[:3])

    # -- the interaction reference

    def _build_reference_index(self) -> None:
        ref = self.reference
        missing = sorted(set(self.ingredients) - set(ref["ingredients"]))
        if missing:
            raise DrugDataError(
                f"{_show(self._base / 'reference.json')}: no reference mapping for {', '.join(missing)}: "
                "run python scripts/build_reference.py"
            )
        ours = {s for m in ref["ingredients"].values() if m["match"] in ("name", "spelling") for s in m["substances"]}
        self._foreign = {}
        for substance in ref["substances"]:
            if substance not in ours and (key := inn_key(substance)) and key not in self._inn:
                self._foreign.setdefault(key, substance)
        # English and Turkish INN spellings of every substance (scripts/build_reference.py: "valproic acid",
        # "valproik asit"), each naming one substance.
        for key, substance in ref.get("spellings", {}).items():
            if substance not in ours and key not in self._inn:
                self._foreign.setdefault(key, substance)
        self._foreign_keys = list(self._foreign)
        self._reference_keys = {key for substance in ref["substances"] if (key := inn_key(substance))}
        self._reference_keys |= set(ref.get("spellings", {}))
        self._classes_of = ref.get("classes", {})
        self._by_side: dict[str, list[tuple[str, str, str, list[str]]]] = {}
        for a, b, levels in ref.get("entries", []):
            self._by_side.setdefault(a, []).append((b, a, b, levels))
            if a != b:
                self._by_side.setdefault(b, []).append((a, a, b, levels))
        self._reference_pairs = {frozenset((p["a"], p["b"])): p["entries"] for p in ref["pairs"]}
        # Herbals and foods the reference lists (St John's wort, grapefruit), by the names patients write.
        self.foods = ref.get("foods", {})
        self._food_names = {
            squash(fold(name)): food_id
            for food_id, food in self.foods.items()
            for name in (food["name_tr"], food["name_en"], *food["names"])
        }
        self._foods_not_covered = {squash(fold(name)) for name in ref.get("foods_not_covered", [])}

    def food_of(self, text: str) -> str | None:
        """The herbal or food of the reference text names ("sarı kantaron", "greyfurt suyu", "kantaronla"), or None."""
        for key in self._food_keys(text):
            if key in self._food_names:
                return self._food_names[key]
        return None

    def is_uncovered_food(self, text: str) -> bool:
        """Whether text names a herbal or food the reference does not list (ginkgo, zerdeçal): not covered."""
        return any(key in self._foods_not_covered for key in self._food_keys(text))

    @staticmethod
    def _food_keys(text: str) -> list[str]:
        words = fold(text).split()
        keys = [squash(fold(text))]
        if words:  # a Turkish ending on the last word: "kantaronla", "greyfurt suyuyla"
            keys += [squash(" ".join([*words[:-1], fold(stem)])) for stem in turkish_stems(words[-1], 3)]
        return keys

    def substance_name(self, substance: str, lang: Lang) -> str:
        """A reference substance as the patient's language spells it ("Valproic acid", "Valproik asit")."""
        name = self.reference.get("names", {}).get(substance, {}).get(lang, substance)
        return name[:1].upper() + name[1:]

    def substances_of(self, ingredient_id: str) -> list[str]:
        """The reference substances an ingredient is (none when the reference does not cover it)."""
        return list(self.reference["ingredients"][ingredient_id]["substances"])

    def substance_entries(self, a: list[str], b: list[str]) -> list[tuple[str, list[str]]]:
        """Every thesaurus entry ("SIDE + SIDE", its level codes) between substances a and substances b, through
        their classes (verapamil + atenolol: BÊTA-BLOQUANTS + VÉRAPAMIL)."""
        reach_a = {x for s in a for x in (s, *self._classes_of.get(s, ()))}
        reach_b = {x for s in b for x in (s, *self._classes_of.get(s, ()))}
        found: dict[str, list[str]] = {}
        for side in sorted(reach_a):
            for other, first, second, levels in self._by_side.get(side, []):
                if other in reach_b:
                    found.setdefault(f"{first.upper()} + {second.upper()}", levels)
        return sorted(found.items())

    def is_reference_substance(self, text: str) -> bool:
        """Whether text is a substance of the interaction reference, in any INN spelling."""
        return len(text) >= MIN_FUZZY_LEN and inn_key(text) in self._reference_keys

    def in_reference(self, ingredient_id: str) -> bool:
        """Whether the reference covers this ingredient (its pairs were checked against it)."""
        return bool(self.reference["ingredients"][ingredient_id]["substances"])

    def reference_between(self, a: str, b: str) -> list[Entry]:
        """The reference's entries for two different ingredients ([] when it lists none)."""
        return self._reference_pairs.get(frozenset((a, b)), [])

    # -- lookups

    def ingredient_ids(self, target: Target) -> list[str]:
        """The active ingredient ids a target stands for."""
        if target.kind == "product":
            return list(self.products[target.id]["ingredients"])
        return [target.id]

    def display_name(self, target: Target, lang: Lang) -> str:
        if target.kind == "product":
            return self.products[target.id]["brand"]
        return self.ingredients[target.id][f"name_{lang}"]

    def ingredient_names(self, ids: Iterable[str], lang: Lang) -> str:
        return " + ".join(self.ingredients[i][f"name_{lang}"] for i in ids)

    # -- conditions

    def _build_condition_index(self) -> None:
        syns: dict[str, str] = {}
        patterns: list[tuple[re.Pattern[str], str]] = []
        for cid, cond in self.conditions.items():
            for text in [cond["name_tr"], cond["name_en"], *cond["synonyms"]]:
                syns.setdefault(fold(text), cid)
            patterns += [(re.compile(p), cid) for p in cond.get("patterns", [])]
        self._cond_syns = syns
        self._cond_keys = sorted(syns, key=len, reverse=True)
        self._cond_patterns = patterns

    def is_taken(self, text: str) -> bool:
        """Whether text names something taken beside a medicine that is no medicine: a food or herbal of the
        reference, or a condition marked `taken` (alcohol), as the data writes it."""
        found = self.match_conditions(text, fuzzy=False)
        return self.food_of(text) is not None or any(self.conditions[c].get("taken") for c in found)

    def diseases(self, text: str) -> list[str]:
        """The condition ids text names as the data writes them (no near spelling) when it names a disease and
        nothing else: not a medicine, nor something taken (is_taken: a food, alcohol); else []."""
        if self.is_taken(text) or self.resolve(text).target is not None:
            return []
        return self.match_conditions(text, fuzzy=False)

    def match_conditions(self, text: str, *, fuzzy: bool = True) -> list[str]:
        """Condition ids named in free text (Turkish or English) and not negated; [] when none is recognised.
        fuzzy=False: only names and patterns of the data, no near spelling."""
        present, _ = self.read_conditions(text, fuzzy=fuzzy)
        return present

    def condition_named(self, text: str) -> str | None:
        """The condition id whose name or synonym text is exactly (folded: "Yüksek tansiyon", "asthma"), else None."""
        return self._cond_syns.get(fold(text))

    def read_conditions(self, text: str, *, fuzzy: bool = True) -> tuple[list[str], list[str]]:
        """(present, negated) condition ids in free text: "astımım yok" and "no kidney disease" are negated."""
        if cid := self.condition_named(text):
            return [cid], []
        key = fold(text)
        present: list[str] = []
        negated: list[str] = []
        for clause in _CLAUSE.split(key):
            found = self._conditions_in(clause)
            negative = bool(_NEGATION.search(clause)) and not _UNSURE.search(clause)
            (negated if negative else present).extend(c for c in found if c not in present + negated)
        if present or negated or not fuzzy:
            return present, negated
        hit = process.extractOne(key, self._cond_keys, scorer=fuzz.ratio, score_cutoff=85)
        return ([self._cond_syns[hit[0]]] if hit else []), []

    def _conditions_in(self, key: str) -> list[str]:
        return list(dict.fromkeys(cid for _, _, cid in self.condition_spans(key)))

    def condition_spans(self, key: str) -> list[tuple[int, int, str]]:
        """(start, end, condition id) of each condition wording in key (a fold()ed text), in order, a longer
        wording over one it contains."""
        spans: list[tuple[int, int, str]] = []
        for syn in self._cond_keys:
            # Prefix match at a word start, so Turkish suffixes ("astımım", "ülserim") still match; short names
            # ("ckd", "ibd") only as whole words.
            end = r"(?!\w)" if len(syn) < MIN_FUZZY_LEN else ""
            for m in re.finditer(r"(?<!\w)" + re.escape(syn) + end, key):
                spans.append((m.start(), m.end(), self._cond_syns[syn]))
        for pattern, cid in self._cond_patterns:
            spans += [(m.start(), m.end(), cid) for m in pattern.finditer(key)]
        # A longer wording wins over one it contains ("ülseratif kolit" over "ülser", "tansiyonum düşük" over
        # "tansiyon").
        kept = [s for s in spans if not any(o[0] <= s[0] and s[1] <= o[1] and o[1] - o[0] > s[1] - s[0] for o in spans)]
        return sorted(kept)

    # -- interactions

    def _build_interaction_index(self) -> None:
        index: dict[frozenset[str], list[Entry]] = {}
        for i, ix in enumerate(self.interactions):
            pair = frozenset((ix["a"], ix["b"]))
            if pair in index:
                raise self._fail("interactions", i, ix, "duplicate pair")
            index[pair] = [ix]
        self._ix = index

    def _keys_for(self, ingredient_id: str) -> list[str]:
        return [ingredient_id, *(f"class:{c}" for c in self.ingredients[ingredient_id]["classes"])]

    def interactions_between(self, a: str, b: str) -> list[Entry]:
        """Known interactions between two different ingredients; the most specific entries win."""
        if a == b:
            return []
        found: list[tuple[int, Entry]] = []
        for ka in self._keys_for(a):
            for kb in self._keys_for(b):
                for ix in self._ix.get(frozenset((ka, kb)), []):
                    found.append(((not ka.startswith("class:")) + (not kb.startswith("class:")), ix))
        if not found:
            return []
        top = max(spec for spec, _ in found)
        # An ingredient-level entry (warfarin + aspirin) replaces the class one it refines.
        return list({id(ix): ix for spec, ix in found if spec == top}.values())
