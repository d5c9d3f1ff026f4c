"""The internals check (agent.engine.internals_check): an answer never names a tool, an argument or an error
code, nor quotes an error message the engine wrote; it is replaced by the agent's plain fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from ppsf_helpers import call
from test_agent import make_agent, tool_results, without

from agent.engine.internals_check import InternalsCheck, is_identifier
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.answers import unknown_name_answer
from agent.pharmacy.prompts import TOOL_WORDS, no_answer
from agent.pharmacy.tools import PHARMACY_TOOLS


def test_identifiers_are_the_names_no_prose_has():
    assert is_identifier("search_drug") and is_identifier("age_years") and is_identifier("invalid_tool_call")
    assert not is_identifier("lookup") and not is_identifier("_private") and not is_identifier("drug_")
    assert not is_identifier("e-mail") and not is_identifier("ilaç_adı")  # not an ASCII code name


@pytest.mark.parametrize(
    ("text", "answer"),
    [  # what small models wrote after these failures (templated/extended in eval/results/index.jsonl)
        (call("find_warnings", drug="Parol"), "'find_warnings' returned an error code: unknown_tool. Please retry."),
        (
            '@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": "Parol"',
            "'lookup' failed: json parser could not parse region as JSON. Content: ...",
        ),
        (call("dose", drug="Parol"), "Please give weight_kg."),
    ],
)
def test_an_answer_repeating_a_failure_is_replaced_by_the_fallback(text, answer):
    agent, _ = make_agent([text, "@PHARMACIST\n" + answer])
    result = agent.run("Parol ne işe yarar?")
    assert "error" in tool_results(result)[0]
    assert result.message["content"] == (
        "Üzgünüm, kesin bir yanıta ulaşamadım. Bazı sorgular hata verdi. Lütfen sorunuzu ilaç adıyla daha açık "
        "sorun ya da bir eczacıya danışın."
    )
    assert result.replaced_answer == answer
    event = next(e for e in agent.events if e["type"] == "internals_check")
    assert event["action"] == "replace" and event["note"] == InternalsCheck.note and "replaced" not in event


def test_a_plan_written_as_the_answer_is_replaced_without_any_failure():
    plan = "The patient asks about imdur; I should look it up with find_alternatives first."
    agent, _ = make_agent(["@PHARMACIST\n" + plan], tools=PHARMACY_TOOLS)
    result = agent.run("what is imdur for?")
    assert result.message["content"] == "Sorry, I could not reach a reliable answer. Please ask again naming the " \
        "drug, or consult a pharmacist."  # fmt: skip
    assert result.replaced_answer == plan


def test_the_tools_own_words_pass_and_so_do_the_users():
    right = unknown_name_answer("nurafin", ["Nurofen"], "en")
    agent, _ = make_agent([call("search_drug", drug="nurafin"), "@PHARMACIST\n" + right], tools=PHARMACY_TOOLS,
                          tool_timeout=30.0)  # fmt: skip
    result = agent.run("what is nurafin for?")
    assert tool_results(result)[0]["error"]["code"] == "unknown_drug"
    assert result.message["content"] == right and result.replaced_answer is None
    echo = "search_drug is the name of a function; I can answer questions about medicines."
    agent, _ = make_agent(["@PHARMACIST\n" + echo], tools=PHARMACY_TOOLS)
    assert agent.run("what does search_drug mean?").message["content"] == echo


def test_the_internals_check_can_be_turned_off():
    answer = "'find_warnings' returned an error code: unknown_tool."
    agent, _ = make_agent(
        [call("find_warnings", drug="Parol"), "@PHARMACIST\n" + answer], checks=without(InternalsCheck)
    )
    assert agent.run("Parol?").message["content"] == answer


def test_the_fallback_says_what_was_tried_in_words_not_tool_names():
    assert set(TOOL_WORDS) == {fn.__name__ for fn in PHARMACY_TOOLS}
    tried = [("search_drug", True), ("calculate_dose", False), ("find_warnings", False)]
    tr = no_answer([{"role": "user", "content": "Parol dozu nedir?"}], tried, 4, True)
    assert tr == (
        "Üzgünüm, 4 adımda kesin bir yanıta ulaşamadım. Baktıklarım: ilaç araması, doz hesabı. Bazı sorgular hata "
        "verdi. Lütfen sorunuzu ilaç adıyla daha açık sorun ya da bir eczacıya danışın."
    )
    en = no_answer([{"role": "user", "content": "What is the dose of Parol?"}], tried, 4, False)
    assert "What I checked: a drug search, a dose calculation. Some lookups failed." in en
    assert not InternalsCheck(list(PHARMACY_TOOLS), no_answer).leaks(en, [{"role": "user", "content": "x"}])


@pytest.mark.slow
def test_the_base_model_dumping_a_schema_into_its_answer_is_caught():
    """The real base model (no PPSF adapter, no example), as `python -m agent --adapter none --no-examples`."""
    from agent.engine.agent import AgentConfig
    from agent.engine.models import load_model, recorded_tools

    events: list[dict] = []
    model, tokenizer = load_model(None, device="cpu", adapter="none")
    # triage=[]: the emergency detector takes this question for one (a known false alarm, docs/security.md), and
    # this test is about what the model writes. The schemas it was shown when its dump was first seen (the
    # ten-stage adapter's record): shown the tools' own, it dumps them into a call instead, which fails as one.
    schemas = recorded_tools(Path(__file__).resolve().parents[1] / "eval" / "results" / "ten_stages")
    agent = pharmacist_agent(model, tokenizer, config=AgentConfig(max_new_tokens=256), on_event=events.append,
                             triage=[], tool_schemas=schemas)  # fmt: skip
    result = agent.run("Could you look up the warnings of Losartan?")
    event = next(e for e in events if e["type"] == "internals_check")
    assert event["action"] == "replace" and "age_years" in result.replaced_answer
    assert result.message["content"].startswith("Sorry, I could not reach a reliable answer.")
    assert not InternalsCheck(list(PHARMACY_TOOLS), no_answer).leaks(result.message["content"], result.messages)


def test_a_leak_after_a_problem_only_the_patient_can_fix_is_replaced_by_it():
    from agent.pharmacy.tools import calculate_dose

    question = "kızım 150 yaşında 20 kilo, calpol dozu?"
    leak = "calculate_dose: out_of_range (age_years 150)."
    agent, _ = make_agent([call("calculate_dose", drug="calpol", weight_kg=20, age_years=150), "@PHARMACIST\n" + leak],
                          tools=PHARMACY_TOOLS, tool_timeout=30.0)  # fmt: skip
    result = agent.run(question)
    told = calculate_dose("calpol", 20, age_years=150, language="tr")["error"]["message"]
    assert tool_results(result)[0]["error"]["message"] == told
    assert result.message["content"] == (
        f"Üzgünüm, kesin bir yanıta ulaşamadım. Baktıklarım: doz hesabı. {told} Lütfen sorunuzu ilaç adıyla daha "
        "açık sorun ya da bir eczacıya danışın."
    )
