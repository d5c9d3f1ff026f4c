"""The tool that answers what a call asks (agent.pharmacy.tool_check) and the diseases the data reads
(DrugDB.diseases)."""

from __future__ import annotations

import json

import pytest
from ppsf_helpers import ScriptedGenerator, call, scripted_backend

from agent.engine.call_checks import with_checks
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.drugdb import load_db
from agent.pharmacy.facts_check import StatedFacts
from agent.pharmacy.tool_check import AnsweringTool

CHECK = AnsweringTool()


def conversation(*texts: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("asthma", ["asthma"]),
        ("stomach ulcer", ["peptic_ulcer"]),
        ("böbrek yetmezliği", ["kidney_failure"]),
        ("alkol", []),  # taken, not a disease
        ("alcohol", []),
        ("greyfurt suyu", []),  # a food
        ("Advil", []),  # a medicine
        ("her sabah", []),
    ],
)
def test_the_diseases_a_text_names(text, ids):
    assert load_db().diseases(text) == ids


def test_a_taken_condition_is_marked_in_the_data():
    db = load_db()
    assert [c for c, entry in db.conditions.items() if entry.get("taken")] == ["alcohol_use"]
    assert db.is_taken("bi kadeh alkol") and db.is_taken("greyfurt suyu") and db.is_taken("alcohol")
    assert not db.is_taken("astım") and not db.is_taken("Parol") and not db.is_taken("her sabah")


