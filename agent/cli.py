"""`python -m agent [QUESTION]`: ask the pharmacist agent once, or chat with it when no question is given."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .engine.agent import AgentConfig, AgentResult, InputTooLong
from .engine.backends import backend_errors, build_backend
from .engine.transcript import new_transcript_path
from .pharmacy import SYSTEM_PROMPT, demo_examples, pharmacist_agent
from .run_options import add_backend_options, add_run_options, backend_options


def default_transcript() -> Path:
    """A new private file for this run or chat under the cache's transcripts folder (see agent.transcript)."""
    from .engine.models import cache_dir

    return new_transcript_path(cache_dir() / "transcripts")


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
    add_backend_options(p)
    add_run_options(p, max_steps=5, max_new_tokens=256)
    system = p.add_mutually_exclusive_group()
    system.add_argument("--system", help="system prompt text (any language)")
    system.add_argument("--system-file", type=Path, help="read the system prompt from a UTF-8 file")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    options = backend_options(parser, args)  # an option of another backend is a usage error
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
    errors = backend_errors(options.backend)
    try:
        backend = build_backend(options)
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
        backend,
        config=config,
        # The tuned model (PPSF adapter) writes the format itself; a plain model gets one worked example.
        examples=None if args.no_examples or backend.tuned else demo_examples(),
        grounded_names=not args.no_grounded_names,
        whole_names=not args.no_whole_names,
        names_only=not args.no_names_only,
        answers=args.answers,
        routed=args.router,
        on_event=printer,
    )

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
