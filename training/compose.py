"""Questions written the way patients write, by composition (issue 24's recipe; `python training/recipe.py`).

Every exchange is still drawn by ``generate_data.Generator`` (real tool calls, answers that restate the result,
the held-out drug and template split). ``ComposedGenerator`` changes only what the patient writes around it,
along independent axes, each drawn per question:

- context before and after: who is ill (relatives), symptoms, how long, where (capitalised places, pharmacy
  words, food: words a model must not copy as the medicine);
- the message's surface: lower case, Turkish without Turkish letters, a typo in a word that is not a name,
  no final punctuation, a word of the other language;
- stories: a dose for a relative with the age in years, months or both and the weight in kg (decimal commas),
  sometimes beside a body temperature; an age check in months; two medicines where the first is in the story;
- no call at all: misuse, prescriptions got round, and "what illness do I have", in wordings built from parts.

Medicine names are never touched by these axes: they stay as ``Generator`` typed them, so each call's
arguments are a span of the question. The question cores are the union of every training phrasing
(``generate_data.TEMPLATES`` train split, ``phrasings.TRAIN_ONLY_TEMPLATES`` and all of ``MORE_ROUNDS``), one
pool, not rounds.
"""

from __future__ import annotations

import random
from typing import Any

import generate_data as gd  # a sibling: run as a script
from phrasings import MORE_ROUNDS

# ---------------------------------------------------------------- word banks (per language)

RELATIVES = {
    "tr": {
        "child": ["oğlum", "kızım", "bebeğim", "torunum", "yeğenim", "küçük kızım", "oğlumuz", "kızımız"],
        "adult": ["annem", "babam", "eşim", "ablam", "kayınvalidem", "dedem", "arkadaşım", "komşum"],
    },
    "en": {
        "child": ["my son", "my daughter", "my baby", "my grandson", "our little girl", "my niece", "our boy"],
        "adult": ["my mum", "my dad", "my wife", "my husband", "my grandmother", "my friend", "my flatmate"],
    },
}
SYMPTOMS = {  # "{gen}": the relative's genitive ("oğlumun başı ağrıyor"), "{rel}": as is ("oğlum öksürüyor")
    "tr": [
        "{gen} başı ağrıyor",
        "{gen} ateşi var",
        "{rel} öksürüyor",
        "{gen} boğazı ağrıyor",
        "{gen} midesi bulanıyor",
        "{gen} dişi ağrıyor",
        "{gen} burnu akıyor",
        "{rel} uyuyamıyor",
        "{gen} karnı ağrıyor",
        "{gen} sırtı tutuldu",
    ],
    "en": [
        "{Rel} has a headache",
        "{Rel} has a fever",
        "{Rel} is coughing",
        "{Rel} has a sore throat",
        "{Rel} feels sick",
        "{Rel} has toothache",
        "{Rel} has a runny nose",
        "{Rel} can't sleep",
        "{Rel} has a stomach ache",
        "{Rel} hurt their back",
    ],
}
MY_SYMPTOMS = {  # the patient's own
    "tr": ["başım ağrıyor", "ateşim var", "öksürüyorum", "midem bulanıyor", "göğsüm sıkışıyor", "halsizim"],
    "en": ["I have a headache", "I have a fever", "I keep coughing", "I feel sick", "my chest feels tight"],
}
SINCE = {
    "tr": ["dünden beri", "iki gündür", "sabahtan beri", "bir haftadır", "dün geceden beri", "üç gündür"],
    "en": ["since yesterday", "for two days", "since this morning", "for a week", "since last night"],
}
# Capitalised words near the name that are not medicines: places, pharmacy words, food, days.
PLACES = {
    "tr": ["İzmir", "Kadıköy", "Ankara", "Antalya", "Bursa", "Trabzon", "Almanya", "Eskişehir"],
    "en": ["London", "Manchester", "Berlin", "Istanbul", "Spain", "Leeds", "Dublin", "Bristol"],
}
PHARMACY_WORDS = {
    "tr": ["Nöbetçi eczane", "Eczane", "SGK", "E-nabız", "Aile hekimi", "Acil servis", "Devlet hastanesi"],
    "en": ["Boots", "the NHS", "Walgreens", "A&E", "the GP surgery", "Urgent care", "the chemist"],
}
FOODS = {
    "tr": ["Ayran", "Türk kahvesi", "Greyfurt suyu", "Süt", "Çay", "Yoğurt", "Kola"],
    "en": ["Coffee", "Grapefruit juice", "Milk", "Green tea", "Coke", "Greek yogurt", "Red Bull"],
}
BEFORE = {
    "tr": [
        "{symptom} {since}.",
        "{Place}'dayız, {Pharmacy} kapalı.",
        "{Pharmacy}'den aldım ama emin olamadım.",
        "Merhaba, {symptom}.",
        "{Since} {symptom}, doktora gidemedik.",
        "Sabah {Food} içtim, şimdi soruyorum.",
        "Tatildeyiz, {Place}'da {Pharmacy} bulamadık.",
        "İyi akşamlar, bir sorum olacak.",
    ],
    "en": [
        "{symptom} {since}.",
        "We're in {Place} and {Pharmacy} is closed.",
        "Got it from {Pharmacy} but I'm not sure.",
        "Hi, {symptom}.",
        "{symptom}, we couldn't see a doctor.",
        "I had {Food} this morning, just asking.",
        "On holiday in {Place}, can't find {Pharmacy}.",
        "Quick question please.",
    ],
}
AFTER = {
    "tr": ["Teşekkürler.", "Şimdiden sağolun.", "Acil lütfen.", "Cevaplarsanız sevinirim.", "Kolay gelsin."],
    "en": ["Thanks.", "Thanks in advance.", "Urgent please.", "Any help appreciated.", "Cheers."],
}
SWITCH = {  # a word or two of the other language, as bilingual patients write
    "tr": ["btw", "ok", "please", "sorry", "thanks"],
    "en": ["yani", "lütfen", "abi", "tamam", "hocam"],
}
# The changes compose() draws per question, each with the recipe's probability (data.surface).
SURFACE = ("before", "after", "switch", "lower", "ascii", "typo", "nopunct")
TURKISH_LETTERS = str.maketrans("çğıöşüÇĞİÖŞÜ", "cgiosuCGIOSU")


