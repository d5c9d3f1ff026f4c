"""Tokenizers that speak PPSF: this repo as a user loads it, or any tokenizer with the templates put on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .templates import chat_template, response_template

# The Hub repo when this package runs from a checkout of it (the repo root holds agent/); an installed
# package has no repo around it and builds the same tokenizer from the bundled GGUF instead.
REPO_ROOT = Path(__file__).resolve().parents[2]


class PPSFRepoError(RuntimeError):
    """The repo's format files are missing or unreadable."""


def load_gguf_tokenizer() -> Any:
    """SmolLM2's tokenizer, read from the bundled GGUF (the source of the repo's tokenizer.json)."""
    from transformers import AutoTokenizer

    from ..bundled_model import default_gguf_path

    path = default_gguf_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def load_tokenizer(root: str | Path | None = None) -> Any:
    """This repo as a user gets it: `AutoTokenizer.from_pretrained(<repo>)`.

    root: a folder holding the repo's tokenizer files; default: the checkout this package runs from, or
    (installed without one) the bundled GGUF's tokenizer with this package's templates, the same files.
    """
    from transformers import AutoTokenizer

    if root is None and not (REPO_ROOT / "tokenizer_config.json").is_file():
        return use_ppsf(load_gguf_tokenizer())
    folder = Path(root) if root is not None else REPO_ROOT
    if not (folder / "tokenizer_config.json").is_file():
        raise PPSFRepoError(f"{folder} holds no tokenizer_config.json: not a PPSF tokenizer repo")
    return AutoTokenizer.from_pretrained(str(folder))


def use_ppsf(tokenizer: Any) -> Any:
    """Install this package's chat and response templates on any tokenizer (in place) and return it."""
    tokenizer.chat_template = chat_template()
    tokenizer.response_template = response_template()
    return tokenizer
