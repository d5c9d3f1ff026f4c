"""The dose check (agent.pharmacy.dose_check) and its number reader (agent.pharmacy.amounts): no way round."""

from __future__ import annotations

import pytest
from ppsf_helpers import call
from test_agent import make_agent

from agent.pharmacy.amounts import read_amounts, read_number
from agent.pharmacy.dose_check import unsafe_dose

# Parol for a 20 kg, 6-year-old child: 300 mg a dose, at most 1200 mg a day.
CHILD = {"drug": "Parol", "active_ingredient": "Parasetamol", "weight_kg": 20.0, "per_dose_mg": 300,
         "interval_hours": 6, "max_doses_per_day": 4, "max_daily_mg": 1200, "refer_to_doctor": False}  # fmt: skip
# Parol for an adult: one 500 mg tablet a dose.
ADULT = {**CHILD, "weight_kg": 70.0, "per_dose_mg": 1000, "max_daily_mg": 4000, "per_dose_units": 2,
         "unit_strength": "500 mg tablet", "per_dose_mg_as_units": 1000}  # fmt: skip
# Calpol syrup for the same child: 12.5 mL a dose.
SYRUP = {**CHILD, "drug": "Calpol", "per_dose_ml": 12.5, "liquid_strength": "120 mg/5 mL"}
# Ibuprofen for the same child: 200 mg a dose, at most 600 mg a day.
IBU = {"drug": "Nurofen", "active_ingredient": "Ibuprofen", "weight_kg": 20.0, "per_dose_mg": 200,
       "interval_hours": 6, "max_doses_per_day": 3, "max_daily_mg": 600, "refer_to_doctor": False}  # fmt: skip


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
        "Lütfen bir hekime danışın.",
    ],
)
def test_answers_within_the_tools_figures_pass(answer):
    assert not unsafe_dose(answer, [CHILD])


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ("Parol: iki tablet alın.", CHILD),  # a count the tool did not give (it gave mg only)
        ("Parol 250 mg tablet: bir tablet.", CHILD),  # safe by arithmetic, but no count of the tool's
        ("Take three tablets at once.", ADULT),  # the tool gives two
        ("Parol: uc tablet birden icin.", ADULT),  # Turkish typed without its letters, a number in words
        ("Calpol: 3 kaşık verin.", SYRUP),  # a spoon may hold 15 mL: 45 mL against 12.5
        ("Calpol: 2 tatli kasigi.", SYRUP),  # 10 mL against 12.5 passes the volume, so it is the count: see below
        ("Parol: every 2 hours.", CHILD),  # the tool says every 6 hours
        ("Parol: 2 saatte bir verin.", CHILD),
        ("Parol: 6 times a day.", CHILD),  # at most 4
        ("Parol: günde 6 kez.", CHILD),
        ("Parol: double the dose if the fever stays.", CHILD),
        ("Parol: çift doz verebilirsiniz.", CHILD),
        ("Parol: 5 damla.", CHILD),  # drops are never what the tool gave
    ],
)
def test_counts_spoons_intervals_and_multiples_are_held_to_the_tool(answer, result):
    if answer.startswith("Calpol: 2 tatli"):
        assert not unsafe_dose(answer, [result])  # two 5 mL spoons are within 12.5 mL
        return
    assert unsafe_dose(answer, [result])


def test_number_words_are_whole_words_and_a_single_dose_is_no_amount():
    from agent.pharmacy.amounts import read_quantities

    for text in ("Ağrı kesici dozlarda", "Once daily", "ikinci doz", "Bire bir doz", "I can't give a Parol dose"):
        assert read_quantities(text) == [], text
    assert [q.value for q in read_quantities("a tablet, then one more tablet")] == [1, 1]


def test_the_tools_own_counts_and_intervals_pass():
    assert not unsafe_dose("Parol: 2 tablet (1000 mg), 6 saatte bir, günde en fazla 4 kez.", [ADULT])
    assert not unsafe_dose("Parol: two tablets every 6 hours, at most 4 times a day.", [ADULT])
    assert not unsafe_dose("Calpol: 12,5 mL (2 ölçek ve yarım), günde en fazla 4 kez.", [SYRUP])


def test_an_amount_with_no_dose_result_is_replaced_unless_a_tool_stated_it():
    from agent.engine.checks import Replace
    from agent.pharmacy.answers import NO_DOSE_ANSWER
    from agent.pharmacy.dose_check import DoseCheck

    def conversation(question: str, answer: str, tool: str | None = None) -> list[dict]:
        turn = [{"role": "user", "content": question}]
        if tool is not None:
            turn.append({"role": "tool", "name": "get_drug_info", "content": tool})
        return [*turn, {"role": "assistant", "content": answer}]

    check = DoseCheck()
    for answer in ("Take 2 tablets.", "Give her 5 mL.", "every 4 hours is fine", "500 mg", "two tablets"):
        assert check.check(answer, conversation("how much parol?", answer)) == Replace(NO_DOSE_ANSWER["en"])
    assert check.check("iki tablet alın", conversation("kaç parol alayım?", "iki tablet alın")) == Replace(
        NO_DOSE_ANSWER["tr"]
    )
    leaflet = '{"text": "Yetişkinler: günde 3 kez 1 tablet (500 mg)."}'
    quoted = "Prospektüs: günde 3 kez 1 tablet (500 mg)."
    assert check.check(quoted, conversation("Parol nasıl kullanılır?", quoted, leaflet)) is None
    said = "Parol: günde 3 kez iki tablet."  # "iki" is no figure of the leaflet's
    assert check.check(said, conversation("Parol nasıl kullanılır?", said, leaflet)) == Replace(NO_DOSE_ANSWER["tr"])
    assert check.check("Parol ağrı kesicidir; 112'yi arayın.", conversation("parol?", "x")) is None
    # A document the patient attached (a prescription) is a source; the patient's own words are not.
    note = [{"role": "user", "content": "nota göre nasıl alayım?", "reference": "Hekim notu: günde 2 kez, 5 gün."}]
    told = "Notunuza göre günde 2 kez, 5 gün."
    assert check.check(told, [*note, {"role": "assistant", "content": told}]) is None
    asked = [{"role": "user", "content": "günde 8 tablet içsem olur mu?"}]
    assert check.check("Günde 8 tablet olur.", [*asked, {"role": "assistant", "content": "x"}]) == Replace(
        NO_DOSE_ANSWER["tr"]
    )


def test_with_answers_from_the_model_an_amount_no_tool_gave_never_reaches_the_patient():
    texts = ["@PHARMACIST\nTake two tablets every 4 hours, up to 8 a day."]
    agent, _ = make_agent(texts, answers="model")
    result = agent.run("How many Parol can I take?")
    assert "two tablets" not in result.message["content"] and "8" not in result.message["content"]
    assert result.replaced_answer == texts[0].split("\n", 1)[1]
    assert any(e["type"] == "dose_check" and e["action"] == "replace" for e in agent.events)


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