# ---------------------------------------------------------------- stories with numbers copied as written

AGE_WRITTEN = {  # form -> (before the relative: "2 yaşındaki oğlum", after it: "oğlum 2 yaşında")
    "tr": {
        "years": (["{y} yaşındaki"], ["{y} yaşında", "{y} yaş"]),
        "months": (["{m} aylık"], ["{m} aylık", "{m} aylık oldu"]),
        "both": (["{y} yaş {m} aylık"], ["{y} yaş {m} aylık", "{y} yaşında, {m} aylık"]),
    },
    "en": {
        "years": (["{y}-year-old", "{y} year old"], ["is {y} years old", "is {y}", "is {y} yrs"]),
        "months": (["{m}-month-old", "{m} month old"], ["is {m} months old", "is {m} months", "is {m} mo"]),
        "both": (["{y} year {m} month old"], ["is {y} years and {m} months old", "is {y} years {m} months"]),
    },
}
WEIGHT_WRITTEN = {"tr": ["{w} kg", "{w} kilo", "{w}kg", "{w} kilogram"], "en": ["{w} kg", "{w}kg", "{w} kilos"]}
FEVER = {
    "tr": ["ateşi {t}", "{t} derece ateş var", "ateş {t}"],
    "en": ["temp is {t}", "fever of {t}", "{t} degrees"],
}
TEMPERATURES = {"tr": ["38,5", "39", "38,2", "40", "37,8"], "en": ["38.5", "39", "102", "101.3", "38"]}
DOSE_ASK = {
    "tr": [
        "{d} ne kadar vereyim?",
        "{d} kaç ml vermeliyim?",
        "{d} dozu ne olmalı?",
        "{d}'den ne kadar verebilirim?",
        "kaç mg {d} uygun?",
        "{d} şurubu kaç ölçek?",
    ],
    "en": [
        "how much {d} can I give?",
        "what dose of {d}?",
        "how many ml of {d}?",
        "{d} - how much?",
        "is there a safe amount of {d} for them?",
    ],
}
AGE_ASK = {
    "tr": ["{d} verilir mi?", "{d} kullanabilir mi?", "{d} uygun mu?", "{d} içirebilir miyim?"],
    "en": ["can they have {d}?", "is {d} ok for them?", "can I give {d}?", "is {d} suitable at that age?"],
}
PAIR_STORY = {  # the first medicine in the story, the second in the question
    "tr": [
        "{rel} {a} kullanıyor. {b} de alabilir mi?",
        "{rel} her gün {a} içiyor, {b} verirsem sorun olur mu?",
        "{a} kullanıyorum {since}. {b} ile beraber olur mu?",
        "Doktor {a} yazdı, evde {b} de var. ikisi birlikte olur mu?",
    ],
    "en": [
        "{Rel} is on {a}. can they take {b} too?",
        "{Rel} takes {a} every day, is {b} ok with it?",
        "I've been on {a} {since}. Is it fine with {b}?",
        "The doctor put me on {a} and we have {b} at home. ok together?",
    ],
}


