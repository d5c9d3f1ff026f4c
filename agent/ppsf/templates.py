"""The two templates of the format, from this package: the chat template and the response template.

`template.jinja` (package data) is the one source of the chat template; `response_template()` builds the
parser spec from the markers. scripts/build_repo.py writes the Hub files (chat_template.jinja,
tokenizer_config.json, additional_chat_templates/train.jinja) from these two, and a test keeps them equal.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files

from .markers import FOREIGN_MARKERS

GENERATION_TAG = re.compile(r"\{%-?\s*(?:end)?generation\s*-?%\}")


@lru_cache(maxsize=1)
def template_source() -> str:
    """The chat template with its {% generation %} tags (for return_assistant_tokens_mask)."""
    return files(__package__).joinpath("template.jinja").read_text(encoding="utf-8")


def chat_template() -> str:
    """The default chat template: the source without generation tags (minijinja and TGI reject them)."""
    return GENERATION_TAG.sub("", template_source())


def _text_field(marker: str, *, escape_close: str, escape_open: str) -> dict:
    """A text block (@THOUGHT, @PHARMACIST) whose escaped lines are unescaped while parsing.

    transformers' parser has no substitution, so at each escaped line the block closes and reopens around
    the escape backslash, and the pieces are joined with "". The reopen is anchored with \\G (where the
    parser resumes, right after the close) and looks back at most two characters, so a reply with many
    escaped lines parses in linear time; each block consumes the backslash on a different side of its
    close, which is what tells the two blocks' reopenings apart without looking back to the marker line.
    """
    return {
        "open_pattern": rf"(?<![^\n]){marker}\n|\G{escape_open}",
        "close_pattern": rf"{escape_close}|\n+(?=@)|\n+\Z",
        "content": "text",
        "content_args": {"strip": False},
        "repeats": True,
        "join": "",
    }


def response_template() -> dict:
    """transformers' declarative response parser for PPSF v1.1 (see docs/format.md, "Parsing a reply")."""
    prompt_blocks = "|".join(m.lstrip("@") for m in FOREIGN_MARKERS if m != "@TOOLS")
    # The assistant message starts after the prompt's last block. The @TOOLS block is matched whole: its
    # fixed trailer holds an example "@TOOL_CALL" line that is not a call.
    tools_block = (
        r"(?<![^\n])@TOOLS\nAvailable tools:\n(?:[^\n]*\n)*?To invoke a tool respond ONLY with:\n\n"
        r'@TOOL_CALL\n\{\n  "name": "\.\.\.",\n  "arguments": \{ \.\.\. \}\n\}\n*'
    )
    prompt_block = rf"(?<![^\n])@(?:{prompt_blocks})(?![A-Z_])[^\n]*(?:\n(?!@)[^\n]*)*"
    return {
        "version": 1,
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": f"{tools_block}|{prompt_block}",
        "fields": {
            # @THOUGHT closes before the backslash and its reopening consumes it; @PHARMACIST the other way.
            "reasoning_content": _text_field(
                "@THOUGHT", escape_close=r"(?<=\n)(?=\\+@)", escape_open=r"(?<=\n)\\(?=\\*@)"
            ),
            "content": _text_field("@PHARMACIST", escape_close=r"(?<=\n)\\(?=\\*@)", escape_open=r"(?<=\n\\)(?=\\*@)"),
            "tool_calls": {
                "open_pattern": r"(?<![^\n])@TOOL_CALL\n",
                "close_pattern": r"\n+(?=@)",
                "content": "json",
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }
