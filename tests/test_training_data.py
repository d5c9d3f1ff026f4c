"""training/: the data generator, the assistant-only loss mask, a tiny TRL run, adapter loading and the CLI."""

from __future__ import annotations

import hashlib
import json
import re
import string
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from agent import ppsf
from agent.engine.toolbox import tool_schema
from agent.pharmacy import SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.drugdb import fold, load_db
from agent.pharmacy.tools import PHARMACY_TOOLS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))

import generate_data as gd  # noqa: E402
import phrasings  # noqa: E402
import train_lora  # noqa: E402

TOOL_NAMES = {fn.__name__ for fn in PHARMACY_TOOLS}


@pytest.fixture(scope="module")
def names():
    return gd.build_names()


@pytest.fixture(scope="module")
def conversations(names):
    return gd.train_conversations(60, seed=3, names=names)


@pytest.fixture(scope="module")
def extended_conversations(names):
    return gd.train_conversations(60, seed=3, names=names, extended=True)


@pytest.fixture(scope="module")
def cases(names):
    return gd.eval_cases(seed=3, names=names)


@pytest.fixture(scope="module")
def repo_tokenizer():
    return ppsf.load_tokenizer()


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
                real = tools[fn["name"]](**json.loads(fn["arguments"]))
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
    assert share(focused, "refusal") > 0.3 > 0.1 > share(plain, "refusal")
    assert plain == gd.train_conversations(30, seed=5, names=names, extended=True, weights={})
    with pytest.raises(ValueError, match="unknown intent.*parallel.*known: usage"):
        gd.Generator("train", __import__("random").Random(0), names, weights={"parallel": 1})


@pytest.mark.parametrize("text", ["two_usage", "=3", "refusal=-1", "refusal=x", "a=1,", "refusal=nan", "refusal=inf"])
def test_weights_argument_errors_name_the_item(text: str):
    with pytest.raises(Exception, match="expected intent=weight"):
        gd.parse_weights(text)
    assert gd.parse_weights("two_usage=14, refusal=2.5") == {"two_usage": 14.0, "refusal": 2.5}


# sha256 of `generate_data.py` output: the data each stage of the committed adapter trained on, from the command its
# training_info records (stage 2's data, --extended, is also what the extended-alone run, eval/results/extended_*,
# trained on). A change here means they no longer reproduce.
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
    info = json.loads((ROOT / "adapter" / "training_info.json").read_text(encoding="utf-8"))
    return train_lora._stages(info)


def test_every_stage_of_the_committed_adapter_has_its_data_pinned():
    assert sorted(TRAIN_DATA_SHA256) == list(range(1, len(_stage_infos()) + 1))