@pytest.mark.parametrize(
    ("texts", "calls", "expected"),
    [
        # one medicine and a disease: the contraindication check, which also reads the age the patient gives
        (
            ["i've had asthma since i was a kid, is it ok for me to take Advil for my back pain?"],
            [{"name": "check_interactions", "arguments": {"drugs": ["Advil", "asthma"]}}],
            [{"name": "check_contraindications", "arguments": {"drug": "Advil", "conditions": ["asthma"]}}],
        ),
        (
            ["babam 70 yaşında, böbrek yetmezliği var, Parol verebilir miyim"],
            [{"name": "check_interactions", "arguments": {"drugs": ["böbrek yetmezliği", "Parol"]}}],
            [
                {
                    "name": "check_contraindications",
                    "arguments": {"drug": "Parol", "conditions": ["böbrek yetmezliği"], "age_years": 70},
                }
            ],
        ),
        # alcohol is taken, not a disease: it stays an interaction
        (
            ["Xanax içiyorum akşam alkol alsam olur mu"],
            [{"name": "check_interactions", "arguments": {"drugs": ["Xanax", "alkol"]}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["Xanax", "alkol"]}}],
        ),
        # two medicines and a disease, or a word the data does not read: as written
        (
            ["astımım var, Parol ile Nurofen birlikte alınır mı"],
            [{"name": "check_interactions", "arguments": {"drugs": ["Parol", "Nurofen", "astım"]}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["Parol", "Nurofen", "astım"]}}],
        ),
        (
            ["Parol ile her sabah"],
            [{"name": "check_interactions", "arguments": {"drugs": ["Parol", "her sabah"]}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["Parol", "her sabah"]}}],
        ),
        # a medicine's warnings asked with alcohol or a food: the pair's interaction check
        (
            ["started flagyl yesterday", "Take it with food.", "can i have a few drinks of alcohol on saturday"],
            [{"name": "get_drug_info", "arguments": {"drug": "flagyl", "section": "warnings"}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["flagyl", "alcohol"]}}],
        ),
        (
            ["Lipitor kullanıyorum, greyfurt suyu içmemde sakınca var mı"],
            [{"name": "get_drug_info", "arguments": {"drug": "Lipitor", "section": "interactions"}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["Lipitor", "greyfurt"]}}],
        ),
        # or asked of the patient's medicines together
        (
            ["annem lanoxin kullanıyor", "Tamam.", "bi de lasix var", "Peki.", "ikisinin birlikte etkileşimi var mı"],
            [{"name": "get_drug_info", "arguments": {"drug": "lasix", "section": "interactions"}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["lasix", "lanoxin"]}}],
        ),
        # one medicine beside an entry no one wrote, and no other medicine named: asked of the one who takes it
        (
            ["9 aylık bebeğim var, öksürüyor", "Ateşi var mı?", "yok ateşi yok. delsym verebilir miyim ona"],
            [{"name": "check_interactions", "arguments": {"drugs": ["delsym", "aateşi"]}}],
            [{"name": "check_contraindications", "arguments": {"drug": "delsym", "age_months": 9.0}}],
        ),
        # ... but an entry the patient wrote stays (the tool lists it as unchecked), and so does a list where they
        # name another medicine to pair
        (
            ["delsym ile zorbex beraber olur mu"],
            [{"name": "check_interactions", "arguments": {"drugs": ["delsym", "zorbex"]}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["delsym", "zorbex"]}}],
        ),
        (
            ["Parol kullanıyorum", "Tamam.", "Nurofen de ekleyebilir miyim"],
            [{"name": "check_interactions", "arguments": {"drugs": ["Nurofen", "xyz"]}}],
            [{"name": "check_interactions", "arguments": {"drugs": ["Nurofen", "xyz"]}}],
        ),
        # a dose for a weight the patient never gave: the leaflet's dosage, not a guess
        (
            ["oglum 10 yasinda burnu akiyo aerius surup veriyoz dozu ne olmali"],
            [{"name": "calculate_dose", "arguments": {"drug": "aerius", "weight_kg": 10.0, "age_years": 10.0}}],
            [{"name": "get_drug_info", "arguments": {"drug": "aerius", "section": "dosage"}}],
        ),
        # a weight given with its unit, as a label ("kilosu 11"), or in answer to our question: the dose
        (
            ["calpol var, kızım 18 aylık, kilosu 11, ne kadar vereyim"],
            [{"name": "calculate_dose", "arguments": {"drug": "calpol", "weight_kg": 11, "age_months": 18}}],
            [{"name": "calculate_dose", "arguments": {"drug": "calpol", "weight_kg": 11, "age_months": 18}}],
        ),
        (
            ["calpol verecektim, 3 yasinda", "Kilosunu da yazabilir misiniz?", "tartmadik ama 15 civari"],
            [{"name": "calculate_dose", "arguments": {"drug": "calpol", "weight_kg": 15, "age_years": 3}}],
            [{"name": "calculate_dose", "arguments": {"drug": "calpol", "weight_kg": 15, "age_years": 3}}],
        ),
        # another section, or a message that names nothing taken with it: as written
        (
            ["does flagyl give side effects with alcohol"],
            [{"name": "get_drug_info", "arguments": {"drug": "flagyl", "section": "side_effects"}}],
            [{"name": "get_drug_info", "arguments": {"drug": "flagyl", "section": "side_effects"}}],
        ),
        (
            ["what does warfarin react with? just want the list"],
            [{"name": "get_drug_info", "arguments": {"drug": "warfarin", "section": "interactions"}}],
            [{"name": "get_drug_info", "arguments": {"drug": "warfarin", "section": "interactions"}}],
        ),
    ],
)
def test_a_call_runs_on_the_tool_its_arguments_ask(texts, calls, expected):
    assert with_checks([CHECK, StatedFacts()], calls, conversation(*texts)) == expected


def test_the_agent_runs_the_answering_tool_and_says_so():
    texts = [call("check_interactions", drugs=["Advil", "asthma"]), "@PHARMACIST\nOk."]
    events: list[dict] = []
    pharmacist = pharmacist_agent(
        scripted_backend(ScriptedGenerator(texts)), routed=False, answers="model", on_event=events.append
    )
    result = pharmacist.run("I have asthma, can I take Advil?")
    ran = [m for m in result.messages if m["role"] == "assistant" and m.get("tool_calls")][0]["tool_calls"]
    assert [c["function"]["name"] for c in ran] == ["check_contraindications"]
    tool = json.loads(next(m["content"] for m in result.messages if m["role"] == "tool"))
    assert tool["verdict"] in {"caution", "avoid"} and tool["reasons"]
    assert {"type": "call_checks", "rule": "answering_tool, named_medicines, stated_facts", "action": "set_tools"} in (
        events
    )
