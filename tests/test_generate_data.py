"""training/generate_data.py: seeded, pinned conversations of the agent's exact shape; the held-out split."""

from __future__ import annotations

import hashlib
import json
import re
import string
from pathlib import Path

import card
import generate_data as gd
import phrasings
import pytest
import train_lora

from agent.engine.toolbox import tool_schema
from agent.pharmacy import SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
from agent.pharmacy.drugdb import fold, load_db
from agent.pharmacy.tools import PHARMACY_TOOLS

ROOT = Path(__file__).resolve().parent.parent

TOOL_NAMES = {fn.__name__ for fn in PHARMACY_TOOLS}


def tool_calls(conv: dict) -> list[dict]:
    return [c["function"] for m in conv["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]


# ---------------------------------------------------------------- generator


def test_seeded_and_reproducible(names):
    a = gd.train_conversations(8, seed=11, names=names)
    assert a == gd.train_conversations(8, seed=11, names=names)
    assert a != gd.train_conversations(8, seed=12, names=names)
    assert gd.eval_cases(seed=11, names=names) == gd.eval_cases(seed=11, names=names)


def test_every_tool_and_every_kind_of_turn_appears(conversations, cases):
    assert {c["name"] for conv in conversations for c in tool_calls(conv)} == TOOL_NAMES
    assert {c["name"] for case in cases for c in case["expected"]} == TOOL_NAMES
    intents = {i for conv in conversations for i in conv["meta"]["intents"]}
    assert intents >= {
        "usage",
        "section",
        "interaction",
        "dose",
        "dose_refer",
        "alternatives",
        "contraindication",
        "parallel",
        "multi_step",
        "unknown_drug",
        "greeting",
        "thanks",
        "offtopic",
        "refusal",
    }
    messages = [m for conv in conversations for m in conv["messages"]]
    assert any(len(m.get("tool_calls", [])) > 1 for m in messages)  # several calls in one turn
    assert any("reasoning_content" in m for m in messages)  # @THOUGHT
    assert any("reference" in m for m in messages)  # @REFERENCE
    assert any(json.loads(m["content"]).get("error") for m in messages if m["role"] == "tool")  # tool errors
    assert any(json.loads(m["content"]).get("refer_to_doctor") for m in messages if m["role"] == "tool")
    assert any(json.loads(m["content"]).get("cap_applied") for m in messages if m["role"] == "tool")
    for conv in conversations:  # several exchanges share one tools block; the patient's next message ends it
        assert conv["messages"][-1]["role"] == "user"
        assert 3 <= sum(m["role"] == "user" for m in conv["messages"][:-1]) <= 6


def test_conversations_have_the_agents_exact_shape(conversations):
    schemas = [tool_schema(fn) for fn in PHARMACY_TOOLS]
    for conv in conversations:
        assert conv["tools"] == schemas
        assert conv["messages"][0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
        step = 0
        for m in conv["messages"][1:]:
            if m["role"] == "user":
                step = 0
            elif m["role"] == "assistant" and "tool_calls" in m:
                step += 1
                assert m["content"] is None
                for i, c in enumerate(m["tool_calls"]):
                    assert c["id"] == f"call_{step}_{i}" and c["type"] == "function"
                    assert set(c["function"]) == {"name", "arguments"}
                    assert isinstance(json.loads(c["function"]["arguments"]), dict)
            elif m["role"] == "tool":
                assert set(m) == {"role", "name", "tool_call_id", "content"}


def test_tool_results_are_the_real_tools_results(conversations):
    tools = {fn.__name__: fn for fn in PHARMACY_TOOLS}
    checked = 0
    for conv in conversations:
        calls: dict[str, dict] = {}
        for m in conv["messages"]:
            if m["role"] == "user":
                calls = {}
            for c in m.get("tool_calls", []):
                calls[c["id"]] = c["function"]
            if m["role"] == "tool":
                fn = calls[m["tool_call_id"]]
                assert fn["name"] == m["name"]
                # called as the agent calls them: with the patient's language
                real = tools[fn["name"]](**json.loads(fn["arguments"]), language=conv["meta"]["lang"])
                assert m["content"] == json.dumps(real, ensure_ascii=False)
                checked += 1
    assert checked > 150


def test_answers_restate_the_key_fact(names):
    rng = __import__("random").Random(0)
    gen = gd.Generator("train", rng, names)
    for kind in ("usage", "ingredient", "section", "interaction", "dose", "alternatives", "contraindication"):
        for lang in ("tr", "en"):
            ex = gen.exchange(kind, lang)
            assert ex.must_mention and all(fold(m) in fold(ex.answer) for m in ex.must_mention), (kind, ex.answer)
    ex = gen.dose("tr")
    result = ex.steps[0][0][2]
    if "per_dose_mg" in result:
        assert f"{result['per_dose_mg']} mg" in ex.answer and f"{result['max_daily_mg']} mg" in ex.answer


def test_held_out_split_is_disjoint_by_drug_and_template(names, conversations, cases):
    report = gd.split_report(names)
    assert report["drugs"]["train"] and report["drugs"]["eval"]
    assert not report["drugs"]["train"] & report["drugs"]["eval"]
    assert not report["templates"]["train"] & report["templates"]["eval"]
    # What the generated data actually used.
    used_train = {t for conv in conversations for t in conv["meta"]["templates"]}
    used_eval = {t for case in cases for t in case["templates"]}
    assert used_train <= report["templates"]["train"] and used_eval <= report["templates"]["eval"]
    # No evaluation question names a training drug: every drug argument resolves to a held-out medicine.
    db = load_db()
    train_targets = {db.resolve(n).target for (split, _), lst in names.by.items() if split == "train" for n in lst}
    for case in cases:
        for c in case["expected"]:
            args = c["arguments"]
            for name in args.get("drugs", [args.get("drug")]):
                assert fold(name) not in report["drugs"]["train"], (case["id"], name)
                res = db.resolve(name)
                if res.status == "found":
                    assert res.target not in train_targets, (case["id"], name)
        text = case.get("query") or case["messages"][-1]["content"]
        for train_name in ("Parol", "Majezik", "Nurofen", "Coumadin"):
            assert train_name.lower() not in text.lower()


def _shape(template: str) -> str:
    """A template without case, punctuation or spacing: what "the same phrasing" means for the split."""
    return " ".join(re.sub(r"[^\w{}]+", " ", fold(template)).split())


def test_training_only_phrasings_fit_their_intent_and_never_reach_evaluation():
    report = gd.split_report()
    assert not {_shape(t) for t in report["templates"]["train"]} & {_shape(t) for t in report["templates"]["eval"]}
    fields = string.Formatter()
    earlier: list[dict] = []
    for extra in (phrasings.TRAIN_ONLY_TEMPLATES, *phrasings.MORE_ROUNDS):
        for intent, by_lang in extra.items():
            placeholders = {f for t in gd.TEMPLATES[intent]["en"] for _, f, _, _ in fields.parse(t) if f}
            for lang, templates in by_lang.items():
                assert len(set(templates)) == len(templates), (intent, lang)
                for t in templates:
                    assert t not in gd.TEMPLATES[intent][lang], (intent, t)
                    assert not any(t in e.get(intent, {}).get(lang, []) for e in earlier), (intent, t)
                    assert {f for _, f, _, _ in fields.parse(t) if f} == placeholders, (intent, t)
        earlier.append(extra)
    for section, (tr, en) in phrasings.SECTION_SYNONYMS.items():
        assert section in gd.SECTION_WORDS and tr + en and gd.SECTION_WORDS[section][0] not in tr


def test_extended_recipe_adds_phrasings_and_leaves_the_default_data_alone(names, conversations, extended_conversations):
    base = {t for by_lang in gd.TEMPLATES.values() for ts in by_lang.values() for t in ts}
    extra = {t for by_lang in phrasings.TRAIN_ONLY_TEMPLATES.values() for ts in by_lang.values() for t in ts} - base
    used = {t for conv in extended_conversations for t in conv["meta"]["templates"]}
    assert used & extra and not {t for conv in conversations for t in conv["meta"]["templates"]} & extra
    assert conversations == gd.train_conversations(60, seed=3, names=names, extended=False)
    assert max(sum(m["role"] == "user" for m in c["messages"][:-1]) for c in extended_conversations) > 6
    # Evaluation never draws from it, whatever the recipe.
    gen = gd.Generator("eval", __import__("random").Random(0), names, extended=True)
    assert not gen.extended


def _templates(extra: dict) -> set[str]:
    return {t for by_lang in extra.values() for ts in by_lang.values() for t in ts}


def test_more_phrasings_add_their_rounds_to_the_extended_recipe_only(names, extended_conversations):
    rounds = [_templates(r) for r in phrasings.MORE_ROUNDS]
    # Earlier stages' data stay as they were (their sha256 pins check the bytes): no later round's template in them.
    assert not {t for conv in extended_conversations for t in conv["meta"]["templates"]} & set().union(*rounds)
    for n in range(1, len(rounds) + 1):
        used = {
            t
            for c in gd.train_conversations(60, seed=3, names=names, extended=True, more_phrasings=n)
            for t in c["meta"]["templates"]
        }
        assert all(used & r for r in rounds[:n]) and not used & set().union(*rounds[n:]), n
    with pytest.raises(ValueError, match="more phrasings add to the extended recipe"):
        gd.Generator("train", __import__("random").Random(0), names, more_phrasings=True)
    n = len(rounds)
    with pytest.raises(ValueError, match=f"{n + 1} rounds asked; phrasings.MORE_ROUNDS has {n}"):
        gd.Generator("train", __import__("random").Random(0), names, True, None, n + 1)
    assert not gd.Generator("eval", __import__("random").Random(0), names, True, None, 2).more


def test_more_phrasings_flag_needs_extended(capsys):
    with pytest.raises(SystemExit):
        gd.main(["--more-phrasings", "--train", "1", "--out", "/dev/null", "--eval-out", "/dev/null"])
    assert "more phrasings add to the extended recipe: pass --extended (extended=True) too" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gd.main(
            ["--extended", "--more-phrasings", "9", "--train", "1", "--out", "/dev/null", "--eval-out", "/dev/null"]
        )
    assert f"9 rounds asked; phrasings.MORE_ROUNDS has {len(phrasings.MORE_ROUNDS)}" in capsys.readouterr().err


@pytest.mark.parametrize("more", [["--more-phrasings"], ["--more-phrasings", "2"]])
def test_generated_data_records_the_command_that_writes_it_again(tmp_path, capsys, more):
    out, again = tmp_path / "d.jsonl", tmp_path / "again.jsonl"
    argv = ["--train", "2", "--extended", *more, "--weights", "refusal=3,usage=0.5"]
    gd.main([*argv, "--out", str(out), "--eval-out", str(tmp_path / "e.jsonl")])
    source = json.loads(gd.source_path(out).read_text(encoding="utf-8"))
    assert source == {
        "command": "python training/generate_data.py " + " ".join(argv),
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
    }
    gd.main([*source["command"].split()[2:], "--out", str(again), "--eval-out", str(tmp_path / "e2.jsonl")])
    assert again.read_bytes() == out.read_bytes()
    assert train_lora._data_source(out) == {"data_command": source["command"], "data_sha256": source["sha256"]}
    out.write_text(out.read_text(encoding="utf-8")[:-1], encoding="utf-8")  # edited after it was generated
    assert train_lora._data_source(out) == {}
    assert "changed after" in capsys.readouterr().err


def test_weights_reshape_the_mix_and_reject_unknown_intents(names):
    def share(convs: list[dict], intent: str) -> float:
        intents = [i for c in convs for i in c["meta"]["intents"]]
        return intents.count(intent) / len(intents)

    plain = gd.train_conversations(30, seed=5, names=names, extended=True)
    focused = gd.train_conversations(30, seed=5, names=names, extended=True, weights={"refusal": 60})
    assert share(focused, "refusal") > 0.25 > 0.1 > share(plain, "refusal")
    assert plain == gd.train_conversations(30, seed=5, names=names, extended=True, weights={})
    with pytest.raises(ValueError, match="unknown intent.*parallel.*known: usage"):
        gd.Generator("train", __import__("random").Random(0), names, weights={"parallel": 1})


@pytest.mark.parametrize("text", ["two_usage", "=3", "refusal=-1", "refusal=x", "a=1,", "refusal=nan", "refusal=inf"])
def test_weights_argument_errors_name_the_item(text: str):
    with pytest.raises(Exception, match="expected intent=weight"):
        gd.parse_weights(text)
    assert gd.parse_weights("two_usage=14, refusal=2.5") == {"two_usage": 14.0, "refusal": 2.5}


# sha256 of `generate_data.py` output: the data each stage of the committed adapter trained on, from the command its
# training_info records (stage 2's data, --extended, is also what the extended-alone run, templated/extended,
# trained on). The generator reproduced them byte for byte up to 5e126b2; since then the tools answer differently
# (docs/drug-data.md: names are no longer read as neighbours, the ANSM interaction reference, honest sources, Rx
# statuses; every result is in the patient's language, as the agent now asks; calculate_dose and
# check_contraindications take age_months, so the tools block differs; an adult under 18.7 kg is referred; a name
# typed in lower case writes Turkish İ as i, not i + a combining dot; low blood pressure is read in more
# wordings, three citations were corrected and PDE5 inhibitors are avoided in heart failure, review D5/I1/W6;
# an unknown name is offered only names scoring 70, not 55, scripts/suggestion_scores.py; the second drug review,
# issue 40: new products and age floors, per-level ANSM answers, herbals and every thesaurus substance in
# check_interactions, suggestions sharing the stem, whole tablets, the tablets the dose answer names and each
# form's own age band), so the same commands now write
# REGENERATED_SHA256.
# The ten-stage adapter (the default before the recipe's) predates those answers.
TRAIN_DATA_SHA256 = {
    1: "e39bc8f865176cc4469450f94a7d0d5932c097b3118403eb99145e3bcb8e57d7",
    2: "38a569c41b3996c25c83f2afe6bced44c847ef26db2962cdabf44a0f1958bd47",
    3: "be49d00ac488101b96d9bc47708fc93bd58777b349ee22105eace385c5f2badf",
    4: "99853964acd7a816b4576019eb2d1041218e7dcdfb33af6cadb70944f229630d",
    5: "d6a946c0bb9d5ac20584d804a051447ef7817d2e278374986a870a16edece9c3",
    6: "bc16c7872b41941dce56bf559fdf382ce1b1f67e05b71e1fb7abbc71b402f3b9",
    7: "2205d1040e8f47085d848060d6ff97d555e77049227d5c9f475a8512a9687034",
    8: "e2578e1ab3ca6fc225c7be946d348fcc478c2d8b931e616ae258ec3c0b91be7d",
    9: "1fa080863280cf527574cdda0c31b7870326a4056b0cd8b45976afbe6ad4f27e",
    10: "afc0a8019e3d6d76d9638221081819acd501528b628966b9be83df539e028f3e",
}


def _stage_infos() -> list[dict]:
    info = json.loads((ROOT / "eval" / "results" / "ten_stages" / "training_info.json").read_text(encoding="utf-8"))
    return card._stages(info)


# What the same commands write today (a change here is a change of the training data: say why above).
REGENERATED_SHA256 = {
    1: "a555dfdc308a32ffc9dbf8552874d47a87758ca42116895ffdeb8d787e40203d",
    2: "2be6d03f25dca0cba232c6ab60f3d8b416fbe8887ae676179283bf038e72c4f2",
    3: "09d4e0ec7255b40833f0777d445ed69498a73085f0e7226981867f6988349726",
    4: "a8df24a99e50568f855deb5ac660151ebbb555eb25e9f1a6bd29f349c3d294ea",
    5: "384408965952534d5497eb378f56b99270c2f8045e383803899863a83914df06",
    6: "c4e2c819b495e49cbce78420a57f5d40db4520ff662a377de81db9c86931c5b8",
    7: "24ee9b411af6bf4b695b491757f7bd698dcb23839f75dde5d946b5ae378005fd",
    8: "0847bb18ccffb805284f98f2dcff0f82c3ef9b2f29813fd4abc5a42d1a88f356",
    9: "aadec81834709520fe633ac63a2f541f7e0f747fe291366da9bd76c4410de907",
    10: "a8acccb300cd5e28b9d89427c7d84d763983ce9fb6aba560a45f10599b5f8a92",
    "gpu_second_epoch": "5e37c0db91fa20195c65e39d48be8aa65f2ee56d08b8e0c9ab7865bb3c1ded2c",
}


def test_every_stage_of_the_committed_adapter_has_its_data_pinned():
    assert sorted(TRAIN_DATA_SHA256) == list(range(1, len(_stage_infos()) + 1))
    # The adapter's own record names the data it trained on: the last stage's, and each earlier one's.
    info = json.loads((ROOT / "eval" / "results" / "ten_stages" / "training_info.json").read_text(encoding="utf-8"))
    assert info["data_sha256"] == TRAIN_DATA_SHA256[len(TRAIN_DATA_SHA256)]
    assert [s.get("data_sha256") for s in _stage_infos()][-6:] == [TRAIN_DATA_SHA256[i] for i in range(5, 11)]


@pytest.mark.parametrize("stage", sorted(TRAIN_DATA_SHA256))
def test_generated_training_data_is_pinned(tmp_path, stage):
    command = card._data_command(_stage_infos()[stage - 1], stage)
    out = tmp_path / "train.jsonl"
    assert gd.main([*command.split()[2:], "--out", str(out), "--eval-out", str(tmp_path / "cases.jsonl")]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == REGENERATED_SHA256[stage]


# Runs tried beside the committed adapter (their training records' data, as eval/results/index.jsonl keeps it;
# scored in docs/training.md)
SIDE_RUNS = {
    "gpu_fresh": TRAIN_DATA_SHA256[9],
    "gpu_second_epoch": "ade6a51623f58829cc2360e5ccbf1a11b8cb907eeab9c794df7e70837b8c2e56",
    "round6_cpu": TRAIN_DATA_SHA256[10],  # stage 10 alone, before the interpolation
}


def _side_info(name: str) -> dict:
    """The side run's line of eval/results/index.jsonl (scripts/index_results.py)."""
    lines = (ROOT / "eval" / "results" / "index.jsonl").read_text(encoding="utf-8").splitlines()
    (run,) = [d for d in map(json.loads, lines) if d["name"] == f"templated/{name}"]
    return run


@pytest.mark.parametrize("name", sorted(SIDE_RUNS))
def test_side_runs_record_the_data_pinned_for_them(name):
    assert _side_info(name)["training_data_sha256"] == SIDE_RUNS[name]


# Data a committed stage shares is regenerated by the stage test above; only the side runs' own data here.
@pytest.mark.parametrize("name", [n for n, sha in sorted(SIDE_RUNS.items()) if sha not in TRAIN_DATA_SHA256.values()])
def test_side_runs_data_is_what_their_command_regenerates(tmp_path, name):
    info = _side_info(name)
    out = tmp_path / "train.jsonl"
    command = info["training_data_command"].split()[2:]
    assert gd.main([*command, "--out", str(out), "--eval-out", str(tmp_path / "cases.jsonl")]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == REGENERATED_SHA256[name]


def test_questions_carry_the_drug_names_the_calls_use(extended_conversations):
    """Openers never alter the name: the call copies it from the question as typed (up to case: noisy_question
    may lower the question's first letter, and with_opener lowers it after an opener)."""
    openers = 0
    for conv in extended_conversations:
        question = ""
        for m in conv["messages"]:
            if m["role"] == "user":
                question = m["content"]
                openers += any(question.startswith(o) for o in phrasings.OPENERS[conv["meta"]["lang"]])
            for c in m.get("tool_calls", []):
                args = json.loads(c["function"]["arguments"])
                for name in args.get("drugs", [args.get("drug")]):
                    assert fold(name) in fold(question), (name, question)
    assert openers > 20


# eval/cases.jsonl is frozen: the cases every committed run was scored on, as gd.eval_cases(seed=0) wrote them up to
# 5e126b2. Since the drug-data work the generator draws from more products and the tools word some results anew
# ("not in the reference" instead of "no known interaction"), so it now writes other cases; the file stays.
EVAL_CASES_SHA256 = "865deafb153e6aa98cb39340f37e5e01e0ecc7cd5360b694a656ceefca2bff63"


def test_eval_cases_file_is_frozen_and_held_out(names):
    path = ROOT / "eval" / "cases.jsonl"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == EVAL_CASES_SHA256
    on_disk = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    report = gd.split_report(names)
    assert len(on_disk) == 208
    # Its templates are still the held-out ones (the drug split moved with the new products, the templates did not).
    for case in on_disk:
        assert set(case["templates"]) <= report["templates"]["eval"], case["id"]


def test_a_name_typed_in_lower_case_writes_turkish_capital_i_as_i():
    import random

    typed = {gd.noisy_name(random.Random(seed), "İzosorbid", p_typo=0) for seed in range(40)}
    assert typed == {"İzosorbid", "izosorbid", "İZOSORBID"}  # str.lower would give "i̇zosorbid" (i + U+0307)
