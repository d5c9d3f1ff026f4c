"""Reading the amounts a text states (mg, g, mcg, mL), in Turkish and English number formats.

One reader for every check that compares a stated amount with a limit, so "günde 5.000 mg", "5,000 mg",
"5 000 mg", "5 g" and "5 gram" all read as 5000 mg. Where a format is ambiguous the larger reading wins
("1.500 mg" is 1500 mg, never 1.5): a limit check must not be passed by a number read too small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import fold_case

# Digit groups of three after ".", "," or a space kind (" 5 000", Turkish "5.000", English "5,000"), then an
# optional decimal part with the other mark; or plain digits with an optional decimal part.
_NUMBER = (
    r"(?<![\w.,])(\d{1,3}(?:(?P<sep>[.,\u00a0\u202f\u2009 ])\d{3})(?:(?P=sep)\d{3})*(?:[.,]\d+)?(?![\d])"
    r"|\d+(?:[.,]\d+)?)"
)
_SCALE = {"mg": 1.0, "g": 1000.0, "mcg": 0.001, "ml": 1.0}
_UNITS = (
    r"(?P<unit>mg|mgr|mili?gram\w*|milligram\w*|mcg|µg|μg|mikrogram\w*|micrograms?|g|gr|gram\w*|grams?"
    r"|ml|mililit\w*|millilit\w*|cc)(?![a-zçğıöşü])"
)
_AMOUNT = re.compile(_NUMBER + r"\s*" + _UNITS, re.IGNORECASE)
# What may follow the unit: a concentration ("120 mg/5 mL", "mg/tablet") is a strength, not an amount;
# "/kg" is a rate; "/gün", "/day" or "per day" mark a daily total.
_PER = re.compile(
    r"\s*(?:/|\bper\b|\bher\b)\s*(?P<per>\d*[.,]?\d*\s*(?:ml|mL|cc|l|litre|liter|tablet\w*|tab|kapsül\w*|capsule\w*"
    r"|ölçek\w*|kaşık\w*|spoon\w*|damla\w*|drop\w*|kg|kilo\w*|gün\w*|day|days|24\s*(?:saat|h|hours?)|doz\w*|dose\w*))",
    re.IGNORECASE,
)
# Right after the amount ("1200 mg a day"); Turkish puts "günde" before the amount, and after one it starts the
# next clause ("600 mg, günde en fazla 1200 mg") or counts doses ("600 mg günde 3 kez").
_DAILY_AFTER = re.compile(r"\s*(?:a day|daily|each day|every day|per day|in 24 hours|over 24 hours)\b", re.IGNORECASE)
# A daily word, then only words of "at most" before the number: "günlük en fazla 4000 mg", "daily total: 3 g".
_DAILY_BEFORE = re.compile(
    r"(?:günde|günlük|gün içinde|24 saatte|bir günde|daily|a day|per day|in 24 hours|total|toplam)\s*"
    r"(?:(?:en fazla|en çok|toplam|maksimum|maximum|max\.?|at most|no more than|not more than|up to|of|is|doz\w*"
    r"|dose|amount|miktar\w*|:|-|–)\s*)*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Amount:
    """An amount a text states: value in mg (mass) or mL (volume), and what it is an amount of."""

    value: float
    unit: str  # "mg" or "ml"
    daily: bool  # stated as a total per day
    per_kg: bool  # a rate per kg of body weight
    start: int
    end: int


def read_number(text: str) -> float:
    """A number written with Turkish or English marks: "5.000" and "5,000" are 5000; "1,5" and "1.5" are 1.5."""
    text = text.replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    grouped = re.fullmatch(r"(\d{1,3})((?:([., ])\d{3})(?:\3\d{3})*)(?:[.,](\d+))?", text)
    if grouped and not (grouped.group(1) == "0" and grouped.group(3) != " "):
        whole = grouped.group(1) + re.sub(r"\D", "", grouped.group(2))
        return float(f"{whole}.{grouped.group(4) or 0}")
    return float(text.replace(",", "."))


def read_amounts(text: str) -> list[Amount]:
    """Every mass or volume amount text states, concentrations ("120 mg/5 mL") left out."""
    out: list[Amount] = []
    skip = 0  # the end of the last concentration: its "/5 mL" is no amount
    for m in _AMOUNT.finditer(text or ""):
        if m.start() < skip:
            continue
        unit = m.group("unit").lower()
        kind = (
            "ml"
            if unit in ("ml", "cc") or unit.startswith(("mililit", "millilit"))
            else "mcg"
            if unit in ("mcg", "µg", "μg") or unit.startswith(("mikro", "micro"))
            else "g"
            if unit in ("g", "gr") or unit.startswith("gram")
            else "mg"
        )
        per = _PER.match(text, m.end())
        per_word = per.group("per").lower() if per else ""
        per_kg = per_word.startswith(("kg", "kilo"))
        per_day = per_word.startswith(("gün", "day", "24"))
        per_dose = per_word.startswith(("doz", "dose"))
        if per and not (per_kg or per_day or per_dose):
            skip = per.end()
            continue  # a strength: mg per mL, per tablet, per spoon
        daily = per_day or (
            not per_dose
            and (bool(_DAILY_AFTER.match(text, m.end())) or bool(_DAILY_BEFORE.search(_clause_before(text, m.start()))))
        )
        value = read_number(m.group(1)) * _SCALE[kind]
        out.append(Amount(value, "ml" if kind == "ml" else "mg", daily, per_kg, m.start(), m.end()))
    return out


def _clause_before(text: str, start: int) -> str:
    """The text of the clause before start (back to the last sentence or list mark, at most 60 characters)."""
    before = text[max(0, start - 60) : start]
    cut = max(before.rfind(c) for c in ".;\n(")
    return before[cut + 1 :] if cut >= 0 else before


# A weight or an age as a patient writes it: a number, then its unit ("9 kilo", "11 kg", "40 lbs", "8 aylık",
# "18-month-old", "3 yaşında", "2,5 yas", "4 years"). Used to check that a dose call copies the numbers the
# message gives.
_STATED_UNITS = {
    "kg": r"kg|kgs|kilo\w*|kilogram\w*",
    "lb": r"lbs?|pounds?",
    "years": r"yaş(?:ında\w*|lı\w*)?|yas(?:inda\w*|li\w*)?|years?|yrs?|y/o|yo",
    "months": r"ay|aylık\w*|aylik\w*|months?|mos?",
}
_STATED = re.compile(
    r"(?<![\w.,])(\d+(?:[.,]\d+)?)[\s-]*(?:(?P<kg>"
    + _STATED_UNITS["kg"]
    + r")|(?P<lb>"
    + _STATED_UNITS["lb"]
    + r")|(?P<years>"
    + _STATED_UNITS["years"]
    + r")|(?P<months>"
    + _STATED_UNITS["months"]
    + r"))(?![a-zçğıöşü])",
    re.IGNORECASE,
)


# A duration: how long ago or for how long something happened ("Şişeyi 4 ay önce açtım", "2 yıldır kullanıyorum",
# "6 aydan beri", "son 2 yılda", "3 months ago", "for 2 years"), which is not the patient's age. A birth stays an
# age ("4 ay önce doğdu", "born 3 months ago"), and so does "for 2 years old".
_DURATION_NUMBER = (
    r"(?:\d+(?:[.,]\d+)?|bir|iki|[üu][çc]|d[öo]rt|be[şs]|alt[ıi]|yedi|sekiz|dokuz|on|birka[çc]|an?|one|two|three"
    r"|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a\s+)?few|several|(?:a\s+)?couple(?:\s+of)?)"
)
_TR_SPAN = r"(?:ay|y[ıi]l|sene|hafta|g[üu]n|saat)"
_EN_SPAN = r"(?:years?|yrs?|months?|mos?|weeks?|wks?|days?|hours?|hrs?)"
_DURATION = re.compile(
    # Turkish: "4 ay önce", "2 yıldır", "3 senedir", "6 aydan beri", "3 hafta sonra", "son 2 yılda", "3 ayda bir".
    r"(?<![\w.,])(?:son\s+)?"
    + _DURATION_NUMBER
    + r"[\s-]*"
    + _TR_SPAN
    + r"(?:[dt][ıiuü]r(?:lar)?|[dt][ae]n\s+beri|[dt][ae](?=\s+(?:bir|hiç|hic)\b)"
    r"|\s+(?:kadar\s+)?(?:önce|once|evvel|sonra)(?!\s*do[gğ])|\s+(?:boyunca|içinde|icinde|geçti|gecti))(?!\w)"
    # English: "3 months ago", "2 years later", "for 2 years", "over the past 6 months", "every 6 hours".
    r"|(?<!born\s)(?<![\w.,])"
    + _DURATION_NUMBER
    + r"[\s-]*"
    + _EN_SPAN
    + r"\s+(?:ago|later|before|after|earlier|back|prior)(?!\w)"
    r"|(?<!\w)(?:for|past|last|within|during|since|every)\s+(?:the\s+)?(?:past\s+|last\s+|next\s+)?"
    + _DURATION_NUMBER
    + r"[\s-]*"
    + _EN_SPAN
    + r"(?!\w)(?![\s-]*old)",
    re.IGNORECASE,
)


# How far along a pregnancy is ("6 aylık hamileyim", "20 haftalık gebeyim", "I'm 6 months pregnant", "30 weeks
# along"): a duration too, never the age of the one who is pregnant.
_PREGNANCY_TERM = re.compile(
    r"(?<![\w.,])" + _DURATION_NUMBER + r"[\s-]*(?:ayl[ıi]k|haftal[ıi]k|ay|hafta|" + _EN_SPAN + r")"
    r"[\s-]+(?=hamile|gebe(?!r)|pregnan|along\b)",
    re.IGNORECASE,
)


def without_durations(text: str) -> str:
    """text with every duration ("4 ay önce", "2 yıldır", "3 months ago", "for 2 years", "6 aylık hamileyim")
    blanked, its length kept: a time since or for which something happened is never read as the patient's age."""
    text = _DURATION.sub(lambda m: " " * len(m.group()), text or "")
    return _PREGNANCY_TERM.sub(lambda m: " " * len(m.group()), text)