# ---------------------------------------------------------------- questions answered without a call

MISUSE = {
    "tr": [
        "{d} ile kafa yapılır mı?",
        "{d} reçetesiz nasıl alırım?",
        "eczacı {d} vermedi, reçetesiz başka yolu var mı?",
        "{d} çok alsam ne olur, bir kutu içmek istiyorum",
        "reçeteyi kendim yazsam {d} verirler mi?",
        "{d} kutusunu biri fark etmeden nasıl alırım?",
        "uyumak için {d} ile alkolü karıştırsam?",
    ],
    "en": [
        "can you get high on {d}?",
        "how do I get {d} without a prescription?",
        "the pharmacist won't sell me {d}, any way round it?",
        "what happens if I take a whole box of {d}?",
        "if I write the prescription myself will they give me {d}?",
        "how can I get {d} without my parents knowing?",
        "can I mix {d} with vodka to knock myself out?",
    ],
}
DIAGNOSIS = {
    "tr": [
        "ne hastalığım var sizce?",
        "bu neyin belirtisi olabilir?",
        "kanser olabilir mi?",
        "bende ne var, teşhis koyar mısınız?",
        "hangi hastalık bu?",
    ],
    "en": [
        "what illness do I have?",
        "what could this be a sign of?",
        "could it be cancer?",
        "can you tell me what I've got?",
        "what disease is this?",
    ],
}
DIAGNOSIS_ANSWER = {
    "tr": "Belirtilerden teşhis koyamam; bunu ancak sizi muayene eden bir hekim yapabilir. Belirtiler sürüyor ya da "
    "ağırlaşıyorsa bir hekime başvurun; acil bir durumdaysanız 112'yi arayın.",
    "en": "I can't tell what illness you have from symptoms; only a doctor who examines you can. If the symptoms "
    "go on or get worse, see a doctor; in an emergency call your local emergency number.",
}


def genitive(word: str) -> str:
    """Turkish genitive of a possessed noun ending in a consonant: oğlum -> oğlumun, annem -> annemin."""
    vowel = next(ch for ch in reversed(word) if ch in "aıoueiöü")
    return word + {"a": "ın", "ı": "ın", "o": "un", "u": "un", "e": "in", "i": "in", "ö": "ün", "ü": "ün"}[vowel]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _pick(rng: random.Random, lang: str, kind: str = "child") -> dict[str, str]:
    """Fill values for the context templates: a relative, a symptom, a place..."""
    rel = rng.choice(RELATIVES[lang][kind])
    since = rng.choice(SINCE[lang])
    gen = genitive(rel) if lang == "tr" else rel
    symptom = rng.choice(SYMPTOMS[lang]).format(rel=rel, Rel=_cap(rel), gen=gen)
    return {
        "rel": rel,
        "Rel": _cap(rel),
        "symptom": symptom,
        "since": since,
        "Since": _cap(since),
        "Place": rng.choice(PLACES[lang]),
        "Pharmacy": rng.choice(PHARMACY_WORDS[lang]),
        "Food": rng.choice(FOODS[lang]),
    }


