"""Plausibility and conditions: the review's D5, D10, I3 and W12, and the issue's examples."""

from __future__ import annotations

import pytest

from agent.pharmacy.growth import WHO_MEDIANS_KG, implausible, weight_band
from agent.pharmacy.text import stated_states
from agent.pharmacy.tools import calculate_dose, check_contraindications
from agent.pharmacy.turn import read_text, read_turn


@pytest.mark.parametrize(
    ("drug", "weight", "age"),
    [("Parol", 150, 0.5), ("Calpol", 60, 0.3), ("Parol", 40, 4), ("Nurofen", 38.5, 2), ("ibuprofen", 90, 1)],
)
def test_D10_weight_far_outside_the_range_for_the_age_is_referred(drug, weight, age):
    result = calculate_dose(drug, weight, age)
    assert result["refer_to_doctor"] is True and "per_dose_mg" not in result
    assert "WHO" in result["reasons"][0] and f"{weight:g} kg" in result["reasons"][0]


@pytest.mark.parametrize(("weight", "age"), [(7.9, 0.5), (12, 1), (18, 5), (31, 10), (16, 4), (5.5, 0.25)])
def test_D10_usual_weights_are_dosed(weight, age):
    result = calculate_dose("Calpol", weight, age)
    assert result["refer_to_doctor"] is False and result["per_dose_mg"] > 0


def test_the_band_is_wider_than_three_sd_and_documented_medians_rise():
    medians = [WHO_MEDIANS_KG[a] for a in sorted(WHO_MEDIANS_KG)]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(medians, medians[1:], strict=False))
    # WHO -3 SD / +3 SD at 12 months (girls 7.0 kg, boys 13.3 kg) lie inside the band.
    low, high = weight_band(1.0)
    assert low < 7.0 and high > 13.3
    assert implausible(70, 30) is None and weight_band(18) == weight_band(10)[:1] + (None,)
    assert implausible(15, 14) is not None  # from 10 years only the lower bound holds


@pytest.mark.parametrize("drug", ["Calpol", "Parol", "Nurofen"])
def test_an_adult_weight_under_the_band_is_an_age_and_weight_swapped(drug):
    # "20 kilo, 5 yaş" written as weight 5, age 20 used to be dosed for a 5 kg adult (an under-dose for the child).
    swapped = calculate_dose(drug, 5, 20)
    assert swapped["refer_to_doctor"] is True and "per_dose_mg" not in swapped
    assert "5 kg" in swapped["reasons"][0]
    assert calculate_dose(drug, 20, 5)["refer_to_doctor"] is False


def test_W12_a_product_age_band_is_respected():
    young = calculate_dose("Calpol 6 Plus", 6, 0.25)
    assert young["refer_to_doctor"] is True and "Calpol 6 Plus" in young["reasons"][0]
    assert "per_dose_ml" not in young
    verdict = check_contraindications("Calpol 6 Plus", age_years=3)
    assert verdict["verdict"] == "avoid"
    older = calculate_dose("Calpol 6 Plus", 22, 7)
    assert older["refer_to_doctor"] is False and older["per_dose_ml"] > 0


def test_W12_adults_get_the_solid_form_not_40_ml_of_syrup():
    adult = calculate_dose("Parol", 70, 35)
    assert "per_dose_ml" not in adult and adult["per_dose_mg"] == 1000
    assert adult["forms"] == ["500 mg tablet"] and adult["note"]
    child = calculate_dose("Parol", 20, 5)
    assert child["per_dose_ml"] == 12.5


