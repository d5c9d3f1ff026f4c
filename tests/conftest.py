"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

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
