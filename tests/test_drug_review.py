"""The drug-data review (shared/reviews/drug-data-review.md): one test per finding fixed in the data files.

Severities are checked as "at least" (contraindicated > major > moderate > minor) and through the public tools
where possible, so a second interaction source or a stricter name resolution does not break them.
"""

from __future__ import annotations

import json

import pytest

from agent.pharmacy.drugdb import DATA_DIR, SECTIONS, Target, load_db
from agent.pharmacy.tools import check_contraindications, check_interactions, get_drug_info, search_drug

DB = load_db()
RANK = {"contraindicated": 0, "major": 1, "moderate": 2, "minor": 3}


def top_severity(names: list[str]) -> str | None:
    """The most severe level check_interactions reports for names, which must all be checked."""
    result = check_interactions(names)
    assert "error" not in result, result
    assert not result.get("unknown"), result["unknown"]
    levels = [p["severity"] for p in result["pairs"] if p["severity"] is not None]
    return min(levels, key=RANK.__getitem__, default=None)


def assert_at_least(names: list[str], expected: str) -> None:
    found = top_severity(names)
    assert found is not None and RANK[found] <= RANK[expected], (names, found, expected)


def ids(name: str) -> set[str]:
    res = DB.resolve(name)
    assert res.status == "found" and not res.corrected, (name, res)
    return set(DB.ingredient_ids(res.target))


def name_en(ingredient_id: str) -> str:
    return DB.ingredients[ingredient_id]["name_en"]


def section_en(ingredient_id: str, section: str) -> str:
    return DB.ingredients[ingredient_id]["sections"][section]["en"]


# ---------------------------------------------------------------- DANGEROUS


A_FERIN = {
    "A-ferin": {"paracetamol", "chlorphenamine", "codeine"},
    "Aferin": {"paracetamol", "chlorphenamine", "codeine"},
    "A-ferin Kapsül": {"paracetamol", "chlorphenamine", "codeine"},
    "A-ferin Forte": {"paracetamol", "chlorphenamine"},
    "A-ferin Plus": {"paracetamol", "chlorphenamine", "pseudoephedrine"},
    "A-ferin Sinüs": {"paracetamol", "pseudoephedrine", "triprolidine"},
}


@pytest.mark.parametrize(("brand", "ingredients"), A_FERIN.items())
def test_D1_a_ferin_range_contains_paracetamol(brand, ingredients):
    assert ids(brand) == ingredients
    result = check_interactions([brand, "Parol"])
    assert [d["ingredient"] for d in result["duplicates"]] == ["Parasetamol"]


def test_D1_plain_aferin_is_the_codeine_capsule_and_says_so():
    # Plain "A-ferin" is the capsule's own name on its label; its note points to the other products of the range.
    result = search_drug("Aferin")
    assert result["drug"] == "A-ferin" and "query" not in result and result["high_risk"] is True
    assert "Forte" in result["note"]
    assert "caffeine" not in ids("Aferin")


def test_D2_avil_is_pheniramine():
    assert ids("Avil") == {"pheniramine"}
    assert search_drug("Avil")["active_ingredient"] == "Feniramin"
    pheniramine = DB.ingredients["pheniramine"]
    assert set(pheniramine["sections"]) == set(SECTIONS)
    for section in pheniramine["sections"].values():
        assert section["tr"] and section["en"] and section["tr"] != section["en"]
    assert {"antihistamine", "anticholinergic"} <= set(pheniramine["classes"])
    assert pheniramine["safety"]["elderly"] == "avoid"
    for synonym in ["feniramin", "pheniramine maleate", "feniramin maleat"]:
        assert ids(synonym) == {"pheniramine"}


def test_D3_buscopan_plus_contains_paracetamol():
    assert ids("Buscopan Plus") == {"hyoscine_butylbromide", "paracetamol"}
    result = check_interactions(["Buscopan Plus", "Parol"])
    assert [d["ingredient"] for d in result["duplicates"]] == ["Parasetamol"]


def test_D6_colchicine_with_clarithromycin_is_contraindicated():
    assert top_severity(["Colchicum Dispert", "Klacid"]) == "contraindicated"
    assert top_severity(["colchicine", "clarithromycin"]) == "contraindicated"
    assert "clarithromycin" in section_en("colchicine", "contraindications")
    assert "every patient" in section_en("colchicine", "contraindications")
    clarithromycin = section_en("clarithromycin", "contraindications")
    assert "colchicine" in clarithromycin and "every patient" in clarithromycin