@pytest.mark.parametrize(
    "low_bp",
    [
        "tansiyonum düşük",
        "tansiyon düşüklüğü",
        "düşük tansiyon",
        "tansiyonum çok düşük",
        # the verb as people write it (the review's wordings are the adjective): it falls, fell, keeps falling
        "tansiyonum düştü",
        "tansiyonum düşüyor",
        "tansiyonum düşer",
        "tansiyon düşmesi",
        "düşen tansiyon",
        "tansiyonum ayağa kalkınca düşüyor",
        "tansiyonum genelde çok düşük",
        "my BP is low",
        "my blood pressure drops",
        "blood pressure was low",
        "my blood pressure keeps dropping",
        "hypotensive",
    ],
)
def test_D5_low_blood_pressure_is_not_hypertension(low_bp):
    for drug in ("Viagra", "Nitrolingual", "Cialis"):
        result = check_contraindications(drug, conditions=[low_bp])
        assert result["verdict"] == "avoid", (drug, low_bp, result)
        assert [r["factor"] for r in result["reasons"]] in (["Düşük tansiyon"], ["Low blood pressure"])
    assert check_contraindications("Viagra", conditions=["low blood pressure"])["verdict"] == "avoid"
    high = check_contraindications("Viagra", conditions=["tansiyonum yüksek"])
    assert [r["factor"] for r in high["reasons"]] == ["Yüksek tansiyon"]
    # Not low blood pressure, and the high blood pressure they name must not be lost to a low-pressure reading:
    # "düşür-" lowers it (a medicine), "düşün-" is to think, "düşmez / düşemiyor / düşmeyen" say it does not fall,
    # "ilaçla düşüyor" is treated high pressure, "yüksek, düşmesi lazım" wants it down.
    for text in (
        "tansiyon düşürücü kullanıyorum",
        "tansiyonum düşmez",
        "düşünüyorum tansiyonum yüksek",
        "tansiyonum ilaçla düşüyor",
        "tansiyonum yüksek düşmesi lazım",
        "tansiyonum düşemiyor",
        "düşmeyen tansiyon",
        "tansiyon ilacı düşünüyorum",
        "my blood pressure is high",
    ):
        reasons = check_contraindications("Viagra", conditions=[text])["reasons"]
        assert [r["factor"] for r in reasons] in (["Yüksek tansiyon"], ["High blood pressure"]), text


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("astımım yok", "Astım"),
        ("astım hastası değilim", "Astım"),
        ("no asthma", "Asthma"),
        ("I don't have asthma", "Asthma"),
        ("without kidney disease", "Kidney failure"),
    ],
)
def test_I3_negated_conditions_are_not_counted(text, negated):
    drug = "Nurofen" if negated == "Astım" else "ibuprofen"  # the result speaks the drug name's language
    result = check_contraindications(drug, conditions=[text])
    assert result["reasons"] == [] and result["not_counted"] == [negated]
    assert result["verdict"] == "ok"


def test_I3_a_clause_negates_only_itself_and_doubt_is_not_a_no():
    result = check_contraindications("Nurofen", conditions=["astımım var ama böbrek hastalığım yok"])
    assert [r["factor"] for r in result["reasons"]] == ["Astım"] and result["not_counted"] == ["Böbrek yetmezliği"]
    unsure = check_contraindications("Nurofen", conditions=["astım olup olmadığından emin değilim"])
    assert [r["factor"] for r in unsure["reasons"]] == ["Astım"]


def test_I3_ulcerative_colitis_is_not_a_peptic_ulcer():
    for text in ("ülseratif kolit", "ulcerative colitis", "Crohn hastalığı"):
        result = check_contraindications("Nurofen", conditions=[text])
        factors = [r["factor"] for r in result["reasons"]]
        assert "Peptik ülser" not in factors and "Peptic ulcer" not in factors, (text, factors)
        assert result["verdict"] in ("caution", "ok")
    assert check_contraindications("Nurofen", conditions=["mide ülseri"])["verdict"] == "avoid"


@pytest.mark.parametrize(
    ("kwargs", "years", "shown"),
    [
        ({"age_months": 9}, 0.75, "9 ay"),
        ({"age_months": "9"}, 0.75, "9 ay"),
        ({"age_years": 1, "age_months": 6}, 1.5, "1.5 yaş"),
        ({"age_years": "1,5"}, 1.5, None),
        ({"age_months": 30}, 2.5, "2.5 yaş"),
    ],
)
def test_ages_are_taken_as_written_and_converted_by_the_tool(kwargs, years, shown):
    # The model copies "9 aylık" as age_months 9; the tool converts (a small model writes 9 months as 9 years).
    result = calculate_dose("Calpol", 12, **kwargs)
    assert result["age_years"] == years and result["refer_to_doctor"] is False
    assert result["per_dose_mg"] == calculate_dose("Calpol", 12, age_years=years)["per_dose_mg"]
    assert result.get("age") == shown  # the months as the tool read them, for the answer


def test_months_reach_the_age_checks():
    young = check_contraindications("Nurofen", age_months=2, language="en")
    assert young["verdict"] == "avoid" and "3 months" in young["reasons"][0]["text"]
    older = check_contraindications("Nurofen", age_months=8)  # the suspension suits; its tablets are from 12 (N-I4)
    assert older["verdict"] == "ok" or all("tablet" in r["text"] for r in older["reasons"]), older
    assert calculate_dose("Nurofen", 5, age_months=2)["refer_to_doctor"] is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give the age"),
        ({"age_months": -1}, "age_months must be >= 0"),
        ({"age_months": "dokuz"}, "age_months must be a number"),
        ({"age_years": 100, "age_months": 400}, "the age must be <= 120 years"),
    ],
)
def test_a_missing_or_bad_age_is_named(kwargs, message):
    error = calculate_dose("Calpol", 12, **kwargs)["error"]
    assert message in error["message"]


