"""The repo root is a Hub tokenizer repo: generated files in sync, loadable by transformers 5.x and 4.57."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ppsf_helpers import repo_tokenizer

from agent.ppsf import REPO_ROOT

TF4_PYTHON = Path(os.environ.get("PPSF_TF4_PYTHON", REPO_ROOT / ".venv-tf4" / "bin" / "python"))


def test_generated_files_have_not_drifted():
    result = subprocess.run(
        [sys.executable, "scripts/build_repo.py", "--check"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_embedded_template_is_the_jinja_file():
    config = json.loads((REPO_ROOT / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == (REPO_ROOT / "chat_template.jinja").read_text(encoding="utf-8")


def test_config_has_no_machine_local_keys():
    config = json.loads((REPO_ROOT / "tokenizer_config.json").read_text(encoding="utf-8"))
    text = json.dumps(config)
    for key in ("is_local", "local_files_only", "name_or_path", "_commit_hash", "backend"):
        assert key not in config
    assert str(REPO_ROOT) not in text and "/home/" not in text and "site-packages" not in text
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_no_marker_is_an_added_token():
    tok = repo_tokenizer()
    added = {t.content for t in tok.added_tokens_decoder.values()}
    assert not any(t.startswith("@") for t in added)
    assert tok.convert_ids_to_tokens(tok.encode("@PATIENT", add_special_tokens=False))[0] == "@"


@pytest.mark.parametrize(
    "text",
    [
        "Parol ne işe yarar? Boğazım ağrıyor; İIıi ŞşĞğÜüÖöÇç",
        "What is paracetamol used for?",
        "Реши задачу по инструкции ниже. Не давай никаких объяснений.",
        '@FORMAT PPSF/1.0\n\n@PATIENT\n\\@x  {"a": [1, 2.5]}\t\r\n',
    ],
)
def test_encode_decode_round_trip(text):
    tok = repo_tokenizer()
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert tok.encode(text) == ids  # nothing is added around a prompt


def test_tokenizer_matches_the_default_model():
    from agent.ppsf import load_gguf_tokenizer

    gguf = load_gguf_tokenizer()
    tok = repo_tokenizer()
    sample = "@PHARMACIST\nParol (parasetamol) ağrı kesicidir. Привет!"
    assert tok.encode(sample) == gguf.encode(sample)
    assert (tok.eos_token, len(tok)) == (gguf.eos_token, len(gguf))


def test_loads_in_transformers_4_57():
    assert TF4_PYTHON.is_file(), f"{TF4_PYTHON} is missing: run `make setup` (it builds the transformers 4.57 venv)"
    script = textwrap.dedent(
        """
        import json, pathlib, sys, transformers
        from transformers import AutoTokenizer
        assert transformers.__version__.startswith("4.57."), transformers.__version__
        tok = AutoTokenizer.from_pretrained(sys.argv[1])
        results = []
        for path in sorted(pathlib.Path(sys.argv[1], "spec", "golden").glob("*.json")):
            case = json.loads(path.read_text(encoding="utf-8"))
            gen = case["add_generation_prompt"]
            out = tok.apply_chat_template(case["messages"], add_generation_prompt=gen, tokenize=False)
            results.append(out == case["expected"])
        text = "Boğazım ağrıyor. Привет"
        print(json.dumps({"golden": results, "roundtrip": tok.decode(tok.encode(text)) == text}))
        """
    )
    result = subprocess.run(
        [str(TF4_PYTHON), "-c", script, str(REPO_ROOT)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"golden": [True, True], "roundtrip": True}