@pytest.mark.parametrize("stage", sorted(TRAIN_DATA_SHA256))
def test_generated_training_data_is_what_the_committed_runs_trained_on(tmp_path, stage):
    command = train_lora._data_command(_stage_infos()[stage - 1], stage)
    out = tmp_path / "train.jsonl"
    assert gd.main([*command.split()[2:], "--out", str(out), "--eval-out", str(tmp_path / "cases.jsonl")]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == TRAIN_DATA_SHA256[stage]


# Runs tried beside the committed adapter (eval/results/<name>_training_info.json, scored in the README)
SIDE_RUNS = {
    "gpu_fresh": TRAIN_DATA_SHA256[9],
    "gpu_second_epoch": "ade6a51623f58829cc2360e5ccbf1a11b8cb907eeab9c794df7e70837b8c2e56",
    "round6_cpu": TRAIN_DATA_SHA256[10],  # stage 10 alone, before the interpolation
}


def _side_info(name: str) -> dict:
    return json.loads((ROOT / "eval" / "results" / f"{name}_training_info.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(SIDE_RUNS))
def test_side_runs_record_the_data_pinned_for_them(name):
    assert _side_info(name)["data_sha256"] == SIDE_RUNS[name]


# Data a committed stage shares is regenerated by the stage test above; only the side runs' own data here.
@pytest.mark.parametrize("name", [n for n, sha in sorted(SIDE_RUNS.items()) if sha not in TRAIN_DATA_SHA256.values()])
def test_side_runs_data_is_what_their_command_regenerates(tmp_path, name):
    info = _side_info(name)
    out = tmp_path / "train.jsonl"
    command = info["data_command"].split()[2:]
    assert gd.main([*command, "--out", str(out), "--eval-out", str(tmp_path / "cases.jsonl")]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == SIDE_RUNS[name]


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


def test_eval_cases_file_is_generated_from_the_held_out_split(cases):
    on_disk = [json.loads(line) for line in (ROOT / "eval" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert on_disk == gd.eval_cases(seed=0)
    assert len(cases) >= 200


# ---------------------------------------------------------------- rendering and the loss mask


def test_conversations_render_exactly_as_the_agent_prompts(conversations, repo_tokenizer):
    agent = pharmacist_agent(None, repo_tokenizer, generator=SimpleNamespace())
    train = repo_tokenizer.chat_template["train"]
    for conv in conversations[:10]:
        assert agent.toolbox.schemas == conv["tools"]
        full = agent.render(conv["messages"])
        assert full == repo_tokenizer.apply_chat_template(
            conv["messages"], tools=conv["tools"], chat_template=train, tokenize=False
        )
        # Every prompt the agent builds before an assistant turn is a prefix of the training text.
        for i, m in enumerate(conv["messages"]):
            if m["role"] == "assistant":
                assert full.startswith(agent.render(conv["messages"][:i]))


def masked_spans(ids: list[int], mask: list[int], tokenizer) -> tuple[list[str], str]:
    spans, cur, outside = [], [], []
    for t, bit in zip(ids, mask, strict=True):
        if bit:
            cur.append(t)
        else:
            if cur:
                spans.append(tokenizer.decode(cur))
                cur = []
            outside.append(t)
    if cur:
        spans.append(tokenizer.decode(cur))
    return spans, tokenizer.decode(outside)


def test_assistant_mask_covers_assistant_turns_and_their_closing_blank_line_only(conversations, repo_tokenizer):
    tok = repo_tokenizer
    tok_train = tok.chat_template["train"]
    for conv in conversations[:6]:
        out = tok.apply_chat_template(
            conv["messages"],
            tools=conv["tools"],
            chat_template=tok_train,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        spans, outside = masked_spans(out["input_ids"], out["assistant_masks"], tok)
        assistants = [m for m in conv["messages"] if m["role"] == "assistant"]
        assert len(spans) == len(assistants)
        for span, m in zip(spans, assistants, strict=True):
            assert span.startswith(ppsf.ASSISTANT_MARKERS)
            assert span.endswith("\n\n") and not span.endswith("\n\n\n")  # the turn's stop is inside
            assert not any(line.startswith(ppsf.FOREIGN_MARKERS) for line in span.splitlines())
            if m.get("content"):
                assert m["content"] in span
            for c in m.get("tool_calls", []):
                assert json.dumps(c["function"]["name"]) in span
        for marker in ("@FORMAT", "@SYSTEM", "@TOOLS", "@PATIENT", "@TOOL_RESPONSE"):
            assert marker in outside
        assert DEFAULT_SYSTEM_PROMPT[:40] in outside
        for m in conv["messages"]:
            if m["role"] in ("user", "tool"):
                assert m["content"] in outside


# ---------------------------------------------------------------- TRL: a tiny run


@pytest.fixture(scope="module")
def tiny_adapter(tmp_path_factory, tiny_model_dir, names):
    tmp = tmp_path_factory.mktemp("lora")
    data = tmp / "train.jsonl"
    gd.write_jsonl(data, gd.train_conversations(3, seed=5, names=names))
    out = tmp / "adapter"
    argv = [
        "--data",
        str(data),
        "--model",
        str(tiny_model_dir),
        "--device",
        "cpu",
        "--max-steps",
        "2",
        "--grad-accum",
        "1",
        "--out",
        str(out),
        "--work-dir",
        str(tmp / "run"),
        "--logging-steps",
        "1",
        "--max-length",
        "1400",  # the tools block alone is ~930 tokens; enough for the first exchange, and quick
    ]
    assert train_lora.main(argv) == 0
    return out, data


def test_training_script_saves_a_lora_adapter(tiny_adapter):
    out, _ = tiny_adapter
    config = json.loads((out / "adapter_config.json").read_text(encoding="utf-8"))
    assert config["peft_type"] == "LORA" and config["r"] == 16
    assert (out / "adapter_model.safetensors").stat().st_size > 0
    info = json.loads((out / "training_info.json").read_text(encoding="utf-8"))
    assert info["steps"] == 2 and info["conversations"] == 3 and info["loss_tokens"] < info["tokens"]
    assert "data_command" not in info  # written by hand, not by generate_data.py: no command to record


def test_a_second_stage_continues_a_saved_adapter_and_stops_at_a_step(tmp_path, tiny_model_dir, tiny_adapter):
    from safetensors.torch import load_file

    first, data = tiny_adapter
    out = tmp_path / "stage2"
    # generate_data.py's record beside the data: the run copies its command into training_info.json
    command = "python training/generate_data.py --train 3 --seed 5"
    source = {"command": command, "sha256": hashlib.sha256(data.read_bytes()).hexdigest()}
    gd.source_path(data).write_text(json.dumps(source), encoding="utf-8")
    argv = ["--data", str(data), "--model", str(tiny_model_dir), "--device", "cpu", "--grad-accum", "1"]
    argv += ["--max-steps", "3", "--stop-at-step", "1", "--lr", "0", "--max-length", "1400"]
    argv += ["--init-adapter", str(first), "--out", str(out), "--work-dir", str(tmp_path / "run")]
    assert train_lora.main(argv) == 0
    info = json.loads((out / "training_info.json").read_text(encoding="utf-8"))
    assert info["steps"] == 1 and info["schedule_steps"] == 3
    assert (info["data_command"], info["data_sha256"]) == (command, source["sha256"])
    assert info["init_adapter"]["path"] == str(first)
    assert info["init_adapter"]["training_info"]["steps"] == 2
    before, after = load_file(first / "adapter_model.safetensors"), load_file(out / "adapter_model.safetensors")
    # lr 0: the weights it saves are the ones it started from (a fresh LoRA would have B = 0, A random)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert any(before[k].abs().sum() > 0 for k in before if "lora_B" in k)


def test_trl_trains_on_the_template_tokens_with_the_turn_stop_mask(tiny_model_dir, tiny_adapter):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, data = tiny_adapter
    rows = train_lora.read_conversations(data)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = train_lora.train_template()
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    args = train_lora.parse_args(["--max-steps", "1", "--device", "cpu", "--work-dir", str(data.parent / "w")])
    trainer = train_lora.build_trainer(model, tok, rows, args)
    for row, example in zip(rows, trainer.train_dataset, strict=True):
        ref = train_lora.template_mask(tok, row)
        agent_text = tok.apply_chat_template(
            row["messages"], tools=row["tools"], chat_template=ppsf.chat_template(), tokenize=False
        )
        assert tok.decode(example["input_ids"]) == agent_text  # the text the agent prompts with
        mask = train_lora.with_turn_stops(tok, ref["input_ids"], ref["assistant_masks"])
        assert sum(mask) > sum(ref["assistant_masks"])
        assert example["labels"] == [t if bit else -100 for t, bit in zip(ref["input_ids"], mask, strict=True)]


def test_every_turn_is_trained_to_stop_at_the_next_blocks_marker(conversations):
    train_tok = ppsf.load_tokenizer()
    train_tok.chat_template = train_lora.train_template()
    for conv in conversations[:6]:
        assert conv["messages"][-1]["role"] == "user"  # the last answer has a following marker too
        ref = train_lora.template_mask(train_tok, conv)
        example = train_lora.tokenize(train_tok, conv)
        spans, _ = masked_spans(example["input_ids"], example["assistant_masks"], train_tok)
        plain, _ = masked_spans(ref["input_ids"], ref["assistant_masks"], train_tok)
        assert len(spans) == len(plain) == sum(m["role"] == "assistant" for m in conv["messages"])
        for span, turn in zip(spans, plain, strict=True):
            assert span.startswith(turn)
            assert span[len(turn) :] in ppsf.FOREIGN_MARKERS  # exactly the marker: no attributes, no newline
            if "@TOOL_CALL" in turn:
                assert span.endswith("@TOOL_RESPONSE")


def test_turn_stops_only_extend_over_a_whole_foreign_marker(repo_tokenizer):
    tok = repo_tokenizer

    def extended(text_in: str, text_after: str) -> str:
        a, b = tok(text_in)["input_ids"], tok(text_after)["input_ids"]
        mask = train_lora.with_turn_stops(tok, a + b, [1] * len(a) + [0] * len(b))
        return tok.decode([t for t, bit in zip(a + b, mask, strict=True) if bit])[len(text_in) :]

    assert extended("@PHARMACIST\nTamam.\n\n", "@PATIENT\nSağ ol\n\n") == "@PATIENT"
    assert extended("@PHARMACIST\nTamam.\n\n", "@PHARMACIST\nTekrar\n\n") == ""  # own marker: not a stop
    assert extended("@PHARMACIST\nTamam.\n\n", "@PATIENTS are fine") == ""  # not the marker word
    assert extended("@PHARMACIST\nTamam.\n\n", "") == ""  # nothing follows: nothing to add


def test_loss_positions_trainer_gives_trls_loss(tiny_model_dir, tiny_adapter):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, data = tiny_adapter
    rows = train_lora.read_conversations(data)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = train_lora.train_template()
    for bf16, rel in (("--no-bf16", 1e-4), ("--bf16", 2e-2)):
        results = []
        for fast in ("--fast-loss", "--no-fast-loss"):
            model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
            argv = ["--max-steps", "1", "--device", "cpu", "--dropout", "0", bf16, fast]
            trainer = train_lora.build_trainer(
                model, tok, rows, train_lora.parse_args([*argv, "--work-dir", str(data.parent / "w2")])
            )
            batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
            n_items = int((batch["labels"][:, 1:] != -100).sum()) * 2  # as if a second micro-batch followed
            trainer.model.train()
            with trainer.compute_loss_context_manager():
                alone = trainer.compute_loss(trainer.model, dict(batch))
                loss = trainer.compute_loss(trainer.model, dict(batch), num_items_in_batch=torch.tensor(n_items))
            loss.backward()
            grads = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
            results.append((alone.item(), loss.item(), grads))
        (fast_alone, fast_loss, fast_grads), (trl_alone, trl_loss, trl_grads) = results
        assert fast_alone == pytest.approx(trl_alone, rel=rel)
        assert fast_loss == pytest.approx(trl_loss, rel=rel) and fast_loss == pytest.approx(fast_alone / 2, rel=1e-4)
        assert torch.allclose(fast_grads, trl_grads, rtol=10 * rel, atol=1e-6)


def _continued(start: Path, end: Path, shift: float = 0.5) -> dict[str, torch.Tensor]:
    """A hand-made END for START: its tensors moved by `shift`, its training_info naming START as its init."""
    from safetensors.torch import load_file, save_file

    end.mkdir()
    tensors = {k: (v.float() + shift).to(v.dtype) for k, v in load_file(start / "adapter_model.safetensors").items()}
    save_file(tensors, str(end / "adapter_model.safetensors"))
    (end / "adapter_config.json").write_bytes((start / "adapter_config.json").read_bytes())
    start_info = json.loads((start / "training_info.json").read_text(encoding="utf-8"))
    info = start_info | {"steps": 4, "schedule_steps": 4, "lr": 0.0003}
    info["init_adapter"] = {"path": str(start), "training_info": start_info}
    (end / "training_info.json").write_text(json.dumps(info), encoding="utf-8")
    return tensors


def test_interpolation_mixes_every_lora_tensor_and_the_card_gives_the_command(tmp_path, tiny_model_dir, tiny_adapter):
    import interpolate_adapter
    from safetensors.torch import load_file

    from agent.engine.models import load_model

    start, end = tiny_adapter[0], tmp_path / "end"
    end_tensors = _continued(start, end)
    start_tensors = load_file(start / "adapter_model.safetensors")
    for weight in (0.0, 0.25, 1.0):
        out = tmp_path / f"mix{weight}"
        assert interpolate_adapter.main([str(start), str(end), "--weight", str(weight), "--out", str(out)]) == 0
        mixed = load_file(out / "adapter_model.safetensors")
        assert mixed.keys() == start_tensors.keys()
        for k, a in start_tensors.items():
            expected = ((1 - weight) * a.float() + weight * end_tensors[k].float()).to(a.dtype)
            assert mixed[k].dtype == a.dtype and torch.equal(mixed[k], expected), k
    info = json.loads((out / "training_info.json").read_text(encoding="utf-8"))
    assert info["interpolation"] == {"weight": 1.0} and info["steps"] == 4  # END's record, plus the weight
    card = (tmp_path / "mix0.25" / "README.md").read_text(encoding="utf-8")
    assert "--lr 0.0003 --max-steps 4" in card and "--out runs/stage2/\n" in card  # stage 2 is not the adapter
    assert "interpolate_adapter.py runs/stage1/ runs/stage2/ --weight 0.25 --out adapter/" in card
    assert "0.75 x the stage-1\nadapter + 0.25 x stage 2" in card
    # a later stage continues the interpolated adapter, which its card then reproduces under runs/
    third = {"steps": 3, "schedule_steps": 3, "lr": 0.0002, "init_adapter": {"path": "a", "training_info": info}}
    text = train_lora.write_card(tmp_path, third).read_text(encoding="utf-8")
    assert "interpolate_adapter.py runs/stage1/ runs/stage2/ --weight 1.0 --out runs/stage2-wise-ft/" in text
    assert "--init-adapter runs/stage2-wise-ft/ \\\n    --lr 0.0002 --max-steps 3 --out adapter/" in text
    base, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter="none")
    tuned, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(tmp_path / "mix0.25"))
    assert any(not torch.equal(a, b) for a, b in zip(base.parameters(), tuned.parameters(), strict=True))


def test_interpolation_errors_name_the_problem(tmp_path, capsys, tiny_adapter):
    import interpolate_adapter
    from safetensors.torch import load_file, save_file

    start, end = tiny_adapter[0], tmp_path / "end"
    _continued(start, end)
    out = tmp_path / "o"

    def error(a: Path, b: Path, weight: str = "0.5", to: Path = out) -> str:
        assert interpolate_adapter.main([str(a), str(b), "--weight", weight, "--out", str(to)]) == 2
        return capsys.readouterr().err

    assert "--weight 1.5: must be in [0, 1]" in error(start, end, "1.5")
    assert "is START or END" in error(start, end, to=end)
    assert "was not trained from START" in error(end, start)  # the wrong way round
    assert "no adapter_config.json, adapter_model.safetensors, training_info.json" in error(start, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    for name in interpolate_adapter.ADAPTER_FILES:
        (other / name).write_bytes((end / name).read_bytes())
    config = json.loads((other / "adapter_config.json").read_text(encoding="utf-8"))
    (other / "adapter_config.json").write_text(json.dumps(config | {"lora_alpha": 8, "r": 8}), encoding="utf-8")
    assert "configs differ in lora_alpha, r" in error(start, other)
    # peft saves target_modules (a set) in any order: the same modules in another order are the same config
    shuffled = config | {"target_modules": config["target_modules"][::-1]}
    (other / "adapter_config.json").write_text(json.dumps(shuffled), encoding="utf-8")
    tensors = load_file(end / "adapter_model.safetensors")
    key = min(tensors)
    save_file({k: v for k, v in tensors.items() if k != key}, str(other / "adapter_model.safetensors"))
    assert f"{key} is only in START" in error(start, other)
    save_file(tensors | {key: tensors[key][:1].contiguous()}, str(other / "adapter_model.safetensors"))
    shape = f"{key}: {tuple(tensors[key].shape)} torch.bfloat16 in START, {(1, *tensors[key].shape[1:])}"
    assert shape in error(start, other)
    save_file(tensors | {key: tensors[key].float()}, str(other / "adapter_model.safetensors"))
    assert "torch.float32 in END" in error(start, other)
    assert not out.exists()  # nothing written on an error
    save_file(tensors, str(other / "adapter_model.safetensors"))
    assert interpolate_adapter.main([str(start), str(other), "--weight", "0.5", "--out", str(out)]) == 0
    assert "is itself an interpolation" in error(start, out, to=tmp_path / "o2")  # its weight would be lost


# ---------------------------------------------------------------- the adapter in agent.engine.models and the CLI


def test_load_model_merges_an_adapter(tiny_model_dir, tiny_adapter):
    from agent.engine.models import load_model

    out, _ = tiny_adapter
    base, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter="none")
    tuned, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(out))
    assert type(tuned) is type(base)  # merged: a plain transformers model, no PEFT wrapper
    assert not any("lora" in n for n, _ in tuned.named_parameters())
    diffs = [not torch.equal(a, b) for a, b in zip(base.parameters(), tuned.parameters(), strict=True)]
    assert any(diffs)
    # "auto" only applies the repo's adapter to the default model, never to another --model.
    auto, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    assert all(torch.equal(a, b) for a, b in zip(base.parameters(), auto.parameters(), strict=True))


def test_adapter_errors_are_clear(tmp_path, tiny_model_dir, tiny_adapter):
    from transformers import LlamaConfig, LlamaForCausalLM

    from agent.engine.models import AdapterMismatchError, ModelLoadError, load_model, resolve_adapter

    with pytest.raises(ModelLoadError, match="no adapter_config.json"):
        load_model(str(tiny_model_dir), device="cpu", adapter=str(tmp_path))
    assert resolve_adapter("none", None) is None and resolve_adapter(None, None) is None
    assert resolve_adapter("auto", "some/model") is None
    other = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    )
    other.save_pretrained(tmp_path / "other")
    (tmp_path / "other" / "tokenizer_config.json").unlink(missing_ok=True)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(tmp_path / "other")
    with pytest.raises(AdapterMismatchError, match="does not fit the model"):
        load_model(str(tmp_path / "other"), device="cpu", adapter=str(tiny_adapter[0]))


def test_auto_adapter_that_does_not_fit_the_default_model_warns_and_loads_it_plain(
    monkeypatch, capsys, tiny_model_dir, tiny_adapter
):
    import agent.engine.models as models

    # The default model replaced by one the repo's adapter was not trained for.
    monkeypatch.setattr(models, "default_model_dir", lambda: tiny_model_dir)
    plain, _ = models.load_model(device="cpu", dtype="float32", adapter="none")
    lm, _ = models.load_model(device="cpu", dtype="float32")
    assert "not applying the PPSF adapter" in capsys.readouterr().err
    assert not any("lora" in n for n, _ in lm.named_parameters())
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), lm.parameters(), strict=True))
    with pytest.raises(models.AdapterMismatchError):  # a folder named explicitly still fails
        models.load_model(device="cpu", dtype="float32", adapter=str(ROOT / "adapter"))