# ---------------------------------------------------------------- weight and age as the patient wrote them


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("oglum 8 aylik, 9 kilo. gece atesi 38.5 e cikti", {"kg": [9.0], "lb": [], "years": [], "months": [8.0]}),
        ("an 18-month-old, 10kg, 38.2 on the thermometer", {"kg": [10.0], "lb": [], "years": [], "months": [18.0]}),
        ("kızım 2,5 yaşında 12,5 kilogram", {"kg": [12.5], "lb": [], "years": [2.5], "months": []}),
        ("she is 4 years old, 16 kgs", {"kg": [16.0], "lb": [], "years": [4.0], "months": []}),
        ("my son is 4 years old and 40 lbs", {"kg": [], "lb": [40.0], "years": [4.0], "months": []}),
        ("a 35-pound 3 year old", {"kg": [], "lb": [35.0], "years": [3.0], "months": []}),
        ("ayda 2 kez, 3 yastık, 38 derece ateş", {"kg": [], "lb": [], "years": [], "months": []}),
    ],
)
def test_weights_and_ages_are_read_with_their_units(text, found):
    from agent.pharmacy.amounts import stated_numbers

    assert stated_numbers(text) == found


def test_a_dose_is_for_the_weight_and_age_the_patient_wrote():
    text = "oglum 8 aylik, 9 kilo. gece atesi 38.5 e cikti. evde calpol surup var, kac ml?"
    # The temperature copied as the weight, the months as years: the values the patient wrote, and what was said.
    out = calculate_dose("calpol", 38.5, age_years=8, patient_text=text)
    assert (out["weight_kg"], out["per_dose_mg"]) == (9.0, 135)
    assert out["call_said"] == {"weight_kg": 38.5, "age_years": 8}
    assert out == calculate_dose("calpol", 9, age_months=8) | {"call_said": out["call_said"]}
    # An age never written (the temperature) becomes the only one the patient states.
    out = calculate_dose("tylenol", 11, age_years=38.2, patient_text="she's 18 months, 11 kg, 38.2 on the thermometer")
    assert out["age_years"] == 1.5 and out["call_said"] == {"age_years": 38.2} and "per_dose_mg" in out
    # As written: nothing changes; with no units stated: nothing to check.
    assert "call_said" not in calculate_dose("Parol", 14, age_years=3, patient_text="kızım 3 yaşında 14 kg")
    assert "call_said" not in calculate_dose("Parol", 14, age_years=3, patient_text="Parol dozu?")
    # Two weights, and the call gives neither: the model is told, nothing is chosen for it.
    out = calculate_dose("Parol", 30, age_years=3, patient_text="kızım 3 yaşında 14 kg, oğlum 20 kg")
    assert out["error"]["code"] == "not_as_written" and "14 kg, 20 kg" in out["error"]["message"]
    # Pounds are converted: "40 lbs" sent as weight_kg 40 is a dose for 18.1 kg, not for 40 kg (review D10).
    out = calculate_dose("Tylenol", 40, age_years=4, patient_text="my son is 4 years old and 40 lbs, fever 101")
    assert out["weight_kg"] == 18.1 and out["call_said"] == {"weight_kg": 40} and out["refer_to_doctor"] is False
    assert out["per_dose_mg"] == calculate_dose("Tylenol", 18.1, age_years=4)["per_dose_mg"] < 300
    # Two ages: the model's is kept.
    out = calculate_dose("Parol", 14, age_years=4, patient_text="kızım 3 yaşında 14 kg, oğlum 8 yaşında")
    assert "call_said" not in out and out["age_years"] == 4
    # A call's weight out of range (another number of the question) is read as written before its range is checked.
    out = calculate_dose("Parol", 5000, age_years=20, patient_text="Parol dose for a 20 kg child? 5000 mg?")
    assert out["weight_kg"] == 20 and out["call_said"] == {"weight_kg": 5000}
    assert calculate_dose("Parol", 5000, age_years=6)["error"]["code"] == "out_of_range"
    assert calculate_dose("Parol", 500, age_years=5, patient_text="500 kg cocuk")["error"]["code"] == "out_of_range"


