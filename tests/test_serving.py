"""The scale path, end to end on CPU: a real `transformers serve` process, the official `openai` client.

1. The agent on the openai backend (agent/openai_backend.py) against `transformers serve` running the default
   SmolLM2 folder: the same loop, tools and transcript as the local engine, streamed, with the stops.
2. This repo inside the engine's own chat API: `transformers serve` on a model folder carrying this repo's
   tokenizer files returns parsed `tool_calls`, because the server applies the shipped `response_template`.

`transformers serve MODEL_DIR` pins the server to that folder (`force_model`); requests must name the model
exactly as given on the command line (the folder path), which is what `/v1/models` lists.

Forcing a continuation. A 135M base model rarely writes a tool call on its own, so where a test needs exact
text, the request carries a `generation_config` (a field `transformers serve` accepts on both endpoints) with a
`sequence_bias` that makes greedy decoding write a chosen token sequence: token k of the target gets bias
100 * 2**k when the k tokens before it have just been written, which outweighs every other bias that can
apply at that step (their sum is below 100 * 2**k) and any logit. The model still runs every step; only the
argmax is steered, as a grammar or a `logit_bias` would. Such a config carries no eos_token_id, so decoding
runs to max_tokens unless the client closes the stream.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import openai
import pytest
from ppsf_helpers import scripted_backend
from servers import transformers_serve

from agent.engine.agent import AgentConfig
from agent.engine.generation import CachedGenerator, GenerationResult
from agent.engine.openai_backend import OpenAIGenerator, ServingError
from agent.pharmacy import pharmacist_agent
from agent.ppsf import REPO_ROOT, load_tokenizer

STARTUP_TIMEOUT = 180.0  # loading 135M parameters takes ~5-10 s; a busy 2-core CI machine gets headroom
REPO_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
STOP_REASONS = {"eos", "max_new_tokens", "tool_call", "foreign_block", "next_turn"}

CALL = '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {"drug": "Parol"}\n}'
SEARCH_DRUG_SCHEMA = {
    "type": "function",
    "function": {
        "name": "search_drug",
        "description": "Look a drug up by its brand or active ingredient name.",
        "parameters": {
            "type": "object",
            "properties": {"drug": {"type": "string", "description": "Drug name, e.g. Parol."}},
            "required": ["drug"],
        },
    },
}


def search_drug(drug: str) -> dict:
    """Look a drug up by its brand or active ingredient name.

    Args:
        drug: Drug name, e.g. Parol.
    """
    known = {"parol": ("Parasetamol", "Ağrı kesici ve ateş düşürücü"), "majezik": ("Flurbiprofen", "Ağrı kesici")}
    found = known.get(drug.strip().lower())
    if found is None:
        return {"error": {"code": "not_found", "message": f"{drug} bulunamadı"}}
    return {"drug": drug, "active_ingredient": found[0], "usage": found[1]}


EXAMPLES = [  # one worked exchange, as the CLI shows a model not tuned on PPSF
    {"role": "user", "content": "Majezik ne için kullanılır?"},
    {"role": "assistant", "tool_calls": [{"name": "search_drug", "arguments": {"drug": "Majezik"}}]},
    {"role": "tool", "name": "search_drug", "content": json.dumps(search_drug("Majezik"), ensure_ascii=False)},
    {"role": "assistant", "content": "Majezik (Flurbiprofen): ağrı kesicidir."},
]


# ---- the server (bench/servers.py) ----
@pytest.fixture(scope="module")
def default_server(default_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`transformers serve` on the converted default SmolLM2 folder (its own tokenizer files)."""
    with transformers_serve(
        default_model_dir, tmp_path_factory.mktemp("serve") / "default.log", timeout=STARTUP_TIMEOUT
    ) as url:
        yield url


