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
