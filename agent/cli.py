"""`python -m agent [QUESTION]`: ask the pharmacist agent once, or chat with it when no question is given."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .engine.agent import AgentConfig, AgentResult, InputTooLong
from .engine.transcript import new_transcript_path
from .pharmacy import SYSTEM_PROMPT, demo_examples, pharmacist_agent
from .run_options import add_run_options, positive_int

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # as agent.engine.openai_backend: not imported here, openai is optional


def default_transcript() -> Path:
    """A new private file for this run or chat under the cache's transcripts folder (see agent.transcript)."""
    from .engine.models import cache_dir

    return new_transcript_path(cache_dir() / "transcripts")


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def undecodable(text: str) -> str | None:
    """Why text (from argv or stdin, decoded with surrogateescape) is not UTF-8 text, or None when it is."""
    for i, ch in enumerate(text):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            byte = f" (byte 0x{ord(ch) - 0xDC00:02x})" if 0xDC80 <= ord(ch) <= 0xDCFF else ""
            return f"it is not valid UTF-8 text: undecodable input at character {i}{byte}"
    return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agent",
        description="A PPSF pharmacist agent: it looks drugs up with offline tools, then answers.",
    )
    p.add_argument("question", nargs="?", help="ask once and exit; without it, chat interactively")
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
        "--no-prefix-store",
        action="store_true",
        help="local and llamacpp backends: do not keep the KV state of the prompt's fixed prefix (system prompt, "
        "tools; never your messages) on disk ($PPSF_PREFIXES, else the PPSF cache's prefixes/), from which the "
        "next run starts instead of prefilling ~1,000 tokens",
    )
    add_run_options(p, max_steps=5, max_new_tokens=256)
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="openai backend: seconds one generation step may take, connection and whole stream included "
        "(default: 60); a step that runs over is an error, never retried",
    )
    system = p.add_mutually_exclusive_group()
    system.add_argument("--system", help="system prompt text (any language)")
    system.add_argument("--system-file", type=Path, help="read the system prompt from a UTF-8 file")
    p.add_argument(
        "--adapter",
        default="auto",
        help="local backend: a PEFT LoRA adapter folder merged into the model, or 'none' (default: the repo's "
        "PPSF adapter, adapter/, merged into the default model when it is there)",
    )
    p.add_argument(
        "--no-examples",
        action="store_true",
        help="do not show the model a worked example (it is shown only to a model without the PPSF adapter)",
    )
    p.add_argument(
        "--no-grounded-names",
        action="store_true",
        help="local backend: let tool calls name medicines the conversation never wrote (default: names are "
        "copied from the conversation while decoding, agent.grounding)",
    )
    p.add_argument(
        "--no-whole-names",
        action="store_true",
        help="local backend: let a grounded name stop at the first word of a longer name of the drug data "
        '(default: "loperamid hidroklorür" is not cut to "loperamid")',
    )
    p.add_argument(
        "--no-names-only",
        action="store_true",
        help="local backend: let a grounded name be any span of the conversation (default: when the conversation "
        "holds a medicine name, the name must be one of them, not a nearby place or symptom)",
    )
    # Kept for the scripts that pass it: every answer is printed complete, once the answer checks have passed it.
    p.add_argument("--no-stream", action="store_true", help="accepted; answers are always printed when complete")
    p.add_argument("--json", action="store_true", help="print the transcript and stats as JSON")
    p.add_argument(
        "--transcript",
        type=Path,
        help="JSONL file to append to, created private (0600); default: a new file per run or chat under "
        "~/.cache/ppsf/transcripts/ (a 0700 folder)",
    )
    return p


class Printer:
    """Shows a run as it happens: tool calls and results as one line each, and what a safety rule did (its note,
    never what it replaced), on stderr. The answer is printed once the run is done: the engine shows no prose
    before the answer checks have passed it."""

    def __init__(self, stream: bool = True) -> None:
        self.stream = stream  # False: no progress lines (--json)

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.stream:
            return
        kind = event["type"]
        if kind == "tool_call":
            args = json.dumps(event["arguments"], ensure_ascii=False)
            print(f"→ {event['name']}({args})", file=sys.stderr, flush=True)
        elif event.get("action") in ("replace", "answer", "refuse", "append"):  # a safety rule acted (its note only)
            print(f"[{kind.replace('_', ' ')}] {event['note']}", file=sys.stderr, flush=True)
        elif kind == "tool_result":
            text = json.dumps(event["result"], ensure_ascii=False)
            print(f"← {event['name']}: {text[:240]}{'…' if len(text) > 240 else ''}", file=sys.stderr, flush=True)


def _summary(result: AgentResult) -> str:
    s = result.stats
    return (
        f"[{len(s.steps)} steps, {s.prefill_tokens} prefill + {s.generated_tokens} generated tokens, {s.seconds:.1f} s]"
    )


