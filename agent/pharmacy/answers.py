"""The phrasebook: the answer's sentences, written from the tools' results, in Turkish and English.

The model decides (which tool, which arguments); the tools speak. One renderer per tool turns its result (every
shape: the answer, ambiguous and unknown names with the tools' own suggestions, a medicine the data does not
cover, a referral to a doctor, a tool's error) into the answer a pharmacist gives, and `render_turn` composes the
results of one turn into one answer. The training generator (training/generate_data.py) writes its answers with
these same functions: one source of the wording, for what the model learns and what the agent says.
Each renderer returns (text, key facts): the facts are the words an answer must hold (eval's must_mention).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..engine.checks import current_turn
from ..engine.toolbox import ENGINE_ERROR_CODES

Rendered = tuple[str, list[str]]

# How each severity is written in an answer.
SEVERITY_WORDS = {
    "tr": {
        "contraindicated": "kontrendike (contraindicated)",
        "major": "ciddi (major)",
        "moderate": "orta (moderate)",
        "minor": "hafif (minor)",
    },
    "en": {"contraindicated": "contraindicated", "major": "major", "moderate": "moderate", "minor": "minor"},
}
# How each verdict is written in an answer.
VERDICT_WORDS = {
    "tr": {
        "ok": "uygun (ok)",
        "caution": "dikkatli kullanılmalı (caution)",
        "avoid": "kullanılmamalı (avoid)",
        "unknown": "belirsiz (unknown)",
    },
    "en": {"ok": "ok", "caution": "caution", "avoid": "avoid", "unknown": "unknown"},
}


def unknown_name_answer(asked: str, suggestions: list[str], lang: str) -> str:
    """The answer to a name the tools did not find: the name, and their suggestions or a request to check it."""
    if lang == "tr":
        text = f"'{asked}' ilaç veritabanında bulunamadı."
        return text + (
            f" Şunu mu demek istediniz: {', '.join(suggestions)}?"
            if suggestions
            else " Lütfen ilacın adını kontrol edin."
        )
    text = f"'{asked}' was not found in the drug database."
    return text + (
        f" Did you mean: {', '.join(suggestions)}?" if suggestions else " Please check the name of the medicine."
    )


SECTION_WORDS = {
    "indications": ("endikasyonları", "indications"),
    "dosage": ("kullanım dozu", "dosage"),
    "contraindications": ("kontrendikasyonları", "contraindications"),
    "warnings": ("uyarıları", "warnings"),
    "side_effects": ("yan etkileri", "side effects"),
    "interactions": ("etkileşimleri", "interactions"),
    "pregnancy": ("gebelikte kullanımı", "use in pregnancy"),
    "pediatric": ("çocuklarda kullanımı", "use in children"),
    "overdose": ("doz aşımı", "overdose"),
}

ANSWER = {
    "usage": {"tr": "{drug} ({ing}): {usage}.", "en": "{drug} ({ing}): {usage}."},
    "ingredient": {"tr": "{drug} etken maddesi: {ing}. {usage}.", "en": "{drug} contains {ing}. {usage}."},
}
GREETING_ANSWER = {
    "tr": "Merhaba! Ben eczacı asistanıyım. İlaçların kullanımı, dozu, etkileşimleri ve yan etkileri hakkında "
    "sorabilirsiniz.",
    "en": "Hello! I am a pharmacist assistant. Ask me about a medicine's use, dose, interactions or side effects.",
}
THANKS_ANSWER = {
    "tr": "Rica ederim, geçmiş olsun. Başka bir sorunuz olursa yazabilirsiniz.",
    "en": "You're welcome. If you have another question about a medicine, just ask.",
}
OFFTOPIC_ANSWER = {
    "tr": "Üzgünüm, yalnızca ilaçlar ve eczacılıkla ilgili sorularda yardımcı olabilirim.",
    "en": "Sorry, I can only help with questions about medicines and pharmacy.",
}
# An answer that states an amount no tool gave: where the amount has to come from.
NO_DOSE_ANSWER = {
    "tr": "Bir doz ya da miktar yalnızca doz hesabından söyleyebilirim: ilacın adını, kiloyu ve yaşı yazın; ya da "
    "prospektüse bakın ve eczacınıza danışın.",
    "en": "I can only give a dose or an amount from the dose calculation: tell me the medicine, the weight and the "
    "age, or check the leaflet and ask your pharmacist.",
}
REFUSAL_ANSWER = {
    "tr": "Bu isteğe yardımcı olamam. İlaçları yalnızca hekim ve eczacı önerisiyle, güvenli şekilde "
    "kullanın. Acil bir durumdaysanız 112'yi arayın.",
    "en": "I can't help with that. Use medicines only as a doctor or pharmacist advises. If you are in "
    "danger, call your local emergency number.",
}


def error_answer(result: dict, lang: str, asked: str) -> tuple[str, list[str]]:
    """The answer to a tool error: unknown / ambiguous name, or bad numbers."""
    err = result["error"]
    code = err["code"]
    if code == "unknown_drug":
        sugg = err.get("suggestions") or []
        missing = "bulunamadı" if lang == "tr" else "not found"
        return unknown_name_answer(asked, sugg, lang), [sugg[0] if sugg else missing]
    if code == "not_in_database":
        if lang == "tr":
            return (
                f"'{asked}' bu veritabanının kapsamadığı bir ilaç; yerine başka bir ilaç için yanıt vermem. "
                "Lütfen hekiminize veya eczacınıza danışın.",
                ["kapsamadığı"],
            )
        return (
            f"'{asked}' is a medicine this database does not cover, so I will not answer for another one. "
            "Please ask your doctor or pharmacist.",
            ["does not cover"],
        )
    if code == "ambiguous_drug":
        opts = ", ".join(f"{m['drug']} ({m['active_ingredient']})" for m in err["matches"])
        first = err["matches"][0]["drug"]
        if lang == "tr":
            return f"'{asked}' birden fazla ilaçla eşleşiyor: {opts}. Hangisini kastettiniz?", [first]
        return f"'{asked}' matches several medicines: {opts}. Which one do you mean?", [first]
    if code == "out_of_range":
        if lang == "tr":
            return f"Doz hesaplanamadı: {err['message']}. Lütfen kilo ve yaşı kontrol edin.", ["hesaplanamadı"]
        return f"I could not calculate a dose: {err['message']}. Please check the weight and age.", ["could not"]
    if lang == "tr":
        return f"Bu bilgiyle sorgu yapılamadı ({err['message']}). Lütfen sorunuzu ilaç adıyla tekrar yazın.", []
    return f"I could not look that up ({err['message']}). Please ask again naming the medicine.", []


def search_answer(result: dict, lang: str, asked: str, ingredient_first: bool = False) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, asked)
    if "matches" in result:
        opts = ", ".join(f"{m['drug']} ({m['active_ingredient']})" for m in result["matches"])
        first = result["matches"][0]["drug"]
        if lang == "tr":
            return f"'{asked}' birden fazla ilaçla eşleşiyor: {opts}. Hangisini kastettiniz?", [first]
        return f"'{asked}' matches several medicines: {opts}. Which one do you mean?", [first]
    usage = (
        result["usage"] if ("usage_tr" in result) == (lang == "en") else result.get(f"usage_{lang}", result["usage"])
    )
    drug, ing = result["drug"], result["active_ingredient"]
    if ingredient_first:
        text = ANSWER["ingredient"][lang].format(drug=drug, ing=ing, usage=usage)
        mention = [ing]
    else:
        text = ANSWER["usage"][lang].format(drug=drug, ing=ing, usage=usage)
        mention = [usage]
    if result.get("high_risk"):
        text += (
            " Yüksek riskli bir ilaçtır; yalnızca hekim kontrolünde kullanın."
            if lang == "tr"
            else (" It is a high-risk medicine: use it only under medical supervision.")
        )
    if result.get("status") == "Rx":
        text += " Reçeteli bir ilaçtır." if lang == "tr" else " It is a prescription medicine."
    return text, mention


def _first_clause(text: str, limit: int = 40) -> str:
    """A short, unambiguous prefix of a result text (cut at a word boundary), used as must_mention."""
    if len(text) <= limit:
        return text.rstrip(".")
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:(")


def section_answer(result: dict, lang: str, asked: str, section: str) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, asked)
    word = SECTION_WORDS[section][0 if lang == "tr" else 1]
    if "text" in result:
        body, first = result["text"], result["text"]
    else:
        body = " ".join(f"{t['ingredient']}: {t['text']}" for t in result["texts"])
        first = result["texts"][0]["text"]
    note = f" {result['note']}" if result.get("note") else ""
    if lang == "tr":
        return f"{result['drug']} ({result['active_ingredient']}) {word}: {body}{note}", [_first_clause(first)]
    return f"{result['drug']} ({result['active_ingredient']}) {word}: {body}{note}", [_first_clause(first)]


def pair_sentence(pair: dict, lang: str) -> str:
    """One check_interactions pair in words: the two medicines, the severity, what happens and what to do."""
    a, b = pair["drugs"]
    if pair["severity"] is None:
        return f"{a} + {b}: {pair['description']}."
    sev = SEVERITY_WORDS[lang][pair["severity"]]
    label = "etkileşim" if lang == "tr" else "interaction"
    return f"{a} + {b}: {sev} {label}. {pair['description']} {pair.get('management') or ''}".rstrip()


def duplicate_sentence(dup: dict) -> str:
    """One active ingredient taken twice (check_interactions' duplicates) in words."""
    a, b = dup["drugs"]
    return f"{a} + {b}: {dup['ingredient']}. {dup['warning']}"


def condition_sentence(entry: dict, lang: str) -> str:
    """One check_interactions condition entry (a medicine with alcohol, say) in words: its verdict and reasons."""
    reasons = " ".join(entry.get("reasons", [])[:2])
    return f"{entry['drug']} + {entry['condition']}: {VERDICT_WORDS[lang][entry['verdict']]}. {reasons}".rstrip()


def interaction_answer(result: dict, lang: str) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, "")
    parts, mention = [], []
    for pair in result["pairs"][:2]:
        parts.append(pair_sentence(pair, lang))
        mention.append(pair["description"] if pair["severity"] is None else pair["severity"])
    for dup in result["duplicates"][:1]:
        parts.append(duplicate_sentence(dup))
        mention.append(dup["ingredient"])
    for entry in result.get("conditions", [])[:2]:  # "Flagyl ile alkol": the medicine's verdict for the condition
        parts.append(condition_sentence(entry, lang))
        mention.append(entry["verdict"])
    if result.get("unknown"):
        names = ", ".join(u["name"] for u in result["unknown"])
        parts.append(f"{names}: {result['warning']}")
    return " ".join(parts), mention[:1]