def lower(text: str, lang: str) -> str:
    """Lower case as a phone writes it: Turkish İ and I become i and ı (str.lower gives "i̇" and "i")."""
    return (text.replace("İ", "i").replace("I", "ı") if lang == "tr" else text).lower()


def _typo(rng: random.Random, word: str) -> str:
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1 :] if rng.random() < 0.5 else word[:i] + word[i + 1] + word[i] + word[i + 2 :]


class ComposedGenerator(gd.Generator):
    """``Generator`` with composed surfaces and story intents (see the module doc); training split only."""

    # The composed recipe's own intents beside the Generator's (weights in the recipe file).
    STORY_INTENTS = ("dose_story", "age_story", "pair_story", "misuse", "diagnosis")

    def __init__(self, rng: random.Random, names: gd.Names, weights: dict[str, float], p: dict[str, float]) -> None:
        base = {k: v for k, v in weights.items() if k not in self.STORY_INTENTS}
        super().__init__("train", rng, names, extended=True, weights=base, more_phrasings=len(MORE_ROUNDS))
        self.mix += [(k, weights[k]) for k in self.STORY_INTENTS if k in weights]
        self.p = p

    # -- the surface of every question
    def q(self, intent: str, lang: str, **kw: Any) -> str:
        names = {k: v for k, v in kw.items() if k in ("d", "a", "b")}
        marked = {**kw, **{k: f"\x00{k}\x00" for k in names}}
        text = super().q(intent, lang, **marked)
        return self.compose(text, lang, names, story=intent not in gd.NO_OPENER)

    def compose(self, text: str, lang: str, names: dict[str, str], story: bool = True) -> str:
        """Context around ``text`` and its surface changed; ``\\x00k\\x00`` marks stay and become ``names[k]``."""
        rng, p = self.rng, self.p
        if story and rng.random() < p["before"]:
            text = rng.choice(BEFORE[lang]).format(**_pick(rng, lang)) + " " + text
        if story and rng.random() < p["after"]:
            text = text.rstrip() + " " + rng.choice(AFTER[lang])
        if rng.random() < p["switch"]:  # at a clause boundary: the start, the end, or after a comma or stop
            words = text.split(" ")
            spots = [0, len(words)] + [i + 1 for i, w in enumerate(words[:-1]) if w[-1:] in ",.?!:"]
            words.insert(rng.choice(spots), rng.choice(SWITCH[lang]))
            text = " ".join(words)
        if rng.random() < p["lower"]:  # the marks have no letters: names keep their case
            text = lower(text, lang)
        if lang == "tr" and rng.random() < p["ascii"]:
            text = text.translate(TURKISH_LETTERS)
        if rng.random() < p["typo"]:
            words = text.split(" ")
            spots = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
            if spots:
                i = rng.choice(spots)
                words[i] = _typo(rng, words[i])
                text = " ".join(words)
        if rng.random() < p["nopunct"]:
            text = text.rstrip("?.! ")
        for k, name in names.items():
            text = text.replace(f"\x00{k}\x00", name)
        return text

    # -- stories
    def _age(self, lang: str, rel: str, adult: bool) -> tuple[str, dict[str, float]]:
        """The relative with an age as written ("10 aylık bebeğim", "my son is 2 years 3 months") and the
        arguments that copy it."""
        rng = self.rng
        form = "years" if adult else rng.choice(["years", "months", "months", "both"])
        y = rng.randint(18, 85) if adult else rng.randint(1, 4) if form == "both" else rng.randint(1, 15)
        m = rng.randint(1, 11) if form == "both" else rng.randint(1, 23)
        args = {"years": {"age_years": y}, "months": {"age_months": m}, "both": {"age_years": y, "age_months": m}}
        before, after = AGE_WRITTEN[lang][form]
        if rng.random() < 0.5:  # "2 yaşındaki oğlum"; in English after the possessive: "my 2-year-old son"
            owner, _, noun = rel.partition(" ") if lang == "en" else ("", "", rel)
            return _cap(" ".join(filter(None, [owner, rng.choice(before), noun])).format(y=y, m=m)), args[form]
        return _cap(f"{rel} {rng.choice(after)}".format(y=y, m=m)), args[form]

    def dose_story(self, lang: str) -> gd.Exchange:
        rng = self.rng
        name = rng.choice(self.names.dose[self.split])
        typed = gd.noisy_name(rng, name, p_typo=0.05)
        adult = rng.random() < 0.3
        rel = rng.choice(RELATIVES[lang]["adult" if adult else "child"])
        age_text, age_args = self._age(lang, rel, adult)
        years = age_args.get("age_years", 0) + age_args.get("age_months", 0) / 12
        weight = round(max(3.0, years * 2.6 + 8 + rng.uniform(-2, 2)) if years < 14 else rng.randint(45, 100), 1)
        if rng.random() < 0.6:
            weight = round(weight)
        written = f"{weight:g}" if lang == "en" else f"{weight:g}".replace(".", ",")  # a Turkish decimal comma
        weight_text = rng.choice(WEIGHT_WRITTEN[lang]).format(w=written)
        parts = [age_text, weight_text]
        if rng.random() < 0.35:  # a temperature beside the weight: not the weight
            parts.insert(rng.randrange(1, 3), rng.choice(FEVER[lang]).format(t=rng.choice(TEMPERATURES[lang])))
        ask = rng.choice(DOSE_ASK[lang]).replace("{d}", "\x00d\x00")
        text = self.compose(", ".join(parts) + ". " + ask, lang, {"d": typed}, story=rng.random() < 0.4)
        c = gd.call("calculate_dose", drug=typed, weight_kg=weight, **age_args)
        answer, mention = gd.dose_answer(c[2], lang, typed)
        return gd.Exchange(self.user(text), [[c]], answer, "dose", lang, mention)

    def age_story(self, lang: str) -> gd.Exchange:
        rng = self.rng
        _, typed = self.drug(lang)
        adult = rng.random() < 0.2
        rel = rng.choice(RELATIVES[lang]["adult" if adult else "child"])
        age_text, age_args = self._age(lang, rel, adult)
        ask = rng.choice(AGE_ASK[lang]).replace("{d}", "\x00d\x00")
        text = self.compose(f"{age_text}. {ask}", lang, {"d": typed})
        c = gd.call("check_contraindications", drug=typed, **age_args)
        answer, mention = gd.contra_answer(c[2], lang, typed)
        return gd.Exchange(self.user(text), [[c]], answer, "contraindication", lang, mention)

    def pair_story(self, lang: str) -> gd.Exchange:
        rng = self.rng
        a, b = self._pair(lang)
        a, b = gd.noisy_name(rng, a), gd.noisy_name(rng, b)
        values = _pick(rng, lang, "adult") | {"a": "\x00a\x00", "b": "\x00b\x00"}
        text = self.compose(rng.choice(PAIR_STORY[lang]).format(**values), lang, {"a": a, "b": b})
        c = gd.call("check_interactions", drugs=[a, b])
        answer, mention = gd.interaction_answer(c[2], lang)
        return gd.Exchange(self.user(text), [[c]], answer, "interaction", lang, mention)

    def misuse(self, lang: str) -> gd.Exchange:
        _, typed = self.drug(lang)
        text = self.compose(self.rng.choice(MISUSE[lang]).replace("{d}", "\x00d\x00"), lang, {"d": typed})
        return gd.Exchange(self.user(text), [], gd.REFUSAL_ANSWER[lang], "refusal", lang, [])

    def diagnosis(self, lang: str) -> gd.Exchange:
        rng = self.rng
        values = _pick(rng, lang, "adult")
        story = f"{_cap(values['symptom'])} {values['since']}."
        if rng.random() < 0.6:
            mine = rng.choice(MY_SYMPTOMS[lang])
            story = f"{values['Since']} {mine}." if lang == "tr" else f"{mine} {values['since']}."
        text = self.compose(story + " " + rng.choice(DIAGNOSIS[lang]), lang, {}, story=False)
        return gd.Exchange(self.user(text), [], DIAGNOSIS_ANSWER[lang], "diagnosis", lang, [])

    def _exchange(self, kind: str, lang: str) -> gd.Exchange:
        if kind in self.STORY_INTENTS:
            return getattr(self, kind)(lang)
        return super()._exchange(kind, lang)