@pytest.mark.parametrize(
    "text",
    [
        "Şişeyi 4 ay önce açtım, hâlâ kullanılır mı?",
        "Sisesi 4 ay once acildi",
        "2 yıldır kullanıyorum",
        "3 aydır içiyorum, 2 senedir de tansiyon ilacı",
        "6 aydan beri ve son 2 yılda hiç",
        "4 ay kadar önce başladım, 3 hafta sonra bıraktım",
        "iki yıldır kullanıyorum",
        "I opened it 3 months ago",
        "I have been taking it for 2 years",
        "for the past 6 months, and 2 years before that",
        "on it for a few years now, stopped two months back",
        "within 3 months of opening",
    ],
)
def test_durations_are_not_read_as_ages(text):
    """'Şişeyi 4 ay önce açtım' (I opened the bottle 4 months ago) used to be read as the baby's age."""
    from agent.pharmacy.amounts import gives_age, stated_numbers

    stated = stated_numbers(text)
    assert stated["years"] == [] and stated["months"] == []
    assert not any(gives_age(text, years) or gives_age(text, None, years) for years in (2, 3, 4, 6))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("8 aylık bebeğim, şurubu 2 aydır veriyorum", {"years": [], "months": [8.0]}),
        ("oğlum 3 yaşında, 2 yıldır astım ilacı kullanıyor", {"years": [3.0], "months": []}),
        ("syrup for my 2 year old, opened 3 months ago", {"years": [2.0], "months": []}),
        ("dose for 2 years old child", {"years": [2.0], "months": []}),
        ("she is 18 months old and has had a cough for 3 months", {"years": [], "months": [18.0]}),
    ],
)
def test_an_age_beside_a_duration_is_still_read(text, found):
    from agent.pharmacy.amounts import gives_age, stated_numbers

    stated = stated_numbers(text)
    assert {"years": stated["years"], "months": stated["months"]} == found and gives_age(text)


def test_a_dose_is_never_for_an_age_that_was_a_duration():
    text = "Bebeğim 8 kilo. Calpol şişesini 4 ay önce açtım, kaç ml vereyim?"
    # An age the call made up used to become the "only age" the patient states: 4 months, a dose for it.
    out = calculate_dose("Calpol", 8, age_years=1, patient_text=text)
    assert out["error"]["message"] == "the patient gives no age: ask for it"
    # The duration's 4 copied as the age: asked for, not dosed.
    out = calculate_dose("Calpol", 8, age_months=4, patient_text=text)
    assert out["error"]["message"] == "the patient gives no age: ask for it"
    # With the age given too, the age is the one the patient gave.
    out = calculate_dose("Calpol", 8, age_months=4, patient_text="8 aylık, 8 kilo. " + text)
    assert out["age_years"] == calculate_dose("Calpol", 8, age_months=8)["age_years"] and out["call_said"] == {
        "age_months": 4
    }
    # An age never given is not checked by the contraindication check either.
    out = check_contraindications("Nurofen", age_years=2, patient_text="2 yıldır Nurofen kullanıyorum")
    assert out["call_said"] == {"age_years": 2}


def test_the_agent_gives_the_tools_the_patients_own_words():
    from agent.engine.toolbox import tool_schema
    from agent.pharmacy.prompts import tool_context

    messages = [
        {"role": "system", "content": "9 kg"},
        {"role": "user", "content": "oğlum 8 aylık"},
        {"role": "assistant", "content": "Kaç kilo?"},
        {"role": "user", "content": "9 kilo"},
    ]
    assert tool_context(messages)["patient"].words == "oğlum 8 aylık\nKaç kilo?\n9 kilo"
    # A reply means what it was asked: "evet" to a pregnancy question is a pregnancy stated.
    asked = [
        {"role": "user", "content": "apranax icebilir miyim?"},
        {"role": "assistant", "content": "Apranax bir ağrı kesicidir. Hamile misiniz?"},
        {"role": "user", "content": "evet"},
    ]
    patient = tool_context(asked)["patient"]
    assert patient.words == "apranax icebilir miyim?\nHamile misiniz?\nevet" and patient.counts("pregnant")
    assert stated_states(patient.words) == {"pregnant"}
    out = check_contraindications("apranax", pregnant=True, patient=patient)
    assert out["verdict"] == "avoid" and "call_said" not in out
    assert "patient_text" not in tool_schema(calculate_dose)["function"]["parameters"]["properties"]
    assert "patient_text" not in tool_schema(check_contraindications)["function"]["parameters"]["properties"]
    assert "patient" not in tool_schema(check_contraindications)["function"]["parameters"]["properties"]


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("6 aylik hamileyim, bas agrim var", {"pregnant"}),
        ("Gebeliğimin 20. haftasındayım", {"pregnant"}),
        ("I'm 30 weeks pregnant", {"pregnant"}),
        ("emziriyorum, burnum tıkalı", {"breastfeeding"}),
        ("sut veriyorum", {"breastfeeding"}),
        ("i'm breastfeeding my 2 month old", {"breastfeeding"}),
        ("hamileyim ve emziriyorum", {"pregnant", "breastfeeding"}),
        ("babam coumadin kullaniyor, agridan geberiyor", set()),  # "geber-" is not "gebe"
        ("my husband takes viagra", set()),
    ],
)
def test_pregnancy_and_breastfeeding_are_read_from_the_patients_words(text, states):
    assert stated_states(text) == states


