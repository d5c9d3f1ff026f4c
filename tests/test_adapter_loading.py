"""The adapter in agent.engine.models and the CLI: merged, checked, examples only without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


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


def test_an_adapter_trained_with_a_base_read_prefix_keeps_the_base_model_to_read_the_prefix(
    tmp_path, tiny_model_dir, tiny_adapter
):
    import json
    import shutil

    import torch

    from agent.engine.generation import CachedGenerator
    from agent.engine.models import ModelLoadError, load_model, prefix_reader

    folder = tmp_path / "adapter"
    shutil.copytree(tiny_adapter[0], folder)
    info = folder / "training_info.json"
    record = json.loads(info.read_text(encoding="utf-8")) if info.is_file() else {}
    plain, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter="none")
    merged, tokenizer = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(folder))
    assert prefix_reader(merged) is None and CachedGenerator(merged, tokenizer).prefix_model is None
    info.write_text(json.dumps(record | {"base_prefix": True}), encoding="utf-8")
    merged, tokenizer = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(folder))
    base = prefix_reader(merged)
    assert base is not None and CachedGenerator(merged, tokenizer).prefix_model is base
    weights = dict(plain.named_parameters())
    assert all(torch.equal(p, weights[n]) for n, p in base.named_parameters())  # the plain model's own weights
    assert not all(torch.equal(p, weights[n]) for n, p in merged.named_parameters())  # the merged one differs
    info.write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="training_info.json: not a readable training record"):
        load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(folder))


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
    from types import SimpleNamespace

    from agent import cli
    from agent.engine import backends, models

    seen: dict = {}
    monkeypatch.setattr(models, "resolve_adapter", lambda a, m: Path("adapter") if a == "auto" else None)
    monkeypatch.setattr(models, "recorded_tools", lambda *folders: None)

    def fake_load(model, device, dtype, adapter):
        seen["adapter"] = adapter
        return object(), object()

    def fake_agent(backend, **kwargs):
        seen["tuned"], seen["examples"] = backend.tuned, kwargs["examples"]
        raise _Stop

    monkeypatch.setattr(models, "load_model", fake_load)
    # The backend is built (build_backend), but no generator runs: the agent is never made.
    monkeypatch.setattr(backends, "CachedGenerator", lambda *args, **kwargs: SimpleNamespace(context_length=None))
    monkeypatch.setattr(cli, "pharmacist_agent", fake_agent)
    with pytest.raises(_Stop):
        cli.main(["Parol ne işe yarar?", *argv])
    assert (seen["adapter"] is not None) == adapter_loaded == seen["tuned"]
    assert bool(seen["examples"]) == examples
