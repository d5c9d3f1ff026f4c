"""End to end with the real default model (SmolLM2-135M-Instruct from the bundled GGUF), offline, on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent.engine.agent import AgentConfig
from agent.engine.models import load_model
from agent.pharmacy import demo_examples, pharmacist_agent
from agent.ppsf import REPO_ROOT

pytestmark = pytest.mark.slow
QUESTION = "Parol ne işe yarar?"


@pytest.fixture(scope="module")
def default_model():
    return load_model(None, device="cpu")


def calls_of(messages: list[dict]) -> list[dict]:
    return [c["function"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]


def test_parol_question_calls_search_drug_and_answers(default_model):
    model, tokenizer = default_model
    config = AgentConfig(max_new_tokens=96, max_steps=4)
    agent = pharmacist_agent(model, tokenizer, config=config, examples=demo_examples())
    result = agent.run(QUESTION)
    calls = calls_of(result.messages)
    assert calls and calls[0]["name"] == "search_drug", result.messages
    tool = next(m for m in result.messages if m["role"] == "tool")
    assert tool["name"] == "search_drug" and json.loads(tool["content"])
    assert result.message["role"] == "assistant" and result.message["content"].strip()
    steps = result.stats.steps
    assert steps[0].stop_reason == "tool_call"  # the step ended with its call, cut at the closing brace
    assert all(s.cached_tokens > 0 and s.prefill_tokens < s.prompt_tokens for s in steps[1:])


def test_default_model_is_tuned_and_answers_from_the_tool_without_examples(default_model):
    """The default model carries the repo's PPSF adapter: no worked example, a lookup, an answer from its result."""
    assert (REPO_ROOT / "adapter" / "adapter_config.json").is_file()
    model, tokenizer = default_model
    config = AgentConfig(max_new_tokens=96, max_steps=3)
    agent = pharmacist_agent(model, tokenizer, config=config)
    result = agent.run(QUESTION)
    calls = calls_of(result.messages)
    # Exactly the lookup (the stage-2 adapter went on to check_interactions(["Parol", "yarar"]); stages 3-8 do not).
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [("search_drug", {"drug": "Parol"})], calls
    tool = json.loads(next(m for m in result.messages if m["role"] == "tool")["content"])
    assert tool["usage"] in result.message["content"] and tool["active_ingredient"] in result.message["content"]


def test_greedy_runs_are_identical_with_and_without_cache_reuse(default_model):
    model, tokenizer = default_model
    runs = []
    for reuse in (True, False):
        config = AgentConfig(max_new_tokens=64, max_steps=3, reuse_cache=reuse)
        agent = pharmacist_agent(model, tokenizer, config=config, examples=demo_examples())
        result = agent.run(QUESTION)
        runs.append((result.messages, [s.prefill_tokens for s in result.stats.steps]))
    (with_reuse, prefill_reuse), (without, prefill_fresh) = runs
    assert with_reuse == without
    assert sum(prefill_reuse) < sum(prefill_fresh)


def test_cli_runs_the_demo_offline(tmp_path):
    transcript = tmp_path / "t.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "agent", QUESTION, "--json", "--max-new-tokens", "96", "--transcript", str(transcript)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert calls_of(out["messages"])[0]["name"] == "search_drug"
    assert out["messages"][-1]["role"] == "assistant" and out["stats"]["steps"] >= 2
    lines = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert {line["type"] for line in lines} >= {"message", "stats"}


def test_the_next_cli_run_starts_from_the_prefix_state_on_disk(tmp_path, default_model_dir):
    prefixes = tmp_path / "prefixes"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PPSF_PREFIXES": str(prefixes)}

    def first_step(*flags: str) -> dict:
        command = [sys.executable, "-m", "agent", QUESTION, "--json", "--max-steps", "1", "--max-new-tokens", "48"]
        result = subprocess.run([*command, *flags], cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])["stats"]["per_step"][0]

    cold = first_step()
    (state,) = prefixes.glob("*.kv")
    warm = first_step()
    assert cold["cached_tokens"] == 0 and warm["cached_tokens"] > 0  # the format header, system prompt, tools
    assert warm["prefill_tokens"] == cold["prefill_tokens"] - warm["cached_tokens"]
    assert first_step("--no-prefix-store")["cached_tokens"] == 0
    assert list(prefixes.glob("*.kv")) == [state]


def test_cli_interactive_chat_with_a_russian_system_file(tmp_path):
    system = tmp_path / "system.txt"
    # Seed 001's strict-answer prompt (first sentences): any language must reach the model intact.
    system.write_text("Реши задачу по инструкции ниже. Не давай никаких объяснений.", encoding="utf-8")
    transcript = tmp_path / "chat.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "--system-file",
            str(system),
            "--no-stream",
            "--max-steps",
            "2",
            "--max-new-tokens",
            "48",
            "--transcript",
            str(transcript),
        ],
        cwd=REPO_ROOT,
        input="Merhaba\nParol nedir?\n",
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    runs = {line["run"] for line in lines}
    assert len(runs) == 2  # two questions, one conversation continued
    systems = [
        line["message"]["content"]
        for line in lines
        if line["type"] == "message" and line["message"]["role"] == "system"
    ]
    assert systems and all(s.startswith("Реши задачу") for s in systems)
    users = [
        line["message"]["content"] for line in lines if line["type"] == "message" and line["message"]["role"] == "user"
    ]
    assert users[-1] == "Parol nedir?" and "Merhaba" in users
    assert result.stderr.count("steps,") == 2  # one summary line per answer


def test_cli_reports_a_bad_system_file(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "agent", "x", "--system-file", str(tmp_path / "missing.txt")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert result.returncode == 2 and "cannot read --system-file" in result.stderr
    assert "Traceback" not in result.stderr