# Numerals written as words ("yirmi iki kilo", "on beş aylık", "iki buçuk yaşında", "twenty-two pounds", "two and a
# half years old"). They are a closed class of each language, so they are listed (folded: "üç" is "uc"); a number
# up to 99, and a half after it.
_ONES = {
    "bir": 1, "iki": 2, "uc": 3, "dort": 4, "bes": 5, "alti": 6, "yedi": 7, "sekiz": 8, "dokuz": 9,
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
}  # fmt: skip
_TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "on": 10, "yirmi": 20, "otuz": 30, "kirk": 40, "elli": 50, "altmis": 60, "yetmis": 70, "seksen": 80, "doksan": 90,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip


def _words(values: dict[str, int]) -> str:
    return "|".join(sorted(values, key=len, reverse=True))


_SPELLED = re.compile(
    rf"(?<!\w)(?:(?P<tens>{_words(_TENS)})(?:[\s-]+(?P<ten_ones>{_words(_ONES)}))?|(?P<teens>{_words(_TEENS)})"
    rf"|(?P<ones>{_words(_ONES)})|(?P<digits>\d+))(?P<half>\s+bucuk|\s+and\s+a\s+half)?(?!\w)"
)


def _spelled(m: re.Match) -> str:
    if m["digits"] is not None:
        value: float = int(m["digits"])
    elif m["tens"] is not None:
        value = _TENS[m["tens"]] + (_ONES[m["ten_ones"]] if m["ten_ones"] else 0)
    else:
        value = _TEENS[m["teens"]] if m["teens"] else _ONES[m["ones"]]
    return f"{value + 0.5:g}" if m["half"] else f"{value:g}"


