"""The phrasebook (agent.pharmacy.answers): every tool's result, in every shape, said in both languages from the
real tools' results; one turn's results composed; and the agent writing its answer from them (answers="tools")."""

from __future__ import annotations

import json

import pytest
from ppsf_helpers import ScriptedGenerator, call, scripted_backend

from agent import AgentConfig
from agent.engine.generation import StopDetector
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.answers import RENDERERS, covers, render_turn
from agent.pharmacy.tools import (
    PHARMACY_TOOLS,
    calculate_dose,
    check_contraindications,
    check_interactions,
    find_alternatives,
    get_drug_info,
    search_drug,
)

LANGS = ("tr", "en")


def turn(*calls: tuple[str, dict, dict], question: str = "soru") -> list[dict]:
    """A conversation whose current turn holds these (tool, arguments, result) calls."""
    messages: list[dict] = [{"role": "user", "content": question}]
    for i, (name, args, result) in enumerate(calls):
        messages.append({
            "role": "assistant",
            "tool_calls": [{"id": f"c{i}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}],
        })  # fmt: skip
        messages.append({"role": "tool", "name": name, "tool_call_id": f"c{i}", "content": json.dumps(result)})
    return messages


def said(name: str, args: dict, lang: str) -> str:
    result = dict(zip([f.__name__ for f in PHARMACY_TOOLS], PHARMACY_TOOLS, strict=True))[name](**args, language=lang)
    text = render_turn(turn((name, args, result)), lang)
    assert text, (name, args, lang)
    return text


# (tool, arguments, what the answer must hold in tr, in en): every result shape each tool has.
SHAPES = [
    ("search_drug", {"drug": "Parol"}, "Ağrı kesici", "Pain reliever"),
    ("search_drug", {"drug": "amox"}, "Amoxil", "Amoxil"),  # unknown, with the tools' suggestion
    ("search_drug", {"drug": "Kelvimax"}, "bulunamadı", "not found"),  # unknown, nothing suggested
    ("get_drug_info", {"drug": "Parol", "section": "side_effects"}, "yan etkileri", "side effects"),
    ("get_drug_info", {"drug": "Kelvimax", "section": "warnings"}, "bulunamadı", "not found"),
    ("check_interactions", {"drugs": ["Coumadin", "Aspirin"]}, "kontrendike", "contraindicated"),
    ("check_interactions", {"drugs": ["Coumadin", "Kelvimax"]}, "Kelvimax", "Kelvimax"),  # one name unknown
    ("calculate_dose", {"drug": "Calpol", "weight_kg": 20, "age_years": 6}, "300 mg", "300 mg"),
    ("calculate_dose", {"drug": "Nurofen", "weight_kg": 5, "age_months": 2}, "hekime", "doctor"),  # referral
    ("calculate_dose", {"drug": "Parol", "weight_kg": 500, "age_years": 30}, "300 kg", "300 kg"),  # for the patient
    ("calculate_dose", {"drug": "Kelvimax", "weight_kg": 20, "age_years": 6}, "bulunamadı", "not found"),
    ("find_alternatives", {"drug": "Parol"}, "Calpol", "Calpol"),
    ("check_contraindications", {"drug": "Aspirin", "pregnant": True}, "kullanılmamalı", "avoid"),
    ("check_contraindications", {"drug": "Parol"}, "Parol", "Parol"),
]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("name", "args", "tr", "en"), SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def test_every_result_shape_is_said_in_both_languages(name, args, tr, en, lang):
    text = said(name, args, lang)
    assert (tr if lang == "tr" else en) in text
    assert "_" not in text.replace("mg/5 mL", "")  # no identifiers: tool, argument or error code names


def test_every_tool_has_a_renderer_and_every_shape_list_covers_them():
    assert set(RENDERERS) == {f.__name__ for f in PHARMACY_TOOLS}
    assert {s[0] for s in SHAPES} == set(RENDERERS)


def test_a_medicine_the_data_does_not_cover_is_said_so():
    result = {"error": {"code": "not_in_database", "message": "Lisinopril is in the reference only"}}
    for lang, word in (("tr", "kapsamadığı"), ("en", "does not cover")):
        assert word in render_turn(turn(("search_drug", {"drug": "Lisinopril"}, result)), lang)


def test_an_ambiguous_name_is_answered_with_its_matches():
    result = search_drug("Calpol")
    if "matches" not in result:  # a name with several products: built from the data's own ambiguity
        result = {"matches": [{"drug": "A", "active_ingredient": "x"}, {"drug": "B", "active_ingredient": "y"}]}
    text = render_turn(turn(("search_drug", {"drug": "Cal"}, result)), "en")
    assert result["matches"][0]["drug"] in text and "Which one" in text


def test_two_results_of_one_turn_are_one_answer_and_alike_ones_are_said_once():
    a = ("search_drug", {"drug": "Parol"}, search_drug("Parol", language="en"))
    b = ("check_interactions", {"drugs": ["Parol", "Aspirin"]}, check_interactions(["Parol", "Aspirin"], language="en"))
    text = render_turn(turn(a, b), "en")
    assert text.startswith("Parol (Paracetamol): Pain reliever") and "Parol + Aspirin" in text
    assert render_turn(turn(a, a), "en") == render_turn(turn(a), "en")


def test_engine_errors_and_other_tools_are_not_covered():
    broken = {"error": {"code": "invalid_arguments", "message": "weight_kg: required"}}
    assert not covers("calculate_dose", broken) and covers("calculate_dose", calculate_dose("Calpol", 20, 6))
    assert render_turn(turn(("calculate_dose", {}, broken)), "en") is None
    assert render_turn(turn(("find_warnings", {"drug": "x"}, {"text": "x"})), "en") is None
    assert render_turn([{"role": "user", "content": "merhaba"}], "tr") is None  # no tool result: the model's turn


def test_contraindications_alternatives_and_sections_use_the_tools_words():
    for lang in LANGS:
        verdict = check_contraindications("Aspirin", pregnant=True, language=lang)
        text = render_turn(turn(("check_contraindications", {"drug": "Aspirin"}, verdict)), lang)
        assert verdict["reasons"][0]["text"] in text
        alts = find_alternatives("Parol", language=lang)
        assert alts["alternatives"][0]["brand"] in render_turn(
            turn(("find_alternatives", {"drug": "Parol"}, alts)), lang
        )
        info = get_drug_info("Parol", "warnings", language=lang)
        assert info["text"] in render_turn(
            turn(("get_drug_info", {"drug": "Parol", "section": "warnings"}, info)), lang
        )


# ---- the agent: the model decides, the tools speak


def tools_agent(texts: list[str], **kwargs):
    events: list[dict] = []
    agent = pharmacist_agent(scripted_backend(ScriptedGenerator(texts)), config=AgentConfig(tool_timeout=30.0),
                             on_event=events.append, **kwargs)  # fmt: skip
    return agent, events


def test_the_tools_write_the_answer_and_the_models_own_text_is_not_used():
    agent, events = tools_agent([call("search_drug", drug="Parol"), "@PHARMACIST\nParol bir antibiyotiktir."])
    result = agent.run("Parol ne işe yarar?")
    assert result.answered_by == "tools"
    assert result.message["content"].startswith("Parol (Parasetamol): Ağrı kesici ve ateş düşürücü")
    assert "antibiyotik" not in result.message["content"]
    assert events[-1]["type"] == "final" and not [e for e in events if e["type"] == "text"]


def test_answers_model_lets_the_model_write_and_the_dose_rule_still_holds():
    texts = [call("calculate_dose", drug="Calpol", weight_kg=20, age_years=6), "@PHARMACIST\nCalpol: 900 mg verin."]
    agent, _ = tools_agent(texts, answers="model")
    result = agent.run("Calpol dozu nedir, 6 yaşında 20 kilo")
    assert result.answered_by == "model" and "900 mg" not in result.message["content"]
    assert "300 mg" in result.message["content"] and result.replaced_answer == "Calpol: 900 mg verin."


def test_a_turn_with_no_tool_result_is_the_models():
    agent, _ = tools_agent(["@PHARMACIST\nMerhaba! Size nasıl yardımcı olabilirim?"])
    result = agent.run("merhaba")
    assert result.answered_by == "model" and result.message["content"].startswith("Merhaba")


def test_the_answers_option_is_checked():
    with pytest.raises(ValueError, match="answers must be one of"):
        pharmacist_agent(scripted_backend(), answers="both")


def test_decoding_stops_where_the_model_opens_its_answer():
    detector = StopDetector("", stop_blocks=("@PHARMACIST",))
    stop = detector.feed("@THOUGHT\nbakalım\n\n@PHARMACIST\nParol")
    assert stop is not None and stop.reason == "answer_block"
    assert detector.text[: stop.cut] == "@THOUGHT\nbakalım"
    assert StopDetector("").feed("@PHARMACIST\nParol") is None  # without stop_blocks the model writes it
    call_text = '@TOOL_CALL\n{"name": "search_drug", "arguments": {"drug": "Parol"}}'
    assert StopDetector("", stop_blocks=("@PHARMACIST",)).feed(call_text + "\n\nx").reason == "tool_call"