# The review's "missing critical interaction pairs", with the severity it asks for (the lower bound where it
# gives two, e.g. "contraindicated/major").
MISSING_PAIRS = [
    ("warfarin", "rivaroxaban", "contraindicated"),
    ("warfarin", "clopidogrel", "major"),
    ("rivaroxaban", "clopidogrel", "major"),
    ("ramipril", "losartan", "major"),
    ("spironolactone", "cotrimoxazole", "major"),
    ("losartan", "cotrimoxazole", "moderate"),
    ("tramadol", "codeine", "major"),
    ("chlorphenamine", "tramadol", "moderate"),
    ("chlorphenamine", "codeine", "moderate"),
    ("chlorphenamine", "alprazolam", "moderate"),
    ("acetylsalicylic_acid", "diclofenac", "major"),
    ("acetylsalicylic_acid", "naproxen", "major"),
    ("acetylsalicylic_acid", "dexketoprofen", "major"),
    ("acetylsalicylic_acid", "flurbiprofen", "major"),
    ("escitalopram", "clarithromycin", "major"),
    ("escitalopram", "azithromycin", "major"),
    ("escitalopram", "fluconazole", "major"),
    ("domperidone", "azithromycin", "contraindicated"),
    ("domperidone", "ciprofloxacin", "moderate"),
    ("clarithromycin", "fluconazole", "major"),
    ("alprazolam", "clarithromycin", "major"),
    ("tadalafil", "clarithromycin", "moderate"),
    ("colchicine", "fluconazole", "major"),
    ("colchicine", "atorvastatin", "moderate"),
    ("colchicine", "simvastatin", "moderate"),
    ("simvastatin", "fluconazole", "moderate"),
    ("valproic_acid", "acetylsalicylic_acid", "moderate"),
    ("paracetamol", "carbamazepine", "moderate"),
    ("fluoxetine", "codeine", "moderate"),
    ("fluoxetine", "metoprolol", "moderate"),
    ("tramadol", "dextromethorphan", "moderate"),
    ("tramadol", "metoclopramide", "moderate"),
    *[
        ("warfarin", other, "moderate")
        for other in [
            "azithromycin",
            "doxycycline",
            "amoxicillin",
            "methylprednisolone",
            "tramadol",
            "allopurinol",
            "valproic_acid",
            "simvastatin",
        ]
    ],
    *[("clopidogrel", ssri, "moderate") for ssri in ["sertraline", "escitalopram", "fluoxetine"]],
    ("rivaroxaban", "clarithromycin", "moderate"),
    ("rivaroxaban", "fluconazole", "moderate"),
    ("escitalopram", "omeprazole", "moderate"),
    ("escitalopram", "esomeprazole", "moderate"),
    *[
        ("carbamazepine", other, "moderate")
        for other in [
            "alprazolam",
            "atorvastatin",
            "simvastatin",
            "doxycycline",
            "methylprednisolone",
            "sertraline",
            "escitalopram",
            "fluoxetine",
            "tadalafil",
            "levothyroxine",
            "codeine",
            "fluconazole",
        ]
    ],
    ("gliclazide", "cotrimoxazole", "moderate"),
    ("gliclazide", "ciprofloxacin", "moderate"),
    ("digoxin", "spironolactone", "moderate"),
    ("digoxin", "azithromycin", "moderate"),
    ("digoxin", "metoprolol", "moderate"),
    ("metoprolol", "salbutamol", "moderate"),
    ("sildenafil", "tadalafil", "moderate"),
]


@pytest.mark.parametrize(("a", "b", "severity"), MISSING_PAIRS, ids=[f"{a}+{b}" for a, b, _ in MISSING_PAIRS])
def test_D7_missing_pairs_are_listed(a, b, severity):
    # The curated table itself lists the pair (not only a second source) ...
    curated = DB.interactions_between(a, b)
    assert curated and min(RANK[ix["severity"]] for ix in curated) <= RANK[severity], curated
    assert all(ix["description_tr"] and ix["management_en"] for ix in curated)
    # ... and the tool reports it, in either order.
    assert_at_least([name_en(a), name_en(b)], severity)
    assert_at_least([name_en(b), name_en(a)], severity)