def _backend(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(model, tokenizer, generator): a local model (generator None: the Agent builds its own), or a server."""
    if args.backend == "openai":
        from .engine.openai_backend import OpenAIGenerator
        from .ppsf import load_tokenizer

        # The prompt is rendered and the reply parsed here, with this repo's tokenizer and templates.
        tokenizer = load_tokenizer()
        generator = OpenAIGenerator(
            args.model, tokenizer, base_url=args.base_url or DEFAULT_BASE_URL, timeout=args.timeout
        )
        generator.check()
        return None, tokenizer, generator
    from .engine.threads import choose_threads

    if args.backend == "llamacpp":
        from .engine.llamacpp_backend import LlamaCppGenerator, load_llama
        from .engine.models import recorded_tools
        from .export import default_gguf
        from .ppsf import load_tokenizer

        args.adapter_loaded = True  # a GGUF for this agent is the tuned model (agent.export)
        gguf = Path(args.gguf or default_gguf())
        args.tool_schemas = recorded_tools(gguf.parent, gguf.parent.parent)  # the export: OUT/gguf/NAME.gguf
        llama = load_llama(gguf, threads=args.threads)
        tokenizer = load_tokenizer()
        return None, tokenizer, LlamaCppGenerator(llama, tokenizer)
    import torch

    from .engine.models import load_model, recorded_tools, resolve_adapter

    torch.set_num_threads(choose_threads(args.threads))

    adapter_dir = resolve_adapter(args.adapter, args.model)
    args.adapter_loaded = adapter_dir is not None
    args.tool_schemas = recorded_tools(adapter_dir, args.model)
    model, tokenizer = load_model(args.model, device=args.device, dtype=args.dtype, adapter=adapter_dir)
    return model, tokenizer, None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.base_url is not None and args.backend != "openai":
        parser.error("--base-url needs --backend openai")
    if args.adapter != "auto" and args.backend != "local":
        parser.error("--adapter needs --backend local")
    if args.model is not None and args.backend == "llamacpp":
        parser.error("--model is for the local and openai backends; --backend llamacpp takes --gguf")
    if args.gguf is not None and args.backend != "llamacpp":
        parser.error("--gguf needs --backend llamacpp")
    if args.threads is not None and args.backend == "openai":
        parser.error("--threads is for the local and llamacpp backends")
    if args.question is not None:
        problem = undecodable(args.question) or ("it is empty" if not args.question.strip() else None)
        if problem:
            parser.error(f"the question cannot be asked: {problem}")

    if args.system_file is not None:
        try:
            system_prompt = args.system_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            print(f"error: cannot read --system-file {args.system_file}: {e}", file=sys.stderr)
            return 2
    else:
        system_prompt = args.system if args.system is not None else SYSTEM_PROMPT
    from .engine.models import ModelLoadError
    from .ppsf import PPSFRepoError

    errors: tuple[type[Exception], ...] = (ModelLoadError, PPSFRepoError, ValueError)
    if args.backend == "llamacpp":
        from .export import ExportError

        errors += (ImportError, FileNotFoundError, ExportError)
    if args.backend == "openai":
        from .engine.openai_backend import ServingError

        errors += (ServingError,)
    try:
        model, tokenizer, generator = _backend(args)
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    printer = Printer(stream=not args.json)
    transcript = args.transcript or default_transcript()
    config = AgentConfig(
        system_prompt=system_prompt,  # "" (--system '') for none
        max_steps=args.max_steps,
        max_new_tokens=args.max_new_tokens,
        transcript=transcript,
    )
    agent = pharmacist_agent(
        model,
        tokenizer,
        config=config,
        generator=generator,
        # The tuned model (PPSF adapter) writes the format itself; a plain model gets one worked example.
        examples=None if args.no_examples or getattr(args, "adapter_loaded", False) else demo_examples(),
        grounded_names=not args.no_grounded_names,
        whole_names=not args.no_whole_names,
        names_only=not args.no_names_only,
        answers=args.answers,
        on_event=printer,
        tool_schemas=getattr(args, "tool_schemas", None),
    )
    if args.backend != "openai" and not args.no_prefix_store:
        from .engine.models import cache_dir
        from .engine.prefix_store import PrefixStore

        agent.generator.prefix_store = PrefixStore(os.environ.get("PPSF_PREFIXES") or cache_dir() / "prefixes")

    def answer(conversation: str | list[dict]) -> AgentResult:
        result = agent.run(conversation)
        if args.json:
            print(json.dumps({"messages": result.messages, "stats": result.stats.to_dict()}, ensure_ascii=False))
        else:
            print(result.message.get("content") or "")
            print(_summary(result), file=sys.stderr)
        return result

    # A run that cannot go on (the question is too long for the model, the server failed) ends with one line.
    run_errors = (InputTooLong, *errors)
    if args.question is not None:
        try:
            answer(args.question)
        except run_errors as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            print(f"transcript: {transcript}", file=sys.stderr)
        return 0
    print("PPSF eczacı — soru yazın (çıkmak için Ctrl-D). Ask a question (Ctrl-D to quit).", file=sys.stderr)
    _tolerant_stdio()
    history: list[dict] = []
    while True:
        try:
            question = input("\n@PATIENT> ").strip()
        except (EOFError, KeyboardInterrupt):
            print(f"\ntranscript: {transcript}", file=sys.stderr)
            return 0
        problem = undecodable(question)
        if problem:
            print(f"error: this line cannot be asked: {problem}; type it again", file=sys.stderr)
        elif question:
            try:
                history = answer(history + [{"role": "user", "content": question}]).messages
            except run_errors as e:
                print(f"error: {e}", file=sys.stderr)


def _tolerant_stdio() -> None:
    """Read undecodable bytes from a terminal as surrogates (refused per line above) instead of crashing."""
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=errors)