def in_digits(text: str) -> str:
    """text folded (agent.pharmacy.text.fold_case) with each whole number written in words, and each "and a
    half" / "buçuk" after a number, in digits: "yirmi iki kilo" -> "22 kilo", "2 buçuk yaş" -> "2.5 yas"."""
    return _SPELLED.sub(_spelled, fold_case(text))


# A weight or an age written as a label, then its number ("kilosu 11", "kilo 30 yas 9", "yaşı 5", "age 4"): the
# word names the unit. Folded text (in_digits). "weighs 40" is not one: it names no unit (kg or pounds).
_LABELLED = re.compile(
    r"(?<![\w.,])(?:(?P<kg>kilo(?:su|m|n|muz|nuz)?|agirlig(?:i|im))|(?P<years>yas(?:i|im|in)?|age|aged))"
    r"[\s:=]*(?P<number>\d+(?:[.,]\d+)?)(?![.,]?\d)"
)
_NUMBER_BEFORE = re.compile(r"(\d+(?:[.,]\d+)?)[\s-]*$")
# What each unit of _STATED measures: a label's number followed by a unit of its own kind is that unit's.
_KIND = {"kg": "weight", "lb": "weight", "years": "age", "months": "age"}


def _labelled(text: str) -> list[tuple[str, float, int, int]]:
    """(unit, value, start, end) of each label-first weight or age in folded text (_LABELLED), read left to right:
    a label right after a number is that number's unit ("14 kilo 3 yaş"), unless a label before took the number
    ("kilo 30 yas 9": 30 kg, 9 years); a number followed by a unit of its own label's kind is left to _STATED
    ("yaşı 18 aylık", "kilosu 40 lbs")."""
    out: list[tuple[str, float, int, int]] = []
    for m in _LABELLED.finditer(text):
        unit = "kg" if m["kg"] else "years"
        before = _NUMBER_BEFORE.search(text, 0, m.start())
        if before and not any(s <= before.start(1) < e for _, _, s, e in out):
            continue
        after = _STATED.match(text, m.start("number"))
        if after and _KIND[after.lastgroup] == _KIND[unit]:  # type: ignore[index]
            continue
        out.append((unit, float(m["number"].replace(",", ".")), m.start(), m.end()))
    return out


