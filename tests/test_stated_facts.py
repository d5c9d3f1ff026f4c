"""Call checks (agent.engine.call_checks) and the pharmacy's: the patient's facts in a call as their words state
them (agent.pharmacy.facts_check, agent.pharmacy.tools.as_stated)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, call, scripted_backend

from agent.engine.agent import Agent, AgentConfig
from agent.engine.call_checks import with_checks
from agent.engine.models import recorded_tools
from agent.engine.toolbox import Toolbox
from agent.pharmacy import PHARMACY_TOOLS, pharmacist_agent
from agent.pharmacy.facts_check import StatedFacts
from agent.pharmacy.medicine_check import NamedMedicines
from agent.pharmacy.text import as_written, fold
from agent.pharmacy.tool_check import AnsweringTool
from agent.pharmacy.tools import as_stated, check_contraindications
from agent.pharmacy.turn import read_text


def dose(drug: str, weight_kg: float, age_years: float | None = None) -> dict:
    """Dose a drug.

    Args:
        drug: Drug name.
        weight_kg: Weight.
        age_years: Age.
    """
    return {"drug": drug, "weight_kg": weight_kg, "age_years": age_years}


class Swap:
    """A call check that swaps weight and age: any rule of the domain's would do."""

    name = "swap"
    note = "weight and age swapped"

    def arguments(self, tool: str, arguments: dict, conversation: list[dict]) -> dict:
        assert conversation[-1] == {"role": "user", "content": "dose?"}
        return {**arguments, "weight_kg": arguments["age_years"], "age_years": arguments["weight_kg"]}


def test_a_call_check_sets_what_the_call_runs_with_and_the_transcript_keeps_the_models(tmp_path):
    texts = [call("dose", drug="Parol", weight_kg=4, age_years=22), "@PHARMACIST\nTamam."]
    events: list[dict] = []
    log = tmp_path / "t.jsonl"
    agent = Agent(
        scripted_backend(ScriptedGenerator(texts)),
        [dose],
        call_checks=[Swap()],
        config=AgentConfig(transcript=log),
        on_event=events.append,
    )
    result = agent.run("dose?")
    ran = [m for m in result.messages if m.get("tool_calls")][0]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(ran) == {"drug": "Parol", "weight_kg": 22, "age_years": 4}
    tool = [m for m in result.messages if m["role"] == "tool"][0]
    assert json.loads(tool["content"]) == {"drug": "Parol", "weight_kg": 22, "age_years": 4}
    records = [json.loads(line) for line in log.read_text().splitlines()]
    checked = [r for r in records if r["type"] == "call_checks"]
    assert checked and checked[0]["model_calls"] == [
        {"name": "dose", "arguments": {"drug": "Parol", "weight_kg": 4, "age_years": 22}}
    ]
    assert [e for e in events if e["type"] == "call_checks"] == [
        {"type": "call_checks", "rule": "swap", "action": "set_arguments"}
    ]


def test_a_call_check_must_return_arguments():
    class Broken:
        name, note = "broken", ""

        def arguments(self, tool, arguments, conversation):
            return None

    with pytest.raises(TypeError, match="broken.arguments returned NoneType"):
        with_checks([Broken()], [{"name": "x", "arguments": {}}], [])
    # A call whose arguments are not an object is left for the engine to refuse.
    assert with_checks([Broken()], [{"name": "x", "arguments": "[1]"}], []) == [{"name": "x", "arguments": "[1]"}]


C, D = "check_contraindications", "calculate_dose"


