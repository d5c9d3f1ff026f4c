"""Grounded medicine names (agent/grounding.py): the token constraint, and the real model under it."""

from __future__ import annotations

import json

import pytest
import torch

from agent.engine.grounding import GroundedNames, conversation_texts, token_bytes

CALL = '@TOOL_CALL\n{"name": "search_drug", "arguments": {"drug": "'
PAIR = '@TOOL_CALL\n{"name": "check_interactions", "arguments": {"drugs": ["'


def fed(tokenizer, sources: list[str], text: str, known_name=None) -> GroundedNames:
    constraint = GroundedNames(tokenizer, sources, known_name, arguments=("drug", "drugs"))
    for token_id in tokenizer(text, add_special_tokens=False)["input_ids"]:
        constraint.advance(token_id)
    return constraint


def allowed_texts(tokenizer, constraint: GroundedNames) -> set[str] | None:
    ids = constraint.allowed()
    return None if ids is None else {tokenizer.decode([i]) for i in ids}


def test_token_bytes_round_trip_turkish_text(smollm_tokenizer):
    table = token_bytes(smollm_tokenizer)
    text = "İzosorbid mononitrat, ağrı kesici"
    ids = smollm_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert b"".join(table[i] for i in ids) == text.encode("utf-8")
    assert all(table[i] is None for i in smollm_tokenizer.all_special_ids)


def test_a_name_starts_at_a_word_of_the_conversation(smollm_tokenizer):
    constraint = fed(smollm_tokenizer, ["elimde Domperidon var"], CALL)
    texts = allowed_texts(smollm_tokenizer, constraint)
    assert "Dom" in texts and "el" in texts and "v" in texts
    assert "Las" not in texts and "omp" not in texts  # not in the text; not at a word start
    assert not any('"' in t for t in texts)  # no empty name


def test_a_misspelled_continuation_is_not_allowed(smollm_tokenizer):
    constraint = fed(smollm_tokenizer, ["What kind of medicine is Losartan?"], CALL + "L")
    texts = allowed_texts(smollm_tokenizer, constraint)
    assert "os" in texts and "as" not in texts


def test_a_name_goes_on_only_from_a_word_start(smollm_tokenizer):
    sources = ['{"usage": "Antifungal medicine", "also": "dolven"}']
    started = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, PAIR + 'Fluconazole", "d'))
    assert "ol" in started and "ic" not in started  # "icine" follows a "d" inside "medicine" only
    # the model once wrote "dicine" this way; a value grounded nowhere leaves the model unconstrained
    assert fed(smollm_tokenizer, sources, PAIR + 'Fluconazole", "di').allowed() is None


def test_a_name_closes_only_at_a_word_end_with_the_right_bracket(smollm_tokenizer):
    sources = ["emzirme döneminde Singulair güvenli mi?"]
    inside = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, CALL + "Singul"))
    assert inside and not any('"' in t for t in inside)  # "Singul" is not a name
    done = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, CALL + "Singulair"))
    assert {'"', '"}'} <= done and '"]' not in done and " g" in done
    listed = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, PAIR + "Singulair"))
    assert {'"', '"]', '",'} <= listed and '"}' not in listed
    question = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, CALL + "mi"))
    assert '"' in question and '?"' not in question  # a name does not end in punctuation


def test_after_a_name_the_json_closes_the_right_bracket(smollm_tokenizer):
    sources = ["hem Furosemid hem İzosorbid mononitrat kullanmam sakıncalı mı?"]
    listed = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, PAIR + 'hem Furosemid", "sakıncalı mı"'))
    assert {",", "]"} <= listed and "}}" not in listed and "}" not in listed  # the model once wrote "}}" here
    single = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, CALL + 'Furosemid"'))
    assert {",", "}", "}}"} <= single and "]" not in single
    assert fed(smollm_tokenizer, sources, CALL + 'Furosemid"}').allowed() is None


def test_a_name_is_not_cut_short_inside_a_longer_known_name(smollm_tokenizer):
    from agent.pharmacy.tools import is_known_name

    sources = ["Hem loperamid hidroklorür hem Euthyrox kullanmam sakıncalı mı?"]

    def after(text: str, srcs: list[str] = sources, known=is_known_name) -> set[str]:
        return allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, srcs, PAIR + text, known))

    cut = after("loperamid")
    assert cut and not any('"' in t for t in cut) and " h" in cut  # the name goes on: "hidroklorür"
    assert {'"', '",'} <= after("Loperamid Hidroklorür")  # the title-case copy of the text is a source too
    # without the drug data, or where the text does not go on to a longer name, the first word is a name
    assert '",' in after("loperamid", known=None)
    assert '",' in after("loperamid", srcs=["loperamid hem Euthyrox"])
    # only names of the data count ("Euthyrox kullanmam" is none), and the whole name closes
    assert not is_known_name("Euthyrox kullanmam") and is_known_name("loperamid hidroklorür")
    assert '"]' in after('loperamid hidroklorür", "Euthyrox')