def stated_numbers(text: str) -> dict[str, list[float]]:
    """The weights in kg ("kg") and in pounds ("lb"), ages in years ("years") and in months ("months") that text
    states with their unit, in digits or in words (in_digits), the unit after the number ("11 kg", "3 yaşında") or
    as a label before it ("kilosu 11", "yaşı 3"); a duration ("4 ay önce", "for 2 years") is no age."""
    out: dict[str, list[float]] = {"kg": [], "lb": [], "years": [], "months": []}
    folded = in_digits(without_durations(text))
    for unit, value, start, end in _labelled(folded):
        out[unit].append(value)
        folded = folded[:start] + " " * (end - start) + folded[end:]  # its number is not also read with a unit after
    for m in _STATED.finditer(folded):
        out[m.lastgroup].append(float(m.group(1).replace(",", ".")))  # type: ignore[index]
    return out


# What may stand between the years and the months of one age ("2 yaş 3 aylık", "3 years and 2 months").
_YEARS_THEN_MONTHS = re.compile(r"[\s,]*(?:(?:ve|and)\s+)?")


def compound_ages(text: str) -> list[tuple[float, float]]:
    """(years, months) of each age text writes in both units at once, the months right after the years as
    stated_numbers reads them ("2 yaş 3 aylık": (2, 3)); durations ("3 aydır") are not ages."""
    folded = in_digits(without_durations(text))
    found = list(_STATED.finditer(folded))
    return [
        (float(a.group(1).replace(",", ".")), float(b.group(1).replace(",", ".")))
        for a, b in zip(found, found[1:], strict=False)
        if (a.lastgroup, b.lastgroup) == ("years", "months")
        and _YEARS_THEN_MONTHS.fullmatch(folded[a.end() : b.start()])
    ]


# Words that say an age is given ("3 yaşında", "bir yaşındaki", "iki aylık", "two years old", "I'm 35 years").
_AGE_WORDS = re.compile(
    r"(?<!\w)(?:yaş\w*|yas\w*|aylık\w*|aylik\w*|yetişkin\w*|yetiskin\w*|years?|yrs?|months?|mos|old|y/o|adults?)(?!\w)",
    re.I,
)
# Words that say a weight is given ("kilosu", "13 kg", "weighs", "40 lbs", "ağırlığı").
_WEIGHT_WORDS = re.compile(
    rf"(?<!\w)(?:{_STATED_UNITS['kg']}|{_STATED_UNITS['lb']}|weigh\w*|a[gğ][ıi]rl[ıi][gğ]\w*)(?!\w)", re.I
)
_ANY_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?")