@pytest.mark.parametrize(
    ("tool", "model", "words", "ran"),
    [
        # a weight and an age bound to the units the patient wrote, in either order
        (
            D,
            {"weight_kg": 17, "age_years": 84},
            "84 kg ve 17 yaşında, dozu?",
            {"weight_kg": 84, "age_years": 17},
        ),
        # months kept in the parameter the model wrote (a schema recorded before age_months lacks it)
        (D, {"weight_kg": 9, "age_years": 8}, "oglum 8 aylik, 9 kilo", {"weight_kg": 9, "age_years": 0.67}),
        (D, {"weight_kg": 9, "age_months": 8}, "oglum 8 aylik, 9 kilo", {"weight_kg": 9, "age_months": 8}),
        (D, {"weight_kg": 10.2, "age_years": 9.2}, "10 months and 9.2 kg", {"weight_kg": 9.2, "age_years": 0.83}),
        # both ages written: the one the patient states with its unit, else the only age they state
        (
            D,
            {"weight_kg": 9, "age_years": 9, "age_months": 8},
            "oglum 8 aylik, 9 kilo",
            {"weight_kg": 9, "age_months": 8},
        ),
        (
            D,
            {"weight_kg": 9.2, "age_months": 10, "age_years": 9.2},
            "10 months and 9.2 kg",
            {"weight_kg": 9.2, "age_months": 10},
        ),
        (
            D,
            {"weight_kg": 11, "age_years": 2, "age_months": 38.7},
            "2 gundur atesi 38,7. 18 aylik 11 kg",
            {"weight_kg": 11, "age_months": 18},
        ),
        (
            D,
            {"weight_kg": 14, "age_years": 3, "age_months": 4},
            "3 yaş 4 aylık, 14 kilo",
            {"weight_kg": 14, "age_years": 3, "age_months": 4},
        ),
        # the months written after the years are part of the age, for the dose and for the check alike
        (D, {"weight_kg": 13, "age_years": 2}, "torunum 2 yaş 3 aylık, 13 kilo", {"weight_kg": 13, "age_years": 2.25}),
        (C, {"age_years": 2}, "2 years and 3 months old, can he have it", {"age_years": 2, "age_months": 3.0}),
        # a weight or an age written as a label before its number
        (D, {"weight_kg": 9, "age_years": 30}, "kilo 30 yas 9 parol dozu", {"weight_kg": 30, "age_years": 9}),
        # numbers written in words
        (D, {"weight_kg": 7, "age_years": 7}, "7 yaşındaki oğlum, yirmi iki kilo", {"weight_kg": 22, "age_years": 7}),
        (D, {"weight_kg": 13, "age_years": 13}, "iki buçuk yaşında, 13 kilo", {"weight_kg": 13, "age_years": 2.5}),
        (D, {"weight_kg": 4, "age_years": 4}, "four years old, thirty-one pounds", {"weight_kg": 14.1, "age_years": 4}),
        # a pregnancy stated, written as an age; one of someone else's, dropped
        (C, {"age_years": 6}, "6 aylik hamileyim, icebilir miyim?", {"pregnant": True}),
        (C, {"pregnant": True}, "Eşim hamile, ben alabilir miyim?", {}),
        (C, {"conditions": ["bilgi al"]}, "ben emziriyorum, kullanabilir miyim", {"breastfeeding": True}),
        # a condition in the patient's words, for one the model made up or wrote as a state
        (C, {"conditions": ["A-velep"]}, "Annemde epilepsi var, verebilir miyim?", {"conditions": ["epilepsi"]}),
        (C, {"breastfeeding": True}, "böbrek yetmezliğim var, alabilir miyim", {"conditions": ["böbrek yetmezliği"]}),
        # kept: a condition the data knows, and the patient's own words for one it does not
        (C, {"conditions": ["astımım"]}, "astımım var, alabilir miyim", {"conditions": ["astımım"]}),
        (C, {"conditions": ["glokom"]}, "glokom hastasıyım, alabilir miyim", {"conditions": ["glokom"]}),
        # a condition the data knows, written otherwise than the patient wrote it: in their words
        (
            C,
            {"conditions": ["my asthma"]},
            "i've had asthma since i was a kid, can i take it",
            {"conditions": ["asthma"]},
        ),
        (C, {"conditions": ["ulseri"]}, "ulserim var parol icmem sakincali mi", {"conditions": ["ulser"]}),
        (C, {"conditions": ["glokom hastalığı"]}, "Glokom hastasıyım, içebilir miyim", {"conditions": ["Glokom"]}),
        # dropped: a text naming the medicine or a state ("emzirme": the flag carries it)
        (C, {"conditions": ["Parol güvenli"]}, "emzirme döneminde Parol güvenli mi?", {"breastfeeding": True}),
        (C, {"conditions": ["emzirme"]}, "emzirme döneminde Parol güvenli mi?", {"breastfeeding": True}),
    ],
)
def test_the_patients_facts_in_a_call_are_what_their_words_state(tool, model, words, ran):
    out = as_stated(tool, {"drug": "Parol", **model}, read_text(words))
    assert out == {"drug": "Parol", **ran}


def test_a_checked_call_runs_where_the_models_recorded_schema_lacks_age_months():
    # the ten-stage adapter's record (the default before the recipe's), from before age_months
    recorded = recorded_tools(Path(__file__).resolve().parents[1] / "eval" / "results" / "ten_stages")
    assert "age_months" not in recorded["calculate_dose"]["function"]["parameters"]["properties"]
    words = "my little one is 18 months, about 11 kg, 38.2 on the thermometer. tylenol dose?"
    ran = as_stated(D, {"drug": "tylenol", "weight_kg": 11, "age_years": 38.2}, read_text(words))
    out = Toolbox(list(PHARMACY_TOOLS), recorded=recorded).call(D, ran, {"patient": read_text(words)})
    assert ran["age_years"] == 1.5 and out["per_dose_mg"] == 165 and out["age_years"] == 1.5


