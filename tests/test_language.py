"""The patient's language decides the tool results' language (issue 24.1), not the brand's origin."""

from __future__ import annotations

import json

import pytest
from ppsf_helpers import call
from test_agent import make_agent, tool_results

from agent.engine.toolbox import Toolbox, context_arguments, tool_schema
from agent.eval import score
from agent.pharmacy.prompts import conversation_language, no_answer
from agent.pharmacy.text import patient_language
from agent.pharmacy.tools import PHARMACY_TOOLS, calculate_dose, check_interactions, search_drug


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Parol ne işe yarar?", "tr"),
        ("parol ne ise yarar", "tr"),  # Turkish typed without Turkish letters
        ("oglum 3 yasinda 14 kilo calpol ne kadar vereyim", "tr"),
        ("What is Nurofen for?", "en"),
        ("What is Ürikoliz?", "en"),  # an English question about a Turkish brand
        ("my son is 2, how much Pedifen can I give", "en"),
        ("Nurofen", None),
        ("", None),
    ],
)
def test_patient_language(text, lang):
    assert patient_language(text) == lang


def test_the_conversation_language_is_the_latest_message_that_shows_one():
    messages = [{"role": "user", "content": "What is Parol for?"}, {"role": "assistant", "content": "..."}]
    assert conversation_language(messages) == "en"
    assert conversation_language([*messages, {"role": "user", "content": "Majezik?"}]) == "en"
    assert conversation_language([*messages, {"role": "user", "content": "peki majezik ne işe yarar"}]) == "tr"
    assert conversation_language([]) is None
    assert no_answer([{"role": "user", "content": "parol ne ise yarar"}], [], 4, True).startswith("Üzgünüm")


def test_tools_answer_in_the_language_given():
    assert search_drug("Nurofen", language="en")["usage"] == search_drug("ibuprofen")["usage"]
    assert search_drug("Advil", language="tr")["usage"] == search_drug("Nurofen")["usage"]
    (pair,) = check_interactions(["Coumadin", "Aspirin"], language="en")["pairs"]
    assert pair["drugs"] == ["Coumadin", "Aspirin"] and "bleeding" in pair["description"]
    assert calculate_dose("Calpol", 20, 5, language="en")["active_ingredient"] == "Paracetamol"
    assert search_drug("Nurofen", language="de")["error"]["code"] == "invalid_input"


def test_the_model_never_sees_or_sets_the_language():
    for fn in PHARMACY_TOOLS:
        assert context_arguments(fn) == (
            ("language", "patient", "patient_text")
            if fn.__name__ in ("calculate_dose", "check_contraindications")
            else ("language",)
        )
        assert not set(context_arguments(fn)) & set(tool_schema(fn)["function"]["parameters"]["properties"])
    box = Toolbox(PHARMACY_TOOLS)
    assert box.call("search_drug", {"drug": "Nurofen", "language": "en"})["error"]["code"] == "invalid_arguments"
    assert box.call("search_drug", {"drug": "Nurofen"}, {"language": "en"})["usage"].startswith("Pain")
    assert box.call("search_drug", {"drug": "Nurofen"}, {"language": None})["usage"] == search_drug("Nurofen")["usage"]


def test_the_agent_gives_every_tool_the_patients_language():
    agent, _ = make_agent(
        [call("search_drug", drug="Nurofen"), "@PHARMACIST\nIt relieves pain."],
        tools=PHARMACY_TOOLS,
        grounded_names=False,
    )
    result = agent.run("I bought Nurofen in Istanbul. What is it for?")
    (found,) = tool_results(result)
    assert found["usage"] == search_drug("ibuprofen")["usage"]  # English, though Nurofen is a Turkish brand
    agent, _ = make_agent(
        [call("search_drug", drug="Advil"), "@PHARMACIST\nAğrı kesici."], tools=PHARMACY_TOOLS, grounded_names=False
    )
    (found,) = tool_results(agent.run("Amerika'dan Advil aldım, ne işe yarar?"))
    assert found["usage"] == search_drug("Nurofen")["usage"]


def test_the_eval_reports_answer_language():
    cases = [
        {"id": "a", "query": "What is Nurofen for?", "expected": [], "lang": "en"},
        {"id": "b", "query": "Nurofen ne işe yarar?", "expected": [], "lang": "tr"},
        {"id": "c", "query": "Nurofen?", "expected": []},
    ]
    preds = [
        {"id": "a", "first_calls": [], "all_calls": [], "final_answer": "Ağrı kesici ve ateş düşürücü."},
        {"id": "b", "first_calls": [], "all_calls": [], "final_answer": "Ağrı kesici ve ateş düşürücüdür."},
        {"id": "c", "first_calls": [], "all_calls": [], "final_answer": "It relieves pain."},
    ]
    assert score(cases, preds)["answer_language_match"] == 0.5
    assert json.dumps(score(cases[2:], preds[2:]))  # no case names a language: the rate is None
    assert score(cases[2:], preds[2:])["answer_language_match"] is None


def test_a_fixed_language_overrides_the_messages():
    agent, _ = make_agent(
        [call("search_drug", drug="Nurofen"), "@PHARMACIST\nAğrı kesici."],
        tools=PHARMACY_TOOLS,
        grounded_names=False,
        language="tr",
    )
    (found,) = tool_results(agent.run("What is Nurofen for?"))
    assert found["usage"] == search_drug("Nurofen")["usage"]
    with pytest.raises(ValueError, match="language must be"):
        make_agent([], tools=PHARMACY_TOOLS, language="de")
