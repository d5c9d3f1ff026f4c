"""Pharmacy tools for the PPSF agent: plain typed functions, usable by an LLM or directly from Python.

``PHARMACY_TOOLS`` lists them in prompt order; ``transformers.utils.get_json_schema(fn)`` builds each
schema from the type hints and docstring. All data is local (``agent/pharmacy/data``, see :mod:`agent.pharmacy.drugdb`).

Every tool returns a small JSON-serialisable dict and never raises on bad input. Failures come back as
``{"error": {"code": ..., "message": ...}}`` with one of these codes:

- ``invalid_input``: wrong type, empty or over-long text (names: 200 characters), characters or
  wording that do not belong in a name (newlines, ``@`` markers, "ignore previous instructions"),
  a non-numeric, NaN or infinite number, an unknown section, a wrong argument name.
- ``out_of_range``: a number outside its limits (weight > 0 and <= 300 kg, age 0-120 years).
- ``unknown_drug``: no medicine matches; ``suggestions`` lists close names, if any. calculate_dose,
  check_contraindications (and check_interactions, per name) also answer this for a name that is only a
  typo of one: they never act on a guess, the patient confirms the name first.
- ``ambiguous_drug``: the name fits several medicines; ``matches`` lists them (search_drug returns
  these as a normal result instead).
- ``not_in_database``: a real medicine (a substance of the ANSM thesaurus) that this data does not cover;
  it is never answered as another one. check_interactions checks it against the thesaurus alone (its pairs carry
  ``substance: true``; ``substances`` lists such names) instead of listing it as unknown.

An unknown_drug that adds a word to a brand ("A-ferin Hot", "Tylenol PM") is another product of the line: it comes
with ``line_of`` (the brand) and no suggestion. Herbals and foods of the thesaurus ("sarı kantaron", "greyfurt
suyu") are paired by check_interactions (``food: true``); a reference entry whose level depends on the dose is
answered at the product's level (``dose_use``) or lists each level (``levels``).
- ``internal_error``: an unexpected failure (a bug); the details are logged, not returned.

A problem only the patient can fix (a weight or an age out of range, no age given) comes with a message in the
patient's words and ``"for_patient": true`` when ``language`` is given.

A name read through typo tolerance is answered (search_drug, get_drug_info, find_alternatives) with
``query`` (what was written) and ``read_as`` (the medicine it was read as), so the answer can say so.

Language: text comes in the patient's language when the caller passes ``language`` (the agent does, from
the patient's messages: :func:`agent.pharmacy.text.patient_language`; the model never sees or sets it).
Without it, Turkish when the name looks Turkish (Turkish letters, a Turkish spelling such as
"parasetamol", or a brand sold in Turkey such as Parol), otherwise English. search_drug also
returns the other language's usage (``usage_en`` or ``usage_tr``). Numeric strings such as "20" or
"20,5" are accepted for numbers.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import numbers
import re
import typing
import unicodedata
from collections.abc import Callable
from typing import Any

from .dosing import Dose, compute_dose, dose_in_ml
from .drugdb import LIQUID_FORMS, SECTIONS, DrugDataError, DrugDB, Lang, Resolution, Section, Target, load_db
from .growth import implausible
from .text import decimal, fold, fold_case, looks_turkish, state_mentions
from .turn import Turn, read_text

logger = logging.getLogger(__name__)


NAME_MAX = 200
MAX_DRUGS = 10
MAX_CONDITIONS = 20
WEIGHT_MAX_KG = 300.0
AGE_MAX_YEARS = 120.0
ELDERLY_FROM_YEARS = 65

DISCLAIMER = {
    "tr": "Bilgi amaçlıdır; hekim veya eczacınıza danışın.",
    "en": "For information only; consult a doctor or pharmacist.",
}


def result_language(result: dict) -> Lang:
    """The language a tool result is written in, as its disclaimer shows (the patient's, which the agent asked for)."""
    return "tr" if result.get("disclaimer") == DISCLAIMER["tr"] else "en"


# A pair neither source lists: "not checked" when the reference does not cover one of them; otherwise it was
# checked and nothing is listed, which is still not proof of safety.
NOT_CHECKED = {"tr": "referansta yok: kontrol edilmedi", "en": "not in the reference: not checked"}
NOT_LISTED = {
    "tr": "referansta yok: ANSM tezaurusu ve bu veritabanı bu ikili için etkileşim listelemiyor; bu, güvenli "
    "olduğu anlamına gelmez",
    "en": "not in the reference: neither the ANSM thesaurus nor this database lists an interaction for this pair; "
    "that is not proof they are safe together",
}
# What to do when only the reference lists a pair (its advice is not translated entry by entry).
LEVEL_MANAGEMENT = {
    "contraindicated": {"tr": "Birlikte kullanılmamalı.", "en": "Do not use together."},
    "major": {
        "tr": "Hekim aksini söylemedikçe birlikte kullanmayın.",
        "en": "Avoid the combination unless a doctor decides otherwise.",
    },
    "moderate": {
        "tr": "Yalnızca hekim veya eczacının önerdiği önlemlerle (izlem, doz ayarı) birlikte kullanın.",
        "en": "Use together only with the precautions a doctor or pharmacist advises (monitoring, dose change).",
    },
    "minor": {
        "tr": "Dikkate alın; ikisini birlikte kullandığınızı hekim veya eczacınıza söyleyin.",
        "en": "Take it into account; tell your doctor or pharmacist you use both.",
    },
}
SEVERITY_RANK = {"contraindicated": 0, "major": 1, "moderate": 2, "minor": 3}
VERDICT_RANK = {"ok": 0, "caution": 1, "unknown": 2, "avoid": 3}
FORM_NAMES = {
    "tablet": ("tablet", "tablet"),
    "film_tablet": ("film tablet", "film-coated tablet"),
    "enteric_tablet": ("enterik tablet", "gastro-resistant tablet"),
    "modified_release_tablet": ("uzatılmış salımlı tablet", "modified-release tablet"),
    "chewable_tablet": ("çiğneme tableti", "chewable tablet"),
    "effervescent_tablet": ("efervesan tablet", "effervescent tablet"),
    "sublingual_tablet": ("dil altı tablet", "sublingual tablet"),
    "capsule": ("kapsül", "capsule"),
    "syrup": ("şurup", "syrup"),
    "suspension": ("süspansiyon", "suspension"),
    "oral_solution": ("oral çözelti", "oral solution"),
    "drops": ("damla", "drops"),
    "injection": ("enjeksiyon", "injection"),
    "gel": ("jel", "gel"),
    "cream": ("krem", "cream"),
    "spray": ("sprey", "spray"),
    "mouthwash": ("gargara", "mouthwash"),
    "inhaler": ("inhaler", "inhaler"),
    "lozenge": ("pastil", "lozenge"),
    "suppository": ("fitil", "suppository"),
}
_SECTION_ALIASES = {
    "dose": "dosage",
    "doz": "dosage",
    "dozaj": "dosage",
    "pozoloji": "dosage",
    "kullanim": "dosage",
    "indication": "indications",
    "endikasyon": "indications",
    "endikasyonlar": "indications",
    "uses": "indications",
    "usage": "indications",
    "contraindication": "contraindications",
    "kontrendikasyon": "contraindications",
    "kontrendikasyonlar": "contraindications",
    "warning": "warnings",
    "uyari": "warnings",
    "uyarilar": "warnings",
    "side_effect": "side_effects",
    "yan_etki": "side_effects",
    "yan_etkiler": "side_effects",
    "adverse_reactions": "side_effects",
    "interaction": "interactions",
    "etkilesim": "interactions",
    "etkilesimler": "interactions",
    "gebelik": "pregnancy",
    "hamilelik": "pregnancy",
    "lactation": "pregnancy",
    "emzirme": "pregnancy",
    "breastfeeding": "pregnancy",
    "children": "pediatric",
    "paediatric": "pediatric",
    "cocuk": "pediatric",
    "cocuklar": "pediatric",
    "overdosage": "overdose",
    "doz_asimi": "overdose",
    "zehirlenme": "overdose",
}
_NAME_PUNCT = frozenset(" -+/.,'’()%&_?!")
_CONDITION_PUNCT = _NAME_PUNCT | frozenset(":;")
# Phrases that steer a model rather than name a medicine or a condition.
_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(instructions?|previous|above|prior|prompt|rules)\b"
    r"|\bsystem\s*prompt\b|\byou\s+are\s+now\b|\bjailbreak\b"
    r"|\b(önceki|yukarıdaki)\s+\w*\s*(talimat|komut|mesaj)|\btalimat\w*\s+(yok\s+say|unut)",
    re.IGNORECASE,
)
_TRUE = frozenset({"true", "yes", "evet", "1"})
_FALSE = frozenset({"false", "no", "hayir", "0", "none", "null"})


