"""PPSF v1.1: where the format lives in this repo, and how to put it on a tokenizer.

The chat template and the response template are files of the Hub repo (the project root); this module
only finds and installs them, so the agent prompts and parses with this repo's format whatever template
a model's own tokenizer carries.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent

# Blocks an assistant turn may write, and blocks only the prompt writes (the agent stops on these).
ASSISTANT_MARKERS = ("@THOUGHT", "@PHARMACIST", "@TOOL_CALL")
FOREIGN_MARKERS = ("@PATIENT", "@TOOL_RESPONSE", "@SYSTEM", "@REFERENCE", "@TOOLS", "@FORMAT")


class PPSFRepoError(RuntimeError):
    """The repo's format files are missing or unreadable."""


def load_gguf_tokenizer() -> Any:
    """SmolLM2's tokenizer, read from the bundled GGUF (the source of the repo's tokenizer.json)."""
    from transformers import AutoTokenizer

    from .models import default_gguf_path

    path = default_gguf_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@lru_cache(maxsize=4)
def _repo_config(root: str) -> dict:
    config_path = Path(root) / "tokenizer_config.json"
    try:
        return json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PPSFRepoError(f"cannot read {config_path}: {e}") from e


def chat_template(root: Path = REPO_ROOT) -> str:
    """The PPSF chat template text (the default one, as `chat_template.jinja` holds it)."""
    return _repo_config(str(root))["chat_template"]


def response_template(root: Path = REPO_ROOT) -> dict:
    """The transformers `response_template` that parses PPSF assistant output."""
    return _repo_config(str(root))["response_template"]


def load_tokenizer(root: Path = REPO_ROOT) -> Any:
    """This repo as a user gets it: `AutoTokenizer.from_pretrained(<repo>)`."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(root))


def use_ppsf(tokenizer: Any, root: Path = REPO_ROOT) -> Any:
    """Install this repo's chat and response templates on any tokenizer (in place) and return it."""
    tokenizer.chat_template = chat_template(root)
    tokenizer.response_template = response_template(root)
    return tokenizer


# transformers' ResponseParser searches from its last region boundary to the end of what it was fed, so a
# reply fed whole costs (boundaries x length); fed in bounded pieces, as a token stream is, it is linear.
PARSE_PIECE = 256


def feed(parser: Any, text: str) -> list[dict]:
    """Feed text to a transformers ResponseParser in pieces of at most PARSE_PIECE characters; its events."""
    events: list[dict] = []
    for i in range(0, len(text), PARSE_PIECE):
        events += parser.feed(text[i : i + PARSE_PIECE])
    return events


def parse_reply(tokenizer: Any, text: str, prefix: str, tools: list | None = None) -> dict:
    """`tokenizer.parse_response(text, prefix=prefix)` in time linear in len(text) (see PARSE_PIECE)."""
    parser = tokenizer.get_response_parser(response_template(), prefix=prefix, tools=tools)
    feed(parser, text)
    message, _ = parser.finalize()
    return message
