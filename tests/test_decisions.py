"""Examples that end at the model's decision (training/decisions.py), the compact tools block, LoRA on the top
layers with the shared prefix computed once (training/shared_prefix.py)."""

from __future__ import annotations

import json
import random

import pytest
import torch
import train_lora
from decisions import decision_rows, exchanges

from agent.engine.toolbox import compact_schema, fit_schema, tool_schema
from agent.pharmacy.tools import PHARMACY_TOOLS


@pytest.fixture(scope="module")
def rows(conversations) -> list[dict]:
    rng = random.Random(0)
    return [d for c in conversations[:12] for d in decision_rows(c, rng, context=0.3, after_results=1.0)]


@pytest.fixture(scope="module")
def train_tokenizer(repo_tokenizer):
    import copy

    tok = copy.deepcopy(repo_tokenizer)
    tok.chat_template = train_lora.train_template()
    return tok


def test_every_exchange_gives_its_first_decision_and_its_answer_marker(conversations, rows):
    firsts = sum(
        1
        for c in conversations[:12]
        for turn in exchanges(c["messages"])[1]
        if any(m["role"] == "assistant" for m in turn)
    )
    assert sum(1 for r in rows if r["loss"] == "decision") >= firsts
    assert any(r["loss"] == "marker" for r in rows)
    for r in rows:  # the example ends one message after its decision (that message renders the stop marker)
        last = max(i for i, m in enumerate(r["messages"]) if m["role"] == "assistant")
        assert last >= len(r["messages"]) - 2 and r["messages"][0]["role"] == "system"


def test_a_decision_example_trains_only_its_call_or_text_and_the_stop_and_ends_there(rows, train_tokenizer):
    for row in (r for r in rows if r["loss"] == "decision"):
        example = train_lora.tokenize(train_tokenizer, row)
        ids, mask = example["input_ids"], example["assistant_masks"]
        trained = train_tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m])
        assert mask[-1] == 1 and len(train_lora._spans(mask)) == 1
        decision = max((m for m in row["messages"] if m["role"] == "assistant"), key=row["messages"].index)
        if decision.get("tool_calls"):
            assert trained.startswith(("@TOOL_CALL", "@THOUGHT")) and "\n@TOOL_CALL\n" in "\n" + trained
            assert decision["tool_calls"][0]["function"]["name"] in trained
        else:
            assert ("@PHARMACIST\n" + decision["content"][:20]) in trained
        assert trained.rstrip().endswith(("@TOOL_RESPONSE", "@PATIENT"))


def test_an_answer_the_tools_write_trains_only_the_marker(rows, train_tokenizer):
    for row in (r for r in rows if r["loss"] == "marker"):
        example = train_lora.tokenize(train_tokenizer, row)
        pairs = zip(example["input_ids"], example["assistant_masks"], strict=True)
        trained = train_tokenizer.decode([i for i, m in pairs if m])
        assert trained.strip().endswith("@PHARMACIST") and example["assistant_masks"][-1] == 1
        assert trained.count("@") == 1 or trained.startswith("@THOUGHT")


def test_an_unknown_loss_kind_is_refused(rows, train_tokenizer):
    with pytest.raises(ValueError, match="'everything'"):
        train_lora.tokenize(train_tokenizer, rows[0] | {"loss": "everything"})


def test_the_compact_tools_block_fits_every_tool_and_is_shorter(repo_tokenizer):
    for fn in PHARMACY_TOOLS:
        full = tool_schema(fn)
        compact = compact_schema(full)
        assert fit_schema(fn, compact) == compact
        params = compact["function"]["parameters"]["properties"]
        assert params.keys() == full["function"]["parameters"]["properties"].keys()
        assert not any("description" in p for p in params.values())
        assert compact["function"]["description"].endswith(".")
        assert len(repo_tokenizer(str(compact))["input_ids"]) < len(repo_tokenizer(str(full))["input_ids"])


