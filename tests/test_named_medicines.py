"""The medicines in a reply's calls as the patient's latest message names them (agent.pharmacy.medicine_check),
and the medicine names a text holds (agent.pharmacy.named)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, call, scripted_backend

from agent.engine.agent import Agent
from agent.engine.call_checks import with_checks
from agent.eval.scoring import calls_match, tool_defaults
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.facts_check import StatedFacts
from agent.pharmacy.medicine_check import NamedMedicines, grounded_list, group_asked, side_by_side, with_earlier
from agent.pharmacy.named import medicine_spans, named_medicines
from agent.pharmacy.tool_check import AnsweringTool

CHECK = NamedMedicines()


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def calls(*pairs: tuple[str, dict]) -> list[dict]:
    return [{"name": name, "arguments": args} for name, args in pairs]


EARLIER = [user("delix ne işe yarar"), {"role": "assistant", "content": "Delix (Ramipril): tansiyon ilacı."}]


def test_the_spans_of_the_names_a_text_holds():
    text = "Annem Coumadini TANTUM VERDE ile kullanıyor"
    spans = medicine_spans(text)
    assert [(text[s.start : s.end], s.name) for s in spans] == [
        ("Coumadini", "Coumadin"),
        ("TANTUM VERDE", "TANTUM VERDE"),
    ]
    assert named_medicines("aspirin, Aspirini ve coumadin") == ["aspirin", "coumadin"]


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("Aerius ile losartan potasyum ilaçları ne işe yarıyor?", [["Aerius", "losartan potasyum"]]),
        ("I have ESCITALOPRAM OXALATE and Domperidone. What is each for?", [["ESCITALOPRAM OXALATE", "Domperidone"]]),
        ("parol, aspirin ya da majezik hangisi", [["parol", "aspirin", "majezik"]]),
        # not side by side: other words between them
        ("Zinnat neye iyi gelir ve levotiroksin sodyum ile beraber içilir mi?", []),
        ("Coumadin kullanıyorum, dün aspirin aldım", []),
        # one medicine twice, by its brand and its ingredient
        ("Coumadin (varfarin) ne işe yarar", []),
    ],
)
def test_medicines_written_side_by_side(text, groups):
    assert [[n.name for n in g] for g in side_by_side(text)] == groups


@pytest.mark.parametrize(
    ("conversation", "model", "ran"),
    [
        # an earlier turn's medicine after the patient moved on to another
        (
            [*EARLIER, user("tamam. bi de arveles diye bişey var o ne işe yarıyo")],
            calls(("search_drug", {"drug": "delix"})),
            calls(("search_drug", {"drug": "arveles"})),
        ),
        # a name copied with its Turkish ending
        (
            [user("cipralexin yerine ne kullanabilirim")],
            calls(("find_alternatives", {"drug": "cipralexin"})),
            calls(("find_alternatives", {"drug": "cipralex"})),
        ),
        # an active ingredient written for the one product the patient named with it: that product
        (
            [user("kızım 3,5 yaşında 15 kilo, Calpol ne kadar vereyim")],
            calls(("calculate_dose", {"drug": "parasetamol", "weight_kg": 15})),
            calls(("calculate_dose", {"drug": "Calpol", "weight_kg": 15})),
        ),
        # two medicines side by side, one call written: the same call for the other
        (
            [user("Aerius ile losartan potasyum ilaçları ne işe yarıyor?")],
            calls(("search_drug", {"drug": "Aerius"})),
            calls(("search_drug", {"drug": "Aerius"}), ("search_drug", {"drug": "losartan potasyum"})),
        ),
    ],
)
def test_a_calls_medicine_is_the_one_the_latest_message_names(conversation, model, ran):
    assert CHECK.calls(model, conversation) == ran


@pytest.mark.parametrize(
    ("conversation", "model"),
    [
        # the medicine named, by its brand, or its active ingredient where the patient named that ingredient
        ([user("Parol ne işe yarar?")], calls(("search_drug", {"drug": "Parol"}))),
        ([user("parasetamol ve Parol aynı mı?")], calls(("search_drug", {"drug": "parasetamol"}))),
        # no medicine named in the latest message: a follow-up about the earlier one
        (
            [*EARLIER, user("peki hamileyken bunu kullanabilir miyim")],
            calls(("check_contraindications", {"drug": "delix"})),
        ),
        # two named and not side by side: the model's choice stands
        (
            [user("Zinnat neye iyi gelir ve levotiroksin sodyum ile beraber içilir mi?")],
            calls(("search_drug", {"drug": "levotiroksin sodyum"})),
        ),
        # a call already about the named medicine: the others are left alone
        (
            [*EARLIER, user("arveles ne işe yarıyo")],
            calls(("search_drug", {"drug": "arveles"}), ("search_drug", {"drug": "delix"})),
        ),
        # a list of medicines and arguments that are not an object are not this check's
        (
            [user("aspirin ile parol birlikte alınır mı")],
            calls(("check_interactions", {"drugs": ["aspirin", "parol"]})),
        ),
        ([user("arveles?")], [{"name": "search_drug", "arguments": "[1]"}]),
    ],
)
def test_what_the_check_leaves_to_the_model(conversation, model):
    assert CHECK.calls(model, conversation) == model


def test_a_calls_check_that_drops_a_call_is_refused():
    class Drops:
        name, note = "drops", ""

        def calls(self, calls, conversation):
            return []

    with pytest.raises(TypeError, match="drops.calls must return a list of at least the 1 calls"):
        with_checks([Drops()], calls(("x", {})), [])


def test_an_added_call_runs_and_the_event_says_so(tmp_path):
    texts = [call("search_drug", drug="Aerius"), "@PHARMACIST\nTamam."]
    events: list[dict] = []
    pharmacist = pharmacist_agent(
        scripted_backend(ScriptedGenerator(texts)), routed=False, answers="model", on_event=events.append
    )
    assert isinstance(pharmacist, Agent)
    result = pharmacist.run("Aerius ile losartan potasyum ilaçları ne işe yarıyor?")
    tools = [json.loads(m["content"]) for m in result.messages if m["role"] == "tool"]
    assert [t.get("query") or t.get("name") for t in tools] and len(tools) == 2
    rule = "answering_tool, named_medicines, stated_facts"
    assert {"type": "call_checks", "rule": rule, "action": "added_calls"} in events
    # --no-stated-facts: the model's own calls
    own = pharmacist_agent(
        scripted_backend(ScriptedGenerator(texts)), routed=False, answers="model", stated_facts=False
    )
    assert (
        len(
            [
                m
                for m in own.run("Aerius ile losartan potasyum ilaçları ne işe yarıyor?").messages
                if m["role"] == "tool"
            ]
        )
        == 1
    )


@pytest.mark.parametrize(
    "name", ["templated_dev", "freetext_dev", "multiturn_dev", "freetext_dev_b", "multiturn_dev_b"]
)
def test_the_checks_change_no_expected_call_of_the_dev_sets(name):
    """Every right call goes through the call checks as it is: they only correct (scored as agent.eval does)."""
    defaults = tool_defaults()
    path = Path(__file__).resolve().parent.parent / "eval" / f"{name}.jsonl"
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    changed = []
    for case in cases:
        conversation = case.get("messages") or [user(case["query"])]
        ran = with_checks([AnsweringTool(), NamedMedicines(), StatedFacts()], case["expected"], conversation)
        if not calls_match(case["expected"], ran, defaults):
            changed.append(case["id"])
    assert cases and changed == []


def _conversation(*texts: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


@pytest.mark.parametrize(
    ("names", "texts", "grounded"),
    [
        # the same medicine twice: the food the message names instead
        (["augmentin", "augmentin"], ["augmentin ile alkol birlikte olur mu bu aksam"], ["augmentin", "alkol"]),
        (["zocor", "simvastatin"], ["im on zocor", "Zocor is simvastatin.", "grapefruit juice every day ok with it?"],
         ["zocor", "grapefruit"]),
        # a phrase the data reads as nothing: the food, in its fewest words
        (["Lipitor", "her sabah"], ["Lipitor ile greyfurt suyu beraber olur mu, her sabah içiyorum"],
         ["Lipitor", "greyfurt"]),
        # an earlier turn's medicine where the latest names another
        (["nexium", "coumadin"], ["nexium sabah mi", "Sabah.", "annem coumadin kullaniyo aspirin verebilir miyiz"],
         ["aspirin", "coumadin"]),
        # a medicine gives way to what can be taken with it, not to a disease the message states
        (["cipro", "glucophage"], ["i was prescribed cipro", "Okay.", "can i take it with my glucophage? i'm diabetic"],
         ["cipro", "glucophage"]),
        # a phrase the data reads as nothing gives way to the disease
        (["Advil", "my inhaler"], ["i have asthma, use my inhaler. is Advil ok for me?"], ["Advil", "asthma"]),
        # the latest message names nothing more: as the model wrote it
        (["plavix", "augmentin"], ["dad is on plavix", "Okay.", "dentist wants augmentin, ok with the other one?"],
         ["plavix", "augmentin"]),
        (["Parol", "Nurofen"], ["Parol ile Nurofen birlikte alınır mı? tansiyonum var"], ["Parol", "Nurofen"]),
        (["Kadeh alkol", "Xanax"], ["Xanax içiyorum akşam bi kadeh alkol alsam olur mu"], ["Kadeh alkol", "Xanax"]),
    ],
)  # fmt: skip
def test_an_interaction_list_holds_what_the_latest_message_names(names, texts, grounded):
    conversation = _conversation(*texts)
    assert grounded_list(names, conversation) == grounded
    (ran,) = CHECK.calls([{"name": "check_interactions", "arguments": {"drugs": names}}], conversation)
    assert ran["arguments"]["drugs"] == grounded


@pytest.mark.parametrize(
    ("names", "texts", "ran"),
    [
        # the latest message names one medicine: what it is asked with is what the patient named before
        (["plavix", "augmentin"], ["dad is on plavix and ecopirin", "Okay.", "dentist wants augmentin, ok with them?"],
         ["plavix", "augmentin", "ecopirin"]),
        (["beloc zok"], ["dedem xarelto kullanıyor", "Anladım.", "beloc zok da var, ikisi beraber olur mu"],
         ["beloc zok", "xarelto"]),
        # it names two: the list is theirs
        (["cozaar", "aldactone"], ["what is keral", "A painkiller.", "my mom takes cozaar, can she add aldactone?"],
         ["cozaar", "aldactone"]),
        # one message: nothing earlier
        (["Parol", "Nurofen"], ["Parol ile Nurofen birlikte alınır mı"], ["Parol", "Nurofen"]),
    ],
)  # fmt: skip
def test_an_interaction_list_gets_the_medicines_named_before(names, texts, ran):
    conversation = _conversation(*texts)
    assert with_earlier(names, conversation) == ran
    (call,) = CHECK.calls([{"name": "check_interactions", "arguments": {"drugs": names}}], conversation)
    assert call["arguments"]["drugs"] == ran


@pytest.mark.parametrize(
    ("texts", "group"),
    [
        # a word of all: every medicine the patient named
        (
            [
                "dedem xarelto kullanıyor",
                "Anladım.",
                "bir de beloc zok, voltaren almak istiyo, hepsini beraber olur mu",
            ],
            ["xarelto", "beloc zok", "voltaren"],
        ),
        # a word of two, where the patient named two and the message fewer
        (
            ["babam norvasc ve cozaar kullanıyor", "Anladım.", "ikisinin de daha ucuz muadili var mı"],
            ["norvasc", "cozaar"],
        ),
        (
            ["im on lanoxin", "Okay.", "and lasix in the morning", "Okay.", "could both of them cause this?"],
            ["lanoxin", "lasix"],
        ),
        # the message names the two itself, after another medicine: not the conversation's
        (["asist ne zaman içilir", "Yemekten sonra.", "abim viagra, nitrostat kullanıyor, ikisi beraber olur mu"], []),
        # a word of two where the patient named three: which two is not said
        (["parol, nurofen ve majezik var evde", "Tamam.", "ikisi beraber olur mu"], []),
        # no word of a group, or a single message
        (["babam norvasc ve cozaar kullanıyor", "Anladım.", "daha ucuz muadili var mı"], []),
        (["norvasc ve cozaar ikisi beraber olur mu"], []),
    ],
)
def test_a_question_of_the_patient_s_medicines_together(texts, group):
    assert group_asked(_conversation(*texts)) == group


def test_a_question_of_them_together_gets_each_medicine():
    texts = ["babam norvasc ve cozaar kullanıyor", "Anladım.", "ikisinin de daha ucuz muadili var mı"]
    ran = CHECK.calls([{"name": "find_alternatives", "arguments": {"drug": "norvasc"}}], _conversation(*texts))
    assert ran == [
        {"name": "find_alternatives", "arguments": {"drug": "norvasc"}},
        {"name": "find_alternatives", "arguments": {"drug": "cozaar"}},
    ]
    texts = ["dedem xarelto kullanıyor", "Anladım.", "bir de beloc zok. voltaren almak istiyo, hepsini beraber olur mu"]
    listed = CHECK.calls(
        [{"name": "check_interactions", "arguments": {"drugs": ["beloc zok", "voltaren"]}}], _conversation(*texts)
    )
    assert listed == [{"name": "check_interactions", "arguments": {"drugs": ["beloc zok", "voltaren", "xarelto"]}}]


def test_a_list_s_active_ingredient_is_the_product_the_patient_named():
    texts = ["started flagyl yesterday", "Metronidazole is an antibiotic.", "can i have a few drinks of alcohol on it"]
    listed = CHECK.calls(
        [{"name": "check_interactions", "arguments": {"drugs": ["Metronidazole", "alcohol"]}}], _conversation(*texts)
    )
    assert listed == [{"name": "check_interactions", "arguments": {"drugs": ["flagyl", "alcohol"]}}]
    # the ingredient the patient named themselves stays
    texts = ["metronidazole kullanıyorum", "Tamam.", "alkol alabilir miyim"]
    kept = CHECK.calls(
        [{"name": "check_interactions", "arguments": {"drugs": ["metronidazole", "alkol"]}}], _conversation(*texts)
    )
    assert kept == [{"name": "check_interactions", "arguments": {"drugs": ["metronidazole", "alkol"]}}]
