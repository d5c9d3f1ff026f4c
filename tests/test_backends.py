"""agent.engine.backends: one Backend object per model, built by one function from the options every front end
shares, carrying its generator, tokenizer, context length, prefix store and the tool schemas it was trained on."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, repo_tokenizer

from agent.engine.agent import Agent, AgentConfig
from agent.engine.backends import (
    CUSTOM,
    Backend,
    BackendOptionError,
    BackendOptions,
    backend_errors,
    build_backend,
)
from agent.engine.generation import CachedGenerator
from agent.engine.prefix_store import PrefixStore
from agent.pharmacy import default_tool_schemas, pharmacist_agent

REPLY = "@PHARMACIST\nParol ağrı kesicidir."


# ---- the options ----


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_url": "http://x/v1"}, "--base-url needs --backend openai"),
        ({"backend": "openai", "adapter": "none"}, "--adapter needs --backend local"),
        ({"backend": "llamacpp", "model": "m"}, "--backend llamacpp takes --gguf"),
        ({"gguf": "m.gguf"}, "--gguf needs --backend llamacpp"),
        ({"backend": "openai", "threads": 2}, "--threads is for the local and llamacpp backends"),
        ({"backend": "vllm"}, "unknown backend 'vllm'"),
    ],
)
def test_options_of_another_backend_are_refused_with_the_clis_words(options, message):
    with pytest.raises(BackendOptionError, match=message):
        BackendOptions(**options)


@pytest.mark.parametrize("front_end", ["cli", "web", "eval"])
def test_every_front_end_declares_the_same_options_with_the_same_defaults(front_end):
    from agent import cli, web
    from agent.eval import runner
    from agent.run_options import backend_options

    parser, argv = {
        "cli": (cli.build_parser(), []),
        "web": (web.build_parser(), []),
        "eval": (runner.build_parser(), ["cases.jsonl"]),
    }[front_end]
    # The web app keeps no prefix states on disk (a visitor's system prompt is in the prefix), and has no flag for it.
    store = front_end != "web"
    assert backend_options(parser, parser.parse_args(argv)) == BackendOptions(prefix_store=store)
    flags = ["--backend", "llamacpp", "--gguf", "m.gguf", "--threads", "2"] + (["--no-prefix-store"] if store else [])
    assert backend_options(parser, parser.parse_args([*argv, *flags])) == BackendOptions(
        backend="llamacpp", gguf=Path("m.gguf"), threads=2, prefix_store=False
    )
    if not store:
        with pytest.raises(SystemExit):
            parser.parse_args(["--no-prefix-store"])


@pytest.mark.parametrize("front_end", ["web", "eval"])
def test_the_web_app_and_the_eval_refuse_what_the_cli_refuses(front_end, capsys):
    from agent import web
    from agent.eval import runner

    main, argv = {"web": (web.main, []), "eval": (runner.main, ["cases.jsonl"])}[front_end]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--backend", "openai", "--threads", "2"])
    assert exited.value.code == 2
    assert "--threads is for the local and llamacpp backends" in capsys.readouterr().err


# ---- the backend object ----


def test_a_backend_is_frozen_and_reads_its_generator():
    generator = ScriptedGenerator([], context_length=512)
    backend = Backend(CUSTOM, generator, repo_tokenizer())
    assert (backend.context_length, backend.prefix_store, backend.tool_schemas, backend.tuned) == (
        512,
        None,
        None,
        False,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        backend.tool_schemas = {}  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown backend kind"):
        Backend("tpu", generator, repo_tokenizer())


def test_the_agent_takes_a_backend_and_the_pharmacist_a_backend_or_a_loaded_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    generator = ScriptedGenerator([REPLY])
    backend = Backend(CUSTOM, generator, repo_tokenizer())
    with pytest.raises(TypeError, match="Agent runs on a Backend"):
        Agent(None, [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes no tokenizer"):
        pharmacist_agent(backend, repo_tokenizer())
    with pytest.raises(TypeError, match="runs on a Backend"):  # no model=None: a generator comes in a Backend
        pharmacist_agent(None, repo_tokenizer())
    agent = pharmacist_agent(backend)
    assert agent.generator is generator and agent.tokenizer is backend.tokenizer
    # A model never shown any tools is shown their own schemas; a tuned one with no record the repo adapter's,
    # from a copy: the caller's backend stays as it was made.
    assert agent.backend.tool_schemas is None
    tuned = replace(backend, tuned=True)
    assert pharmacist_agent(tuned).backend.tool_schemas == default_tool_schemas() and tuned.tool_schemas is None
    assert agent.run("Parol ne işe yarar?").message["content"] == "Parol ağrı kesicidir."
    # pharmacist_agent(model, tokenizer), a model loaded by hand: a local backend on that model.
    model, tokenizer = (
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        AutoTokenizer.from_pretrained(tiny_model_dir),
    )
    local = pharmacist_agent(model, tokenizer).backend
    assert local.kind == "local" and isinstance(local.generator, CachedGenerator) and local.generator.model is model
    assert local.context_length == 2048 and local.prefix_store is None


# ---- built from the options: local ----


def test_the_local_backend_carries_the_tuned_model_its_schemas_and_prefix_store(monkeypatch, tmp_path):
    """The bundled model with the repo's adapter, offline, as `python -m agent` runs it."""
    from agent.engine.models import default_adapter_dir, recorded_tools

    monkeypatch.setenv("PPSF_PREFIXES", str(tmp_path / "prefixes"))
    backend = build_backend(BackendOptions(device="cpu", threads=1))
    assert (backend.kind, backend.name, backend.tuned) == ("local", "SmolLM2-135M-Instruct (bundled)", True)
    assert backend.adapter == default_adapter_dir() and backend.tokenizer is backend.generator.tokenizer
    assert backend.context_length == backend.generator.model.config.max_position_embeddings == 8192
    assert backend.tool_schemas == recorded_tools(default_adapter_dir()) and backend.tool_schemas
    # The store is the generator's own, given when it was made.
    assert isinstance(backend.prefix_store, PrefixStore) and backend.prefix_store.folder == tmp_path / "prefixes"
    result = pharmacist_agent(backend, config=AgentConfig(max_steps=2)).run("Parol ne işe yarar?")
    assert "Parasetamol" in result.message["content"] and len(list((tmp_path / "prefixes").glob("*.kv"))) == 1