def dose_answer(result: dict, lang: str, asked: str) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, asked)
    drug = result["drug"]
    if result["refer_to_doctor"]:
        reasons = " ".join(result["reasons"])
        if lang == "tr":
            return f"{drug} için doz hesaplayamıyorum: {reasons} Lütfen hekime danışın.", [
                _first_clause(result["reasons"][0])
            ]
        return f"I can't give a {drug} dose: {reasons} Please ask a doctor.", [_first_clause(result["reasons"][0])]
    mg, every, times, daily = (
        result["per_dose_mg"],
        result["interval_hours"],
        result["max_doses_per_day"],
        result["max_daily_mg"],
    )
    ml = ""
    if "per_dose_ml" in result:
        ml = f" ({result['per_dose_ml']:g} mL, {result['liquid_strength']})"
    cap = ""
    if result["cap_applied"]:
        cap = " Doz üst sınıra göre sınırlandı." if lang == "tr" else " The dose was capped at the label's limit."
    # What to take, when the product's tablets fit the dose (never rounded up: 630 mg by weight is one 500 mg tablet).
    if "per_dose_units" in result:
        n, unit, taken = result["per_dose_units"], result["unit_strength"], result["per_dose_mg_as_units"]
        limit = "" if taken == mg else (f"; kiloya göre en fazla {mg} mg" if lang == "tr" else f"; {mg} mg by weight")
        amount = f"{n} × {unit} ({taken:g} mg{limit})"
    else:
        amount = f"{mg} mg{ml}"
    note = f" {result['unit_note']}" if "unit_note" in result else ""
    if lang == "tr":
        text = (
            f"{drug}: tek doz {amount}, {every:g} saatte bir, günde en fazla {times} kez "
            f"(günlük en fazla {daily} mg).{cap}{note} {result['disclaimer']}"
        )
    else:
        text = (
            f"{drug}: {amount} per dose, every {every:g} hours, at most {times} times a day "
            f"(no more than {daily} mg a day).{cap}{note} {result['disclaimer']}"
        )
    return text, [f"{mg} mg"]