def test_load_model_reports_missing_peft(monkeypatch, tiny_model_dir, tiny_adapter):
    from agent.engine.models import ModelLoadError, load_model

    monkeypatch.setitem(sys.modules, "peft", None)  # import peft -> ImportError
    with pytest.raises(ModelLoadError, match="needs peft"):
        load_model(str(tiny_model_dir), device="cpu", adapter=str(tiny_adapter[0]))


class _Stop(Exception):
    pass


@pytest.mark.parametrize(
    ("argv", "adapter_loaded", "examples"),
    [
        ([], True, False),  # the tuned default: no worked example
        (["--adapter", "none"], False, True),  # the plain model gets the one-shot example
        (["--adapter", "none", "--no-examples"], False, False),
    ],
)
def test_cli_gives_examples_only_without_an_adapter(monkeypatch, argv, adapter_loaded, examples):
    from agent import cli
    from agent.engine import models

    seen: dict = {}
    monkeypatch.setattr(models, "resolve_adapter", lambda a, m: Path("adapter") if a == "auto" else None)

    def fake_load(model, device, dtype, adapter):
        seen["adapter"] = adapter
        return object(), object()

    def fake_agent(*args, **kwargs):
        seen["examples"] = kwargs["examples"]
        raise _Stop

    monkeypatch.setattr(models, "load_model", fake_load)
    monkeypatch.setattr(cli, "pharmacist_agent", fake_agent)
    with pytest.raises(_Stop):
        cli.main(["Parol ne işe yarar?", *argv])
    assert (seen["adapter"] is not None) == adapter_loaded
    assert bool(seen["examples"]) == examples