@pytest.fixture(scope="module")
def repo_server(default_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`transformers serve` on the default weights with THIS repo's tokenizer files (template + response_template)."""
    folder = tmp_path_factory.mktemp("smollm2-ppsf")
    for item in default_model_dir.iterdir():
        if item.suffix == ".safetensors":
            (folder / item.name).symlink_to(item)  # 500 MB of weights: no need to copy them
        elif item.is_file():
            shutil.copy2(item, folder / item.name)
    for name in REPO_TOKENIZER_FILES:
        shutil.copy2(REPO_ROOT / name, folder / name)
    with transformers_serve(folder, folder.parent / "repo.log", timeout=STARTUP_TIMEOUT) as url:
        yield url


@pytest.fixture(scope="module")
def tokenizer():
    """This repo's tokenizer: what the openai backend prompts, parses and counts with."""
    return load_tokenizer()


def forcing(tokenizer, text: str) -> tuple[dict, int]:
    """(extra_body, token count) that make a `transformers serve` greedy decode write exactly `text` (see top)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    bias = [[ids[: k + 1], 100.0 * 2.0**k] for k in range(len(ids))]
    return {"generation_config": json.dumps({"sequence_bias": bias, "do_sample": False})}, len(ids)


class Recorder:
    """Wraps a generator and keeps every (prompt, result): the agent sees the same interface."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.steps: list[tuple[str, GenerationResult]] = []

    def reset(self) -> None:
        self.inner.reset()

    def generate(self, prompt: str, **kwargs) -> GenerationResult:
        result = self.inner.generate(prompt, **kwargs)
        self.steps.append((prompt, result))
        return result


# ---- 0. the backend's request and stream handling, on a fake client (fast) ----
class FakeClient:
    """Stands in for openai.OpenAI: records completions.create() params, replays chunks, notes close()."""

    def __init__(self, chunks: list[SimpleNamespace]) -> None:
        self.chunks, self.params, self.read, self.closed = chunks, [], 0, False
        self.completions = SimpleNamespace(create=self._create)

    def _create(self, **params):
        self.params.append(params)
        return self

    def __iter__(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    def close(self) -> None:
        self.closed = True


def chunk(text: str | None = None, finish: str | None = None, usage: dict | None = None) -> SimpleNamespace:
    choices = [] if text is None else [SimpleNamespace(text=text, finish_reason=finish)]
    if usage is not None:
        details = SimpleNamespace(cached_tokens=usage.pop("cached_tokens", None))
        usage = SimpleNamespace(**usage, prompt_tokens_details=details)
    return SimpleNamespace(choices=choices, usage=usage)


def test_the_stream_is_closed_at_the_stop_and_read_no_further(tokenizer):
    call = '@TOOL_CALL\n{"name": "x", "arguments": {}}'
    client = FakeClient([chunk(call + "\n\n@TOOL"), chunk("_RESPONSE\n{}"), chunk("\n\n@PATIENT\nx")])
    result = OpenAIGenerator("m", tokenizer, client=client).generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=50)
    assert (result.stop_reason, result.text) == ("tool_call", call)
    assert client.read == 2 and client.closed  # "@TOOL_R" ruled out a second call
    (params,) = client.params
    assert params["stream"] and params["stream_options"] == {"include_usage": True} and params["max_tokens"] == 50


def test_parallel_calls_from_a_stream_that_ends_after_them(tokenizer):
    calls = '@TOOL_CALL\n{"name": "x", "arguments": {}}\n\n@TOOL_CALL\n{"name": "y", "arguments": {}}'
    client = FakeClient([chunk(calls[:30]), chunk(calls[30:] + "\n\n", finish="stop")])
    result = OpenAIGenerator("m", tokenizer, client=client).generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=50)
    assert (result.stop_reason, result.text) == ("tool_call", calls)


def test_usage_sent_after_the_last_choice_is_used(tokenizer):
    usage = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13, "cached_tokens": 6}
    client = FakeClient([chunk("@PHARMACIST\n"), chunk("Merhaba.", finish="stop"), chunk(usage=usage)])
    result = OpenAIGenerator("m", tokenizer, client=client).generate("@FORMAT PPSF/1.0\n\n", seed=3)
    assert (result.text, result.stop_reason) == ("@PHARMACIST\nMerhaba.", "eos")
    assert (result.prompt_tokens, result.cached_tokens, result.prefill_tokens, result.decoded_tokens) == (10, 6, 4, 3)
    assert client.params[0]["seed"] == 3 and client.closed


def test_token_prompt_sends_the_ids_the_local_engine_prefills(tokenizer):
    prompt = "@FORMAT PPSF/1.0\n\n@PATIENT\nParol?\n\n"
    client = FakeClient([chunk("@", finish="length")])
    result = OpenAIGenerator("m", tokenizer, client=client, token_prompt=True).generate(prompt, next_text="@")
    sent = client.params[0]["prompt"]
    joined = tokenizer(prompt + "@", add_special_tokens=False)["input_ids"]
    assert sent == joined[:-1] != tokenizer(prompt, add_special_tokens=False)["input_ids"]  # "\n\n" not merged
    assert result.prompt_tokens == len(sent) and result.stop_reason == "max_new_tokens"
    OpenAIGenerator("m", tokenizer, client=client).generate(prompt, next_text="@")
    assert client.params[1]["prompt"] == prompt  # text by default: `transformers serve` takes nothing else