def test_D7_warfarin_with_amoxicillin_clavulanate_and_switching_rivaroxaban():
    assert_at_least(["Coumadin", "Augmentin"], "moderate")
    (entry,) = DB.interactions_between("warfarin", "rivaroxaban")
    assert "switch" in entry["management_en"]


def test_D8_domperidone_with_heart_disease_is_avoid():
    conditions = DB.ingredients["domperidone"]["safety"]["conditions"]
    assert conditions["heart_failure"] == conditions["heart_disease"] == "avoid"
    for condition in ["heart failure", "coronary heart disease", "kalp yetmezliği"]:
        assert check_contraindications("Motilium", conditions=[condition])["verdict"] == "avoid", condition


def test_D9_hyoscine_dose_follows_the_turkish_label():
    dosage = section_en("hyoscine_butylbromide", "dosage")
    assert "80 mg" in dosage and "3-4 times" in dosage and "100 mg" not in dosage and "3-5 times" not in dosage
    assert "6-12 years: 10 mg 3 times a day" in dosage and "30 mg a day" in dosage
    assert DB.ingredients["hyoscine_butylbromide"]["safety"]["min_age_years"] == 6


# ---------------------------------------------------------------- WRONG, LOWER HARM


def test_W1_aspirin_shares_the_nsaid_class_entries():
    assert "nsaid" in DB.ingredients["acetylsalicylic_acid"]["classes"]
    # The specific entries still win over the class ones.
    (warfarin,) = DB.interactions_between("warfarin", "acetylsalicylic_acid")
    assert warfarin["b"] == "acetylsalicylic_acid" and warfarin["severity"] == "major"
    (ibuprofen,) = DB.interactions_between("ibuprofen", "acetylsalicylic_acid")
    assert {ibuprofen["a"], ibuprofen["b"]} == {"ibuprofen", "acetylsalicylic_acid"}
    assert ibuprofen["severity"] == "moderate"
    assert_at_least(["Coumadin", "Aspirin"], "major")
    # Aspirin now meets the NSAID class entries it lacked.
    for other in ["Arveles", "Majezik", "Apranax", "Voltaren"]:
        assert_at_least(["Aspirin", other], "major")
    for other in ["Prednol", "Delix", "Lasix"]:
        assert_at_least(["Aspirin", other], "moderate")
    assert top_severity(["Aspirin", "Parol"]) is None


@pytest.mark.parametrize("ppi", ["Losec", "Nexium"])
def test_W2_clopidogrel_with_omeprazole_or_esomeprazole_is_major(ppi):
    assert_at_least(["Plavix", ppi], "major")


def test_W3_warfarin_with_carbamazepine_is_major():
    assert_at_least(["Coumadin", "Tegretol"], "major")


@pytest.mark.parametrize("ssri", ["Lustral", "Cipralex", "Prozac"])
def test_W4_ssri_with_metoclopramide_is_moderate(ssri):
    assert_at_least([ssri, "Metpamid"], "moderate")


@pytest.mark.parametrize("condition", ["kidney failure", "liver failure"])
def test_W5_colchicine_in_kidney_or_liver_failure_is_avoid(condition):
    assert check_contraindications("Colchicum Dispert", conditions=[condition])["verdict"] == "avoid"


@pytest.mark.parametrize("drug", ["Viagra", "Cialis"])
def test_W6_pde5_inhibitors_with_heart_disease_are_avoid(drug):
    assert check_contraindications(drug, conditions=["coronary heart disease"])["verdict"] == "avoid"
    # and with heart failure: the labels' "severe cardiac failure, where sexual activity is inadvisable"
    assert check_contraindications(drug, conditions=["kalp yetmezliği"])["verdict"] == "avoid"


W7_AGES = [
    ("cetirizine", "cetirizine", 2),
    ("loratadine", "loratadine", 2),
    ("desloratadine", "desloratadine", 1),
    ("hyoscine butylbromide", "hyoscine_butylbromide", 6),
    ("domperidone", "domperidone", 12),
]


@pytest.mark.parametrize(("drug", "ingredient", "years"), W7_AGES)
def test_W7_minimum_ages(drug, ingredient, years):
    assert DB.ingredients[ingredient]["safety"]["min_age_years"] == years
    assert check_contraindications(drug, age_years=0.5)["verdict"] == "avoid"
    assert check_contraindications(drug, age_years=years - 0.5)["verdict"] == "avoid"
    assert check_contraindications(drug, age_years=years)["verdict"] != "avoid"


