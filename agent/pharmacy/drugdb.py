"""Drug data for the pharmacy tools: loading, validation, name normalisation and matching.

The data ships as JSON in ``agent/pharmacy/data`` (``conditions``, ``drugs``, ``products``, ``interactions``,
``dosing``). Each file is validated against its ``*.schema.json`` and cross-checked (every reference must
resolve, names must be unique) the first time it is used; a broken file raises :class:`DrugDataError`
naming the file and the entry, e.g. ``agent/pharmacy/data/drugs.json: entry 'parol' (index 3): 'usage_tr' is a
required property``.

Names match regardless of case, Turkish dotted/dotless i, diacritics and small typos (rapidfuzz); a
name that fits several entries comes back as candidates instead of a guess.
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

from .text import fold, looks_turkish, squash  # noqa: F401  (looks_turkish: part of this module's API)

DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_FILES = ("conditions", "drugs", "products", "interactions", "dosing")
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

# rapidfuzz scores (0-100). A typo is corrected only when the whole name is this close and no other
# entry is within MARGIN; otherwise close names are offered as candidates.
ACCEPT_SCORE = 80
MARGIN = 8
CANDIDATE_SCORE = 70
SUGGEST_SCORE = 55
MIN_FUZZY_LEN = 4  # shorter queries (and names) are never auto-corrected or partially matched

# Words that qualify a product name rather than name it ("Parol 500 mg tablet", "Parol'ün"). A bare
# number stays: "Calpol 6" must not silently become "Calpol" (another strength).
_UNITS = frozenset("mg mcg g ml iu".split())
_NOISE_WORDS = _UNITS | frozenset(
    "tablet tablets tab tb film kapli draje enterik kapsul kaps capsule capsules surup syrup suspansiyon "
    "suspension pediatrik damla drops krem cream jel gel sprey spray ampul flakon efervesan effervescent "
    "forte fort bid ilac ilaci hap un in nin nun a e i u da de dan den ya ye yi".split()
)
_AMOUNT = re.compile(r"\d+(?:[.,]\d+)?(?:mg|mcg|g|ml|iu)?")


class DrugDataError(ValueError):
    """A data file is missing, malformed or inconsistent."""


def _strip_noise(key: str) -> str:
    words = key.split()
    kept = []
    for i, word in enumerate(words):
        unit_next = i + 1 < len(words) and words[i + 1] in _UNITS
        if word in _NOISE_WORDS or (_AMOUNT.fullmatch(word) and (unit_next or not word.isdigit())):
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

    status: Literal["found", "ambiguous", "unknown"]
    target: Target | None = None
    lang: Lang = "en"
    corrected: bool = False  # found through typo tolerance, not an exact name
    candidates: list[Target] = field(default_factory=list)


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


def _load_file(path: Path, name: str) -> list[Entry]:
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
    return doc["entries"]


def load_db(data_dir: str | Path | None = None) -> DrugDB:
    """The validated data in data_dir (default: the packaged ``agent/pharmacy/data``), read once per directory."""
    return _cached_db(DATA_DIR if data_dir is None else Path(data_dir).resolve())


@lru_cache(maxsize=8)
def _cached_db(base: Path) -> DrugDB:
    return read_db(base)


def read_db(base: Path) -> DrugDB:
    """Load, validate and index the data files in base, without caching."""
    return DrugDB({name: _load_file(base / f"{name}.json", name) for name in DATA_FILES}, base)


# ---------------------------------------------------------------- the database


class DrugDB:
    """Validated, indexed drug data. Build it with :func:`load_db`."""

    def __init__(self, files: dict[str, list[Entry]], base: Path) -> None:
        self._base = base
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

    def is_name(self, text: str) -> bool:
        """Whether text is a brand, alias, ingredient name or synonym, exactly once case, accents, spaces and
        punctuation are set aside ("loperamid-hidroklorür" is "Loperamid Hidroklorür")."""
        return bool(text) and squash(fold(text)) in self._exact

    def resolve(self, query: str) -> Resolution:
        """Match a brand or ingredient name (any case, Turkish or English, small typos)."""
        key = fold(query)
        turkish = looks_turkish(query)
        for k in (key, _strip_noise(key)):
            if k and (hit := self._exact.get(squash(k))):
                return Resolution("found", hit[0], "tr" if turkish or hit[1] == "tr" else "en")
        key = _strip_noise(key) or key
        sq = squash(key)
        if not sq:
            return Resolution("unknown")
        whole: dict[Target, tuple[float, _Name]] = {}
        best: dict[Target, float] = {}
        for _, score, idx in process.extract(
            sq, self._squashed, scorer=fuzz.ratio, limit=20, score_cutoff=SUGGEST_SCORE
        ):
            name = self._names[idx]
            if score > whole.get(name.target, (-1.0, name))[0]:
                whole[name.target] = (score, name)
            best[name.target] = max(best.get(name.target, 0.0), score)
        if len(sq) >= MIN_FUZZY_LEN:
            for _, score, idx in process.extract(
                key, self._keys, scorer=fuzz.WRatio, limit=20, score_cutoff=SUGGEST_SCORE
            ):
                target = self._names[idx].target
                best[target] = max(best.get(target, 0.0), score)
        ranked = sorted(best, key=lambda t: -best[t])
        if whole and len(sq) >= MIN_FUZZY_LEN:
            top = max(whole, key=lambda t: whole[t][0])
            score, name = whole[top]
            runner_up = max((best[t] for t in ranked if t != top), default=0.0)
            if score >= ACCEPT_SCORE and score - runner_up >= MARGIN:
                lang: Lang = "tr" if turkish or name.lang == "tr" else "en"
                return Resolution("found", top, lang, corrected=True)
        close = [t for t in ranked if best[t] >= CANDIDATE_SCORE]
        if close:
            cutoff = best[close[0]] - 15
            return Resolution(
                "ambiguous", lang="tr" if turkish else "en", candidates=[t for t in close if best[t] >= cutoff][:5]
            )
        return Resolution("unknown", lang="tr" if turkish else "en", candidates=ranked[:3])

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
        for cid, cond in self.conditions.items():
            for text in [cond["name_tr"], cond["name_en"], *cond["synonyms"]]:
                syns.setdefault(fold(text), cid)
        self._cond_syns = syns
        self._cond_keys = sorted(syns, key=len, reverse=True)

    def match_conditions(self, text: str) -> list[str]:
        """Condition ids named in free text (Turkish or English); [] when none is recognised."""
        key = fold(text)
        if key in self._cond_syns:
            return [self._cond_syns[key]]
        spans: list[tuple[int, int, str]] = []
        for syn in self._cond_keys:
            if len(syn) < MIN_FUZZY_LEN:
                continue
            # Prefix match at a word start, so Turkish suffixes ("astımım", "ülserim") still match.
            for m in re.finditer(r"(?<!\w)" + re.escape(syn), key):
                spans.append((m.start(), m.end(), self._cond_syns[syn]))
        kept = [s for s in spans if not any(o[0] <= s[0] and s[1] <= o[1] and o[1] - o[0] > s[1] - s[0] for o in spans)]
        ids = list(dict.fromkeys(cid for _, _, cid in sorted(kept)))
        if ids:
            return ids
        hit = process.extractOne(key, self._cond_keys, scorer=fuzz.ratio, score_cutoff=85)
        return [self._cond_syns[hit[0]]] if hit else []

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
