"""The issue's wrong-medicine examples (review D1-D4): each name is answered for itself or not at all."""

from __future__ import annotations

import pytest

from agent.pharmacy.tools import calculate_dose, check_interactions, search_drug


@pytest.mark.parametrize(
    ("name", "must", "must_not"),
    [
        ("Aferin", {"paracetamol", "chlorphenamine"}, {"caffeine"}),
        ("Aferin Forte", {"paracetamol", "chlorphenamine"}, {"caffeine"}),
        ("Avil", {"pheniramine"}, {"ibuprofen"}),
        ("Buscopan Plus", {"hyoscine_butylbromide", "paracetamol"}, set()),
    ],
)
def test_D1_D3_brands_are_their_own_products(name, must, must_not):
    from agent.pharmacy.drugdb import load_db

    db = load_db()
    res = db.resolve(name)
    assert res.status == "found" and not res.corrected, res
    ingredients = set(db.ingredient_ids(res.target))
    assert must <= ingredients and not must_not & ingredients


def test_D2_avil_is_never_dosed_as_ibuprofen():
    result = calculate_dose("Avil", 10, 1)
    assert "per_dose_mg" not in result and result["active_ingredient"] == "Feniramin"
    pairs = check_interactions(["Avil", "Coumadin"])["pairs"]
    assert all("Ibuprofen" not in str(p) and "İbuprofen" not in str(p) for p in pairs)


def test_D1_D3_a_second_paracetamol_is_flagged():
    for combo in (["Aferin", "Parol"], ["Buscopan Plus", "Parol"], ["A-ferin Forte", "Calpol"]):
        duplicates = check_interactions(combo)["duplicates"]
        assert [d["ingredient"] for d in duplicates] == ["Parasetamol"], combo


@pytest.mark.parametrize(
    ("name", "not_this"),
    [
        ("duloxetine", "Fluoxetine"),
        ("oxcarbazepine", "Carbamazepine"),
        ("famciclovir", "Aciclovir"),
        ("lansoprazole", "Pantoprazole"),
    ],
)
def test_D4_sibling_medicines_are_not_substituted(name, not_this):
    result = search_drug(name)
    assert "error" in result and result.get("drug") != not_this
    pair = check_interactions([name, "ciprofloxacin"])
    # unknown, or a thesaurus substance answered as itself (review 2, item 4): never as the sibling
    assert all(not_this not in p["drugs"] for p in pair["pairs"])
    assert [u["name"] for u in pair.get("unknown", [])] + [s["name"] for s in pair.get("substances", [])] == [name]