def test_W8_domperidone_is_not_for_children_under_12():
    assert check_contraindications("Motilium", age_years=8)["verdict"] == "avoid"
    assert "under 12" in section_en("domperidone", "pediatric")
    assert "12 years" in section_en("domperidone", "dosage")
    assert DB.products["motilium"]["min_age_years"] == 12


@pytest.mark.parametrize(
    ("drug", "level"),
    [
        ("alprazolam", "avoid"),
        ("chlorphenamine", "avoid"),
        ("pheniramine", "avoid"),
        ("sertraline", "caution"),
        ("fluoxetine", "caution"),
        ("escitalopram", "caution"),
        ("spironolactone", "caution"),
    ],
)
def test_W9_elderly(drug, level):
    assert DB.ingredients[drug]["safety"]["elderly"] == level
    assert check_contraindications(drug, age_years=80)["verdict"] == level


def test_W10_legal_status_in_turkey():
    for pid in ["parol", "nurofen", "buscopan", "imodium", "calpol", "gripin"]:
        assert DB.products[pid]["status"] == "Rx", pid
    assert search_drug("Parol")["status"] == "Rx"
    assert "note" in search_drug("Parol")
    assert DB.ingredients["pseudoephedrine"]["status"] == "Rx"
    for prod in DB.products.values():
        if "pseudoephedrine" in prod["ingredients"] and prod["lang"] == "tr":
            assert prod["status"] == "Rx", prod["id"]


def test_W11_pantoprazole_atazanavir_is_not_a_contraindication():
    assert "atazanavir" not in section_en("pantoprazole", "contraindications")
    interactions = section_en("pantoprazole", "interactions")
    assert "Not recommended with atazanavir" in interactions
    assert "atazanavir" not in DB.ingredients["pantoprazole"]["sections"]["contraindications"]["tr"]


def test_W12_calpol_6_plus_has_its_age_band():
    assert DB.products["calpol_6_plus"]["min_age_years"] == 6


# ---------------------------------------------------------------- IMPRECISE


def test_I4_dosing_texts():
    assert "240 mg" in section_en("isosorbide_mononitrate", "dosage")
    assert "1.5-3 hours" in section_en("benzydamine", "dosage")
    assert [p["form"] for p in DB.products["cataflam"]["presentations"]] == ["tablet"]