def test_adapter_card_gives_every_stage_and_the_commands_that_reproduce_them(tmp_path):
    stage1 = {"conversations": 600, "conversations_seen": 340, "steps": 170, "schedule_steps": 170, "lr": 0.001}
    stage1 |= {"tokens": 10, "loss_tokens": 3, "first_loss": 1.19108, "last_loss": 0.04265, "wall_seconds": 4684.2}
    info = {"conversations": 600, "conversations_seen": 240, "steps": 120, "schedule_steps": 130, "lr": 0.0005}
    info |= {"tokens": 20, "loss_tokens": 5, "init_adapter": {"path": "adapter", "training_info": stage1}}
    text = train_lora.write_card(tmp_path, info).read_text(encoding="utf-8")
    assert "saw 340 of them" in text and "saw 240 of them" in text and "--extended" in text
    assert "Stage 1: lr 0.001 cosine" in text and "170 steps (" in text and "loss 1.1911 -> 0.0427" in text
    assert "Stage 2, from the stage-1 adapter: lr 0.0005" in text and "120 of 130 scheduled steps" in text
    assert "--init-adapter runs/stage1/" in text and "--lr 0.0005 --max-steps 130 --stop-at-step 120" in text
    weights = "python training/generate_data.py --extended --weights refusal=10"
    third = {"steps": 90, "schedule_steps": 120, "lr": 0.0004, "data_command": weights, "conversations_seen": 180}
    third |= {"init_adapter": {"path": "adapter", "training_info": info}}
    text = train_lora.write_card(tmp_path, third).read_text(encoding="utf-8")
    assert "Stage 2, from the stage-1 adapter: lr 0.0005" in text and "saw 180 of them" in text
    assert "Stage 3: `training/generate_data.py --extended --weights refusal=10`" in text and "reweighted" in text
    assert "Stage 3, from the stage-2 adapter: lr 0.0004" in text and "90 of 120 scheduled steps" in text
    assert f"{weights} --out training/data/stage3.jsonl" in text and "--out runs/stage2/" in text
    assert "--init-adapter runs/stage2/ \\\n    --lr 0.0004 --max-steps 120 --stop-at-step 90 --out adapter/" in text
    plain = third | {"data_command": "python training/generate_data.py --seed 4"}
    assert "--seed 4`, " in train_lora.write_card(tmp_path, plain).read_text(encoding="utf-8")
    one = train_lora.write_card(tmp_path, stage1).read_text(encoding="utf-8")
    assert "Stage" not in one and "Run: lr 0.001 cosine" in one and "train_lora.py --out adapter/" in one


