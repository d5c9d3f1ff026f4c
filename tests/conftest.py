"""Shared pytest fixtures."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

# training/ holds scripts, not a package: its modules are imported by name, as they import each other.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))
# bench/servers.py starts and stops the local servers of the end-to-end tests and of the benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
# vLLM's CPU build has an environment of its own (make vllm): its test runs with `make test-vllm`, which names it.
collect_ignore = [] if os.environ.get("PPSF_VLLM_PYTHON") else ["test_vllm.py"]
# The CLI runs of the tests (and their subprocesses) file prefix states here, not in the user's cache.
os.environ["PPSF_PREFIXES"] = tempfile.mkdtemp(prefix="ppsf-test-prefixes-")

# --- Models for the agent runner (agent/models.py, agent/generation.py) --------------------------------------


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    """The default SmolLM2 converted to safetensors, in the user's PPSF cache (the app's own path).

    The first session on a machine pays the one-time GGUF conversion (~20-30 s); later ones reuse it.
    """
    from agent.engine.models import default_model_dir as ensure_default_model

    return ensure_default_model()


@pytest.fixture(scope="session")
def smollm_tokenizer(default_model_dir: Path):
    """The default model's tokenizer (byte-level BPE, 49152 ids, EOS <|im_end|>)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(default_model_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, smollm_tokenizer) -> Path:
    """A randomly initialised 2-layer Llama with the SmolLM2 tokenizer, saved as a model folder.

    Untied embeddings: a random model with a tied lm_head mostly repeats its input token, which would
    make greedy-equivalence tests trivial; untied, it writes varied text with clear argmax margins.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(smollm_tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        bos_token_id=smollm_tokenizer.bos_token_id,
        eos_token_id=smollm_tokenizer.eos_token_id,
        pad_token_id=smollm_tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    smollm_tokenizer.save_pretrained(path)
    return path


# --- Training data and a tiny trained adapter (tests/test_generate_data.py ... test_card.py) ---------------------


@pytest.fixture(scope="session")
def names():
    import generate_data as gd

    return gd.build_names()


@pytest.fixture(scope="session")
def conversations(names):
    import generate_data as gd

    return gd.train_conversations(60, seed=3, names=names)


@pytest.fixture(scope="session")
def extended_conversations(names):
    import generate_data as gd

    return gd.train_conversations(60, seed=3, names=names, extended=True)


@pytest.fixture(scope="session")
def cases(names):
    import generate_data as gd

    return gd.eval_cases(seed=3, names=names)


@pytest.fixture(scope="session")
def repo_tokenizer():
    from agent import ppsf

    return ppsf.load_tokenizer()


@pytest.fixture(scope="session")
def tiny_adapter(tmp_path_factory, tiny_model_dir, names):
    import generate_data as gd
    import train_lora

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