def test_whole_names_across_hyphens_and_three_words_and_only_where_the_text_goes_on(smollm_tokenizer):
    from agent.pharmacy.tools import is_known_name

    def closes(sources: list[str], value: str) -> bool:
        texts = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, CALL + value, is_known_name))
        return any('"' in t for t in texts)

    assert not closes(["L-thyroxine alıyorum"], "L") and closes(["L-thyroxine alıyorum"], "L-thyroxine")
    three = ["Calpol 6 Plus ne işe yarar?"]
    assert not closes(three, "Calpol") and not closes(three, "Calpol 6") and closes(three, "Calpol 6 Plus")
    assert closes(["Calpol", "6 Plus"], "Calpol")  # texts are never joined
    # per place: the same value standing alone elsewhere in the conversation may close
    assert not closes(["loperamid hidroklorür ne?"], "loperamid")
    assert closes(["Loperamid içtim.", "loperamid hidroklorür ne?"], "Loperamid")


def test_each_name_of_a_list_is_grounded(smollm_tokenizer):
    sources = ["Hem Cipralex hem Rivaroksaban kullanmam sakıncalı mı?"]
    texts = allowed_texts(smollm_tokenizer, fed(smollm_tokenizer, sources, PAIR + 'Cipralex", "'))
    assert {"R", "C", "Hem"} <= texts and "pregnant" not in texts


def test_unconstrained_outside_a_name_and_when_nothing_is_grounded(smollm_tokenizer):
    sources = ["Parol ne işe yarar?"]
    assert fed(smollm_tokenizer, sources, "@PHARMACIST\nParol ağrı kesicidir.").allowed() is None
    assert fed(smollm_tokenizer, sources, '@TOOL_CALL\n{"name": "search_drug", "arguments": {').allowed() is None
    assert fed(smollm_tokenizer, sources, CALL + 'Parol"}').allowed() is None
    assert fed(smollm_tokenizer, sources, '{"drug": "').allowed() is None  # not in a @TOOL_CALL block
    assert fed(smollm_tokenizer, sources, CALL + "Macedonia").allowed() is None  # never a dead end
    assert fed(smollm_tokenizer, [], CALL).allowed() is None
    section = '@TOOL_CALL\n{"name": "get_drug_info", "arguments": {"drug": "Parol", "section": "'
    assert fed(smollm_tokenizer, sources, section).allowed() is None  # other arguments are the model's


def test_mask_keeps_only_allowed_logits(smollm_tokenizer):
    constraint = fed(smollm_tokenizer, ["Parol ne işe yarar?"], CALL)
    logits = torch.randn(len(smollm_tokenizer))
    masked = constraint.mask(logits)
    allowed = constraint.allowed()
    assert torch.equal(masked[allowed], logits[allowed])
    assert torch.isinf(masked).sum() == len(smollm_tokenizer) - len(allowed)
    constraint.reset()
    assert constraint.mask(logits) is logits


def test_conversation_texts_skip_the_system_prompt_and_keep_references():
    messages = [
        {"role": "system", "content": "You are a pharmacist. Example: Parol."},
        {"role": "user", "content": "Bu ilaç nedir?", "reference": "Majezik: flurbiprofen."},
        {"role": "assistant", "tool_calls": [], "content": None},
        {"role": "tool", "content": '{"drug": "Majezik"}'},
    ]
    assert conversation_texts(messages) == ["Bu ilaç nedir?", "Majezik: flurbiprofen.", '{"drug": "Majezik"}']


# --- the real default model (adapter merged) under the constraint -------------------------------------------

# Questions whose names an adapter misspelled or invented without the constraint (eval/results/index.jsonl, stage 1:
# "Lasartan", "Doperidon", "losan"; the stage-7 adapter, ungrounded, wrote "Lostartan", "Asef" and
# "losingartan potassium" for three of these four, stage 9 "Lasartan", "Dopera" and "losingartan potassium",
# the ten-stage adapter (stages 9 and 10 interpolated, the default before the recipe's) "Lasartan", "Dopera" and
# "Lostartan potassium").
QUESTIONS = [
    "What kind of medicine is Losartan?",
    "elimde Domperidon var, ne işe yarar?",
    "What is Aksef for?",
    "Does losartan potassium interact with Lanoxin?",
]