def test_the_card_gives_a_gpu_stage_its_flags_and_its_device(tmp_path):
    stage1 = {"steps": 170, "schedule_steps": 170, "lr": 0.001, "wall_seconds": 4684.2, "device": "cpu"}
    gpu = {"steps": 375, "schedule_steps": 375, "lr": 0.0003, "batch_size": 8, "grad_accum": 1, "warmup_steps": 10}
    gpu |= {"device": "cuda", "gpu": "NVIDIA H200", "train_seconds": 272.2, "wall_seconds": 300.1, "bf16": True}
    gpu |= {"init_adapter": {"path": "adapter", "training_info": stage1}}
    text = train_lora.write_card(tmp_path, gpu).read_text(encoding="utf-8")
    flags = "--batch-size 8 --grad-accum 1 --warmup-steps 10 --device cuda --bf16"
    assert f"--lr 0.0003 --max-steps 375 {flags} --out adapter/" in text  # it ran its whole schedule
    assert "272.2 s of training (300.1 s in all) on one NVIDIA H200" in text
    assert "wall time 4684.2 s on a shared 2-core CPU" in text  # stage 1 keeps its CPU wording


def test_the_card_names_a_cpu_runs_precision_whose_default_follows_the_cpu(tmp_path):
    stage1 = {"steps": 170, "schedule_steps": 170, "lr": 0.001, "device": "cpu", "bf16": True}
    fp32 = {"steps": 70, "schedule_steps": 72, "lr": 0.0003, "device": "cpu", "bf16": False}
    fp32 |= {"init_adapter": {"path": "adapter", "training_info": stage1}}
    text = train_lora.write_card(tmp_path, fp32).read_text(encoding="utf-8")
    assert "train_lora.py --bf16 --out runs/stage1/" in text
    assert "--lr 0.0003 --max-steps 72 --stop-at-step 70 --no-bf16 --out adapter/" in text
    assert "bf16 autocast on cpu" in text and "fp32 on cpu" in text


