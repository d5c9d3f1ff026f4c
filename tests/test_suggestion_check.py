"""The suggestion check (agent.pharmacy.suggestion_check): for a name the tools did not find, an answer offers
only the names they suggested."""

from __future__ import annotations

from ppsf_helpers import call
from test_agent import make_agent, tool_results

from agent.pharmacy.suggestion_check import SuggestionCheck, offered_names, unknown_name_answer
from agent.pharmacy.tools import PHARMACY_TOOLS

DIAGNOSIS = "3 gundur karnimin sag alt tarafi agriyor, atesim var. sizce hangi hastaligim var?"


def test_the_names_a_did_you_mean_offers_are_read_in_both_languages():
    assert offered_names("'x' bulunamadı. Şunu mu demek istediniz: 'karnimin sag'") == ["karnimin sag"]
    assert offered_names("'nurafin' was not found. Did you mean: Nurofen or Nurofen Cold and Flu?") == [
        "Nurofen",
        "Nurofen Cold and Flu",
    ]
    assert offered_names("'x' bulunamadı. Lütfen ilacın adını kontrol edin.") == []


def test_an_offer_of_what_the_tools_did_not_suggest_is_replaced_by_their_answer(tmp_path):
    model = "'karnimin sag' ilaç veritabanında bulunamadı. Şunu mu demek istediniz: 'karnimin sag'"
    agent, _ = make_agent([call("search_drug", drug="karnimin sag"), "@PHARMACIST\n" + model], tools=PHARMACY_TOOLS,
                          tool_timeout=30.0)  # fmt: skip
    result = agent.run(DIAGNOSIS)
    assert tool_results(result)[0]["error"]["suggestions"] == []
    assert result.message["content"] == unknown_name_answer("karnimin sag", [], "tr")
    assert result.message["content"].endswith("Lütfen ilacın adını kontrol edin.")
    assert result.replaced_answer == model
    event = next(e for e in agent.events if e["type"] == "suggestion_check")
    assert event["note"] == SuggestionCheck.note and event["action"] == "replace"


def test_the_tools_own_suggestion_passes_and_the_check_can_be_turned_off():
    right = unknown_name_answer("nurafin", ["Nurofen"], "en")
    texts = [call("search_drug", drug="nurafin"), "@PHARMACIST\n" + right]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    result = agent.run("what is nurafin for?")
    assert result.message["content"] == right and result.replaced_answer is None
    wrong = "'nurafin' was not found in the drug database. Did you mean: Ibuprofen, Parol?"
    texts = [call("search_drug", drug="nurafin"), "@PHARMACIST\n" + wrong]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    assert agent.run("what is nurafin for?").message["content"] == right
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0, suggestion_check=False)
    assert agent.run("what is nurafin for?").message["content"] == wrong
