"""Command-line options shared by `python -m agent` (agent.cli), `python -m agent.eval` (agent.eval.runner) and
`python app.py` (agent.web), declared once here so that no front end imports another: what to run the agent on
(add_backend_options, read back as agent.engine.backends.BackendOptions by backend_options) and how a run goes
(add_run_options)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine.backends import BackendOptions

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # as agent.engine.backends': not imported here, the flags load no torch


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def add_backend_options(p: argparse.ArgumentParser, *, prefix_store: bool = True) -> None:
    """--backend, --model, --adapter, --gguf, --base-url, --device, --dtype, --threads, --timeout and
    --no-prefix-store: the fields of BackendOptions, with its defaults. prefix_store=False: no prefix states on
    disk at all, and no flag for it (backend_options then gives prefix_store=False)."""
    p.add_argument(
        "--model",
        help="local backend: Hub id or local folder of a causal LM (default: bundled SmolLM2-135M-Instruct); "
        "openai backend: the served model's name (default: the only model the server lists)",
    )
    p.add_argument(
        "--backend",
        default="local",
        choices=["local", "llamacpp", "openai"],
        help="local: run the model here with transformers; llamacpp: run a GGUF here with llama.cpp (the agent's "
        "own decoding on llama.cpp's forward pass; needs llama-cpp-python); openai: any OpenAI-compatible "
        "server's completions endpoint (vLLM, llama.cpp's server, `transformers serve`, ...), prompted and "
        "parsed with this repo's tokenizer",
    )
    p.add_argument(
        "--adapter",
        default="auto",
        help="local backend: a PEFT LoRA adapter folder merged into the model, or 'none' (default: the repo's "
        "PPSF adapter, adapter/, merged into the default model when it is there)",
    )
    p.add_argument(
        "--gguf",
        type=Path,
        help="llamacpp backend: a PPSF-tuned GGUF (default: the default model exported by `python -m agent.export`, "
        "q8_0, made on first use)",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        help="CPU threads for the local and llamacpp backends (default: the usable cores that are not busy)",
    )
    p.add_argument("--base-url", help=f"openai backend: the server's API root (default: {DEFAULT_BASE_URL})")
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="openai backend: seconds one generation step may take, connection and whole stream included "
        "(default: 60); a step that runs over is an error, never retried",
    )
    if prefix_store:
        _add_prefix_store_option(p)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="local backend")
    p.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="local backend (auto: bfloat16 on CUDA, float32 elsewhere)",
    )


def _add_prefix_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-prefix-store",
        action="store_true",
        help="local and llamacpp backends: do not keep the KV state of the prompt's fixed prefix (system prompt, "
        "tools; never your messages) on disk ($PPSF_PREFIXES, else the PPSF cache's prefixes/), from which the "
        "next run starts instead of prefilling ~1,000 tokens",
    )


def backend_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> BackendOptions:
    """The options add_backend_options declared, as parsed into args; options that do not go together (an option
    of another backend) are the parser's error (usage, the message, exit status 2)."""
    from .engine.backends import BackendOptionError, BackendOptions

    try:
        return BackendOptions(
            backend=args.backend,
            model=args.model,
            adapter=args.adapter,
            gguf=args.gguf,
            base_url=args.base_url,
            device=args.device,
            dtype=args.dtype,
            threads=args.threads,
            timeout=args.timeout,
            prefix_store=not getattr(args, "no_prefix_store", True),  # no such flag: no store
        )
    except BackendOptionError as e:
        parser.error(str(e))


def add_run_options(p: argparse.ArgumentParser, *, max_steps: int, max_new_tokens: int) -> None:
    """--answers, --router, --max-steps and --max-new-tokens, declared once for the CLI and agent.eval (whose
    defaults differ on purpose: its committed results ran with 4 steps of 128 tokens)."""
    p.add_argument(
        "--answers",
        default="tools",
        choices=["tools", "model"],
        help="who writes an answer the tools' results cover: the tools (the phrasebook; default, for the bundled "
        "model) or the model (a larger one); the safety rules apply either way",
    )
    p.add_argument(
        "--router",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the tool router chooses how a reply starts (which tool it calls, or an answer) and the model writes "
        "the rest (agent.pharmacy.router); by default on for the PPSF-tuned model, whose recipe trains it (a server's "
        "model is when it names a local export with its tools.json), off for any other; --no-router: the model "
        "chooses alone",
    )
    p.add_argument(
        "--max-steps", type=positive_int, default=max_steps, help="generation steps before a final answer is forced"
    )
    p.add_argument("--max-new-tokens", type=positive_int, default=max_new_tokens, help="tokens per generation step")