def test_the_shared_prefix_gives_the_plain_forward_passs_loss_and_gradients(tiny_model_dir, rows, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = train_lora.train_template()
    argv = ["--max-steps", "1", "--device", "cpu", "--dropout", "0", "--no-bf16", "--layers", "1"]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trainer = train_lora.build_trainer(
        model, tok, rows[:6], train_lora.parse_args([*argv, "--work-dir", str(tmp_path)])
    )
    prefix = trainer.shared_prefix
    assert prefix is not None and len(prefix) > 64  # the header, system prompt and tools block
    trainer.model.train()
    results = []
    for shared in (prefix, None):
        trainer.shared_prefix = shared
        for example in list(trainer.get_train_dataloader())[:3]:
            batch = trainer._prepare_inputs(example)
            assert prefix.starts(batch["input_ids"])
            trainer.model.zero_grad()
            with trainer.compute_loss_context_manager():
                loss = trainer.compute_loss(trainer.model, dict(batch))
            loss.backward()
            grads = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
            results.append((loss.item(), grads))
    assert any(g.abs().sum() > 0 for _, g in results)
    for (a_loss, a_grads), (b_loss, b_grads) in zip(results[:3], results[3:], strict=True):
        assert a_loss == pytest.approx(b_loss, rel=1e-5)
        assert torch.allclose(a_grads, b_grads, rtol=1e-4, atol=1e-7)
    lower = trainer.model.get_base_model().model.layers[0]
    assert not any("lora" in n for n, _ in lower.named_parameters())  # nothing below the split is trained


@pytest.mark.parametrize("layers", ["1", "0"])
def test_a_base_prefix_gives_the_loss_of_the_prefix_read_with_the_adapter_off(tiny_model_dir, rows, tmp_path, layers):
    """--base-prefix: the prefix's keys and values are the base model's (activated LoRA); the example's own tokens
    see the adapter. Checked against transformers' own cached forward pass, with an adapter that is not zero."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = train_lora.train_template()
    argv = ["--max-steps", "1", "--device", "cpu", "--dropout", "0", "--no-bf16", "--layers", layers]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    args = train_lora.parse_args([*argv, "--base-prefix", "--work-dir", str(tmp_path)])
    torch.manual_seed(0)
    trainer = train_lora.build_trainer(model, tok, rows[:6], args)
    peft_model = trainer.model
    with torch.no_grad():  # LoRA starts as a no-op (B = 0): make it act, or adapter on and off would agree
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.05)
    train_lora.use_shared_prefix(trainer, int(layers), base=True)  # again: the prefix of the adapter now set
    prefix = trainer.shared_prefix
    assert prefix is not None and prefix.base and len(prefix) > 64
    n = len(prefix)
    # it ends where the agent's prefix cache ends (the block boundary before "@PATIENT"), the engine reads just that
    assert tok.decode(prefix.ids[0]).endswith("\n\n") and tok.decode(trainer.train_dataset["input_ids"][0][n]) == "@"
    peft_model.train()
    for example in list(trainer.get_train_dataloader())[:2]:
        batch = trainer._prepare_inputs(example)
        ids, labels = batch["input_ids"], batch["labels"]
        peft_model.zero_grad()
        loss = trainer.compute_loss(peft_model, dict(batch))
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in peft_model.parameters() if p.grad is not None])
        peft_model.zero_grad()
        with torch.no_grad(), peft_model.disable_adapter():
            cache = peft_model(ids[:, :n], use_cache=True, past_key_values=DynamicCache()).past_key_values
        logits = peft_model(ids[:, n:], past_key_values=cache, use_cache=True).logits[:, :-1]
        target = labels[:, n + 1 :]
        expected = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=-100)
        expected.backward()
        want = torch.cat([p.grad.flatten() for p in peft_model.parameters() if p.grad is not None])
        assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
        assert want.abs().sum() > 0 and (grads - want).abs().max() <= 1e-3 * want.abs().max(), (
            (grads - want).abs().max()
        )
        with torch.no_grad():  # and it is not the plain forward pass: the prefix is read without the adapter
            plain = peft_model(ids, use_cache=False).logits[:, n:-1]
            plain_loss = torch.nn.functional.cross_entropy(plain.flatten(0, 1), target.flatten(), ignore_index=-100)
        assert abs(plain_loss.item() - loss.item()) > 1e-4


def test_routed_examples_show_the_routed_tool_and_those_called_before_the_decision(conversations):
    rng = random.Random(0)
    routed = [d for c in conversations[:12] for d in decision_rows(c, rng, context=1.0, after_results=1.0, routed=True)]
    assert routed and all(r["tools"] != conversations[0]["tools"] for r in routed)
    for row in routed:
        shown = [t["function"]["name"] for t in row["tools"]]
        _, turns = exchanges(row["messages"])
        turn = next(t for t in reversed(turns) if any(m["role"] == "assistant" for m in t))  # the decision's
        replies = [m for m in turn if m["role"] == "assistant"]
        first_calls = replies[0].get("tool_calls") or []
        expected = {c["function"]["name"] for m in replies[:-1] for c in m.get("tool_calls") or []}
        expected |= {first_calls[0]["function"]["name"]} if first_calls else set()
        assert set(shown) == expected and len(shown) == len(set(shown))
        for before in turns[: turns.index(turn)]:  # the exchange before: the patient and the answer
            assert all(m["role"] in ("user", "assistant") and not m.get("tool_calls") for m in before)


def test_the_patient_written_calls_are_routed_decision_examples(train_tokenizer):
    import generate_data as gd
    import recipe
    import router
    from decisions import shown_tools

    tools = gd.tools_block(compact=True)
    head = [{"role": "system", "content": "S"}]
    rows = recipe.written_rows(head, tools, routed=True, pools=router.POOLS)
    assert len(rows) > 1000
    for row in rows[::97]:
        call = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
        assert [t["function"]["name"] for t in row["tools"]] == [call["name"]]
        assert row["tools"] == shown_tools(tools, row["messages"][-3:-1])
        example = train_lora.tokenize(train_tokenizer, row)
        pairs = zip(example["input_ids"], example["assistant_masks"], strict=True)
        trained = train_tokenizer.decode([i for i, m in pairs if m])
        assert trained.startswith("@TOOL_CALL") and trained.rstrip().endswith("@TOOL_RESPONSE")
        assert json.loads(call["arguments"]) and call["name"] in trained
    assert {len(r["tools"]) for r in recipe.written_rows(head, tools, routed=False, pools=router.POOLS)} == {len(tools)}


def test_an_adapter_trained_on_routed_tools_records_every_tool_and_how_it_was_shown(tmp_path, conversations):
    rng = random.Random(1)
    routed = [d | {"shown": "routed"} for c in conversations[:20] for d in decision_rows(c, rng, 0.0, 1.0, True)]
    train_lora._record_tools(tmp_path, routed)
    recorded = json.loads((tmp_path / "tools.json").read_text(encoding="utf-8"))
    assert {t["function"]["name"] for t in recorded} == {t["function"]["name"] for r in routed for t in r["tools"]}
    assert (tmp_path / "tools_shown.txt").read_text(encoding="utf-8") == "routed\n"