def _sources(obj, path=""):
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "source":
                yield path, value
            else:
                yield from _sources(value, f"{path}/{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            key = value.get("id", f"{value.get('a')}+{value.get('b')}") if isinstance(value, dict) else i
            yield from _sources(value, f"{path}/{key}")


@pytest.mark.parametrize("name", ["drugs", "products", "interactions", "dosing"])
def test_I1_every_source_is_honest(name):
    doc = json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert "not verified" in doc["about"] and "from memory" in doc["about"]
    sources = list(_sources(doc["entries"]))
    assert len(sources) >= len(doc["entries"])
    for where, source in sources:
        assert source.startswith(("authored, unverified; cf. ", "review 2026-12-01 (", "review 2026-12-02 (")), where
        assert "unverified" in source, where


def test_I1_conditions_say_they_are_unverified_and_the_named_citations_are_fixed():
    about = json.loads((DATA_DIR / "conditions.json").read_text(encoding="utf-8"))["about"]
    assert "not verified" in about and "from memory" in about and "paraphrased" not in about
    paracetamol = DB.ingredients["paracetamol"]["sections"]
    assert "OTC monograph: Contraindications" not in paracetamol["contraindications"]["source"]  # no such section
    assert "KÜB" in paracetamol["warnings"]["source"] and "2000 mg" in paracetamol["warnings"]["en"]  # KÜB wording
    ibuprofen = DB.ingredients["ibuprofen"]["sections"]["dosage"]
    assert "6-8 hours" in ibuprofen["en"] and "KÜB" in ibuprofen["source"]  # the FDA label says 4-6


def test_I1_changed_facts_cite_their_finding():
    (colchicine,) = DB.interactions_between("colchicine", "clarithromycin")
    assert colchicine["source"].startswith("review 2026-12-01 (D6")
    assert DB.ingredients["hyoscine_butylbromide"]["sections"]["dosage"]["source"].startswith("review 2026-12-01 (D9")
    assert "(D8" in DB.ingredients["domperidone"]["safety"]["source"]
    assert "unverified" in get_drug_info("Parol", "dosage")["source"]


# ---------------------------------------------------------------- coverage


NEW_PRODUCTS = [
    # (name a patient may write, product id, ingredients, youngest licensed age or None)
    ("A-ferin", "a_ferin", {"paracetamol", "chlorphenamine", "codeine"}, 12),
    ("Aferin", "a_ferin", {"paracetamol", "chlorphenamine", "codeine"}, 12),
    ("A-ferin Kapsül", "a_ferin", {"paracetamol", "chlorphenamine", "codeine"}, 12),
    ("Aferin Kapsül", "a_ferin", {"paracetamol", "chlorphenamine", "codeine"}, 12),
    ("A-ferin Forte", "a_ferin_forte", {"paracetamol", "chlorphenamine"}, 12),
    ("Aferin Forte", "a_ferin_forte", {"paracetamol", "chlorphenamine"}, 12),
    ("A-ferin Plus", "a_ferin_plus", {"paracetamol", "chlorphenamine", "pseudoephedrine"}, 6),
    ("Aferin Plus", "a_ferin_plus", {"paracetamol", "chlorphenamine", "pseudoephedrine"}, 6),
    ("A-ferin Sinüs", "a_ferin_sinus", {"paracetamol", "pseudoephedrine", "triprolidine"}, None),
    ("Aferin Sinus", "a_ferin_sinus", {"paracetamol", "pseudoephedrine", "triprolidine"}, None),
    ("Avil", "avil", {"pheniramine"}, 1),
    ("Buscopan Plus", "buscopan_plus", {"hyoscine_butylbromide", "paracetamol"}, 12),
    ("Nurofen Cold & Flu", "nurofen_cold_flu", {"ibuprofen", "pseudoephedrine"}, 12),
    ("Nurofen Cold and Flu", "nurofen_cold_flu", {"ibuprofen", "pseudoephedrine"}, 12),
    ("Vermidon", "vermidon", {"paracetamol", "caffeine"}, 12),
    ("Tylol Plus", "tylol_plus", {"paracetamol", "caffeine"}, None),
    ("Dolorex", "dolorex", {"diclofenac"}, 14),
    ("Deloday", "deloday", {"desloratadine"}, 12),
    ("Deloday Plus", "deloday_plus", {"desloratadine", "pseudoephedrine"}, 12),
    ("Apranax Forte", "apranax", {"naproxen"}, None),
]


@pytest.mark.parametrize(("name", "pid", "ingredients", "min_age"), NEW_PRODUCTS, ids=[n[0] for n in NEW_PRODUCTS])
def test_new_products_resolve_exactly(name, pid, ingredients, min_age):
    assert DB.is_name(name)
    res = DB.resolve(name)
    assert (res.status, res.target, res.corrected) == ("found", Target("product", pid), False)
    assert set(DB.products[pid]["ingredients"]) == ingredients
    assert DB.products[pid].get("min_age_years") == min_age
    result = search_drug(name)
    assert result["drug"] == DB.products[pid]["brand"] and "query" not in result


@pytest.mark.parametrize("pid", sorted({pid for _, pid, _, _ in NEW_PRODUCTS} - {"apranax"}))
def test_new_products_are_complete(pid):
    prod = DB.products[pid]
    assert prod["lang"] == "tr" and prod["status"] == "Rx"
    if len(prod["ingredients"]) > 1:
        assert prod["usage_tr"] and prod["usage_en"]
    assert "unverified" in prod["source"]


def test_new_sedating_antihistamines_meet_the_opioid_and_benzodiazepine_entries():
    assert_at_least(["Avil", "Contramal"], "moderate")
    assert_at_least(["A-ferin Sinüs", "Xanax"], "moderate")
    # The A-ferin capsule carries codeine: with tramadol that is two opioids.
    assert_at_least(["A-ferin", "Contramal"], "major")
    triprolidine = DB.ingredients["triprolidine"]
    assert set(triprolidine["sections"]) == set(SECTIONS) and triprolidine["safety"]["elderly"] == "avoid"
