"""vLLM for real: its CPU build (`make vllm`, an environment of its own) serving the exported model on 127.0.0.1.

The server runs the merged model folder (agent.export) with the PPSF chat template the folder ships, and parses
replies with the PPSF ToolParser plugin (agent/ppsf/vllm_tool_parser.py); requests carry the PPSF stop strings.
(a) a raw /v1/chat/completions request with `tools` gets OpenAI `tool_calls`, streamed and not, the same calls
the local engine writes for the same prompt; (b) `python -m agent --backend openai --base-url ...` answers end
to end with the same first call as the local backend. `make test-vllm` runs this file (`.ci/run` does).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from servers import VLLM_PYTHON, vllm_serve

from agent.ppsf import STOP_STRINGS

QUESTIONS = ["Parol ne işe yarar?", "Can I take ibuprofen with warfarin?"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default tuned model as a plain model folder (no GGUF)."""
    from agent.export import export

    return export(tmp_path_factory.mktemp("export") / "ppsf", gguf=())["folder"]


@pytest.fixture(scope="module")
def server(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert VLLM_PYTHON.is_file(), f"no vLLM environment at {VLLM_PYTHON}: run `make vllm`"
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    with vllm_serve(exported, log, max_num_seqs=4) as url:
        yield url


@pytest.fixture(scope="module")
def local(exported: Path):
    from agent.engine.models import load_model

    return load_model(str(exported), device="cpu", adapter=None)


def _openai(messages: list[dict]) -> list[dict]:
    """Messages in OpenAI's wire form: calls with ids and JSON-string arguments, tool results naming their call."""
    out, last = [], None
    for i, message in enumerate(messages):
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = last = [
                {"id": f"call_{i}_{j}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(
                    c["arguments"], ensure_ascii=False)}} for j, c in enumerate(message["tool_calls"])
            ]  # fmt: skip
        if message["role"] == "tool":
            message["tool_call_id"] = last[0]["id"]
        out.append(message)
    return out


def _request(exported: Path, question: str) -> dict:
    """The agent's first prompt as a chat request: system prompt, the demonstration, the question, the tools the
    model was trained on, agent mode (no generation prompt: the model writes its own blocks), the PPSF stops."""
    from agent.pharmacy import SYSTEM_PROMPT, demo_examples

    tools = json.loads((exported / "tools.json").read_text(encoding="utf-8"))
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, *demo_examples(), {"role": "user", "content": question}]
    return {
        "messages": _openai(messages),
        "tools": tools,
        "stop": list(STOP_STRINGS),
        "temperature": 0,
        "max_tokens": 200,
        "extra_body": {"add_generation_prompt": False},
    }


def _local_calls(local, request: dict) -> tuple[int, list[tuple[str, dict]]]:
    """The prompt's length and the calls the local engine writes for it, parsed with the repo's response_template."""
    from agent.engine.generation import CachedGenerator
    from agent.ppsf import parse_reply

    model, tokenizer = local
    prompt = tokenizer.apply_chat_template(request["messages"], tools=request["tools"], tokenize=False)
    generated = CachedGenerator(model, tokenizer).generate(prompt, max_new_tokens=request["max_tokens"])
    message = parse_reply(tokenizer, generated.text, prefix=prompt)
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return generated.prompt_tokens, calls


@pytest.mark.parametrize("question", QUESTIONS)
def test_chat_completions_return_openai_tool_calls(server, exported, local, question):
    client = openai.OpenAI(base_url=server, api_key="EMPTY", max_retries=0, timeout=300)
    request = _request(exported, question)
    prompt_tokens, expected = _local_calls(local, request)
    assert expected, "the tuned model writes a call for this question on the local engine"

    reply = client.chat.completions.create(model=str(exported), **request)
    assert reply.usage.prompt_tokens == prompt_tokens  # vLLM rendered the same prompt from the folder's template
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert all(c.type == "function" and c.id for c in choice.message.tool_calls)
    assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == expected
    assert not choice.message.content  # the turn is its calls: no PPSF markup leaks into the content

    chunks = list(client.chat.completions.create(model=str(exported), stream=True, **request))
    calls = [c for chunk in chunks for ch in chunk.choices for c in ch.delta.tool_calls or []]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == expected
    assert len({c.id for c in calls}) == len(calls) and [c.index for c in calls] == list(range(len(calls)))
    assert not "".join(ch.delta.content or "" for chunk in chunks for ch in chunk.choices)
    assert [ch.finish_reason for chunk in chunks for ch in chunk.choices if ch.finish_reason] == ["tool_calls"]


def test_the_cli_answers_through_vllm_with_the_local_first_call(server, capsys):
    from agent.cli import main
    from agent.engine.models import load_model
    from agent.pharmacy import pharmacist_agent

    agent = pharmacist_agent(*load_model(device="cpu", dtype="float32"))  # the local backend's model and agent
    for question in QUESTIONS:
        assert main(["--backend", "openai", "--base-url", server, "--json", question]) == 0
        out = json.loads(capsys.readouterr().out)
        served = [m for m in out["messages"] if m["role"] == "assistant"]
        first = agent.next_message(question)  # the local backend's first message: calls as {"name", "arguments"}
        assert first.get("tool_calls"), first
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in served[0]["tool_calls"]]
        assert calls == [(c["name"], c["arguments"]) for c in first["tool_calls"]]
        assert any(m["role"] == "tool" for m in out["messages"])  # the tool ran
        assert served[-1]["role"] == "assistant" and served[-1].get("content") and not served[-1].get("tool_calls")
