"""Text rules shared by the pharmacy tools, the dose check and the evaluation: folding, language, numbers."""

from __future__ import annotations

import re
import unicodedata

TURKISH_LETTERS = frozenset("çğıöşüÇĞİÖŞÜ")
# Both Turkish i's fold to "i" before lower(): "İ".lower() is "i" + U+0307, and "I" lowers to "ı"
# in Turkish but "i" in English, so neither str.lower() nor a Turkish-only mapping is right for both.
_I_FOLD = str.maketrans({"İ": "i", "I": "i", "ı": "i"})
# A plain decimal as an argument may be written: "12", "12.5", "12,5", ".5".
DECIMAL = re.compile(r"[+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)")


def fold_case(text: str) -> str:
    """Case-, diacritic- and whitespace-insensitive form; Turkish dotted/dotless i all become i."""
    text = unicodedata.normalize("NFKD", str(text).translate(_I_FOLD))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    return " ".join(text.split())


def fold(text: str) -> str:
    """The matching key of a name: fold_case, and punctuation as spaces."""
    return " ".join(re.sub(r"[\W_]+", " ", fold_case(text)).split())


def squash(key: str) -> str:
    """Drop spaces from a folded key, so "co-trimoxazole" and "cotrimoxazole" meet."""
    return key.replace(" ", "")


def looks_turkish(text: str) -> bool:
    """Whether text contains letters only Turkish spelling uses."""
    return any(ch in TURKISH_LETTERS for ch in text)


def decimal(text: str) -> float | None:
    """A plain decimal written with "." or "," ("12,5"), or None when text is not one."""
    text = text.strip()
    return float(text.replace(",", ".")) if DECIMAL.fullmatch(text) else None


# International nonproprietary names are spelled differently in English, French and Turkish (ciprofloxacin,
# ciprofloxacine, siprofloksasin): these rewrites, applied in order to a folded name, bring the spellings
# of one name together without bringing two different names together (they only change how a sound is
# written; tests/test_drugdb.py checks that no two medicines of the data or the reference share a key).
_INN_RULES = [
    (re.compile(pattern), repl)
    for pattern, repl in (
        (r"[^a-z0-9]", ""),
        (r"ph", "f"),
        (r"th", "t"),
        (r"ch", "k"),
        (r"qu", "k"),
        (r"q", "k"),
        (r"c(?=[eiy])", "s"),
        (r"c", "k"),
        (r"y", "i"),
        (r"x", "ks"),
        (r"w", "v"),
        (r"eu", "o"),
        (r"oe", "e"),
        (r"ae", "e"),
        (r"(.)\1+", r"\1"),
        (r"e$", ""),
    )
]


def inn_key(text: str) -> str:
    """One key for the English, French and Turkish spellings of a medicine name ("Pseudoephedrine",
    "pseudoéphédrine" and "psödoefedrin" all give "psodefedrin")."""
    key = fold(text)
    for pattern, repl in _INN_RULES:
        key = pattern.sub(repl, key)
    return key
