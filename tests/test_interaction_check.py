"""The interaction check (agent.pharmacy.interaction_check): a serious interaction between medicines the patient
names reaches the answer, whatever tool the model chose."""

from __future__ import annotations

import json

from ppsf_helpers import call
from test_agent import make_agent, without

from agent.pharmacy.interaction_check import InteractionCheck, missing_warnings
from agent.pharmacy.named import named_medicines
from agent.pharmacy.tools import PHARMACY_TOOLS, check_interactions

COUMADIN = "babam coumadin kullaniyor, dun dizi agridi diye aspirin icmis. sorun olur mu?"


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def answer(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_names_are_read_as_written_whole_and_once():
    assert named_medicines(COUMADIN) == ["coumadin", "aspirin"]
    assert named_medicines("esim TANTUM VERDE ile a-ferin aldi, sonra Tantum Verde'yi birakti") == [
        "TANTUM VERDE",
        "a-ferin",
    ]
    # Only exact names: a misspelling is not read as a medicine (nothing is guessed), nor are ordinary words.
    assert named_medicines("coumadn ve aspirn, eczane İstanbul ateş") == []


def test_a_name_with_a_turkish_ending_is_read_without_it():
    text = "babam coumadini birakmadi, aspirinle majezigi ayni gun icti, tantum verdeyi de kullaniyor"
    assert named_medicines(text) == ["coumadin", "aspirin", "majezik", "tantum verde"]
    (warning, *_) = missing_warnings([user("babam coumadinini iciyor, dun aspirini de icti")])
    assert warning.startswith("Coumadin + Aspirin: kontrendike")
    # Only a listed ending after a whole name: "aspirinxyz", "coumadn-i" and a short stem are not read.
    assert named_medicines("aspirinxyz, coumadni, asayi") == []


def test_a_serious_pair_the_answer_left_out_is_added_in_the_patients_language():
    (warning,) = missing_warnings([user(COUMADIN), answer("Coumadin (Varfarin): kullanılmamalı (avoid).")])
    pair = check_interactions(["coumadin", "aspirin"], language="tr")["pairs"][0]
    assert warning.startswith("Coumadin + Aspirin: kontrendike (contraindicated) etkileşim.")
    assert pair["description"] in warning and pair["management"] in warning
    (english,) = missing_warnings([user("my dad is on coumadin and took an aspirin, is that ok?")])
    assert english.startswith("Coumadin + Aspirin: contraindicated interaction.")


def test_an_answer_that_said_it_passes_and_is_not_said_twice():
    said = "Coumadin + Aspirin: kontrendike (contraindicated) etkileşim. Kanama riski."
    assert missing_warnings([user(COUMADIN), answer(said)]) == []
    # Said by its active ingredient's name, in an earlier answer of the conversation: not repeated.
    earlier = [user(COUMADIN), answer("Varfarin + aspirin: ciddi kanama, kontrendike."), user("peki Parol?")]
    assert missing_warnings([*earlier, answer("Parol ağrı kesicidir.")]) == []
    # Both names without the severity is not saying it ("birlikte kullanılabilir" must not pass).
    assert missing_warnings([user(COUMADIN), answer("Coumadin ve aspirin birlikte kullanılabilir.")]) != []


def test_only_serious_findings_and_one_medicine_by_two_names_is_one():
    assert missing_warnings([user("Parol ne işe yarar?")]) == []
    assert missing_warnings([user("Coumadin (varfarin) ne işe yarar?")]) == []  # brand and its ingredient
    assert missing_warnings([user("Coumadin (varfarin) ve aspirin birlikte?")])[0].startswith("Coumadin + Aspirin")
    # The same active ingredient in two products is serious too (a double dose of paracetamol).
    (dup,) = missing_warnings([user("Parol ile Calpol birlikte verilir mi?")])
    assert dup.startswith("Parol + Calpol: Parasetamol.")
    # A pair below major is the answer's business, not an added warning.
    assert [p["severity"] for p in check_interactions(["Glifor", "Lasix"], language="en")["pairs"]] == ["moderate"]
    assert missing_warnings([user("Glifor and Lasix together?")]) == []


def test_the_agent_adds_the_warning_and_keeps_the_models_text(tmp_path):
    log = tmp_path / "t.jsonl"
    model_text = "Coumadin (Varfarin) kanın pıhtılaşmasını azaltır."
    texts = [call("search_drug", drug="coumadin"), "@PHARMACIST\n" + model_text]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0, transcript=log)
    result = agent.run(COUMADIN)
    content = result.message["content"]
    assert content.startswith(model_text + "\n\nÖnemli") and "Coumadin + Aspirin: kontrendike" in content
    assert result.replaced_answer == model_text
    event = next(e for e in agent.events if e["type"] == "interaction_check")
    assert event == {
        "type": "interaction_check",
        "rule": "interaction_check",
        "action": "append",
        "note": InteractionCheck.note,
    }
    # Nothing the model said is taken back: the warning follows it (prose is shown once checked, not streamed).
    assert not [e for e in agent.events if e["type"] == "text"]
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert any(x.get("replaced") == model_text for x in lines)


def test_a_right_answer_passes_and_the_check_can_be_turned_off():
    said = "Coumadin + Aspirin: kontrendike (contraindicated) etkileşim."
    texts = [call("check_interactions", drugs=["coumadin", "aspirin"]), "@PHARMACIST\n" + said]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    result = agent.run(COUMADIN)
    assert result.message["content"] == said and result.replaced_answer is None
    wrong = "Coumadin: kullanılmamalı."
    agent, _ = make_agent([call("search_drug", drug="coumadin"), "@PHARMACIST\n" + wrong], tools=PHARMACY_TOOLS,
                          tool_timeout=30.0, checks=without(InteractionCheck))  # fmt: skip
    assert agent.run(COUMADIN).message["content"] == wrong


def test_the_demonstration_turns_are_not_the_patients_words():
    """Demonstration turns may name medicines too: only the patient's own count."""
    texts = [call("search_drug", drug="Parol"), "@PHARMACIST\nParol ağrı kesicidir."]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0, examples=None)
    agent.examples = [user("Coumadin ve aspirin birlikte?"), answer("Coumadin + Aspirin: kanama.")]
    assert agent.run("Parol ne işe yarar?").replaced_answer is None


def test_the_cli_and_the_web_app_show_the_answer_with_the_warning_once(capsys):
    """The rule's event says what it did (append); neither front end compares texts to find out."""
    from agent.cli import Printer
    from agent.web import SAFETY_RULE_ADDED, Turn

    model_text = "Coumadin (Varfarin) kanın pıhtılaşmasını azaltır."
    texts = [call("search_drug", drug="coumadin"), "@PHARMACIST\n" + model_text]
    agent, _ = make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0)
    final = agent.run(COUMADIN).message["content"]
    turn, printer = Turn(), Printer()
    for event in agent.events:
        turn.apply(event)
        printer(event)
    out = capsys.readouterr()
    assert out.out == "" and f"[interaction check] {InteractionCheck.note}" in out.err  # the answer comes after
    answers = [m for m in turn.messages if "metadata" not in m]
    assert answers == [{"role": "assistant", "content": final}] and final.startswith(model_text)
    assert [m["content"] for m in turn.messages if "Safety rule" in m.get("metadata", {}).get("title", "")] == [
        SAFETY_RULE_ADDED
    ]
