"""`python -m agent.eval CASES.jsonl [--predictions OUT.jsonl] [--adapter none]`: run and score the agent.

The agent runs on each case (agent.eval.scoring says what a case and a prediction hold), one prediction line per
case is written, and a JSON summary is printed. ``--score PRED.jsonl`` re-scores saved predictions. The agent runs
on any backend, built as the CLI builds it from the same options (agent.run_options.add_backend_options).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..run_options import add_backend_options, add_run_options, backend_options
from .scoring import prediction_from_messages, score


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise SystemExit(f"{path}:{n}: not JSON: {e}") from None
    return rows


def run_cases(agent: Any, cases: list[dict], out: Path | None, progress: bool = True) -> list[dict]:
    predictions = []
    sink = out.open("w", encoding="utf-8") if out is not None else None
    started = time.time()
    try:
        for i, case in enumerate(cases, 1):
            question = case.get("messages") or case["query"]
            t0 = time.time()
            result = agent.run(question)
            pred = prediction_from_messages(case["id"], result.messages, result.message, result.replaced_answer)
            pred["steps"] = len(result.stats.steps)
            pred["seconds"] = round(time.time() - t0, 2)
            predictions.append(pred)
            if sink is not None:
                sink.write(json.dumps(pred, ensure_ascii=False) + "\n")
                sink.flush()
            if progress:
                rate = (time.time() - started) / i
                print(
                    f"\r[{i}/{len(cases)}] {rate:.1f} s/case, eta {rate * (len(cases) - i) / 60:.1f} min",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if sink is not None:
            sink.close()
        if progress:
            print(file=sys.stderr)
    return predictions


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agent.eval", description="Score the PPSF agent on evaluation cases.")
    p.add_argument("cases", type=Path, help="JSONL cases (eval/cases.jsonl)")
    p.add_argument("--predictions", type=Path, help="write one prediction per case here (JSONL)")
    p.add_argument("--score", type=Path, metavar="PRED", help="score saved predictions instead of running the model")
    p.add_argument("--summary", type=Path, help="also write the summary JSON here")
    add_backend_options(p)
    add_run_options(p, max_steps=4, max_new_tokens=128)
    p.add_argument("--limit", type=int, help="only the first N cases")
    p.add_argument(
        "--examples",
        choices=["auto", "yes", "no"],
        default="auto",
        help="one-shot worked example: auto = only to a model that is not PPSF-tuned (no adapter; as the CLI)",
    )
    p.add_argument(
        "--stated-facts",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a call's medicine, weight, age, pregnancy, breastfeeding and conditions set as the patient's words "
        "state them (default on, as the CLI); --no-stated-facts scores the model's own calls",
    )
    p.add_argument(
        "--grounded-names",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="medicine names in tool calls copied from the conversation (agent.engine.grounding; default on)",
    )
    p.add_argument(
        "--whole-names",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with grounded names: no name cut short inside a longer name of the drug data (default on, as the CLI)",
    )
    p.add_argument(
        "--names-only",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with grounded names: a name must be a medicine name the conversation holds, when it holds any "
        "(default on, as the CLI)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    options = backend_options(parser, args)
    cases = read_jsonl(args.cases)
    if args.limit is not None:
        cases = cases[: args.limit]
    info: dict[str, Any] = {}
    if args.score is not None:
        predictions = read_jsonl(args.score)
    else:
        from ..engine.agent import AgentConfig, InputTooLong
        from ..engine.backends import backend_errors, build_backend
        from ..pharmacy import demo_examples, pharmacist_agent

        try:
            backend = build_backend(options)
        except backend_errors(options.backend) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        use_examples = args.examples == "yes" or (args.examples == "auto" and not backend.tuned)
        config = AgentConfig(max_steps=args.max_steps, max_new_tokens=args.max_new_tokens)
        agent = pharmacist_agent(
            backend,
            config=config,
            examples=demo_examples() if use_examples else None,
            grounded_names=args.grounded_names,
            whole_names=args.whole_names,
            names_only=args.names_only,
            answers=args.answers,
            routed=args.router,
            stated_facts=args.stated_facts,
        )
        started = time.time()
        try:
            predictions = run_cases(agent, cases, args.predictions)
        except (InputTooLong, *backend_errors(options.backend)) as e:  # a server that failed, a prompt too long
            kept = f" (the predictions so far are in {args.predictions})" if args.predictions else ""
            print(f"\nerror: {e}{kept}", file=sys.stderr)
            return 2
        info = {
            "backend": backend.kind,
            "model": backend.name,
            "adapter": str(backend.adapter) if backend.adapter else None,
            "tool_schemas": "the model's tools.json" if backend.tool_schemas else "the repo adapter's tools.json",
            "examples": use_examples,
            "grounded_names": args.grounded_names,
            "stated_facts": args.stated_facts,
            "whole_names": args.grounded_names and args.whole_names,
            "names_only": args.grounded_names and args.names_only,
            "max_steps": args.max_steps,
            "max_new_tokens": args.max_new_tokens,
            "answers": args.answers,
            "router": agent.router is not None,
            "seconds": round(time.time() - started, 1),
        }
    summary = {**score(cases, predictions), **info}
    text = json.dumps(summary, ensure_ascii=False, indent=2)
    if args.summary is not None:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