class ToolError(Exception):
    """A tool input problem, returned to the caller as {"error": {...}}.

    says: the message in words a patient reads, by language ("tr", "en"), for a problem only the patient can
    fix (a weight or an age out of range); the tool answers in it when the agent gives the patient's language.
    The model copies an error's message into its answer, and "weight_kg must be > 0" is no answer."""

    def __init__(self, code: str, message: str, says: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.says, self.extra = code, message, says, extra

    def result(self, language: str | None = None) -> dict:
        """The error result; with says and the patient's language, its message is theirs (for_patient: true)."""
        if self.says and language in self.says:
            return {"error": {"code": self.code, "message": self.says[language], "for_patient": True, **self.extra}}
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def _tool(fn: Callable[..., dict]) -> Callable[..., dict]:
    """Turn bad arguments and ToolErrors into error results; unexpected bugs into internal_error."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> dict:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            return ToolError("invalid_input", f"{fn.__name__}: {str(exc)[:150]}").result()
        try:
            return fn(*bound.args, **bound.kwargs)
        except ToolError as exc:
            language = bound.arguments.get("language")
            return exc.result(language if isinstance(language, str) else None)
        except DrugDataError:
            raise  # broken packaged data is a release bug, not bad input: fail loudly
        except Exception:
            logger.exception("pharmacy tool %s failed", fn.__name__)
            return ToolError("internal_error", f"{fn.__name__} failed unexpectedly").result()

    # The agent, not the model, says which language the patient writes (agent.pharmacy.language).
    # The facts of the patient's words too (a Turn; patient_text, their words, for a caller without one), for
    # tools that check the model copied them (calculate_dose's weight and age, check_contraindications' pregnancy,
    # breastfeeding and conditions).
    context = ("language", "patient", "patient_text")
    wrapper.context_arguments = tuple(p for p in context if p in signature.parameters)  # type: ignore[attr-defined]
    if "patient" in signature.parameters:
        # get_json_schema(fn) reads the wrapper's hints and knows no Turn: the model never sees it (tool_schema
        # drops context arguments), so it is described as Any and the function stays a typed tool as before.
        wrapper.__annotations__ = typing.get_type_hints(fn) | {"patient": Any}
    return wrapper


# ---------------------------------------------------------------- input checks


def _patient(patient: Any, patient_text: Any) -> Turn | None:
    """The facts of the patient's words a tool is given (a Turn, or patient_text read into one); None without
    words."""
    if patient is not None and patient_text is not None:
        raise ToolError("invalid_input", "give patient or patient_text, not both")
    if patient_text is not None:
        if not isinstance(patient_text, str):
            raise ToolError("invalid_input", f"patient_text must be a string, not {type(patient_text).__name__}")
        patient = read_text(patient_text)
    if patient is not None and not isinstance(patient, Turn):
        raise ToolError("invalid_input", f"patient must be a Turn, not {type(patient).__name__}")
    return patient if patient is not None and patient.words else None


def _text(value: Any, field: str, max_len: int = NAME_MAX, punct: frozenset[str] = _NAME_PUNCT) -> str:
    if not isinstance(value, str):
        raise ToolError("invalid_input", f"{field} must be a string, not {type(value).__name__}")
    if len(value) > max_len:
        raise ToolError("invalid_input", f"{field} is too long ({len(value)} characters, max {max_len})")
    # Checked before stripping: a newline or tab anywhere could open a new PPSF block.
    for ch in value:
        if not (ch.isalnum() or ch in punct or unicodedata.category(ch).startswith("M")):
            raise ToolError("invalid_input", f"{field} contains a character not allowed here: {ch!r}")
    text = value.strip()
    if not text:
        raise ToolError("invalid_input", f"{field} is empty")
    if _INSTRUCTION.search(text):
        raise ToolError("invalid_input", f"{field} looks like an instruction, not a name")
    return text


def _number(value: Any, field: str, low: float, high: float, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ToolError("invalid_input", f"{field} must be a number")
    if isinstance(value, str):
        if len(value) > 32 or decimal(value) is None:
            raise ToolError("invalid_input", f"{field} must be a number, got {value[:32]!r}")
        value = value.strip().replace(",", ".")
    try:
        x = float(value)
    except (OverflowError, ValueError):
        raise ToolError("invalid_input", f"{field} must be a number") from None
    if not math.isfinite(x):
        raise ToolError("invalid_input", f"{field} must be a finite number")
    if x > high or x < low or (low_open and x == low):
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        says = {lang: text.format(value=x, high=high) for lang, text in _RANGE_SAYS.get(field, {}).items()}
        raise ToolError("out_of_range", f"{field} must be {bound} and <= {high:g}, got {x:g}", says or None)
    return x


_AGE_NEEDED = {
    "tr": "Doz hesabı için yaş gerekli: lütfen yaşı (yıl ya da ay olarak) yazın.",
    "en": "A dose needs the age: please give the age (in years or months).",
}
_WEIGHT_NEEDED = {
    "tr": "Doz hesabı için kilo gerekli: lütfen kiloyu (kg olarak) yazın.",
    "en": "A dose needs the weight: please give the weight (in kg).",
}
# What a patient reads when the number they gave (or the model copied) is out of range.
_RANGE_SAYS = {
    "weight_kg": {
        "tr": "Kilo 0'dan büyük ve en fazla {high:g} kg olmalı; verilen: {value:g} kg. Lütfen kiloyu kontrol edin.",
        "en": "The weight must be more than 0 and at most {high:g} kg; given: {value:g} kg. Please check the weight.",
    },
    "age_years": {
        "tr": "Yaş 0 ile {high:g} arasında olmalı; verilen: {value:g}. Lütfen yaşı kontrol edin.",
        "en": "The age must be between 0 and {high:g} years; given: {value:g}. Please check the age.",
    },
    "age_months": {
        "tr": "Ay olarak yaş 0 ile {high:g} arasında olmalı; verilen: {value:g}. Lütfen yaşı kontrol edin.",
        "en": "The age in months must be between 0 and {high:g}; given: {value:g}. Please check the age.",
    },
}


def maybe_number(value: Any) -> float | None:
    """value as a number when it reads as one (for comparing with the patient's numbers), else None."""
    try:
        return _number(value, "value", -math.inf, math.inf)
    except ToolError:
        return None


def _age(years: Any, months: Any) -> float | None:
    """The age in years from what the patient wrote: years, months, or both ("1 yaş 6 aylık": 1 and 6).

    The model copies the number and its unit; the tool converts (a 135M model writes "9 aylık" as 9 years).
    """
    if years is None and months is None:
        return None
    age = 0.0 if years is None else _number(years, "age_years", 0.0, AGE_MAX_YEARS)
    if months is not None:
        age += _number(months, "age_months", 0.0, AGE_MAX_YEARS * 12) / 12
    if age > AGE_MAX_YEARS:
        says = {lang: text.format(value=age, high=AGE_MAX_YEARS) for lang, text in _RANGE_SAYS["age_years"].items()}
        raise ToolError("out_of_range", f"the age must be <= {AGE_MAX_YEARS:g} years, got {age:g}", says)
    return round(age, 4)


def _flag(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and len(value) <= 10:
        key = fold(value)
        if key in _TRUE or key in _FALSE:
            return key in _TRUE
    raise ToolError("invalid_input", f"{field} must be true or false")


def _text_list(value: Any, field: str, low: int, high: int, punct: frozenset[str] = _NAME_PUNCT) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ToolError("invalid_input", f"{field} must be a list of strings, not {type(value).__name__}")
    if not low <= len(value) <= high:
        raise ToolError("invalid_input", f"{field} must hold {low} to {high} items, got {len(value)}")
    return [_text(item, f"{field}[{i}]", punct=punct) for i, item in enumerate(value)]


def _section(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 40:
        raise ToolError("invalid_input", "section must be one of: " + ", ".join(SECTIONS))
    key = fold(value).replace(" ", "_")
    key = _SECTION_ALIASES.get(key, key)
    if key not in SECTIONS:
        raise ToolError("invalid_input", "section must be one of: " + ", ".join(SECTIONS))
    return key


# ---------------------------------------------------------------- shared helpers


def _brief(db: DrugDB, target: Target, lang: Lang) -> dict:
    return {
        "drug": db.display_name(target, lang),
        "active_ingredient": db.ingredient_names(db.ingredient_ids(target), lang),
    }


def _find(db: DrugDB, name: str, *, exact: bool = False) -> tuple[Target, Lang, bool]:
    """Resolve a validated name or raise unknown_drug / ambiguous_drug / not_in_database. exact: a typo is not
    acted on (unknown_drug, with the name it may be) -- for the tools whose answer depends on the medicine."""
    res = db.resolve(name)
    if res.status == "found" and res.target is not None:
        if res.corrected and exact:
            raise ToolError(
                "unknown_drug",
                f"'{name}' is not an exact medicine name; confirm it with the patient (it may be one of suggestions)",
                suggestions=[db.display_name(res.target, res.lang)],
            )
        return res.target, res.lang, res.corrected
    raise _unresolved(db, name, res)


def _unresolved(db: DrugDB, name: str, res: Resolution) -> ToolError:
    if res.status == "not_in_database":
        return ToolError(
            "not_in_database",
            f"'{name}' is a medicine this database does not cover; no other medicine stands in for it",
        )
    if res.status == "ambiguous":
        return ToolError(
            "ambiguous_drug",
            f"'{name}' matches several medicines; use one of matches",
            matches=[_brief(db, t, res.lang) for t in res.candidates],
        )
    if res.line_of is not None:
        line = db.display_name(res.line_of, res.lang)
        return ToolError(
            "unknown_drug",
            f"'{name}' is not in the drug database: it is another product than {line} (its ingredients may differ); "
            "not covered, nothing stands in for it",
            suggestions=[],
            line_of=line,
        )
    return ToolError(
        "unknown_drug",
        f"'{name}' is not in the drug database",
        suggestions=[db.display_name(t, res.lang) for t in res.candidates],
    )


def _header(db: DrugDB, target: Target, lang: Lang, corrected: bool, query: str) -> dict:
    out = _brief(db, target, lang)
    if corrected:  # a near miss: show what was written and what it was read as
        out["query"] = query
        out["read_as"] = out["drug"]
    return out


def _forms(product: dict, lang: Lang) -> list[str]:
    idx = 0 if lang == "tr" else 1
    return [f"{p['strength']} {FORM_NAMES[p['form']][idx]}" for p in product["presentations"]]


def _brands(db: DrugDB, product_ids: list[str], lang: Lang, limit: int, exclude: str = "") -> list[str]:
    # Brands sold under the asker's language first: a Turkish question wants Turkish brands.
    ids = sorted((p for p in product_ids if p != exclude), key=lambda p: db.products[p]["lang"] != lang)
    return [db.products[p]["brand"] for p in ids[:limit]]


def _years(age: float, lang: Lang) -> str:
    if age < 1:
        months = round(age * 12)
        return f"{months} ay" if lang == "tr" else f"{months} months"
    return f"{age:g} yaş" if lang == "tr" else f"{age:g} years"


def _language(value: Any) -> Lang | None:
    """The patient's language a caller passes ("tr", "en"), or None: the name's language decides."""
    if value is None or value in ("tr", "en"):
        return value
    raise ToolError("invalid_input", "language must be 'tr' or 'en'")


def _other(lang: Lang) -> Lang:
    return "en" if lang == "tr" else "tr"


# ---------------------------------------------------------------- tools


@_tool
def search_drug(drug: str, language: Lang | None = None) -> dict:
    """Look up a medicine by brand or active-ingredient name, in Turkish or English.

    Args:
        drug: Brand or active-ingredient name, e.g. "Parol" or "parasetamol".
        language: The patient's language, "tr" or "en"; by default the language of the name.

    Returns:
        drug, active_ingredient, usage, brands, forms and status (Rx/OTC); matches if the name is ambiguous.
    """
    name = _text(drug, "drug")
    chosen = _language(language)
    db = load_db()
    res = db.resolve(name)
    res.lang = chosen or res.lang
    if res.status == "ambiguous":
        message = {"tr": "Birden fazla ilaç eşleşti; birini seçin.", "en": "Several medicines match; pick one."}
        return {
            "query": name,
            "matches": [_brief(db, t, res.lang) for t in res.candidates],
            "message": message[res.lang],
        }
    target, lang, corrected = _find(db, name)
    lang = _language(language) or lang
    out = _header(db, target, lang, corrected, name)
    other = _other(lang)
    ids = db.ingredient_ids(target)
    if target.kind == "product":
        product = db.products[target.id]
        source = product if "usage_tr" in product else db.ingredients[ids[0]]
        out["usage"] = source[f"usage_{lang}"]
        out[f"usage_{other}"] = source[f"usage_{other}"]
        out["brands"] = _brands(db, db.by_ingredient_set[frozenset(ids)], lang, 6, exclude=target.id)
        out["forms"] = _forms(product, lang)
        out["status"] = product["status"]
        if "note_tr" in product:
            out["note"] = product[f"note_{lang}"]
    else:
        ing = db.ingredients[target.id]
        out["usage"] = ing[f"usage_{lang}"]
        out[f"usage_{other}"] = ing[f"usage_{other}"]
        out["brands"] = _brands(db, db.by_ingredient_set.get(frozenset(ids), []), lang, 6)
        combos = [
            pid for key, pids in db.by_ingredient_set.items() if target.id in key and len(key) > 1 for pid in pids
        ]
        if combos:
            out["combinations"] = _brands(db, combos, lang, 4)
        out["status"] = ing["status"]
        # A Turkish asker reads the legal status of the products sold in Turkey (TİTCK), not the ingredient's
        # status elsewhere: paracetamol is OTC in the US, Parol is a prescription medicine.
        turkish = {
            db.products[p]["status"]
            for p in db.by_ingredient_set.get(frozenset(ids), [])
            if db.products[p]["lang"] == "tr"
        }
        if lang == "tr" and len(turkish) == 1 and turkish != {ing["status"]}:
            out["status"] = next(iter(turkish))
            out["status_note"] = _TURKISH_STATUS[out["status"]]
    if any(db.ingredients[i]["high_risk"] for i in ids):
        out["high_risk"] = True
    return out


_TURKISH_STATUS = {
    "Rx": "Türkiye'de bu etkin maddeyi tek başına içeren ürünler reçeteli ilaçtır (TİTCK).",
    "OTC": "Türkiye'de bu etkin maddeyi tek başına içeren ürünler reçetesiz satılır.",
}


@_tool
def get_drug_info(drug: str, section: Section, language: Lang | None = None) -> dict:
    """Get one section of a medicine's label information.

    Args:
        drug: Brand or active-ingredient name.
        section: The section to return.
        language: The patient's language, "tr" or "en"; by default the language of the name.

    Returns:
        The section text with its source.
    """
    name = _text(drug, "drug")
    sec = _section(section)
    db = load_db()
    target, lang, corrected = _find(db, name)
    lang = _language(language) or lang
    out = _header(db, target, lang, corrected, name)
    out["section"] = sec
    ids = db.ingredient_ids(target)
    if len(ids) == 1:
        entry = db.ingredients[ids[0]]["sections"][sec]
        out["text"] = entry[lang]
        out["source"] = entry["source"]
    else:
        out["texts"] = [
            {
                "ingredient": db.ingredients[i][f"name_{lang}"],
                "text": db.ingredients[i]["sections"][sec][lang],
                "source": db.ingredients[i]["sections"][sec]["source"],
            }
            for i in ids
        ]
        product = db.products[target.id]
        if "note_tr" in product and sec in ("dosage", "warnings", "overdose"):
            out["note"] = product[f"note_{lang}"]
    out["disclaimer"] = DISCLAIMER[lang]
    return out


_DUPLICATE_WARNING = {
    "tr": "Aynı etkin madde iki üründe: toplam doz günlük sınırı aşabilir. Birlikte almayın veya toplam dozu "
    "hesaplayın.",
    "en": "Same active ingredient in both: the total can exceed the daily limit. Do not combine, or count the "
    "total dose.",
}
_UNCHECKED_WARNING = {
    "tr": "Tanınmayan isimler kontrol edilmedi; bu, etkileşim olmadığı anlamına gelmez.",
    "en": "Unrecognised names were not checked; this does not mean they are safe.",
}


# Why a name was not checked (codes, not prose: the agent and scripts read them).
_UNCHECKED_REASONS = {
    "ambiguous": "ambiguous",
    "unconfirmed": "unconfirmed: a typo of one of suggestions",
    "not_in_database": "not in database",
    "unknown": "not found",
    "food_not_covered": "not covered: a herbal or food the reference does not list",
}


@_tool
def check_interactions(drugs: list[str], language: Lang | None = None) -> dict:
    """Check interactions and duplicated active ingredients between medicines.

    Args:
        drugs: Two or more brand or active-ingredient names.
        language: The patient's language, "tr" or "en"; by default the language of the name.

    Returns:
        pairs with severity, description, management and sources; duplicates; unknown names (not checked).
    """
    names = _text_list(drugs, "drugs", 2, MAX_DRUGS)
    db = load_db()
    results = [db.resolve(name) for name in names]
    lang: Lang = _language(language) or ("tr" if any(r.lang == "tr" for r in results) else "en")
    # Only exact names are checked: a typo read as a medicine could report the wrong pair as safe.
    resolved = [
        (db.display_name(r.target, lang), db.ingredient_ids(r.target), r.target)
        for r in results
        if r.status == "found" and r.target is not None and not r.corrected
    ]
    pairs: list[dict] = []
    duplicates: list[dict] = []
    for i, (name_a, ids_a, target_a) in enumerate(resolved):
        for name_b, ids_b, target_b in resolved[i + 1 :]:
            shared = [x for x in ids_a if x in ids_b]
            duplicates += [
                {
                    "drugs": [name_a, name_b],
                    "ingredient": db.ingredients[x][f"name_{lang}"],
                    "warning": _DUPLICATE_WARNING[lang],
                }
                for x in shared
            ]
            found = _interaction_entries(db, (name_a, ids_a, target_a), (name_b, ids_b, target_b), lang)
            if not found and not shared:
                covered = all(db.in_reference(x) for x in [*ids_a, *ids_b])
                found = [
                    {
                        "drugs": [name_a, name_b],
                        "severity": None,
                        "description": (NOT_LISTED if covered else NOT_CHECKED)[lang],
                    }
                ]
            pairs += found
    # A substance of the reference this data does not cover (verapamil, atenolol) is checked against the thesaurus
    # alone: its pairs with every medicine and with the other such substances.
    substances = [
        (n, r.substance)
        for n, r in zip(names, results, strict=True)
        if r.status == "not_in_database" and r.substance and not r.corrected
    ]
    for i, (_, substance) in enumerate(substances):
        shown = db.substance_name(substance, lang)
        for name, ids, _ in resolved:
            pairs += _substance_entries(db, (shown, [substance]), (name, ids), lang)
        for _, other in substances[i + 1 :]:
            if other != substance:
                pairs += _substance_entries(db, (shown, [substance]), (db.substance_name(other, lang), [other]), lang)
    # Herbals and foods of the reference ("sarı kantaron", "greyfurt suyu"): their ANSM pairs with each medicine.
    foods = {n: food for n, r in zip(names, results, strict=True) if r.status != "found" and (food := db.food_of(n))}
    for food in dict.fromkeys(foods.values()):
        for name, ids, _ in resolved:
            pairs += _food_entries(db, (name, ids), food, lang)
    pairs.sort(key=lambda p: SEVERITY_RANK.get(p["severity"], len(SEVERITY_RANK)))
    out: dict[str, Any] = {"pairs": pairs, "duplicates": duplicates}
    # "parol ile alkol": a name that is no medicine but a condition of the data (alcohol) is answered with each
    # medicine's verdict for it (check_contraindications' rules), not as unknown with medicines suggested for it.
    # Only a name nothing else reads (not a medicine, a substance or a typo of one), and only as the data writes it.
    conditions = {
        n: db.match_conditions(n, fuzzy=False) for n, r in zip(names, results, strict=True) if r.status == "unknown"
    }
    if with_conditions := [
        verdict
        for condition, found in conditions.items()
        if found
        for name, _, _ in resolved
        if (verdict := _condition_verdict(name, condition, lang)) is not None
    ]:
        out["conditions"] = with_conditions
    unknown = [
        _unchecked(db, name, r, lang)
        for name, r in zip(names, results, strict=True)
        if _is_unchecked(r) and not conditions.get(name) and name not in foods and name not in dict(substances)
    ]
    if substances:  # not in this database: checked against the thesaurus only (no label text, no dose)
        out["substances"] = [
            {"name": n, "substance": db.substance_name(sub, lang), "note": _SUBSTANCE_NOTE[lang]}
            for n, sub in substances
        ]
    if unknown:
        out["unknown"] = unknown
        out["warning"] = _UNCHECKED_WARNING[lang]
    out["disclaimer"] = DISCLAIMER[lang]
    return out


_SUBSTANCE_NOTE = {
    "tr": "Bu veritabanında yok: yalnızca ANSM etkileşim tezaurusuyla kontrol edildi (prospektüs bilgisi ve doz yok).",
    "en": "Not in this database: checked against the ANSM interaction thesaurus only (no label text, no dose).",
}
_SUBSTANCE_LISTED = {
    "tr": "ANSM tezaurusu bu ikili için bir etkileşim listeliyor ({entries}); ayrıntısı bu veritabanında çevrilmedi: "
    "ne anlama geldiğini eczacınıza sorun.",
    "en": "The ANSM thesaurus lists an interaction for this pair ({entries}); its details are not translated in this "
    "database: ask a pharmacist what it means for you.",
}
_DEPENDS = {
    "tr": "Düzey doza veya duruma göre değişir.",
    "en": "The level depends on the dose or the situation.",
}


def _substance_entries(db: DrugDB, a: tuple[str, list[str]], b: tuple[str, list[str]], lang: Lang) -> list[dict]:
    """A reference substance outside the data (a: its name, [substance]) with a medicine (b: its name, its
    ingredient ids) or another substance (b: name, [substance]): the thesaurus' levels, per ingredient."""
    (name_a, subs_a), (name_b, ids_b) = a, b
    cited = f"ANSM thesaurus, {db.reference['source']['dated']} edition"
    levels = db.reference["source"]["levels"]
    parts = [(i, db.substances_of(i)) for i in ids_b] if ids_b[0] in db.ingredients else [(None, ids_b)]
    entries, unchecked = [], False
    for ing, subs_b in parts:
        if not subs_b:
            unchecked = True
            continue
        found = db.substance_entries(subs_a, subs_b)
        if not found:
            continue
        codes = [c for c in ("CI", "ASDEC", "PE", "APEC") if any(c in lv for _, lv in found)]
        severity = levels[codes[0]]
        entry: dict[str, Any] = {"drugs": [name_a, name_b], "severity": severity, "substance": True}
        if ing is not None and len(ids_b) > 1:
            entry["ingredients"] = [name_a, db.ingredients[ing][f"name_{lang}"]]
        text = _SUBSTANCE_LISTED[lang].format(entries="; ".join(e for e, _ in found))
        several = any(len(lv) > 1 for _, lv in found)
        entry["description"] = f"{text} {_DEPENDS[lang]}" if several else text
        entry["management"] = LEVEL_MANAGEMENT[severity][lang]
        if several:
            entry["levels"] = [{"severity": levels[c]} for c in codes]
        entry["sources"] = [{"source": f"{cited}: {e}", "severity": levels[lv[0]]} for e, lv in found]
        entries.append(entry)
    if entries:
        return entries
    return [
        {
            "drugs": [name_a, name_b],
            "severity": None,
            "substance": True,
            "description": (NOT_CHECKED if unchecked else NOT_LISTED)[lang],
        }
    ]


def _food_entries(db: DrugDB, medicine: tuple[str, list[str]], food: str, lang: Lang) -> list[dict]:
    """A medicine with a herbal or food of the reference: one entry per ingredient the ANSM thesaurus pairs with it;
    "not listed" (or "not checked" when the reference does not cover the medicine) otherwise, never "safe"."""
    name, ids = medicine
    shown = db.foods[food][f"name_{lang}"]
    cited = f"ANSM thesaurus, {db.reference['source']['dated']} edition"
    entries = []
    for ing in ids:
        listed = db.reference_between(ing, food)
        if not listed:
            continue
        severity = min((r["severity"] for r in listed), key=SEVERITY_RANK.__getitem__)
        entry: dict[str, Any] = {"drugs": [name, shown], "severity": severity, "food": True}
        if len(ids) > 1:
            entry["ingredients"] = [db.ingredients[ing][f"name_{lang}"], shown]
        entry["description"] = " ".join(_mechanism(r, lang) for r in listed if r["severity"] == severity)
        entry["management"] = LEVEL_MANAGEMENT[severity][lang]
        entry["sources"] = [{"source": f"{cited}: {r['entry']}", "severity": r["severity"]} for r in listed]
        entries.append(entry)
    if entries:
        return entries
    covered = all(db.in_reference(x) for x in ids)
    return [
        {
            "drugs": [name, shown],
            "severity": None,
            "food": True,
            "description": (NOT_LISTED if covered else NOT_CHECKED)[lang],
        }
    ]


def _condition_verdict(name: str, condition: str, lang: Lang) -> dict | None:
    """A medicine's verdict for a condition written among check_interactions' names ("alkol"), by
    check_contraindications' rules; None when it cannot say."""
    result = check_contraindications(name, conditions=[condition], language=lang)
    if "error" in result:
        return None
    return {
        "drug": name,
        "condition": condition,
        "verdict": result["verdict"],
        "reasons": [r["text"] for r in result.get("reasons", [])],
    }


def _is_unchecked(res: Resolution) -> bool:
    return res.status != "found" or res.corrected


def _unchecked(db: DrugDB, name: str, res: Resolution, lang: Lang) -> dict:
    reason = "unconfirmed" if res.status == "found" else res.status
    if res.status == "unknown" and db.is_uncovered_food(name):
        reason = "food_not_covered"  # ginkgo, zerdeçal: the reference lists no herbal or food but two
    targets = [res.target] if res.status == "found" and res.target is not None else res.candidates
    if reason == "food_not_covered":
        targets = []
    out = {
        "name": name,
        "reason": _UNCHECKED_REASONS[reason],
        "suggestions": [db.display_name(t, lang) for t in targets],
    }
    if res.line_of is not None:  # "A-ferin Hot": another product of A-ferin's line, not A-ferin
        out["line_of"] = db.display_name(res.line_of, lang)
    return out


def _interaction_entries(
    db: DrugDB, a: tuple[str, list[str], Target], b: tuple[str, list[str], Target], lang: Lang
) -> list[dict]:
    """One entry per pair of ingredients that the curated table or the reference lists; the more severe wins and
    sources says which source said what. A reference entry whose level depends on the dose or the use is answered
    at the level that applies to the product (low-dose aspirin: an antiplatelet); where the strength is not known,
    levels lists each level with its condition."""
    (name_a, ids_a, target_a), (name_b, ids_b, target_b) = a, b
    cited = f"ANSM thesaurus, {db.reference['source']['dated']} edition"
    uses = {i: dose_use(db, target_a, i) for i in ids_a} | {i: dose_use(db, target_b, i) for i in ids_b}
    topical = is_topical(db, target_a) or is_topical(db, target_b)
    entries = []
    for ing_a in ids_a:
        for ing_b in ids_b:
            curated = db.interactions_between(ing_a, ing_b)
            listed = [r for row in db.reference_between(ing_a, ing_b) if (r := _at_use(row, uses)) is not None]
            if not curated and not listed:
                continue
            sources = [{"source": ix["source"], "severity": ix["severity"]} for ix in curated]
            sources += [{"source": f"{cited}: {r['entry']}", "severity": r["severity"]} for r in listed]
            severity = min((s["severity"] for s in sources), key=SEVERITY_RANK.__getitem__)
            entry: dict[str, Any] = {"drugs": [name_a, name_b], "severity": severity}
            if len(ids_a) > 1 or len(ids_b) > 1:  # say which parts of a combination interact
                entry["ingredients"] = [db.ingredients[ing_a][f"name_{lang}"], db.ingredients[ing_b][f"name_{lang}"]]
            texts = [ix[f"description_{lang}"] for ix in curated]
            top_curated = min((ix["severity"] for ix in curated), key=SEVERITY_RANK.__getitem__, default=None)
            if top_curated != severity:  # the reference is stricter: say why in its words
                texts += [_mechanism(r, lang) for r in listed if r["severity"] == severity]
            entry["description"] = " ".join(dict.fromkeys(texts))
            if top_curated == severity:
                entry["management"] = " ".join(ix[f"management_{lang}"] for ix in curated if ix["severity"] == severity)
            else:
                entry["management"] = " ".join(
                    dict.fromkeys(_level_management(r, lang) for r in listed if r["severity"] == severity)
                )
            if levels := [lv for r in listed for lv in r.get("per_level", [])]:
                entry["levels"] = [
                    {"severity": lv["severity"], "when": lv[f"when_{lang}"], "management": lv[f"management_{lang}"]}
                    for lv in levels
                ]
            if used := next(((i, uses[i]) for i in (ing_a, ing_b) if uses.get(i)), None):
                ing, use = used  # the strength decided the level: say at which use
                entry["dose_use"] = db.ingredients[ing]["low_dose"][f"use_{lang}"] if use == "low" else _FULL_DOSE[lang]
            if topical and SEVERITY_RANK[severity] < SEVERITY_RANK["minor"]:
                # Applied to the skin, little reaches the blood: the systemic interaction applies to tablets.
                entry["severity"] = "minor"
                entry["topical"] = True
                entry["description"] = f"{_TOPICAL[lang]} {entry['description']}"
                entry["management"] = _TOPICAL_MANAGEMENT[lang]
            entry["sources"] = sources
            entries.append(entry)
    return entries


_FULL_DOSE = {"tr": "ağrı kesici veya antiinflamatuvar doz", "en": "pain-relief or anti-inflammatory dose"}
_TOPICAL = {
    "tr": "Cilde sürülen üründen kana çok az geçer; bu etkileşim esas olarak ağızdan alınan formlar içindir:",
    "en": "Applied to the skin, little reaches the blood; this interaction concerns mainly the forms taken by mouth:",
}
_TOPICAL_MANAGEMENT = {
    "tr": "Geniş alana veya uzun süre sürmeyin; kullandığınızı hekim veya eczacınıza söyleyin.",
    "en": "Do not apply it to large areas or for long; tell your doctor or pharmacist you use it.",
}
TOPICAL_FORMS = frozenset({"gel", "cream", "mouthwash"})
_STRENGTH = re.compile(r"(\d+(?:[.,]\d+)?)\s*(mg|g|mcg)\b", re.IGNORECASE)
_MG_PER = {"mg": 1.0, "g": 1000.0, "mcg": 0.001}


def strengths_mg(product: dict, ingredient_id: str) -> list[float | None]:
    """The mg of ingredient_id in each presentation of product ("500 mg/30 mg": its part; "120 mg/5 mL": 120),
    None where a strength is no plain amount (a range, a percentage)."""
    index = product["ingredients"].index(ingredient_id)
    out: list[float | None] = []
    for pres in product["presentations"]:
        parts = pres["strength"].split(" per ")[0].split("/")
        part = parts[index] if len(product["ingredients"]) > 1 and index < len(parts) else parts[0]
        m = _STRENGTH.fullmatch(part.strip())
        out.append(float(m[1].replace(",", ".")) * _MG_PER[m[2].lower()] if m else None)
    return out


def dose_use(db: DrugDB, target: Target, ingredient_id: str) -> str | None:
    """ "low" when every strength of the product is within the ingredient's low dose (drugs.json low_dose:
    Coraspin 100 mg is an antiplatelet), "full" when none is, None when not known (a name, mixed strengths)."""
    low = db.ingredients[ingredient_id].get("low_dose")
    if low is None or target.kind != "product":
        return None
    values = strengths_mg(db.products[target.id], ingredient_id)
    if not values or None in values:
        return None
    if all(v <= low["max_mg"] for v in values):  # type: ignore[operator]
        return "low"
    if all(v > low["max_mg"] for v in values):  # type: ignore[operator]
        return "full"
    return None


def is_topical(db: DrugDB, target: Target) -> bool:
    """Whether a product is only applied to the skin or the mouth (Voltaren Emulgel)."""
    return target.kind == "product" and all(p["form"] in TOPICAL_FORMS for p in db.products[target.id]["presentations"])


def _at_use(row: dict, uses: dict[str, str | None]) -> dict | None:
    """A reference row at the levels that apply to the products' use of its dose_of ingredient (all when not known);
    None when none applies (the entry concerns only another dose)."""
    if "per_level" not in row:
        return row
    use = uses.get(row.get("dose_of", ""))
    levels = [lv for lv in row["per_level"] if use is None or lv.get("dose", "any") in ("any", use)]
    if not levels:
        return None
    return {**row, "per_level": levels, "severity": levels[0]["severity"]}


def _level_management(row: dict, lang: Lang) -> str:
    """What to do for a reference row: its levels' advice, each with its condition when several apply; a level's
    generic advice for a single-level entry."""
    levels = row.get("per_level")
    if not levels:
        return LEVEL_MANAGEMENT[row["severity"]][lang]
    if len(levels) == 1:
        return levels[0][f"management_{lang}"]
    return " ".join(f"{lv[f'when_{lang}']}: {lv[f'management_{lang}']}" for lv in levels)


def _mechanism(row: dict, lang: Lang) -> str:
    text = row[f"mechanism_{lang}"]
    if levels := row.get("per_level"):
        return f"{text} ({levels[0][f'when_{lang}']})"
    return f"{text} ({row[f'when_{lang}']})" if f"when_{lang}" in row else text


_DOSE_REASONS = {
    "combination": {
        "tr": "Kombinasyon ürünleri için kiloya göre doz hesaplanmaz; kullanma talimatına uyun veya "
        "hekime/eczacıya danışın.",
        "en": "No weight-based dose for combination products: follow the leaflet or ask a doctor or pharmacist.",
    },
    "high_risk": {
        "tr": "Yüksek riskli veya kontrollü ilaç: dozu yalnızca hekim belirler.",
        "en": "High-risk or controlled medicine: only the prescriber sets the dose.",
    },
    "no_rule": {
        "tr": "Bu veritabanında kiloya göre doz kuralı yok; kullanma talimatına uyun veya hekime/eczacıya danışın.",
        "en": "No weight-based dose rule in this database: follow the leaflet or ask a doctor or pharmacist.",
    },
    "below_min_age": {
        "tr": "{limit} altında doz yalnızca hekim tarafından belirlenir.",
        "en": "Under {limit} the dose must come from a doctor.",
    },
    "below_min_weight": {
        "tr": "{limit} altında doz yalnızca hekim tarafından belirlenir.",
        "en": "Under {limit} the dose must come from a doctor.",
    },
    "implausible_weight": {
        "tr": "{weight:g} kg, {age} için olağan aralığın çok dışında ({band}, WHO büyüme eğrileri): kiloyu (kg, "
        "pound değil) kontrol edin; doz hekimden alınmalı.",
        "en": "{weight:g} kg is far outside the usual range for {age} ({band}, WHO growth charts): check the "
        "weight (kg, not lb); the dose must come from a doctor.",
    },
    "no_unit": {
        "tr": "{brand} tabletleri bu kiloya göre dozdan büyük: bölünmüş tablet yerine uygun bir şurup için eczacınıza "
        "danışın.",
        "en": "One {brand} tablet is more than the dose for this weight: ask a pharmacist for a suitable liquid rather "
        "than splitting tablets.",
    },
    "product_age": {
        "tr": "{brand} {limit} ve üstü içindir; bu yaşa uygun bir ürün için eczacınıza danışın.",
        "en": "{brand} is for {limit} and over; ask a pharmacist for a product suited to this age.",
    },
}


def _whole_units(mg: float, solid: dict, ingredient_id: str) -> tuple[int, dict] | None:
    """The most whole tablets (or capsules) of one strength that stay within mg, the larger total first, fewer
    units on a tie; None when even one is more than mg or no strength is a plain amount."""
    best: tuple[float, int, dict] | None = None
    for pres, strength in zip(solid["presentations"], strengths_mg(solid, ingredient_id), strict=True):
        if strength is None or strength > mg:
            continue
        count = int(mg // strength)
        if best is None or (count * strength, -count) > (best[0], -best[1]):
            best = (count * strength, count, pres)
    return None if best is None else (best[1], best[2])


_SOLID_FOR_ADULTS = {
    "tr": "12 yaş ve üstünde katı form (tablet, kapsül) tercih edilir; şurupla yetişkin dozu çok hacim gerektirir.",
    "en": "From 12 years a solid form (tablet, capsule) is preferred; an adult dose of syrup is a large volume.",
}
ADULT_FORMS_FROM_YEARS = 12


KG_PER_LB = 0.45359237  # the international pound


def _as_written(weight: float, age_years: Any, age_months: Any, turn: Turn) -> tuple[float, Any, Any, dict[str, Any]]:
    """Weight and age as the patient wrote them, and what the call said where it differs ({} when it does not).

    A small model copies the wrong number or unit: a temperature of 38.5 as the weight, "8 aylık" as age_years 8.
    A dose for the wrong weight or age is the one error a dose must not have, so: a weight that is none of the
    weights the patient gives (in kg, or in pounds converted) becomes that one (an error when they give several);
    an age in years that they wrote in months becomes months, and the reverse; an age they never wrote becomes
    the only one they state. Nothing is guessed: each value is one the patient wrote with its unit, and the
    result says what the call said."""
    stated = turn.stated_numbers()
    said: dict[str, Any] = {}

    def among(value: float, values: list[float]) -> bool:
        return any(math.isclose(value, v, abs_tol=1e-9) for v in values)

    # A weight in pounds is the tool's to convert ("40 lbs" sent as weight_kg 40 is a dose for 40 kg: review D10).
    kg = stated["kg"] + [round(lb * KG_PER_LB, 1) for lb in stated["lb"]]
    if kg and not among(weight, kg):
        weights = sorted(set(kg))
        if len(weights) > 1:
            given = ", ".join(f"{w:g} kg" for w in weights)
            raise ToolError("not_as_written", f"weight_kg {weight:g}: the patient gives {given}; use the one meant")
        said["weight_kg"], weight = weight, weights[0]
    # One age given, in years or in months: kept if the patient states it with that unit; else the same number
    # with the unit they wrote it in, or the only age they state (not a temperature copied as the age). Both
    # given ("8 aylık, 9 kilo" as 9 years and 8 months): those the patient states with their unit are kept, and
    # where they state neither, the only age they state.
    ages = {("years", v) for v in stated["years"]} | {("months", v) for v in stated["months"]}
    given = [(unit, v) for unit, v in (("years", age_years), ("months", age_months)) if v is not None]
    if len(given) == 2 and all(isinstance(v, numbers.Real) for _, v in given) and ages:
        kept = [(unit, v) for unit, v in given if among(v, stated[unit])]
        if not kept and len(ages) == 1:
            kept = list(ages)
        if kept and len(kept) < 2:
            said |= {f"age_{unit}": v for unit, v in given}
            unit, value = kept[0]
            age_years, age_months = (value, None) if unit == "years" else (None, value)
    elif len(given) == 1 and isinstance(given[0][1], numbers.Real) and ages:
        unit, value = given[0]
        if not among(value, stated[unit]):
            other = "months" if unit == "years" else "years"
            found = (other, value) if among(value, stated[other]) else next(iter(ages)) if len(ages) == 1 else None
            if found is not None:
                said[f"age_{unit}"] = value
                age_years, age_months = (found[1], None) if found[0] == "years" else (None, found[1])
    return (weight, *_with_months(turn, age_years, age_months, said), said)


def _with_months(turn: Turn, age_years: Any, age_months: Any, said: dict[str, Any]) -> tuple[Any, Any]:
    """The age with the months the patient writes after its years ("2 yaş 3 aylık" sent as age_years 2 is 2 years
    and 3 months: Turn.months_beyond); said gets the call's age_months where they are added."""
    if age_months is None and (months := turn.months_beyond(maybe_number(age_years))) is not None:
        said["age_months"] = None
        return age_years, months
    return age_years, age_months


@_tool
def calculate_dose(
    drug: str,
    weight_kg: float,
    age_years: float | None = None,
    age_months: float | None = None,
    language: Lang | None = None,
    patient: Turn | None = None,
    patient_text: str | None = None,
) -> dict:
    """Calculate a single weight-based dose (paracetamol, ibuprofen) within the label's limits.

    Args:
        drug: Brand or active-ingredient name.
        weight_kg: Body weight in kilograms.
        age_years: Age in years, as the patient wrote it.
        age_months: Age in months, as the patient wrote it ("9 aylık": 9); with age_years, the months beyond.
        language: The patient's language, "tr" or "en"; by default the language of the name.
        patient: The facts of the patient's words (supplied by the agent, not the model): weight and age are read
            as they wrote them, with their units, where the call differs.
        patient_text: The patient's words, read into patient, for a caller without a Turn.

    Returns:
        Dose in mg (and mL for a liquid), interval, daily limits, cap_applied, refer_to_doctor with reasons.
    """
    name = _text(drug, "drug")
    # Its range only once the patient's words are read: "a 20 kg child ... 5000 mg" sent as weight_kg 5000 is 20 kg.
    weight = _number(weight_kg, "weight_kg", -math.inf, math.inf)
    said: dict[str, Any] = {}
    turn = _patient(patient, patient_text)
    if turn:
        weight, age_years, age_months, said = _as_written(weight, age_years, age_months, turn)
        if not turn.gives_weight(weight):
            # "oğlum 10 yaşında, aerius dozu ne olmalı" was called with weight_kg 10: a dose for a weight the patient
            # never gave is a guess, so it is asked.
            raise ToolError("invalid_input", "the patient gives no weight: ask for it", _WEIGHT_NEEDED)
    weight = _number(weight, "weight_kg", 0.0, WEIGHT_MAX_KG, low_open=True)
    if turn and not turn.gives_age(maybe_number(age_years), maybe_number(age_months)):
        # "calpol dozu nedir 15 kilo" was called with age_years 1: the age decides the limits, so it is asked.
        raise ToolError("invalid_input", "the patient gives no age: ask for it", _AGE_NEEDED)
    age = _age(age_years, age_months)
    if age is None:
        raise ToolError("invalid_input", "give the age: age_years, age_months, or both", _AGE_NEEDED)
    db = load_db()
    target, lang, corrected = _find(db, name, exact=True)
    lang = _language(language) or lang
    out = _header(db, target, lang, corrected, name)
    out["weight_kg"] = weight
    out["age_years"] = age
    if age_months is not None:
        out["age"] = _years(age, lang)  # what the months were read as
    if said:
        out["call_said"] = said  # the values the patient wrote replaced these (_as_written)
    ids = db.ingredient_ids(target)
    rule = db.dose_rules.get(ids[0]) if len(ids) == 1 else None

    def refer(reasons: list[str]) -> dict:
        out["refer_to_doctor"] = True
        out["reasons"] = reasons
        if rule is not None:
            out["source"] = rule["source"]
        out["disclaimer"] = DISCLAIMER[lang]
        return out

    if band := implausible(weight, age):
        low, high = band
        shown = f"{low:g}-{high:g} kg" if high is not None else f">= {low:g} kg"
        reason = _DOSE_REASONS["implausible_weight"][lang]
        return refer([reason.format(weight=weight, age=_years(age, lang), band=shown)])
    product = db.products[target.id] if target.kind == "product" else None
    if product is not None and age < product.get("min_age_years", 0):
        reason = _DOSE_REASONS["product_age"][lang]
        return refer([reason.format(brand=product["brand"], limit=_years(product["min_age_years"], lang))])
    if len(ids) > 1:
        return refer([_DOSE_REASONS["combination"][lang]])
    if db.ingredients[ids[0]]["high_risk"]:
        return refer([_DOSE_REASONS["high_risk"][lang]])
    if rule is None:
        return refer([_DOSE_REASONS["no_rule"][lang]])
    dose = compute_dose(rule, weight, age)
    if not isinstance(dose, Dose):
        return refer(
            [
                _DOSE_REASONS[r.reason][lang].format(
                    limit=_years(r.limit, lang) if r.reason == "below_min_age" else f"{r.limit:g} kg"
                )
                for r in dose
            ]
        )
    out["per_dose_mg"] = dose.per_dose_mg
    if product is not None:
        liquid = next((p for p in product["presentations"] if p["form"] in LIQUID_FORMS and "mg_per_ml" in p), None)
        solid = {**product, "presentations": [p for p in product["presentations"] if p["form"] not in LIQUID_FORMS]}
        if liquid is not None and age < ADULT_FORMS_FROM_YEARS:
            out["per_dose_ml"] = dose_in_ml(dose.per_dose_mg, liquid["mg_per_ml"])
            out["liquid_strength"] = liquid["strength"]
        elif liquid is not None and solid["presentations"]:
            out["forms"] = _forms(solid, lang)
            out["note"] = _SOLID_FOR_ADULTS[lang]
        if "per_dose_ml" not in out and solid["presentations"]:
            # The tablets to take: 675 mg for 45 kg is one 500 mg tablet, never rounded up. per_dose_mg stays the
            # dose by weight (the limit the answer checks hold an answer to).
            if units := _whole_units(dose.per_dose_mg, solid, ids[0]):
                count, pres = units
                mg = round(count * strengths_mg(solid, ids[0])[solid["presentations"].index(pres)], 1)  # type: ignore[operator]
                out["per_dose_mg_as_units"] = int(mg) if mg == int(mg) else mg
                out["per_dose_units"] = count
                out["unit_strength"] = _forms({**solid, "presentations": [pres]}, lang)[0]
            elif any(s is not None for s in strengths_mg(solid, ids[0])):
                out["unit_note"] = _DOSE_REASONS["no_unit"][lang].format(brand=product["brand"])
    out["interval_hours"] = dose.interval_hours
    out["max_doses_per_day"] = dose.max_doses_per_day
    out["max_daily_mg"] = dose.max_daily_mg
    out["cap_applied"] = dose.cap_applied
    out["refer_to_doctor"] = False
    out["source"] = rule["source"]
    out["disclaimer"] = DISCLAIMER[lang]
    return out


@_tool
def find_alternatives(drug: str, language: Lang | None = None) -> dict:
    """List other products with the same active ingredient(s).

    Args:
        drug: Brand or active-ingredient name.
        language: The patient's language, "tr" or "en"; by default the language of the name.

    Returns:
        alternatives with brand, forms (strength and form) and status.
    """
    name = _text(drug, "drug")
    db = load_db()
    target, lang, corrected = _find(db, name)
    lang = _language(language) or lang
    out = _header(db, target, lang, corrected, name)
    ids = db.ingredient_ids(target)
    same = [p for p in db.by_ingredient_set.get(frozenset(ids), []) if p != target.id]
    same.sort(key=lambda p: db.products[p]["lang"] != lang)
    out["alternatives"] = [
        {"brand": db.products[p]["brand"], "forms": _forms(db.products[p], lang), "status": db.products[p]["status"]}
        for p in same[:8]
    ]
    if same:
        out["note"] = {
            "tr": "Aynı etkin madde; doz, form ve yardımcı maddeler farklı olabilir. Değiştirmeden önce "
            "eczacınıza danışın.",
            "en": "Same active ingredient(s); strength, form and excipients may differ. Ask a "
            "pharmacist before switching.",
        }[lang]
    else:
        out["note"] = {
            "tr": "Bu veritabanında aynı etkin maddeyi içeren başka ürün yok.",
            "en": "No other product with the same active ingredient(s) in this database.",
        }[lang]
    return out


_MSG = {
    "pregnancy": {"tr": "Gebelik", "en": "Pregnancy"},
    "breastfeeding": {"tr": "Emzirme", "en": "Breastfeeding"},
    "age": {"tr": "Yaş", "en": "Age"},
    "breastfeeding_ok": {"tr": "Emzirmede genellikle uygundur.", "en": "Generally compatible with breastfeeding."},
    "breastfeeding_caution": {
        "tr": "Emzirmede dikkat; hekime danışın.",
        "en": "Caution while breastfeeding; ask a doctor.",
    },
    "breastfeeding_avoid": {"tr": "Emzirmede önerilmez.", "en": "Not recommended while breastfeeding."},
    "breastfeeding_unknown": {
        "tr": "Emzirmede güvenliliği bilinmiyor; hekime danışın.",
        "en": "Safety in breastfeeding is unknown; ask a doctor.",
    },
    "too_young": {
        "tr": "{limit} altında hekim kararı olmadan kullanılmaz.",
        "en": "Not for use under {limit} unless a doctor decides.",
    },
    "form_too_young": {
        "tr": "{form}: {limit} altında kullanılmaz; bu yaşa uygun formu (ör. şurup) kullanın.",
        "en": "{form}: not for use under {limit}; use the form suited to this age (e.g. the syrup).",
    },
    "infant": {
        "tr": "3 aydan küçük bebekte ateş aynı gün hekim muayenesi gerektirir.",
        "en": "A fever in a baby under 3 months needs a doctor's assessment the same day.",
    },
    "elderly": {
        "tr": "65 yaş üstünde yan etki riski daha yüksektir; düşük doz ve hekim kontrolü gerekir.",
        "en": "Higher risk of side effects from 65 years; lower doses and medical review.",
    },
    "condition_avoid": {
        "tr": "{label}: bu durumda kullanılmamalı (kontrendikasyon veya ciddi risk).",
        "en": "{label}: should not be used (contraindication or serious risk).",
    },
    "condition_caution": {
        "tr": "{label}: dikkatli kullanılmalı; önce hekime danışın.",
        "en": "{label}: use with caution; ask a doctor first.",
    },
    "condition_ok": {
        "tr": "{label}: bu veritabanında özel bir uyarı yok.",
        "en": "{label}: no specific warning in this database.",
    },
    "condition_unknown": {
        "tr": "Bu durum veritabanında tanınmadı; hekime veya eczacıya danışın.",
        "en": "This condition is not recognised in this database; ask a doctor or pharmacist.",
    },
    "nothing_checked": {
        "tr": "Yalnızca verilen bilgiler (gebelik, emzirme, yaş, hastalıklar) kontrol edildi.",
        "en": "Only the given facts (pregnancy, breastfeeding, age, conditions) were checked.",
    },
}


def _within(text: str, found: list[str], other: str, other_found: list[str]) -> bool:
    """Whether other, a longer wording, names the condition text names: text written inside it, or the same
    conditions of the data."""
    if len(other) <= len(text):
        return False
    return fold(text) in fold(other) or (bool(found) and set(found) == set(other_found))


def _as_stated(
    turn: Turn,
    pregnant: bool,
    breastfeeding: bool,
    age_years: Any,
    age_months: Any,
    conditions: list[str],
    drug: str = "",
) -> tuple[bool, bool, Any, Any, list[str], dict[str, Any]]:
    """Pregnancy, breastfeeding, age and conditions as the patient states them of the one who takes the medicine,
    and what the call said where it differs ({} when it does not).

    A small model sets pregnant for a question about a father's warfarin and answers "avoid", and leaves it out
    of "6 aylık hamileyim" (written as an age). So a pregnancy or breastfeeding is checked exactly when the
    patient states it of the one who takes the medicine (Turn.counts: not "Eşim hamile, ben ibuprofen alabilir
    miyim?"); an age they never gave is not checked; a condition they state of that person is added, in their
    words, where the call's conditions do not name it ("A-velep" for "epilepsi"). Nothing is guessed: every
    value comes from what they wrote."""
    said: dict[str, Any] = {}
    for key, value in (("pregnant", pregnant), ("breastfeeding", breastfeeding)):
        if value != turn.counts(key):
            said[key] = value
    pregnant, breastfeeding = turn.counts("pregnant"), turn.counts("breastfeeding")
    if not turn.gives_age(maybe_number(age_years), maybe_number(age_months)):
        said |= {f"age_{u}": v for u, v in (("years", age_years), ("months", age_months)) if v is not None}
        age_years = age_months = None
    for unit, value in (("years", age_years), ("months", age_months)):
        if turn.someone_elses_age(maybe_number(value)):
            # the breastfed baby's "3 aylık" or a pregnancy's months, written as the age of the one who takes it
            said[f"age_{unit}"] = value
            age_years, age_months = (None, age_months) if unit == "years" else (age_years, None)
    years = maybe_number(age_years)
    takers = {a.unit for a in turn.ages if turn.is_takers(a) and years is not None and abs(a.value - years) < 1e-9}
    if age_months is None and takers == {"months"}:
        age_years, age_months = None, years  # "14 aylık" written as age_years 14: in the unit the patient wrote
    if age_years is None and age_months is None and (age := turn.stated_age()) is not None:
        # an age the call leaves out that the patient states, once, of the one who takes the medicine
        age_years, age_months = (age.value, None) if age.unit == "years" else (None, age.value)
    age_years, age_months = _with_months(turn, age_years, age_months, said)
    db = load_db()
    read = [(text, db.read_conditions(text)[0]) for text in conditions]
    # A text that is no condition the data knows is kept only as the patient's own words that name neither the
    # medicine nor a pregnancy or breastfeeding (the flags carry those): not "bilgi al", "cialis güvenli", "emzirme".
    written = fold(turn.words or "")

    def theirs(text: str) -> bool:
        key = fold(text)
        return key in written and (not drug or fold(drug) not in key) and not state_mentions(fold_case(text))

    # A condition the data knows, written neither as the patient wrote it nor as the data names it ("my asthma",
    # "glokom hastalığı", "ulseri" of "ulserim"), runs in their words for it, as one the call leaves out is added
    # (the tool reads each alike; the call then says what the patient said).
    stated = turn.stated_conditions()
    their_words = dict(stated)

    def as_theirs(text: str, found: list[str]) -> str:
        if len(found) != 1 or found[0] not in their_words or db.condition_named(text):
            return text
        if _whole_words(fold(text), written):
            return text
        return their_words[found[0]]

    kept = [(as_theirs(text, found), found) for text, found in read if found or theirs(text)]
    named = {cid for _, found in read for cid in found}
    added = [(words, [cid]) for cid, words in stated if cid not in named]
    # One condition written twice ("blood pressure" beside "high blood pressure", "astım" and "asthma"): the longer
    # wording names it once.
    every = [*kept, *added]
    final = [text for text, found in every if not any(_within(text, found, t, o) for t, o in every)]
    if final != conditions:
        said["conditions"] = list(conditions)
        conditions = final
    return pregnant, breastfeeding, age_years, age_months, conditions, said


def _whole_words(key: str, text: str) -> bool:
    """Whether key (folded) is written in text (folded) as whole words."""
    return re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text) is not None


def as_stated(tool: str, arguments: dict[str, Any], turn: Turn) -> dict[str, Any]:
    """A call's arguments with the patient's facts (weight, age, pregnancy, breastfeeding, conditions) as the
    tool reads them from the patient's words (_as_written, _as_stated): what the call runs with. Arguments the
    tool would refuse are returned as they are, for the tool to say why."""
    args = dict(arguments)
    try:
        if tool == "calculate_dose":
            weight = _number(args.get("weight_kg"), "weight_kg", -math.inf, math.inf)
            weight, years, months, _ = _as_written(weight, args.get("age_years"), args.get("age_months"), turn)
            args["weight_kg"] = weight
            if months is not None and "age_months" not in arguments:
                # In years, the parameter the model wrote: a model trained before age_months is not shown it (its
                # recorded schema), so a call with it would be refused; the tool reads the months back from the
                # patient's words.
                years, months = round((years or 0) + months / 12, 2), None
        elif tool == "check_contraindications":
            texts = _text_list(args.get("conditions") or [], "conditions", 0, MAX_CONDITIONS, _CONDITION_PUNCT)
            pregnant, breastfeeding = (
                _flag(args.get("pregnant", False), "pregnant"),
                _flag(args.get("breastfeeding", False), "breastfeeding"),
            )
            drug = args.get("drug") if isinstance(args.get("drug"), str) else ""
            pregnant, breastfeeding, years, months, texts, _ = _as_stated(
                turn, pregnant, breastfeeding, args.get("age_years"), args.get("age_months"), texts, drug
            )
            args |= {"pregnant": pregnant, "breastfeeding": breastfeeding, "conditions": texts}
        else:
            return args
    except ToolError:
        return dict(arguments)
    args |= {"age_years": years, "age_months": months}
    # a value that is the parameter's default is left out, as a call without it is written
    defaults = {"pregnant": False, "breastfeeding": False, "conditions": [], "age_years": None, "age_months": None}
    return {k: v for k, v in args.items() if not (k in defaults and v == defaults[k])}


@_tool
def check_contraindications(
    drug: str,
    pregnant: bool = False,
    breastfeeding: bool = False,
    age_years: float | None = None,
    age_months: float | None = None,
    conditions: list[str] | None = None,
    language: Lang | None = None,
    patient: Turn | None = None,
    patient_text: str | None = None,
) -> dict:
    """Check whether a medicine suits a patient.

    Args:
        drug: Brand or active-ingredient name.
        pregnant: Whether the patient is pregnant.
        breastfeeding: Whether the patient is breastfeeding.
        age_years: Patient's age in years, if known.
        age_months: Patient's age in months, if given in months ("8 months old": 8).
        conditions: Patient's diseases or allergies in Turkish or English, e.g. ["astım", "kidney failure"].
        language: The patient's language, "tr" or "en"; by default the language of the name.
        patient: The facts of the patient's words (supplied by the agent, not the model): pregnancy and
            breastfeeding are checked only when they state them of the one who takes the medicine, a condition not
            when they deny it.
        patient_text: The patient's words, read into patient, for a caller without a Turn.

    Returns:
        verdict (ok, caution, avoid or unknown) with reasons and sources.
    """
    name = _text(drug, "drug")
    is_pregnant = _flag(pregnant, "pregnant")
    is_breastfeeding = _flag(breastfeeding, "breastfeeding")
    # A small model sets pregnant for a question about a father's warfarin and answers "avoid": a flag the
    # patient's words give no ground for is not checked, and the result says what the call said.
    # Nor one the patient states of someone else ("Eşim hamile, ben ibuprofen alabilir miyim?": Turn.counts).
    said: dict[str, Any] = {}
    turn = _patient(patient, patient_text)
    texts = [] if conditions is None else _text_list(conditions, "conditions", 0, MAX_CONDITIONS, _CONDITION_PUNCT)
    if turn:
        is_pregnant, is_breastfeeding, age_years, age_months, texts, said = _as_stated(
            turn, is_pregnant, is_breastfeeding, age_years, age_months, texts, name
        )
    age = _age(age_years, age_months)
    db = load_db()
    read = [(t, *db.read_conditions(t)) for t in texts]
    if turn and (denied := {c for _, found, _ in read for c in found if turn.denies(c)}):
        # "böbrek hastalığım yok" sent as conditions ["böbrek hastalığı"]: what the patient denies is not counted,
        # as a condition the call's own text denies; the result says what the call had.
        said["conditions"] = [t for t, found, _ in read if found and set(found) <= denied]
        read = [
            (t, [c for c in found if c not in denied], [*negated, *(c for c in found if c in denied)])
            for t, found, negated in read
        ]
    target, lang, corrected = _find(db, name, exact=True)
    lang = _language(language) or lang
    if any(looks_turkish(t) for t in texts) and not language:
        lang = "tr"
    out = _header(db, target, lang, corrected, name)
    if said:
        out["call_said"] = said  # not checked: the patient does not speak of it, or of someone else
    ids = db.ingredient_ids(target)
    combo = len(ids) > 1
    reasons: list[dict] = []

    sources: list[str] = []

    def add(ing: dict | None, factor: str, level: str, text: str, source: str | None) -> None:
        reason = {"factor": factor, "level": level}
        if combo and ing is not None:
            reason["ingredient"] = ing[f"name_{lang}"]
        reason["text"] = text
        reasons.append(reason)
        if source and source not in sources:
            sources.append(source)

    matched = [(t, found) for t, found, negated in read if found or not negated]
    negated_ids = [cid for _, _, negated in read for cid in negated]
    # "astım" and "asthma" name one condition: report it once.
    condition_ids = list(dict.fromkeys(cid for _, found in matched for cid in found))
    for ing_id in ids:
        ing = db.ingredients[ing_id]
        safety, sections = ing["safety"], ing["sections"]
        preg = sections["pregnancy"]
        low = ing.get("low_dose")
        if is_pregnant and low is not None and dose_use(db, target, ing_id) == "low":
            # Low-dose aspirin in pregnancy is prescribed care (pre-eclampsia), not the analgesic dose to avoid.
            add(ing, _MSG["pregnancy"][lang], low["pregnancy"], low[f"pregnancy_{lang}"], low["source"])
        elif is_pregnant:
            add(ing, _MSG["pregnancy"][lang], safety["pregnancy"], preg[lang], preg["source"])
        if is_breastfeeding:
            add(
                ing,
                _MSG["breastfeeding"][lang],
                safety["breastfeeding"],
                _MSG[f"breastfeeding_{safety['breastfeeding']}"][lang],
                preg["source"],
            )
        min_age = safety.get("min_age_years")
        if age is not None and min_age is not None and age < min_age:
            add(
                ing,
                _MSG["age"][lang],
                "avoid",
                _too_young(min_age, age, lang),
                sections["pediatric"]["source"],
            )
        elif age is not None and age >= ELDERLY_FROM_YEARS and safety["elderly"] != "ok":
            add(ing, _MSG["age"][lang], safety["elderly"], _MSG["elderly"][lang], safety["source"])
        for cid in condition_ids:
            level = safety["conditions"].get(cid)
            if level is not None:
                label = db.conditions[cid][f"name_{lang}"]
                source = sections["contraindications" if level == "avoid" else "warnings"]["source"]
                add(ing, label, level, _MSG[f"condition_{level}"][lang].format(label=label), source)
    product = db.products[target.id] if target.kind == "product" else None
    if product is not None and age is not None:
        band = product.get("min_age_years", 0)
        # Each form has its own age band (Avil tablet from 6 years, its syrup younger): the youngest decides
        # whether the product suits at all, the others are named.
        forms = [(pres, pres.get("min_age_years", band)) for pres in product["presentations"]]
        youngest = min(limit for _, limit in forms)
        if age < max(band, youngest):
            limit = max(band, youngest)
            add(None, _MSG["age"][lang], "avoid", f"{product['brand']}: " + _too_young(limit, age, lang), None)
        else:
            for pres, limit in forms:
                if age < limit:
                    form = FORM_NAMES[pres["form"]][0 if lang == "tr" else 1]
                    shown = f"{product['brand']} {pres['strength']} {form}"
                    text = _MSG["form_too_young"][lang].format(form=shown, limit=_years(limit, lang))
                    add(None, _MSG["age"][lang], "caution", text, None)
    for cid in condition_ids:
        if not any(cid in db.ingredients[i]["safety"]["conditions"] for i in ids):
            label = db.conditions[cid][f"name_{lang}"]
            add(None, label, "ok", _MSG["condition_ok"][lang].format(label=label), None)
    for cond_text, found in matched:
        if not found:
            add(None, cond_text, "unknown", _MSG["condition_unknown"][lang], None)
    # Nothing about the patient given (or left once unstated flags are dropped): nothing checked is no "ok".
    given = is_pregnant or is_breastfeeding or age is not None or bool(texts)
    out["verdict"] = max(
        (r["level"] for r in reasons), key=VERDICT_RANK.__getitem__, default="ok" if given else "unknown"
    )
    out["reasons"] = reasons
    if negated := [db.conditions[c][f"name_{lang}"] for c in dict.fromkeys(negated_ids) if c not in condition_ids]:
        out["not_counted"] = negated  # the patient said they do not have these
    if not reasons:
        out["note"] = _MSG["nothing_checked"][lang]
    if sources:
        out["sources"] = sources
    out["disclaimer"] = DISCLAIMER[lang]
    return out


def _too_young(limit: float, age: float, lang: Lang) -> str:
    """Why a medicine does not suit this age; for a baby under 3 months, that a fever needs a doctor today."""
    text = _MSG["too_young"][lang].format(limit=_years(limit, lang))
    return f"{text} {_MSG['infant'][lang]}" if age < INFANT_YEARS else text


INFANT_YEARS = 0.25


def is_known_name(text: str) -> bool:
    """Whether text is exactly a medicine name of the drug data (any case, accents, spacing)."""
    return load_db().is_name(text)


@functools.lru_cache(maxsize=65536)  # the grounding constraint asks about every span of the conversation
def is_medicine_name(text: str) -> bool:
    """Whether text names a medicine: a name of the drug data or a typo the tools read as one ("Spirnoolactone"),
    or a substance of the interaction reference in any INN spelling ("duloxetine", "duloksetin")."""
    db = load_db()
    if db.is_name(text) or db.is_reference_substance(text):
        return True
    # a one-word typo read on the text as written (not "imodium on", "Parol'ün" or "duloksetin de", read by
    # dropping or correcting their extra words)
    return len(text) >= 5 and " " not in text.strip() and db.resolve(text).corrected


PHARMACY_TOOLS: list[Callable[..., dict]] = [
    search_drug,
    get_drug_info,
    check_interactions,
    calculate_dose,
    find_alternatives,
    check_contraindications,
]