def test_a_pregnancy_the_patient_never_mentions_is_not_checked():
    father = "babam kalp kapakcigi ameliyati oldu, coumadin kullaniyor. aspirin icmis, sorun olur mu"
    out = check_contraindications("coumadin", pregnant=True, patient_text=father)
    assert out["verdict"] == "unknown" and out["reasons"] == [] and out["call_said"] == {"pregnant": True}
    assert out | {"call_said": None} == check_contraindications("coumadin") | {"call_said": None}
    # Said by the patient: checked as before, nothing noted.
    pregnant = check_contraindications("apranax", pregnant=True, patient_text="6 aylik hamileyim, apranax?")
    assert pregnant == check_contraindications("apranax", pregnant=True) and pregnant["verdict"] == "avoid"
    out = check_contraindications("Sudafed", pregnant=True, breastfeeding=True, patient_text="i'm breastfeeding")
    assert out["call_said"] == {"pregnant": True} and [r["factor"] for r in out["reasons"]] == ["Breastfeeding"]
    # Without the patient's words (the training data's calls) the flags are taken as given.
    assert check_contraindications("coumadin", pregnant=True)["verdict"] == "avoid"


def test_nothing_given_is_nothing_checked_not_ok():
    out = check_contraindications("Parol")
    assert out["verdict"] == "unknown" and out["reasons"] == [] and "note" in out
    assert check_contraindications("Parol", age_years=30)["verdict"] == "ok"  # an age checked and fine


def test_an_age_the_patient_never_gave_is_asked_for_not_used():
    # The model wrote age_years 1 for "15 kilo" alone: the age decides the limits, so the patient is asked.
    out = calculate_dose("calpol", 15, age_years=1, patient_text="calpol dozu nedir 15 kilo", language="tr")
    assert out["error"] == {
        "code": "invalid_input",
        "message": "Doz hesabı için yaş gerekli: lütfen yaşı (yıl ya da ay olarak) yazın.",
        "for_patient": True,
    }
    # Ground for an age: a word of age (also with the number in words; "adult"), or the number itself.
    assert "per_dose_mg" in calculate_dose("calpol", 10, age_years=1, patient_text="bir yaşındaki oğlum 10 kilo")
    assert "per_dose_mg" in calculate_dose("Nurofen", 70, age_years=35, patient_text="I'm 35, 70 kg. Nurofen dose?")
    assert "per_dose_mg" in calculate_dose("Nurofen", 70, age_years=30, patient_text="yetişkinim, 70 kilo, nurofen?")
    # A verdict does not rest on it either: not checked, and the result says what the call had.
    out = check_contraindications("Aspirin", age_years=20, patient_text="can my son take aspirin?", language="en")
    assert out["call_said"] == {"age_years": 20} and out == check_contraindications("Aspirin", language="en") | {
        "call_said": {"age_years": 20}
    }
    out = check_contraindications("Aspirin", age_years=8, patient_text="my son is 8, can he take aspirin?")
    assert "call_said" not in out and out["verdict"] == "avoid"


def test_a_weight_or_age_out_of_range_is_told_in_the_patients_words():
    out = calculate_dose("Parol", 500, age_years=5, language="tr")["error"]
    assert out["code"] == "out_of_range" and out["for_patient"] is True
    assert out["message"] == "Kilo 0'dan büyük ve en fazla 300 kg olmalı; verilen: 500 kg. Lütfen kiloyu kontrol edin."
    out = calculate_dose("Parol", 20, age_years=150, language="en")["error"]
    assert out["message"] == "The age must be between 0 and 120 years; given: 150. Please check the age."
    # Without the patient's language (a direct call): the message for a developer, as before.
    assert calculate_dose("Parol", 500, age_years=5)["error"] == {
        "code": "out_of_range",
        "message": "weight_kg must be > 0 and <= 300, got 500",
    }