def names_age(text: str) -> bool:
    """Whether text has a word of age ("yaşında", "aylık", "months", "old", "adult"), durations left out."""
    return bool(_AGE_WORDS.search(without_durations(text)))


def names_weight(text: str) -> bool:
    """Whether text has a word of weight ("kilosu", "kg", "weighs", "pounds", "ağırlığı")."""
    return bool(_WEIGHT_WORDS.search(text))


def written_numbers(text: str) -> list[float]:
    """Every number text writes ("35", "2,5", and with a half after it: "2 and a half", "two and a half", "iki
    buçuk" are 2.5), durations left out ("2 yıldır", "3 months ago"). A number word alone is not one ("bir kutu")."""
    halves = _SPELLED.sub(lambda m: _spelled(m) if m["half"] else m.group(), fold_case(without_durations(text)))
    return [float(n.replace(",", ".")) for n in _ANY_NUMBER.findall(halves)]


def among_numbers(numbers: list[float] | tuple[float, ...], *values: float | None) -> bool:
    """Whether one of values (None skipped) is one of numbers."""
    return any(v is not None and any(abs(v - n) < 1e-9 for n in numbers) for v in values)


def gives_age(text: str, *values: float | None) -> bool:
    """Whether text gives ground for an age: a word of age anywhere ("yaşında", "months", "old"), or one of
    values among its numbers ("I'm 35, 70 kg"), durations left out ("2 yıldır", "3 months ago"). A dose or a
    verdict must not rest on an age the model made up."""
    return names_age(text) or among_numbers(written_numbers(text), *values)


# ---------------------------------------------------------------- every quantity an answer states
# Numerals are a closed class of each language, so they are listed: digits, and the number words of Turkish
# (folded: "üç" is "uc") and English; fractions read as their value.
_WORD_VALUES = {
    "yarim": 0.5, "half": 0.5, "bir": 1, "one": 1, "a": 1, "an": 1, "iki": 2, "two": 2, "couple": 2, "uc": 3,
    "three": 3, "dort": 4, "four": 4, "bes": 5, "five": 5, "alti": 6, "six": 6, "yedi": 7, "seven": 7, "sekiz": 8,
    "eight": 8, "dokuz": 9, "nine": 9, "on": 10, "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "yirmi": 20,
    "twenty": 20, "otuz": 30, "thirty": 30, "kirk": 40, "forty": 40, "elli": 50, "fifty": 50, "yuz": 100,
    "hundred": 100,
}  # fmt: skip
# A number word is a whole word: the "a" of "ağrı" or the "on" of "once" is none.
_COUNT_NUMBER = r"(?P<n>\d+(?:[.,]\d+)?|(?:" + "|".join(sorted(_WORD_VALUES, key=len, reverse=True)) + r")\b)"
# What a count is of, on folded text: a unit that is taken (a tablet, a spoon, a drop), never a strength.
_COUNT_UNITS = {
    "unit": r"tablet\w*|tabs?|pills?|tane\w*|hap\w*|kapsul\w*|capsules?|caplets?|draje\w*|efervesan\w*|sachets?|sase\w*"
    r"|poset\w*|fitil\w*|suppositor\w*|patch\w*|bant\w*|puffs?|fis\w*|sikim\w*",
    "doses": r"doses?|doz\w*",
    "spoon": r"(?:tatli |cay |corba )?kasi\w*|(?:tea|table|dessert)?spoons?\w*|tsp|tbsp|olcek\w*|measures?",
    "drop": r"damla\w*|drops?",
}
# Words that make the number another measure, so a count may not reach past them: "500 mg tablet" (a strength),
# "5 kg altında doz" (a weight), "2 yaşında", "6 saat", "3 days".
_NOT_BETWEEN = (
    r"mg|mgr|g|gr|mcg|ml|cc|kg|kilo\w*|lbs?|pounds?|yas\w*|years?|yrs?|ay\w*|months?|hafta\w*|weeks?|gun\w*"
    r"|days?|saat\w*|hours?|hrs?|dakika\w*|minutes?|mins?"
)
_COUNT = re.compile(
    r"(?<![\w.,])"
    + _COUNT_NUMBER
    + r"\s*(?:x\s*|×\s*)?(?:(?!(?:"
    + _NOT_BETWEEN
    + "|"
    + "|".join(_WORD_VALUES)
    + r")\b)[^\W\d]+\s+){0,2}?(?P<what>"
    + "|".join(f"(?P<{k}>{v})" for k, v in _COUNT_UNITS.items())
    + r")(?!\w)"
)
# How often: "every 2 hours", "2 saatte bir", "3 times a day", "günde 5 kez".
_EVERY = re.compile(
    r"(?:every|her)\s+" + _COUNT_NUMBER + r"\s*(?:hours?|hrs?|h|saat\w*)\b"
    r"|" + _COUNT_NUMBER.replace("?P<n>", "?P<n2>") + r"\s*saatte\s+bir"
)
_TIMES = re.compile(
    _COUNT_NUMBER + r"\s*(?:times?|kez|kere|defa|sefer)\s*(?:a|per|each|in a)?\s*(?:day|daily|gun\w*)"
    r"|(?:gunde|daily|a day)\s+(?:(?:en fazla|en cok|at most|up to|no more than)\s+)?"
    + _COUNT_NUMBER.replace("?P<n>", "?P<n2>")
    + r"\s*(?:times?|kez|kere|defa|sefer)"
)
# More than the dose, said without a number.
_MULTIPLE = re.compile(r"\b(?:double|twice the|triple|two doses|iki kat\w*|cift doz\w*|iki doz\w*|uc kat\w*)")


