"""The verdict check (agent.pharmacy.verdict_check): an answer never gives a medicine a verdict the
check_contraindications tool did not."""

from __future__ import annotations

import json

from ppsf_helpers import call
from test_agent import make_agent, tool_results, without

from agent.pharmacy.tools import PHARMACY_TOOLS, check_contraindications
from agent.pharmacy.verdict_check import VerdictCheck, checked_answer, stated_verdicts

BUSCOPAN = "karnim agriyor buscopan icebilir miyim"


def turn(*results: dict) -> list[dict]:
    return [
        {"role": "tool", "name": "check_contraindications", "content": json.dumps(r, ensure_ascii=False)}
        for r in results
    ]


def test_the_verdict_words_of_both_languages_are_read_and_quotes_of_the_tool_are_not():
    ulcer = check_contraindications("aspirin", conditions=["peptic ulcer"], language="tr")
    reason = ulcer["reasons"][0]["text"]  # "Peptik ülser: bu durumda kullanılmamalı (…)"
    assert "kullanılmamalı" in reason and stated_verdicts(reason, turn(ulcer)) == set()
    assert stated_verdicts(f"Aspirin: uygun (unknown). {reason}", turn(ulcer)) == {"ok", "unknown"}
    assert stated_verdicts("Aspirin: uygun değil.", []) == {"avoid"}
    assert stated_verdicts("Aspirin size uygundur; hamilelikte kullanılmamalıdır.", []) == {"ok", "avoid"}
    assert stated_verdicts("Aspirin: dikkatli kullanılmalı (caution).", []) == {"caution"}
    assert stated_verdicts("Aspirin (Acetylsalicylic acid): avoid. Ask your doctor.", []) == {"avoid"}
    # English verdict words count only in the verdict slot: "ok" and "avoid" are also plain English.
    assert stated_verdicts("It is ok to ask; avoid alcohol.", []) == set()


def test_uygun_for_an_unknown_verdict_is_replaced_by_the_tools_own():
    result = check_contraindications("buscopan", pregnant=True, patient_text=BUSCOPAN, language="tr")
    assert result["verdict"] == "unknown"  # the pregnancy the call invented is not checked; nothing else given
    model = f"Buscopan (Hiyosin butilbromür): uygun (unknown). {result['note']}"
    fixed = checked_answer(model, turn(result))
    assert fixed == f"Buscopan (Hiyosin butilbromür): belirsiz (unknown). {result['note']}"
    assert checked_answer(fixed, turn(result)) is None  # the tool's words pass their own check


def test_ok_for_an_avoid_verdict_is_replaced_and_a_right_verdict_passes_unchanged():
    result = check_contraindications("aspirin", conditions=["peptic ulcer"], language="en")
    assert result["verdict"] == "avoid"
    fixed = checked_answer("Aspirin (Acetylsalicylic acid): ok. Take it with food.", turn(result))
    assert fixed.startswith("Aspirin (Acetylsalicylic acid): avoid.") and result["reasons"][0]["text"] in fixed
    right = f"Aspirin (Acetylsalicylic acid): avoid. {result['reasons'][0]['text']}"
    assert checked_answer(right, turn(result)) is None
    assert checked_answer("Aspirin: ok.", []) is None  # no contraindication result this turn: nothing to hold


def test_the_agent_replaces_a_wrong_verdict_keeps_the_models_text_and_can_turn_the_check_off():
    texts = [call("check_contraindications", drug="buscopan", pregnant=True), "@PHARMACIST\nBuscopan: uygun."]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    result = agent.run(BUSCOPAN)
    verdict = tool_results(result)[0]
    assert verdict["verdict"] == "unknown" and result.replaced_answer == "Buscopan: uygun."
    assert result.message["content"].startswith("Buscopan (Hiyosin butilbromür): belirsiz (unknown).")
    event = next(e for e in agent.events if e["type"] == "verdict_check")
    assert event["action"] == "replace" and event["note"] == VerdictCheck.note
    # Held back while it may replace: the wrong verdict was never streamed.
    assert not any(e["type"] == "text" and "uygun" in e["text"] for e in agent.events)
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0, checks=without(VerdictCheck))
    assert agent.run(BUSCOPAN).message["content"] == "Buscopan: uygun."