@pytest.mark.parametrize(
    "text",
    [
        "my daughter is 2 and a half, 13 kg, she's got a temp. how many ml of brufen?",
        "little one is two and a half, 13 kg, brufen dose please",
        "kizim iki buçuk, 13 kilo, brufen ne kadar",
    ],
)
def test_an_age_written_with_a_half_and_no_unit_is_the_patients(text):
    # "2 and a half" beside a weight is an age the patient gave: a dose for it, not a question back (dev_b PH-0010)
    result = calculate_dose("Brufen", 13, age_years=2.5, patient_text=text)
    assert "error" not in result and result["age_years"] == 2.5
    # a number word alone is no number: an age of 1 is not the "bir" of "bir kutu"
    made_up = calculate_dose("Brufen", 13, age_years=1, patient_text="bir kutu brufen var 13 kilo, ne kadar")
    assert made_up["error"]["code"] == "invalid_input"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # the unit as a label before the number, read left to right: a label right after a number is its unit
        ("kilo 30 yas 9 parasetamol dozu", {"kg": [30.0], "years": [9.0]}),
        ("kilosu 27 yasi 9 pedifen kac ml", {"kg": [27.0], "years": [9.0]}),
        ("bir buçuk yaşında, kilosu 10,5 civarı", {"kg": [10.5], "years": [1.5]}),
        ("3 yaş kilo 14", {"kg": [14.0], "years": [3.0]}),
        ("14 kilo 3 yaş", {"kg": [14.0], "years": [3.0]}),
        ("age 4, 16kg", {"kg": [16.0], "years": [4.0]}),
        # a label whose number carries a unit of its own kind: that unit
        ("yaşı 18 aylık", {"months": [18.0]}),
        ("kilosu 11 kg", {"kg": [11.0]}),
        ("kilosu 40 lbs, yaşı 6", {"lb": [40.0], "years": [6.0]}),
        # "weighs 40" names no unit: not read (kg or pounds)
        ("she weighs 40, 9 years old", {"years": [9.0]}),
    ],
)
def test_a_weight_or_an_age_written_as_a_label(text, found):
    from agent.pharmacy.amounts import stated_numbers

    assert {k: v for k, v in stated_numbers(text).items() if v} == found


def test_the_months_written_after_the_years_are_one_age():
    from agent.pharmacy.amounts import compound_ages

    assert compound_ages("torunum 2 yaş 3 aylık, 13 kilo") == [(2.0, 3.0)]
    assert compound_ages("my son is 2 years and 3 months") == [(2.0, 3.0)]
    assert compound_ages("kizim 5 yasinda 3 aydir oksuruyor") == []  # a duration, not months of the age
    turn = read_text("1 yas 8 aylik 11 kg")
    assert turn.months_beyond(1) == 8 and turn.months_beyond(8) is None and turn.months_beyond(None) is None


def test_a_dose_is_never_for_a_weight_the_patient_did_not_give():
    text = "oglum 10 yasinda burnu akiyo calpol surup veriyoz dozu ne olmali"
    # The age's 10 copied as the weight: asked for, not dosed.
    out = calculate_dose("Calpol", 10, age_years=10, patient_text=text)
    assert out["error"]["message"] == "the patient gives no weight: ask for it"
    assert not read_text(text).gives_weight(10)
    # A weight as a label, with its unit, or a number answering our question of the weight: dosed.
    assert "per_dose_mg" in calculate_dose("Calpol", 11, age_months=18, patient_text="18 aylık, kilosu 11")
    assert "per_dose_mg" in calculate_dose("Calpol", 20, age_years=6, patient_text="6 yaşında 20 kg")
    asked = [
        {"role": "user", "content": "calpol verecektim, 3 yasinda"},
        {"role": "assistant", "content": "Kilosunu da yazabilir misiniz?"},
        {"role": "user", "content": "tartmadik ama 15 civari"},
    ]
    turn = read_turn(asked)
    assert turn.gives_weight(15) and not turn.gives_weight(16)
    assert "per_dose_mg" in calculate_dose("Calpol", 15, age_years=3, patient=turn)
    # Without the patient's words (a caller with the numbers alone), the tool computes as before.
    assert "per_dose_mg" in calculate_dose("Calpol", 15, age_years=3)