# ---- 1. the agent on the openai backend ----
@pytest.mark.slow
def test_agent_runs_a_question_through_transformers_serve(default_server, tokenizer, default_model_dir, tmp_path):
    """Same loop, tools and transcript as the local engine; the first step's greedy text matches it token for token."""
    served = Recorder(OpenAIGenerator(None, tokenizer, base_url=default_server))  # None: the one model served
    events: list[dict] = []
    transcript = tmp_path / "run.jsonl"
    agent = pharmacist_agent(
        scripted_backend(served, tokenizer),
        tools=[search_drug],
        examples=EXAMPLES,
        config=AgentConfig(max_steps=3, max_new_tokens=40, transcript=transcript),
        on_event=events.append,
    )
    result = agent.run("Parol ne işe yarar?")

    # The base model's answers are poor (often empty): the loop, not the answer, is under test here.
    assert result.message["role"] == "assistant" and set(result.message) <= {"role", "content"}
    assert [m["role"] for m in result.messages[:2]] == ["system", "user"]
    assert result.messages[-1] == result.message
    assert len(result.stats.steps) == len(served.steps) >= 1
    for step, (prompt, generated) in zip(result.stats.steps, served.steps, strict=True):
        assert step.stop_reason in STOP_REASONS
        assert generated.prompt_tokens == len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        assert 1 <= generated.decoded_tokens <= 40
        if generated.stop_reason == "tool_call":
            assert generated.text.endswith("}")
    # Streamed: the agent's events came while generating, and the run ended with one final event.
    kinds = [e["type"] for e in events]
    assert kinds.count("step") == len(served.steps) and kinds[-1] == "final"
    assert {"text", "tool_call"} & set(kinds)
    # The transcript has the local engine's format: one JSON object per line, run id, type, message/stats.
    lines = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    # (call_checks: a call the agent's checks set, e.g. the medicine the patient names, beside the model's own)
    assert {line["type"] for line in lines} <= {"examples", "message", "step", "stats", "call_checks"}
    assert lines[-1]["type"] == "stats" and len({line["run"] for line in lines}) == 1
    assert [line["message"] for line in lines if line["type"] == "message"] == result.messages

    # The server decodes greedily with model.generate; the local engine with its KV-cached loop: same text.
    from agent.engine.models import load_model

    model, local_tokenizer = load_model(str(default_model_dir), device="cpu", adapter=None)  # what the server runs
    prompt, remote = served.steps[0]
    local = CachedGenerator(model, local_tokenizer).generate(prompt, max_new_tokens=40)
    assert (remote.text, remote.stop_reason) == (local.text, local.stop_reason)


@pytest.mark.slow
def test_stream_is_cut_at_the_closed_tool_call(default_server, tokenizer):
    """The server would write a call, a fake tool result and an answer; the backend returns the call, ending at '}'."""
    target = CALL + '\n\n@TOOL_RESPONSE\n{"drug": "Parol"}\n\n@PHARMACIST\nParol bir ağrı kesicidir.'
    extra_body, n_tokens = forcing(tokenizer, target)
    generator = OpenAIGenerator(None, tokenizer, base_url=default_server, extra_body=extra_body)
    pieces: list[str] = []
    result = generator.generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=n_tokens, on_text=pieces.append)
    assert result.stop_reason == "tool_call"
    assert result.text == CALL and result.text.endswith("}")
    assert "".join(pieces) == result.text and len(pieces) > 1  # streamed in pieces, never past the stop
    # The stream was closed at the stop, so no usage arrived: counts are the local tokenizer's.
    assert result.decoded_tokens == len(result.token_ids) <= n_tokens
    assert result.prompt_tokens == len(tokenizer("@FORMAT PPSF/1.0\n\n", add_special_tokens=False)["input_ids"])


@pytest.mark.slow
def test_stream_is_cut_before_a_foreign_block(default_server, tokenizer):
    target = "@PHARMACIST\nParol bir ağrı kesicidir.\n\n@PATIENT\nTeşekkürler, peki çocuklara?"
    extra_body, n_tokens = forcing(tokenizer, target)
    generator = OpenAIGenerator(None, tokenizer, base_url=default_server, extra_body=extra_body)
    pieces: list[str] = []
    result = generator.generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=n_tokens, on_text=pieces.append)
    assert (result.stop_reason, result.text) == ("foreign_block", "@PHARMACIST\nParol bir ağrı kesicidir.")
    assert "".join(pieces) == result.text


@pytest.mark.slow
def test_length_stop_reads_the_servers_usage(default_server, tokenizer):
    """Read to the end, the stream carries the server's usage; finish_reason 'length' is max_new_tokens."""
    generator = OpenAIGenerator(None, tokenizer, base_url=default_server)
    prompt = "@FORMAT PPSF/1.0\n\n@PATIENT\nParol ne işe yarar?\n\n@PHARMACIST\n"
    result = generator.generate(prompt, max_new_tokens=4)
    assert result.stop_reason in {"max_new_tokens", "eos", "foreign_block"}
    if result.stop_reason == "max_new_tokens":
        assert result.decoded_tokens == 4  # the server's completion_tokens
    assert result.prompt_tokens == len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert result.prefill_tokens == result.prompt_tokens - result.cached_tokens