@pytest.fixture(scope="module")
def default_model():
    from agent.engine.models import load_model

    return load_model(None, device="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("question", QUESTIONS)
def test_the_default_model_calls_tools_with_names_the_patient_wrote(default_model, question):
    from agent.engine.agent import AgentConfig
    from agent.pharmacy import pharmacist_agent

    model, tokenizer = default_model
    config = AgentConfig(max_new_tokens=96, max_steps=2)
    result = pharmacist_agent(model, tokenizer, config=config).run(question)
    names = []
    for message in result.messages:
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            names += [arguments["drug"]] if "drug" in arguments else arguments.get("drugs", [])
    assert names, result.messages
    assert all(n in question or n in question.title() for n in names), names


def test_names_only_keeps_a_name_to_the_medicines_the_conversation_holds(smollm_tokenizer):
    from agent.pharmacy.tools import is_medicine_name

    def texts(sources: list[str], value: str, prefix: str = CALL) -> set[str] | None:
        constraint = GroundedNames(
            smollm_tokenizer, sources, is_medicine_name, arguments=("drug", "drugs"), names_only=True
        )
        for token_id in smollm_tokenizer(prefix + value, add_special_tokens=False)["input_ids"]:
            constraint.advance(token_id)
        return allowed_texts(smollm_tokenizer, constraint)

    story = ["İstanbul'da eczaneye gittim, ateşim var, annem Coumadin kullanıyor, duloksetin de var"]
    first = texts(story, "")
    assert any(t.startswith(("C", "Co")) for t in first) and any(t.startswith("d") for t in first)
    assert not any(t.startswith(("İ", "I", "ecz", "at", "ann")) for t in first)  # a place, a pharmacy, a symptom
    assert texts(story, "Coumadin") >= {'"', '"}'}
    assert texts(story, "duloksetin") >= {'"'}  # a reference substance the data lacks is a name too
    assert texts(story, "Coumadin", PAIR) >= {'"', '",', '"]'}
    # a conversation with no medicine name leaves any span (the tools then say "not in the database")
    free = texts(["Xyzolin diye bir ilaç aldım"], "")
    assert any(t.startswith("X") for t in free) and any(t.startswith("il") for t in free)


def test_names_only_is_the_default_and_can_be_turned_off():
    from agent.eval.runner import build_parser
    from agent.pharmacy import pharmacist_agent
    from agent.pharmacy.tools import is_known_name, is_medicine_name

    assert build_parser().parse_args(["c.jsonl"]).names_only is True
    assert build_parser().parse_args(["c.jsonl", "--no-names-only"]).names_only is False
    from ppsf_helpers import scripted_backend

    off = pharmacist_agent(scripted_backend(), names_only=False).constraint
    on = pharmacist_agent(scripted_backend()).constraint
    assert (off.names_only, off.known_name) == (False, is_known_name)
    assert (on.names_only, on.known_name) == (True, is_medicine_name)


def test_names_only_takes_the_longest_name_typos_the_tools_read_and_no_repeats(smollm_tokenizer):
    from agent.pharmacy.tools import is_medicine_name

    def texts(sources: list[str], text: str) -> set[str] | None:
        constraint = GroundedNames(
            smollm_tokenizer, sources, is_medicine_name, arguments=("drug", "drugs"), names_only=True
        )
        for token_id in smollm_tokenizer(text, add_special_tokens=False)["input_ids"]:
            constraint.advance(token_id)
        return allowed_texts(smollm_tokenizer, constraint)

    closes = lambda allowed: any('"' in t for t in allowed or ())  # noqa: E731
    story = ["sefuroksim aksetil ile Cipralex arasında etkileşim var mı"]
    assert not closes(texts(story, PAIR + "sefuroksim")) and closes(texts(story, PAIR + "sefuroksim aksetil"))
    typo = ["Can Spirnoolactone and thyroxine be used at the same time?"]
    assert any(t.startswith("Sp") for t in texts(typo, PAIR))  # a typo the tools read is a name to copy
    second = texts(typo, PAIR + 'thyroxine", "')  # never the same name twice: only the other one is offered
    assert any(t.startswith("Sp") for t in second) and not any(t.startswith(("th", "Th")) for t in second)
    assert closes(texts(typo, PAIR + 'thyroxine", "Spirnoolactone'))


def test_a_typo_is_a_name_only_as_one_word():
    from agent.pharmacy.tools import is_medicine_name

    assert is_medicine_name("Spirnoolactone") and is_medicine_name("L-tyhroxine")
    assert not is_medicine_name("imodium on") and not is_medicine_name("duloksetin de")
    assert is_medicine_name("imodium") and is_medicine_name("duloksetin")
