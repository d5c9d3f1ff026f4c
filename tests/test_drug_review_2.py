"""The second drug-data review (shared/reviews/drug-data-review-2.md): one test per finding, and the 4 findings of
the first review it found partly fixed (D5, D10, W10, I3).

Where the fix is a rule (an age floor, a flag aligned with its own text, the QT policy, a line extension), the test
runs the rule over every record of the data, not only the one the review quotes.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from agent.pharmacy.drugdb import DATA_DIR, load_db
from agent.pharmacy.text import stated_states
from agent.pharmacy.tools import (
    LEVEL_MANAGEMENT,
    calculate_dose,
    check_contraindications,
    check_interactions,
    get_drug_info,
    search_drug,
    strengths_mg,
)

DB = load_db()
RANK = {"contraindicated": 0, "major": 1, "moderate": 2, "minor": 3}


def pair(names: list[str], language: str = "en") -> dict:
    """The one checked pair of two names (both must be read exactly)."""
    result = check_interactions(names, language=language)
    assert "error" not in result and not result.get("unknown"), result
    (found,) = result["pairs"]
    return found


def severity_of(a: str, b: str) -> str | None:
    """The most severe level check_interactions gives two ingredients (by id)."""
    res = check_interactions([DB.ingredients[a]["name_en"], DB.ingredients[b]["name_en"]], language="en")
    levels = [p["severity"] for p in res["pairs"] if p["severity"]]
    return min(levels, key=RANK.__getitem__, default=None)


def verdict(drug: str, **kwargs) -> dict:
    result = check_contraindications(drug, language="en", **kwargs)
    assert "error" not in result, result
    return result


# ---------------------------------------------------------------- DANGEROUS

_FLOOR = re.compile(r"\b(?:under|over|from) (\d+(?:\.\d+)?) (months?|years?)\b")


@pytest.mark.parametrize("ingredient", sorted(DB.ingredients))
def test_N_D1_every_age_floor_the_pediatric_text_names_is_a_flag(ingredient):
    # The rule behind N-D1: paracetamol's own text said "under 3 months only on medical advice" with no floor.
    ing = DB.ingredients[ingredient]
    text = ing["sections"]["pediatric"]["en"]
    # A floor tied to one form ("mouthwash not recommended under 12 years") is that product's band instead.
    floors = [] if re.search(r"mouthwash|spray", text) else _FLOOR.findall(text)
    if floors:
        number, unit = floors[0]
        expected = float(number) / (12 if unit.startswith("month") else 1)
        assert ing["safety"].get("min_age_years") == pytest.approx(expected, abs=0.01), (ingredient, text)


@pytest.mark.parametrize("drug", ["Calpol", "Parol", "Tylenol", "parasetamol"])
@pytest.mark.parametrize("months", [0, 0.5, 1, 2])
def test_N_D1_paracetamol_under_3_months_is_avoided_and_sends_a_fever_to_a_doctor(drug, months):
    out = verdict(drug, age_months=months)
    assert out["verdict"] == "avoid"
    assert any("same day" in r["text"] for r in out["reasons"]), out["reasons"]
    older = verdict(drug, age_months=4)  # from 3 months paracetamol suits; a tablet form keeps its own band (N-I4)
    assert older["verdict"] == "ok" or all("tablet" in r["text"] for r in older["reasons"]), older


@pytest.mark.parametrize(
    ("aspirin", "anticoagulant"), [("Coraspin", "Coumadin"), ("Ecopirin", "Coumadin"), ("Ecopirin", "Xarelto")]
)
@pytest.mark.parametrize("language", ["en", "tr"])
def test_N_D2_low_dose_aspirin_with_an_anticoagulant_is_major_and_never_stop_it(aspirin, anticoagulant, language):
    found = pair([anticoagulant, aspirin], language)
    assert found["severity"] == "major", found
    everything = json.dumps(found, ensure_ascii=False)
    assert LEVEL_MANAGEMENT["contraindicated"][language] not in everything
    assert ("do not stop" if language == "en" else "bırakmayın") in found["management"]
    assert found["dose_use"] and {lv["severity"] for lv in found["levels"]} == {"major", "minor"}


def test_N_D2_aspirin_of_unknown_strength_says_which_level_applies_when():
    # "Aspirin" sells 500 mg and 100 mg: the strongest level stands, with every level and its condition.
    found = pair(["Coumadin", "Aspirin"])
    assert found["severity"] == "contraindicated" and "dose_use" not in found
    assert [lv["severity"] for lv in found["levels"]] == ["contraindicated", "major", "minor"]
    assert all(lv["when"] and lv["management"] for lv in found["levels"])
    assert "50-375 mg" in found["management"]  # the low dose's advice is in the answer too


def test_N_D2_every_aspirin_product_at_or_under_the_low_dose_is_an_antiplatelet():
    low = DB.ingredients["acetylsalicylic_acid"]["low_dose"]["max_mg"]
    for pid, product in DB.products.items():
        if product["ingredients"] != ["acetylsalicylic_acid"]:
            continue
        strengths = strengths_mg(product, "acetylsalicylic_acid")
        found = pair([product["brand"], "Coumadin"])
        if all(s is not None and s <= low for s in strengths):
            assert found["severity"] == "major", pid
        else:
            assert found["severity"] == "contraindicated", pid


# ---------------------------------------------------------------- WRONG


@pytest.mark.parametrize("condition", ["ülseratif kolit", "crohn", "ulcerative colitis", "Crohn's disease"])
def test_N_W1_ibd_is_flagged_by_nsaids_and_loperamide(condition):
    for drug in ("Nurofen", "Aspirin", "Apranax", "Voltaren"):
        assert verdict(drug, conditions=[condition])["verdict"] in ("caution", "avoid"), drug
    assert verdict("Imodium", conditions=[condition])["verdict"] == "avoid"
    # the rule: every NSAID flags it
    for ing in DB.ingredients.values():
        if "nsaid" in ing["classes"]:
            assert ing["safety"]["conditions"].get("inflammatory_bowel_disease") in ("caution", "avoid"), ing["id"]


@pytest.mark.parametrize("text", ["kanlı ishal", "ishalim kanlı", "bloody diarrhoea", "blood in stool", "dizanteri"])
def test_N_W1_bloody_diarrhoea_is_recognised_and_loperamide_avoided(text):
    assert DB.match_conditions(text) == ["bloody_diarrhea"]
    assert verdict("Imodium", conditions=[text])["verdict"] == "avoid"


@pytest.mark.parametrize(
    ("name", "ingredients"),
    [
        ("A-ferin Hot", {"paracetamol", "pseudoephedrine"}),
        ("Aferin Hot", {"paracetamol", "pseudoephedrine"}),
        ("Zyrtec D", {"cetirizine", "pseudoephedrine"}),
        ("Claritin-D", {"loratadine", "pseudoephedrine"}),
        ("Aerius D", {"desloratadine", "pseudoephedrine"}),
    ],
)
def test_N_W2_line_extensions_are_their_own_products(name, ingredients):
    out = search_drug(name)
    assert "read_as" not in out and "error" not in out, out
    res = DB.resolve(name)
    assert not res.corrected and set(DB.ingredient_ids(res.target)) == ingredients
    texts = get_drug_info(name, "contraindications", language="en")["texts"]
    assert "Pseudoephedrine" in [t["ingredient"] for t in texts]


EXTENSIONS = ["Hot", "D", "PM", "Plus", "Cold", "Forte", "Sinüs", "Fort", "Night", "Max", "Junior", "Duo"]


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_N_W2_an_added_word_is_never_read_as_a_sibling(extension):
    # Over every brand: brand + extension is a product of the data exactly, or not covered (no guess, no suggestion).
    for product in DB.products.values():
        name = f"{product['brand']} {extension}"
        res = DB.resolve(name)
        assert not res.corrected, (name, res)
        out = search_drug(name)
        if "matches" in out:  # the start of longer names ("Nurofen Cold": Nurofen Cold & Flu), offered to pick
            assert all(m["drug"].lower().startswith(name.lower()) for m in out["matches"]), (name, out)
        elif res.status != "found":
            error = out["error"]
            if error["code"] == "unknown_drug" and error["suggestions"]:  # only longer names it starts
                assert all(x.lower().startswith(name.lower() + " ") for x in error["suggestions"]), (name, error)
            elif error["code"] == "unknown_drug":
                assert error.get("line_of"), (name, error)
    out = search_drug("Tylenol PM")["error"]
    assert out["line_of"] == "Tylenol" and "not covered" in out["message"]


HERBAL_PAIRS = [
    ("Coumadin", "sarı kantaron", "contraindicated"),
    ("Coumadin", "St John's wort", "contraindicated"),
    ("Lanoxin", "hypericum", "contraindicated"),
    ("Zocor", "St. John's wort", "major"),
    ("Tegretol", "kantaron", "major"),
    ("Euthyrox", "sari kantaron", "major"),
    ("Cipralex", "St John's wort", "moderate"),
    ("Lustral", "sarı kantaron", "moderate"),
    ("Zocor", "greyfurt suyu", "major"),
    ("Lustral", "grapefruit juice", "major"),
    ("Tegretol", "greyfurt", "major"),
    ("Lipitor", "grapefruit", "minor"),
]


@pytest.mark.parametrize(("drug", "herbal", "level"), HERBAL_PAIRS)
def test_N_W3_herbals_and_foods_come_from_the_thesaurus(drug, herbal, level):
    found = pair([drug, herbal])
    assert found["severity"] == level and found["food"] is True, found
    assert all(s["source"].startswith("ANSM thesaurus") for s in found["sources"])


def test_N_W3_what_the_thesaurus_does_not_list_is_said_not_guessed():
    out = check_interactions(["Coumadin", "zerdeçal"], language="en")
    assert out["pairs"] == [] and out["unknown"][0]["reason"].startswith("not covered")
    unlisted = pair(["Parol", "greyfurt"])
    assert unlisted["severity"] is None and "not proof" in unlisted["description"]


def test_N_W4_novalgin_tablet_is_not_for_a_2_year_old():
    assert verdict("Novalgin", age_years=2)["verdict"] == "avoid"
    assert verdict("Novalgin", age_years=12)["verdict"] != "avoid"


def test_N_W5_imodium_capsule_is_not_for_a_3_year_old():
    assert verdict("Imodium", age_years=3)["verdict"] == "avoid"
    assert verdict("Imodium", age_years=8)["verdict"] == "ok"


def test_N_W6_tylol_is_paracetamol_and_duplicates_parol():
    assert search_drug("Tylol", language="en")["active_ingredient"] == "Paracetamol"
    out = check_interactions(["Tylol", "Parol"], language="en")
    assert [d["ingredient"] for d in out["duplicates"]] == ["Paracetamol"]


def test_N_W7_prescribed_low_dose_aspirin_in_pregnancy_is_not_stopped():
    out = verdict("Coraspin", pregnant=True)
    assert out["verdict"] == "caution" and "do not stop" in out["reasons"][0]["text"]
    assert verdict("Ecopirin", pregnant=True)["verdict"] == "caution"
    assert verdict("Aspirin", pregnant=True)["verdict"] == "avoid"  # 500 mg: the analgesic dose


@pytest.mark.parametrize("ingredient", sorted(DB.ingredients))
def test_N_W8_a_medicine_its_text_says_not_to_stop_is_not_avoid_in_pregnancy(ingredient):
    ing = DB.ingredients[ingredient]
    if "do not stop" in ing["sections"]["pregnancy"]["en"]:
        assert ing["safety"]["pregnancy"] != "avoid", ingredient
    assert verdict("Tegretol", pregnant=True)["verdict"] == "caution"


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("hamile değilim", set()),
        ("hamile degilim, nurofen alabilir miyim", set()),
        ("I'm not pregnant", set()),
        ("I am not breastfeeding anymore", set()),
        ("emzirmiyorum", set()),
        ("hamile değilim ama emziriyorum", {"breastfeeding"}),
        ("hamileyim", {"pregnant"}),
    ],
)
def test_N_I1_a_denied_pregnancy_is_not_counted(text, states):
    assert stated_states(text) == states
    out = verdict("Nurofen", pregnant=True, patient_text="hamile değilim, nurofen alabilir miyim")
    assert out["verdict"] != "avoid" and out["call_said"] == {"pregnant": True}


QT = sorted(i for i, ing in DB.ingredients.items() if "qt_risk" in ing["classes"])


def test_N_I2_one_qt_policy_for_every_qt_prolonging_pair():
    assert {"azithromycin", "clarithromycin", "ciprofloxacin", "fluconazole", "domperidone", "escitalopram"} <= set(QT)
    strict = {i for i in QT if "QT-prolonging drugs" in DB.ingredients[i]["sections"]["contraindications"]["en"]}
    assert strict == {"domperidone", "escitalopram"}
    for a, b in itertools.combinations(QT, 2):
        expected = "contraindicated" if {a, b} & strict else "major"
        assert RANK[severity_of(a, b)] <= RANK[expected], (a, b, severity_of(a, b))
        if not {a, b} & strict:
            assert severity_of(a, b) in ("major", "contraindicated")
    assert {
        severity_of("escitalopram", x) for x in ("azithromycin", "clarithromycin", "fluconazole", "ciprofloxacin")
    } == {"contraindicated"}


WRONG_KIND = [
    "Concor",
    "Pradaxa",
    "Diovan",
    "Valtrex",
    "thiocolchicoside",
    "clotrimazole",
    "nystatin",
    "bira",
    "Delix Plus",
]


@pytest.mark.parametrize("name", WRONG_KIND)
def test_N_I3_no_suggestion_of_another_kind(name):
    out = search_drug(name)
    assert "error" in out and out["error"]["code"] == "unknown_drug", out
    assert out["error"]["suggestions"] == [], out
    # the rule: any suggestion shares the written name's first three letters (the stem)
    for probe in ("nurafin", "parool", "ibuprofem", "Zocorr", "Lipitorr", "amoksisilin"):
        res = DB.resolve(probe)
        for t in res.candidates:
            names = [n.key.replace(" ", "") for n in DB._names if n.target == t]
            assert any(n[:3] == probe.lower()[:3] for n in names), (probe, t)
    assert search_drug("nurafin")["error"]["suggestions"] == ["Nurofen"]


def test_N_I4_topical_gel_sedating_antihistamines_and_form_age_bands():
    gel = pair(["Voltaren Emulgel", "Coumadin"])
    assert gel["severity"] == "minor" and gel["topical"] is True
    assert pair(["Voltaren", "Coumadin"])["severity"] in ("major", "contraindicated")
    assert RANK[pair(["Avil", "A-ferin Forte"])["severity"]] <= RANK["moderate"]
    sedating = [i for i, ing in DB.ingredients.items() if "sedating_antihistamine" in ing["classes"]]
    for a, b in itertools.combinations(sedating, 2):
        assert RANK[severity_of(a, b)] <= RANK["moderate"], (a, b)
    avil = verdict("Avil", age_years=2)
    assert avil["verdict"] == "caution" and "tablet" in avil["reasons"][0]["text"]
    assert verdict("Avil", age_years=8)["verdict"] == "ok"


def test_N_I4_every_solid_form_sold_beside_a_liquid_has_its_own_age_band():
    """The rule for all records: a product sold as a liquid and as tablets gives each tablet its own age (unless the
    product's own is already 12), and an age its source names for a form is that form's band."""
    from agent.pharmacy.tools import LIQUID_FORMS

    for product in DB.products.values():
        forms = product["presentations"]
        solid = [p for p in forms if p["form"] not in LIQUID_FORMS]
        if solid and len(solid) < len(forms) and product.get("min_age_years", 0) < 12:
            assert all("min_age_years" in p for p in solid), product["brand"]
        for form, age in re.findall(r"(tablet|syrup|solution|suspension) from (\d+)", product["source"]):
            named = [p for p in forms if form in p["form"] or (form == "solution" and p["form"] == "oral_solution")]
            assert named and all(p.get("min_age_years", product.get("min_age_years")) == int(age) for p in named), (
                product["brand"],
                form,
            )
    zyrtec = verdict("Zyrtec", age_years=3)
    assert zyrtec["verdict"] == "caution" and "tablet" in zyrtec["reasons"][0]["text"]
    assert verdict("Zyrtec", age_years=7)["verdict"] == "ok"


def test_N_I5_citations_and_management_per_level():
    found = pair(["Coumadin", "Coraspin"])
    assert any(s["source"].startswith("ANSM thesaurus, October 2020 edition: ") for s in found["sources"])
    for name in ("drugs", "products", "interactions", "dosing"):
        assert "review 2026-11" not in (DATA_DIR / f"{name}.json").read_text(encoding="utf-8")
    # every multi-level ANSM entry carries each level's condition and advice
    for row in DB.reference["pairs"]:
        for entry in row["entries"]:
            if len(entry["levels"]) > 1:
                assert [lv["level"] for lv in entry["per_level"]] == entry["levels"], entry["entry"]


_QUALIFIED = re.compile(
    r"\b(?:severe|end-stage|decompensated|acute|uncontrolled|active|triggered|induced|narrow-angle|bleeding)\W+(?:\w+\W+){0,3}$"
)


_NARROWED = re.compile(r"\s+(?:triggered|induced|caused)\b")


@pytest.mark.parametrize("ingredient", sorted(DB.ingredients))
def test_N_I6_a_condition_its_contraindications_name_is_avoid(ingredient):
    ing = DB.ingredients[ingredient]
    text = ing["sections"]["contraindications"]["en"].lower()
    for cid, level in ing["safety"]["conditions"].items():
        cond = DB.conditions[cid]
        for name in [cond["name_en"], *cond["synonyms"]]:
            name = name.lower()
            for m in re.finditer(r"\b" + re.escape(name) + r"\b", text) if len(name) > 4 else []:
                # "severe kidney failure", "asthma triggered by them" are narrower than the flag
                if not _QUALIFIED.search(text[: m.start()]) and not _NARROWED.match(text[m.end() :]):
                    assert level == "avoid", (ingredient, cid, name)
    pregnancy = ing["sections"]["pregnancy"]["en"].lower()
    if re.search(r"not recommended while breastfeeding|do not breastfeed", pregnancy):
        assert ing["safety"]["breastfeeding"] == "avoid", ingredient
    assert DB.ingredients["pseudoephedrine"]["safety"]["conditions"]["glaucoma"] == "avoid"
    assert DB.ingredients["pseudoephedrine"]["safety"]["conditions"]["prostate_enlargement"] == "avoid"
    assert DB.ingredients["gliclazide"]["safety"]["conditions"]["sulfa_allergy"] == "avoid"


def _partners(ingredient: str) -> set[str]:
    """Ingredients sold with it in one product (clavulanic acid: amoxicillin), whose pairs it shares."""
    return {i for p in DB.products.values() if ingredient in p["ingredients"] for i in p["ingredients"]}


# Named in an interactions text as no interaction: a comparison, or what the first review called not listed.
NAMED_NOT_INTERACTING = {
    frozenset({"pantoprazole", "omeprazole"}),
    frozenset({"pantoprazole", "clopidogrel"}),
}


def test_N_I7_every_pair_an_interactions_text_names_is_listed():
    missing = []
    for a, ing in DB.ingredients.items():
        text = ing["sections"]["interactions"]["en"].lower()
        for b, other in DB.ingredients.items():
            if b in _partners(a) or frozenset({a, b}) in NAMED_NOT_INTERACTING:
                continue
            names = [n.lower() for n in (other["name_en"], *other["synonyms_en"]) if len(n) > 3]
            if not any(re.search(r"\b" + re.escape(n) + r"\b", text) for n in names):
                continue
            if not any(severity_of(x, b) for x in _partners(a) | {a} if x != b):
                missing.append((a, b))
    assert missing == []
    for a, b in [
        ("domperidone", "metoclopramide"),
        ("loperamide", "clarithromycin"),
        ("hyoscine_butylbromide", "metoclopramide"),
    ]:
        assert severity_of(a, b) == "moderate", (a, b)


@pytest.mark.parametrize(("weight", "age"), [(40, 12), (42, 14), (45, 17), (70, 30), (50, 80)])
def test_N_I8_a_dose_from_tablets_is_whole_tablets(weight, age):
    out = calculate_dose("Parol", weight, age)
    assert out["refer_to_doctor"] is False
    taken = out["per_dose_mg_as_units"]
    assert taken % 500 == 0 and 0 < taken <= out["per_dose_mg"] and out["per_dose_mg"] - taken < 500
    assert out["per_dose_units"] == taken // 500 and out["unit_strength"] == "500 mg tablet"


@pytest.mark.parametrize("language", ["tr", "en"])
def test_N_I8_the_dose_answer_says_the_tablets_to_take(language):
    from agent.pharmacy.answers import dose_answer

    text, mention = dose_answer(calculate_dose("Parol", 42, 14, language=language), language, "Parol")
    assert "1 × 500 mg tablet (500 mg;" in text and "630 mg" in text and mention == ["630 mg"]
    liquid, _ = dose_answer(calculate_dose("Parol", 12, 2, language=language), language, "Parol")
    assert "×" not in liquid and "7.5 mL" in liquid  # a child's syrup: the mL, no tablets


# ---------------------------------------------------------------- first review, partly fixed


@pytest.mark.parametrize(
    "reading", ["tansiyonum 8'e 5", "80/50", "90/60", "9'a 6", "tansiyonum çok az", "tansiyonum 85/55", "bp 80/50"]
)
def test_D5_low_blood_pressure_written_as_numbers(reading):
    assert DB.match_conditions(reading) == ["hypotension"], reading
    assert verdict("Viagra", conditions=[reading])["verdict"] == "avoid"
    for normal in ("tansiyonum 12'ye 8", "tansiyonum 120/80", "tansiyonum yüksek"):
        assert "hypotension" not in DB.match_conditions(normal), normal


@pytest.mark.parametrize(("weight", "age"), [(24, 2), (20, 1), (15, 0.5), (30, 3)])
def test_D10_a_weight_in_pounds_for_a_small_child_is_referred(weight, age):
    out = calculate_dose("Calpol", weight, age)
    assert out["refer_to_doctor"] is True and "per_dose_mg" not in out, out


def test_W10_a_turkish_asker_reads_the_turkish_status():
    assert search_drug("parasetamol")["status"] == "Rx" and "TİTCK" in search_drug("parasetamol")["status_note"]
    assert search_drug("paracetamol", language="en")["status"] == "OTC"
    # the rule: for every ingredient, a Turkish asker reads the status of its Turkish products when they agree
    for ing_id, ing in DB.ingredients.items():
        turkish = {p["status"] for p in DB.products.values() if p["ingredients"] == [ing_id] and p["lang"] == "tr"}
        if len(turkish) == 1:
            assert search_drug(ing["name_tr"], language="tr")["status"] == next(iter(turkish)), ing_id


def test_I3_every_condition_is_flagged_by_some_medicine():
    flagged = {cid for ing in DB.ingredients.values() for cid in ing["safety"]["conditions"]}
    assert set(DB.conditions) - flagged == set()


def test_docs_figures_are_recomputed():
    """docs/drug-data.md's figures table, from the data as the tools read it."""
    ref = DB.reference
    foods = set(ref["foods"])
    ours = [p for p in ref["pairs"] if not {p["a"], p["b"]} & foods]
    figures = [
        len(DB.ingredients),
        len(DB.products),
        len(DB.interactions),
        len(ours),
        sum(1 for p in ours for e in p["entries"] if "per_level" in e),
        len(ref["pairs"]) - len(ours),
        len(ref["substances"]),
        len(ref["entries"]),
        len(ref["spellings"]),
    ]
    doc = (DATA_DIR.parents[2] / "docs" / "drug-data.md").read_text(encoding="utf-8")
    row = "| " + " | ".join(str(n) for n in figures) + " |"
    assert row in doc, row
    # the "not checked" section says what is still not covered
    not_checked = doc.split("## Not checked", 1)[1]
    for words in ("Herbals and foods beyond", "Topical products", "Strengths the data lacks"):
        assert words in not_checked, words