def test_what_the_tool_cannot_take_is_left_for_it_to_refuse_and_other_tools_are_untouched():
    turn = read_text("20 kg ve 30 kg, 5 yaşında")
    assert as_stated(D, {"drug": "Parol", "weight_kg": 12}, turn) == {"drug": "Parol", "weight_kg": 12}
    assert as_stated(D, {"drug": "Parol", "weight_kg": "heavy"}, turn)["weight_kg"] == "heavy"
    assert as_stated("search_drug", {"drug": "Parol", "pregnant": True}, read_text("x")) == {
        "drug": "Parol",
        "pregnant": True,
    }


def test_the_check_counts_a_state_or_condition_the_patient_states_though_the_call_left_it_out():
    out = check_contraindications("apranax", age_years=2, patient_text="6 aylik hamileyim, apranax icebilir miyim?")
    assert out["verdict"] == "avoid" and out["call_said"] == {"pregnant": False, "age_years": 2}
    pregnancy = check_contraindications("apranax", pregnant=True)["reasons"]
    assert [r["factor"] for r in out["reasons"]] == [r["factor"] for r in pregnancy]
    out = check_contraindications("brufen", patient_text="kucukken beri astimim var, brufen alabilir miyim")
    assert out["call_said"] == {"conditions": []} and out["verdict"] != "unknown"
    assert out["reasons"] == check_contraindications("brufen", conditions=["astım"])["reasons"]
    # A condition the patient denies, or states of someone else, is not added.
    assert "call_said" not in check_contraindications("brufen", patient_text="astımım yok, brufen alabilir miyim")
    other = check_contraindications("brufen", patient_text="annemin astımı var, ben brufen alabilir miyim")
    assert "call_said" not in other


def test_the_pharmacist_sets_the_stated_facts_unless_told_not_to():
    backend = scripted_backend()
    assert [c.name for c in pharmacist_agent(backend, routed=False).call_checks] == [
        AnsweringTool.name,
        NamedMedicines.name,
        StatedFacts.name,
    ]
    assert pharmacist_agent(backend, routed=False, stated_facts=False).call_checks == []


@pytest.mark.parametrize(
    ("text", "span", "written"),
    [
        ("Annemde epilepsi var", "epilepsi", "epilepsi"),
        ("ama benim böbrek yetmezliğim var", "bobrek yetmezligi", "böbrek yetmezliği"),
        ("Astımım var; İbuprofen?", "astim", "Astım"),
        ("kalp-damar hastalığı", "kalp damar", "kalp-damar"),
    ],
)
def test_a_folded_span_is_given_back_as_the_patient_wrote_it(text, span, written):
    start = fold(text).index(span)
    assert as_written(text, start, start + len(span)) == written


@pytest.mark.parametrize(
    ("arguments", "text", "ran"),
    [
        # an age the call leaves out that the patient states once of the one who takes the medicine
        ({"drug": "apranax"}, "babam 82 yaşında, apranax verebilir miyiz ona", {"drug": "apranax", "age_years": 82}),
        ({"drug": "asist"}, "14 aylık kızıma asist verebilir miyim", {"drug": "asist", "age_months": 14}),
        # months written as years: the unit the patient wrote
        ({"drug": "asist", "age_years": 14}, "14 aylık kızıma asist verebilir miyim",
         {"drug": "asist", "age_months": 14}),
        # the baby's age is not the breastfeeding mother's; the son's is not the asker's
        ({"drug": "sudafed", "breastfeeding": True}, "i'm breastfeeding my 2 month old, can i take sudafed",
         {"drug": "sudafed", "breastfeeding": True}),
        ({"drug": "tantum verde"}, "oğluma antibiyotik yazıldı 7 yaşında. ben tantum verde kullanabilir miyim",
         {"drug": "tantum verde"}),
        # ... nor is it when the call writes it: the breastfed baby's age is dropped
        ({"drug": "parol", "breastfeeding": True, "age_years": 4},
         "4 aylık oğlumu emziriyorum. parol içebilir miyim", {"drug": "parol", "breastfeeding": True}),
        ({"drug": "parol", "breastfeeding": True, "age_months": 4},
         "4 aylık oğlumu emziriyorum. parol içebilir miyim", {"drug": "parol", "breastfeeding": True}),
        # a relation's age the call writes stays: who takes it is read less surely than a breastfed baby
        ({"drug": "novalgin", "age_years": 5}, "can i giv it to my 5 yr old", {"drug": "novalgin", "age_years": 5}),
        # one condition written twice: the longer wording, once
        ({"drug": "sudafed", "conditions": ["blood pressure", "high blood pressure"]},
         "got high blood pressure, is sudafed ok for me", {"drug": "sudafed", "conditions": ["high blood pressure"]}),
        ({"drug": "aleve", "conditions": ["astım", "asthma"]}, "astımım var, asthma yani, aleve alabilir miyim",
         {"drug": "aleve", "conditions": ["asthma"]}),
    ],
)  # fmt: skip
def test_the_call_s_age_and_conditions_are_the_patient_s(arguments, text, ran):
    assert as_stated("check_contraindications", arguments, read_text(text)) == ran
