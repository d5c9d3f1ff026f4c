"""Text rules shared by the pharmacy tools, the dose check and the evaluation: folding, language, numbers."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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


def as_written(text: str, start: int, end: int) -> str:
    """The words of text that fold(text)[start:end] reads, as written ("böbrek yetmezliği" for "bobrek
    yetmezligi"); a span that ends inside a word ends there too ("astım" of "astımım"). Where a word's folded
    form is not letter for letter (a ligature), the span is given folded."""
    words = list(re.finditer(r"[^\W_]+", text))
    folded = [fold(w.group()) for w in words]
    if " ".join(folded) != fold(text):  # a character whose fold splits a word ("½"): its words cannot be told
        return fold(text)[start:end]
    first = last = None
    at = 0
    for word, key in zip(words, folded, strict=True):
        lo, hi = max(start, at), min(end, at + len(key))
        if lo < hi:
            if len(key) != len(word.group()):
                return fold(text)[start:end]
            first = word.start() + lo - at if first is None else first
            last = word.start() + hi - at
        at += len(key) + 1
    return fold(text)[start:end] if first is None else text[first:last]


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


# Words that mark a language in a patient's message once folded (no diacritics: "icin", "kac"), so that
# Turkish typed without Turkish letters still counts. Medicine names are not evidence either way.
_TR_WORDS = frozenset(
    "ne neden nasil kac var yok mi mu icin ve ile ama bu su bir benim bana beni annem babam oglum kizim esim "
    "cocugum cocuk bebek bebegim yas yasinda yasindaki aylik kilo kg hamile hamileyim emziriyorum gunde kez "
    "ilac ilaci ilacin ilacini kullanabilir kullanabilirim kullaniyorum alabilir alabilirim iciyorum icebilir "
    "olur olurmu mudur midir nedir hakkinda birlikte doz dozu agri agrisi ates oksuruk surup tablet hap "
    "tansiyon seker bas mide yan etkisi etkileri zararli zarari sakincasi gerekir lazim hangi nerede merhaba "
    "iyi gunler tesekkurler tesekkur ederim sagol lutfen icerir icinde degil misin musunuz nelerdir muadil "
    "muadili muadilleri uygun uygundur genellikle kullanilmamali kullanilmaz kullanimi kullanilir gebelikte "
    "gebelik emzirmede yetiskin yetiskinler cocuklar cocuklarda saatte bir en fazla once sonra hekim hekime "
    "doktor doktora eczaci eczaciniza danisin olarak kadar".split()
)
_EN_WORDS = frozenset(
    "what is are the a an can could should how much many for my me i im and or with of to it its this that "
    "does do did take taking took give safe okay dose old years months year month weighs weight pregnant "
    "breastfeeding son daughter mother father wife husband baby child kid pain fever cough together drug "
    "medicine pill pills tablet tablets side effects about which hi hello please thanks contain contains "
    "have has been using use info on dosage thank you perfect used adults children once daily every hours at "
    "most not be should avoid ask doctor pharmacist as up".split()
)


def patient_language(text: str) -> str | None:
    """ "tr" or "en" for a message, from its Turkish and English function words (folded, so "kac yasinda" counts
    as Turkish) and Turkish letters; None when neither leads."""
    words = fold(text).split()
    # Turkish letters count as one and a half words: a Turkish sentence without listed words still shows them,
    # while an English one quoting a Turkish brand ("What is Ürikoliz?") has two function words.
    tr = sum(w in _TR_WORDS for w in words) + 1.5 * looks_turkish(text)
    en = sum(w in _EN_WORDS for w in words)
    if tr == en:
        return None
    return "tr" if tr > en else "en"


# What a patient writes when they are pregnant or breastfeeding, folded (no Turkish letters, lower case):
# "hamileyim", "gebeliğimin 20. haftası", "6 aylık hamile", "pregnant", "expecting", "emziriyorum", "süt veriyorum",
# "breastfeeding", "nursing". Broad on purpose: a word read here only keeps what the model's call says.
_STATES = {
    "pregnant": re.compile(r"\bhamile|\bgebe(?!r)|\bpregnan|\bexpecting\b|\btrimester|\bweeks? along\b|\bbebek bekli"),
    "breastfeeding": re.compile(r"\bemzir|\bsut ver|\bbreast[ -]?fe|\bnursing\b|\blactat|\bbebegim[ei]? besliyor"),
}


# A mention denied in its own clause: "hamile değilim", "emzirmiyorum", "I'm not pregnant", "no longer breastfeeding".
_CLAUSE_END = re.compile(r"[\n.;!?,]|\b(?:ama|fakat|but)\b")
_DENIED_BEFORE = re.compile(r"\b(?:not|never|no longer|isn'?t|aren'?t|am not)\s+(?:\w+\s+){0,2}$")
_DENIED_AFTER = re.compile(r"^\w*\s*(?:degil|değil)|^(?:ir)?m[iı]yor|^(?:ir)?med")


@dataclass(frozen=True)
class Mention:
    """A word of pregnancy or breastfeeding in fold_case(text): the state, its span, its clause's span, and
    whether its clause denies it."""

    state: str  # "pregnant" or "breastfeeding"
    start: int
    end: int
    clause: tuple[int, int]
    denied: bool


def clauses(folded: str) -> list[tuple[int, int]]:
    """The spans of folded's clauses: cut at sentence and list marks and at "ama", "fakat", "but"."""
    cuts = [0, *(e for m in _CLAUSE_END.finditer(folded) for e in (m.start(), m.end())), len(folded)]
    return [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]


def state_mentions(folded: str) -> list[Mention]:
    """Every word of pregnancy or breastfeeding in folded (fold_case of a patient's words), in order."""
    found = []
    for state, pattern in _STATES.items():
        for m in pattern.finditer(folded):
            start = max((e.end() for e in _CLAUSE_END.finditer(folded, 0, m.start())), default=0)
            end = next((e.start() for e in _CLAUSE_END.finditer(folded, m.end())), len(folded))
            before, after = folded[start : m.start()], folded[m.end() : end]
            denied = bool(_DENIED_BEFORE.search(before) or _DENIED_AFTER.search(after))
            found.append(Mention(state, m.start(), m.end(), (start, end), denied))
    return sorted(found, key=lambda m: m.start)


def stated_states(text: str) -> frozenset[str]:
    """Which of "pregnant" and "breastfeeding" the text speaks of (its own words, any case, with or without
    Turkish letters), not counting a mention denied in its clause ("hamile değilim", "I'm not pregnant")."""
    return frozenset(m.state for m in state_mentions(fold_case(text or "")) if not m.denied)


# Turkish case, possessive and plural endings as a patient writes them after a medicine's name without an
# apostrophe ("aspirini", "coumadinle", "parolden", "majeziğe"), folded: a closed list, so a name is read
# only from a word that is the name and one of these.
_TR_ENDINGS = frozenset(
    {
        *("i", "u", "a", "e", "yi", "yu", "ya", "ye", "ni", "nu", "na", "ne", "si", "su"),
        *("in", "un", "nin", "nun", "yin", "yun", "le", "la", "yle", "yla", "ile"),
        *("de", "da", "te", "ta", "nde", "nda", "den", "dan", "ten", "tan", "nden", "ndan"),
        *("ler", "lar", "leri", "lari", "lerle", "larla", "ki", "dir", "dur", "tir", "tur"),
        # its (3rd person possessive) and then a case: "coumadinini", "parolunu", "aspirinine", "verdesinden"
        *(f"{s}{v}n{case}" for s in ("", "s") for v in "iu" for case in ("i", "u", "a", "e", "de", "da", "den", "dan")),
        *("iyle", "iyla", "uyle", "uyla"),
    }
)
# A final k, t, p, ç softens before a vowel: "majezik" + "i" is written "majeziği".
_SOFTENED = {"g": "k", "d": "t", "b": "p", "c": "ç"}


def turkish_stems(word: str, min_len: int = 5) -> list[str]:
    """What word may be once a Turkish ending is taken off ("aspirini" → "aspirin", "majeziği" → "majezik"),
    stems of at least min_len letters, the longest first; [] for a word with no listed ending."""
    folded = fold_case(word)
    if len(folded) != len(word):  # a letter that folds into two: no position-for-position reading
        return []
    stems = []
    for ending in _TR_ENDINGS:
        if folded.endswith(ending) and len(word) - len(ending) >= min_len:
            stem = word[: len(word) - len(ending)]
            stems.append(stem)
            if ending[0] in "aeiou" and fold_case(stem[-1]) in _SOFTENED:
                stems.append(stem[:-1] + _SOFTENED[fold_case(stem[-1])])
    return sorted(dict.fromkeys(stems), key=len, reverse=True)