def test_a_plain_local_model_is_not_tuned_and_the_store_can_be_left_off(tiny_model_dir):
    backend = build_backend(
        BackendOptions(model=str(tiny_model_dir), adapter="none", device="cpu", threads=1, prefix_store=False)
    )
    assert (backend.name, backend.tuned, backend.adapter, backend.tool_schemas) == (
        str(tiny_model_dir),
        False,
        None,
        None,
    )
    assert backend.prefix_store is None and backend.context_length == 2048


def test_a_model_that_is_not_there_is_one_of_the_errors_to_print(tmp_path):
    with pytest.raises(backend_errors("local"), match="config.json"):
        build_backend(BackendOptions(model=str(tmp_path), device="cpu", threads=1))


# ---- built from the options: llama.cpp ----


def test_the_llamacpp_backend_carries_the_repo_tokenizer_and_a_prefix_store(monkeypatch, tmp_path):
    """On the bundled GGUF (its vocabulary is the repo tokenizer's): no export needed to build one."""
    pytest.importorskip("llama_cpp")
    from agent.bundled_model import default_gguf_path
    from agent.engine.llamacpp_backend import LlamaCppGenerator

    monkeypatch.setenv("PPSF_PREFIXES", str(tmp_path / "prefixes"))
    gguf = default_gguf_path()
    backend = build_backend(BackendOptions(backend="llamacpp", gguf=gguf, threads=1))
    assert (backend.kind, backend.name, backend.tuned) == ("llamacpp", str(gguf), True)
    assert isinstance(backend.generator, LlamaCppGenerator) and len(backend.tokenizer) == 49152
    assert backend.context_length == backend.generator.model.n_ctx() > 0
    assert backend.prefix_store.folder == tmp_path / "prefixes"
    assert backend.tool_schemas is None  # nothing recorded beside this GGUF: the pharmacy shows its default
    with pytest.raises(backend_errors("llamacpp"), match="no GGUF at"):
        build_backend(BackendOptions(backend="llamacpp", gguf=tmp_path / "missing.gguf", threads=1))