def alternatives_answer(result: dict, lang: str, asked: str) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, asked)
    alts = result["alternatives"]
    drug, ing = result["drug"], result["active_ingredient"]
    if not alts:
        return f"{drug} ({ing}): {result['note']}", [_first_clause(result["note"])]
    brands = ", ".join(a["brand"] for a in alts[:5])
    if lang == "tr":
        return f"{drug} ({ing}) ile aynı etken maddeyi içerenler: {brands}. {result['note']}", [alts[0]["brand"]]
    return f"Same active ingredient as {drug} ({ing}): {brands}. {result['note']}", [alts[0]["brand"]]


def contra_answer(result: dict, lang: str, asked: str) -> tuple[str, list[str]]:
    if "error" in result:
        return error_answer(result, lang, asked)
    verdict = VERDICT_WORDS[lang][result["verdict"]]
    reasons = " ".join(r["text"] for r in result["reasons"][:2]) or result.get("note", "")
    if lang == "tr":
        return f"{result['drug']} ({result['active_ingredient']}): {verdict}. {reasons}", [result["verdict"]]
    return f"{result['drug']} ({result['active_ingredient']}): {verdict}. {reasons}", [result["verdict"]]


# ---------------------------------------------------------------- one turn's answer


def _search(result: dict, lang: str, args: dict) -> Rendered:
    return search_answer(result, lang, _asked(args))