# The most a spoon may hold, in mL, for a limit check (never read too small): a measuring spoon ("ölçek",
# "measure", a teaspoon) 5 mL, a tea spoon 2.5 mL, and an unnamed spoon as much as a tablespoon.
SPOON_ML = (("cay", 2.5), ("tatli", 5.0), ("tea", 5.0), ("tsp", 5.0), ("dessert", 10.0), ("olcek", 5.0),
            ("measure", 5.0))  # fmt: skip
SPOON_ML_MAX = 15.0


@dataclass(frozen=True)
class Quantity:
    """A quantity an answer states that is not a mass or a volume (read_amounts reads those): a count of units
    taken, of spoons or drops, an interval in hours, doses a day, or a multiple of the dose."""

    kind: str  # "unit", "doses", "spoon", "drop", "every_hours", "times_a_day" or "multiple"
    value: float
    start: int  # where it starts in the folded text (about where in the text)
    ml: float | None = None  # a spoon's count as mL, at the most it may hold
    written: str = ""  # the words that state it, folded


def _value(word: str) -> float:
    return _WORD_VALUES[word] if word in _WORD_VALUES else float(word.replace(",", "."))


def read_quantities(text: str) -> list[Quantity]:
    """Every count, interval, frequency and multiple of the dose text states, on its folded form (so Turkish
    typed without Turkish letters reads alike); masses and volumes are read_amounts'."""
    from .text import fold_case

    folded = fold_case(text or "")
    out = []
    for m in _COUNT.finditer(folded):
        kind = next(k for k in _COUNT_UNITS if m.group(k))
        n, ml = _value(m.group("n")), None
        if kind == "doses" and n <= 1:
            continue  # "a dose", "bir doz": no amount ("I can't give a Parol dose")
        if kind == "spoon":
            ml = n * next((v for word, v in SPOON_ML if m.group("what").startswith(word)), SPOON_ML_MAX)
        out.append(Quantity(kind, n, m.start(), ml, m.group()))
    for m in _EVERY.finditer(folded):
        out.append(Quantity("every_hours", _value(m.group("n") or m.group("n2")), m.start(), None, m.group()))
    for m in _TIMES.finditer(folded):
        out.append(Quantity("times_a_day", _value(m.group("n") or m.group("n2")), m.start(), None, m.group()))
    out += [Quantity("multiple", 2, m.start(), None, m.group()) for m in _MULTIPLE.finditer(folded)]
    return sorted(out, key=lambda q: q.start)