def test_bf16_is_the_default_only_where_the_hardware_computes_in_bf16(tiny_model_dir, tiny_adapter):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, data = tiny_adapter
    rows = train_lora.read_conversations(data)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = train_lora.train_template()
    native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())  # AVX-512 / AMX; an AVX2 CPU emulates bf16
    for flag, expected in (([], native), (["--bf16"], True), (["--no-bf16"], False)):
        args = train_lora.parse_args(
            ["--max-steps", "1", "--device", "cpu", *flag, "--work-dir", str(data.parent / "w3")]
        )
        trainer = train_lora.build_trainer(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tok, rows, args)
        assert trainer.args.bf16 is expected, flag


def test_the_card_reads_what_a_stage_adds_from_its_data_command():
    gen = "python training/generate_data.py"
    assert "round 1 of the further" in train_lora._stage_note(f"{gen} --extended --more-phrasings --weights a=1")
    assert "rounds 1-2 of the further" in train_lora._stage_note(f"{gen} --extended --more-phrasings 2")
    assert train_lora._stage_note(f"{gen} --extended --weights a=1").startswith("the previous stage's recipe with")
    assert "openers" in train_lora._stage_note(f"{gen} --extended")
    assert train_lora._stage_note(f"{gen} --seed 4") == "the data that command writes."
    same = f"{gen} --extended --more-phrasings 5 --weights a=1"
    larger = f"{gen} --train 3000 --extended --more-phrasings 5 --weights a="
    again = train_lora._stage_note(larger + "1", same)
    assert again == "the previous stage's recipe and mix again, 3000 new conversations drawn from it."
    assert "reweighted" in train_lora._stage_note(larger + "2", same)  # another mix is not "again"