@pytest.mark.slow
def test_errors_name_the_url(default_server, tokenizer):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens there once the socket closes
    with pytest.raises(ServingError, match=r"Cannot reach .*" + dead.replace(".", r"\.")):
        OpenAIGenerator("m", tokenizer, base_url=dead, max_retries=0).generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=2)

    wrong = OpenAIGenerator("no/such-model", tokenizer, base_url=default_server, max_retries=0)
    with pytest.raises(ServingError, match="does not serve model 'no/such-model'; it serves: /"):
        wrong.check()
    with pytest.raises(ServingError, match=r"HTTP 400: Server is pinned to"):  # the server's own detail
        wrong.generate("@FORMAT PPSF/1.0\n\n", max_new_tokens=2)


@pytest.mark.slow
def test_cli_openai_backend(default_server, tmp_path, capsys):
    """`python -m agent --backend openai --base-url URL` runs the same agent; --model defaults to the one served."""
    from agent.cli import main

    transcript = tmp_path / "cli.jsonl"
    argv = ["--backend", "openai", "--base-url", default_server, "--json", "--transcript", str(transcript)]
    assert main([*argv, "--max-steps", "1", "--max-new-tokens", "24", "Parol ne işe yarar?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["messages"][-1]["role"] == "assistant" and out["stats"]["steps"] >= 1
    assert transcript.read_text(encoding="utf-8").count("\n") >= 3


def test_cli_backend_errors(tmp_path, capsys):
    from agent.cli import main

    dead = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    argv = ["--backend", "openai", "--base-url", dead, "--model", "m", "--transcript", str(tmp_path / "t")]
    assert main([*argv, "q"]) == 2
    assert f"Cannot reach an OpenAI-compatible server at {dead}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--base-url", dead, "q"])  # a URL without --backend openai is a mistake, not ignored
    assert "--base-url needs --backend openai" in capsys.readouterr().err


# ---- 2. this repo in the engine's own chat API ----
def _forced_chat(url: str, tokenizer, continuation: str, stream: bool = False):
    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    model = client.models.list().data[0].id
    extra_body, n_tokens = forcing(tokenizer, continuation)
    return client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Parol ne işe yarar?"}],
        tools=[SEARCH_DRUG_SCHEMA],
        max_tokens=n_tokens,  # exactly the forced text: no EOS token lands in the parsed output
        stream=stream,
        extra_body=extra_body,
    )


# After the generation prompt ("...@PHARMACIST"), a short answer line, then a call block.
CHAT_CONTINUATION = "\nParol'e bakıyorum.\n\n" + CALL


@pytest.mark.slow
def test_repo_tokenizer_makes_the_server_return_tool_calls(repo_server, default_server, tokenizer):
    """`transformers serve` renders our chat_template and parses with our response_template.

    transformers/cli/serving/chat_completion.py parses every reply with utils.parse_assistant_message
    (non-streaming) or a ResponseParser fed token by token (streaming); both take the template from
    utils.get_response_template: the tokenizer's `response_template`, else a per-model_type fallback, which
    has no entry for SmolLM2's "llama", else None (raw text, no tool_calls). So the server can only return
    `tool_calls` here through the response_template this repo ships in tokenizer_config.json. The model's
    continuation is forced (see top) to a PPSF call after the generation prompt; the control is the same
    forced text on the default folder, whose tokenizer has no response_template: there it stays raw content.
    """
    reply = _forced_chat(repo_server, tokenizer, CHAT_CONTINUATION)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Parol'e bakıyorum."
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "search_drug"
    assert json.loads(call.function.arguments) == {"drug": "Parol"}

    deltas = list(_forced_chat(repo_server, tokenizer, CHAT_CONTINUATION, stream=True))
    calls = [c for d in deltas for ch in d.choices for c in ch.delta.tool_calls or []]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("search_drug", {"drug": "Parol"})]
    assert "".join(ch.delta.content or "" for d in deltas for ch in d.choices) == "Parol'e bakıyorum."
    assert [ch.finish_reason for d in deltas for ch in d.choices if ch.finish_reason] == ["tool_calls"]

    control = _forced_chat(default_server, tokenizer, CHAT_CONTINUATION).choices[0]
    assert not control.message.tool_calls and control.finish_reason != "tool_calls"
    assert "@TOOL_CALL" in control.message.content