# ---- built from the options: an OpenAI-compatible server ----


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    """Lists one model and streams REPLY to any completion request."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "served", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        choice = {"index": 0, "text": REPLY, "finish_reason": "stop"}
        for data in (json.dumps({"id": "c", "object": "text_completion", "choices": [choice]}), "[DONE]"):
            self.wfile.write(f"data: {data}\n\n".encode())


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_openai_backend_names_the_served_model_and_keeps_nothing_on_disk(server_url):
    pytest.importorskip("openai")
    backend = build_backend(BackendOptions(backend="openai", base_url=server_url, timeout=30.0))
    assert (backend.kind, backend.name, backend.tuned, backend.tool_schemas) == ("openai", "served", False, None)
    assert backend.prefix_store is None and backend.generator.timeout == 30.0
    assert len(backend.tokenizer) == len(repo_tokenizer())
    result = pharmacist_agent(backend, config=AgentConfig(max_steps=1)).run("Parol ne işe yarar?")
    assert result.message["content"] == "Parol ağrı kesicidir."


def test_a_server_that_is_not_there_is_one_of_the_errors_to_print():
    pytest.importorskip("openai")
    dead = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    with pytest.raises(backend_errors("openai"), match="Cannot reach an OpenAI-compatible server"):
        build_backend(BackendOptions(backend="openai", base_url=dead, model="m"))


# ---- the CLI builds it once, and sets nothing on it afterwards ----


def test_the_cli_runs_on_the_backend_it_built(tiny_model_dir, tmp_path, monkeypatch, capsys):
    from agent import cli

    monkeypatch.setenv("PPSF_PREFIXES", str(tmp_path / "prefixes"))
    agents: list = []
    make = cli.pharmacist_agent
    monkeypatch.setattr(
        cli, "pharmacist_agent", lambda backend, **kwargs: agents.append(make(backend, **kwargs)) or agents[-1]
    )
    argv = ["--model", str(tiny_model_dir), "--adapter", "none", "--device", "cpu", "--threads", "1", "--json"]
    argv += ["--max-steps", "1", "--max-new-tokens", "4", "--transcript", str(tmp_path / "t.jsonl"), "Parol?"]
    assert cli.main(argv) == 0
    (agent,) = agents
    assert agent.generator is agent.backend.generator and agent.backend.prefix_store.folder == tmp_path / "prefixes"
    assert agent.examples  # a plain model gets the worked example
    assert json.loads(capsys.readouterr().out)["messages"][-1]["role"] == "assistant"


def test_the_eval_ends_a_run_that_cannot_go_on_with_one_line(monkeypatch, tmp_path, capsys):
    """A case the backend cannot take (here: a prompt longer than its context) is an `error: ...` line and exit
    status 2, as in the CLI, with the predictions written so far kept."""
    from agent.engine import backends
    from agent.eval import runner

    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "query": "Parol ne işe yarar?", "expected": []}) + "\n")
    tiny = Backend(CUSTOM, ScriptedGenerator(["@PHARMACIST\nok"], context_length=16), repo_tokenizer(), tuned=True)
    monkeypatch.setattr(backends, "build_backend", lambda options: tiny)
    predictions = tmp_path / "out.jsonl"
    assert runner.main([str(cases), "--predictions", str(predictions)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and str(predictions) in err and "Traceback" not in err
