"""training/train_lora.py: the assistant-only loss mask, a tiny TRL run, precision."""

from __future__ import annotations

import hashlib
import json

import generate_data as gd
import pytest
import torch
import train_lora
from ppsf_helpers import scripted_backend

from agent import ppsf
from agent.engine.toolbox import tool_schema
from agent.pharmacy import SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.tools import PHARMACY_TOOLS

# ---------------------------------------------------------------- rendering and the loss mask


def test_conversations_render_exactly_as_the_agent_prompts(conversations, repo_tokenizer):
    # The agent of a model trained on this data: shown today's schemas (train_lora records them in tools.json).
    own = {fn.__name__: tool_schema(fn) for fn in PHARMACY_TOOLS}
    agent = pharmacist_agent(scripted_backend(tokenizer=repo_tokenizer), tool_schemas=own)
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


def _tiny_run(tmp_path, tiny_model_dir, data, name: str, *extra: str) -> dict:
    """train_lora as tiny_adapter trains it (2 steps of 1 on its 3 conversations), into tmp_path/name."""
    argv = ["--data", str(data), "--model", str(tiny_model_dir), "--device", "cpu", "--max-steps", "2"]
    argv += ["--grad-accum", "1", "--max-length", "1400", "--logging-steps", "1", *extra]
    assert train_lora.main([*argv, "--out", str(tmp_path / name), "--work-dir", str(tmp_path / f"{name}-run")]) == 0
    return json.loads((tmp_path / name / "training_info.json").read_text(encoding="utf-8"))


def test_a_budget_that_every_example_fits_trains_the_run_without_one(tmp_path, tiny_model_dir, tiny_adapter):
    from safetensors.torch import load_file

    first, data = tiny_adapter
    info = _tiny_run(tmp_path, tiny_model_dir, data, "fit", "--fit-minutes", "30")
    assert info["fit"]["examples"] == info["fit"]["of"] == 3 and info["fit"]["probe_tokens_per_second"] > 0
    assert info["conversations"] == 3 and info["steps"] == 2
    # the probe's forward and backward passes leave no trace: the same weights as the run without a budget
    before, after = (
        load_file(first / "adapter_model.safetensors"),
        load_file(tmp_path / "fit" / "adapter_model.safetensors"),
    )
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert json.loads((tmp_path / "fit-run" / train_lora.FIT_FILE).read_text(encoding="utf-8")) == info["fit"]


def test_a_budget_trains_the_first_examples_it_fits_and_refuses_one_that_fits_none(
    tmp_path, tiny_model_dir, tiny_adapter, monkeypatch
):
    _, data = tiny_adapter
    # no example fits once loading the model has spent the budget
    with pytest.raises(SystemExit, match=r"--fit-minutes 0.0001: no example fits at \d+ tokens/s measured here"):
        _tiny_run(tmp_path, tiny_model_dir, data, "none", "--fit-minutes", "0.0001")
    # a budget that fits two of the three: the first two are trained (the clock is the probe's, faked here)
    fit = {"minutes": 1.0, "probe_tokens_per_second": 1.0, "examples": 2, "of": 3}
    monkeypatch.setattr(train_lora, "fit_examples", lambda *a: fit)
    info = _tiny_run(tmp_path, tiny_model_dir, data, "two", "--fit-minutes", "1", "--max-steps", "0")
    assert info["fit"] == fit and info["conversations"] == 2 and info["steps"] == 2 and info["epochs"] == 1.0


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
        # The text the agent prompts with, up to the last loss token (the patient's last message after its marker
        # cannot change the loss of a causal model: it is not trained on).
        text = tok.decode(example["input_ids"])
        assert agent_text.startswith(text) and text.endswith("@PATIENT") and len(text) < len(agent_text)
        mask = train_lora.with_turn_stops(tok, ref["input_ids"], ref["assistant_masks"])
        assert sum(mask) > sum(ref["assistant_masks"])
        n = len(example["input_ids"])
        assert example["labels"] == [t if bit else -100 for t, bit in zip(ref["input_ids"][:n], mask[:n], strict=True)]
        assert not any(mask[n:])


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