def _section(result: dict, lang: str, args: dict) -> Rendered:
    if "error" not in result and args.get("section") not in SECTION_WORDS:
        section = result.get("section")
        args = {**args, "section": section}
    return section_answer(result, lang, _asked(args), args["section"])


def _interactions(result: dict, lang: str, args: dict) -> Rendered:
    return interaction_answer(result, lang)


def _dose(result: dict, lang: str, args: dict) -> Rendered:
    return dose_answer(result, lang, _asked(args))


def _alternatives(result: dict, lang: str, args: dict) -> Rendered:
    return alternatives_answer(result, lang, _asked(args))


def _contraindications(result: dict, lang: str, args: dict) -> Rendered:
    return contra_answer(result, lang, _asked(args))


# tool name -> renderer(result, language, the call's arguments)
RENDERERS: dict[str, Callable[[dict, str, dict], Rendered]] = {
    "search_drug": _search,
    "get_drug_info": _section,
    "check_interactions": _interactions,
    "calculate_dose": _dose,
    "find_alternatives": _alternatives,
    "check_contraindications": _contraindications,
}


def _asked(args: dict) -> str:
    drug = args.get("drug")
    return drug if isinstance(drug, str) else ""


def turn_results(messages: list[dict]) -> list[tuple[str, dict, dict]]:
    """(tool name, the call's arguments, result) for each tool result of the current turn, in order."""
    turn = current_turn(messages)
    arguments: dict[str, dict] = {}
    for m in turn:
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                args = None
            arguments[call.get("id")] = args if isinstance(args, dict) else {}
    out = []
    for m in turn:
        if m.get("role") != "tool":
            continue
        try:
            result = json.loads(m.get("content") or "")
        except (TypeError, ValueError):
            result = None
        out.append((str(m.get("name") or ""), arguments.get(m.get("tool_call_id"), {}), result))
    return out


def covers(name: str, result: Any) -> bool:
    """Whether the phrasebook answers this result: a pharmacy tool's result or its own error, not an engine
    error (a broken call, a timeout), which the model may still fix or the fallback explains."""
    if name not in RENDERERS or not isinstance(result, dict):
        return False
    error = result.get("error")
    return not (isinstance(error, dict) and error.get("code") in ENGINE_ERROR_CODES)


def render_turn(messages: list[dict], language: str) -> str | None:
    """The answer to the current turn from its tool results, in language ("tr", "en"); None when the turn has
    no tool result or one the phrasebook does not cover. Results answered alike are said once."""
    results = turn_results(messages)
    if not results or not all(covers(name, result) for name, _, result in results):
        return None
    lang = language if language in ("tr", "en") else "en"
    parts = [RENDERERS[name](result, lang, args)[0] for name, args, result in results]
    return " ".join(dict.fromkeys(p.strip() for p in parts if p.strip())) or None
