"""The dose check (agent.pharmacy.dose_check) and its number reader (agent.pharmacy.amounts): no way round."""

from __future__ import annotations

import pytest
from ppsf_helpers import call
from test_agent import make_agent

from agent.pharmacy.amounts import read_amounts, read_number
from agent.pharmacy.dose_check import unsafe_dose

# Parol for a 20 kg, 6-year-old child: 300 mg a dose, at most 1200 mg a day.
CHILD = {"drug": "Parol", "active_ingredient": "Parasetamol", "weight_kg": 20.0, "per_dose_mg": 300,
         "max_doses_per_day": 4, "max_daily_mg": 1200, "refer_to_doctor": False}  # fmt: skip
# Calpol syrup for the same child: 12.5 mL a dose.
SYRUP = {**CHILD, "drug": "Calpol", "per_dose_ml": 12.5, "liquid_strength": "120 mg/5 mL"}
# Ibuprofen for the same child: 200 mg a dose, at most 600 mg a day.
IBU = {"drug": "Nurofen", "active_ingredient": "Ibuprofen", "weight_kg": 20.0, "per_dose_mg": 200,
       "max_doses_per_day": 3, "max_daily_mg": 600, "refer_to_doctor": False}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5.000", 5000),  # Turkish thousands
        ("5,000", 5000),  # English thousands
        ("5 000", 5000),
        ("5\u202f000", 5000),
        ("1.500,5", 1500.5),
        ("1,500.5", 1500.5),
        ("1,5", 1.5),
        ("1.5", 1.5),
        ("0.125", 0.125),
        ("0,500", 0.5),
        ("12", 12),
    ],
)
def test_numbers_in_turkish_and_english_formats(text, value):
    assert read_number(text) == value


@pytest.mark.parametrize(
    "answer",
    [
        "Parol: günde 5.000 mg.",  # the Turkish thousands separator was read as 5.0
        "Parol: 5 000 mg verin.",
        "Parol: 5000 mg/gün.",  # taken for a concentration
        "Parol: tek seferde 5 g.",
        "Parol: 5 gram verin.",
        "Parol: 2,5 gramdan fazla vermeyin.",
        "Give 5,000 mg a day.",
        "Tek doz 600 mg, günde en fazla 1200 mg.",  # a single dose above the per-dose maximum
        "Parol: 30 mg/kg verin.",  # a rate that comes to 600 mg for 20 kg
        "Parol: no more than 3 grams a day.",
    ],
)
def test_bypasses_of_the_dose_check_are_caught(answer):
    assert unsafe_dose(answer, [CHILD])


@pytest.mark.parametrize(
    "answer",
    [
        "Parol: tek doz 300 mg, günde en fazla 1200 mg.",
        "Parol: 300 mg, 6 saatte bir; günlük toplam 1.200 mg'ı geçmeyin.",
        "Parol: 300 mg per dose, no more than 1,200 mg a day.",
        "Parol: 15 mg/kg, yani 300 mg.",
        "Parol 250 mg tablet: bir tablet.",
        "Lütfen bir hekime danışın.",
    ],
)
def test_answers_within_the_tools_figures_pass(answer):
    assert not unsafe_dose(answer, [CHILD])


def test_volumes_are_held_to_the_liquids_dose():
    assert not unsafe_dose("Calpol (120 mg/5 mL): tek doz 12,5 mL, günde en fazla 4 kez.", [SYRUP])
    assert unsafe_dose("Calpol: tek doz 41,6 mL.", [SYRUP])
    assert unsafe_dose("Calpol: günde 80 mL.", [SYRUP])  # 4 x 12.5 = 50 mL a day
    assert not unsafe_dose("Parol: 300 mg, bir bardak (200 mL) su ile.", [CHILD])  # no liquid dosed: not a dose


def test_with_two_drugs_each_amount_is_held_to_its_own_limit():
    """The largest limit of either drug used to be applied to both."""
    assert not unsafe_dose("Parol 300 mg; Nurofen 200 mg.", [CHILD, IBU])
    assert unsafe_dose("Parol 300 mg; Nurofen 300 mg.", [CHILD, IBU])  # 300 is Parol's dose, not Nurofen's
    assert unsafe_dose("İbuprofen: günde 900 mg.", [CHILD, IBU])  # named by its active ingredient
    assert unsafe_dose("Tek doz 300 mg.", [CHILD, IBU])  # no drug named: the strictest limit


def test_concentrations_and_their_volume_are_no_amounts():
    assert [a.value for a in read_amounts("Calpol 120 mg/5 mL şurup, 12,5 mL")] == [12.5]
    assert [a.value for a in read_amounts("250 mg/tablet")] == []
    per_day = read_amounts("5000 mg/gün")
    assert len(per_day) == 1 and per_day[0].daily


def test_the_cli_never_streams_an_answer_the_dose_check_replaces():
    """Answer text used to reach stdout as it streamed, before the check replaced it."""
    from agent.pharmacy.tools import PHARMACY_TOOLS

    texts = [call("calculate_dose", drug="Parol", weight_kg=20, age_years=6), "@PHARMACIST\nParol: 5.000 mg verin."]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    result = agent.run("20 kg 6 yaş Parol dozu?")
    streamed = "".join(e["text"] for e in agent.events if e["type"] == "text" and e["field"] == "content")
    assert "5.000" not in streamed and result.replaced_answer == "Parol: 5.000 mg verin."
    assert "tek doz 300 mg" in result.message["content"]
