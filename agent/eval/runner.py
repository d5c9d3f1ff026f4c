"""`python -m agent.eval CASES.jsonl [--predictions OUT.jsonl] [--adapter none]`: run and score the agent.

The agent runs on each case (agent.eval.scoring says what a case and a prediction hold), one prediction line per
case is written, and a JSON summary is printed. ``--score PRED.jsonl`` re-scores saved predictions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..run_options import add_run_options
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
    p.add_argument("--model", help="Hub id or local folder (default: bundled SmolLM2-135M-Instruct)")
    p.add_argument(
        "--adapter",
        default="auto",
        help="PEFT adapter folder, or 'none' for the plain model (default: the repo's adapter/ when present)",
    )
    add_run_options(p, max_steps=4, max_new_tokens=128)
    p.add_argument("--limit", type=int, help="only the first N cases")
    p.add_argument(
        "--examples",
        choices=["auto", "yes", "no"],
        default="auto",
        help="one-shot worked example: auto = only without an adapter (as the CLI)",
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
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the usable cores that are not busy)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cases = read_jsonl(args.cases)
    if args.limit is not None:
        cases = cases[: args.limit]
    info: dict[str, Any] = {}
    if args.score is not None:
        predictions = read_jsonl(args.score)
    else:
        import torch

        from ..engine.agent import AgentConfig
        from ..engine.models import ModelLoadError, load_model, recorded_tools, resolve_adapter
        from ..engine.threads import choose_threads
        from ..pharmacy import demo_examples, pharmacist_agent

        torch.set_num_threads(choose_threads(args.threads))
        try:
            adapter_dir = resolve_adapter(args.adapter, args.model)
            model, tokenizer = load_model(
                args.model,
                device=args.device,
                dtype=args.dtype,
                adapter=adapter_dir if adapter_dir is not None else None,
            )
            schemas = recorded_tools(adapter_dir, args.model)
        except (ModelLoadError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        use_examples = args.examples == "yes" or (args.examples == "auto" and adapter_dir is None)
        config = AgentConfig(max_steps=args.max_steps, max_new_tokens=args.max_new_tokens)
        agent = pharmacist_agent(
            model,
            tokenizer,
            config=config,
            examples=demo_examples() if use_examples else None,
            grounded_names=args.grounded_names,
            whole_names=args.whole_names,
            names_only=args.names_only,
            answers=args.answers,
            tool_schemas=schemas,
        )
        started = time.time()
        predictions = run_cases(agent, cases, args.predictions)
        info = {
            "model": args.model or "SmolLM2-135M-Instruct (bundled)",
            "adapter": str(adapter_dir) if adapter_dir else None,
            "tool_schemas": "the model's tools.json" if schemas else "the repo adapter's tools.json",
            "examples": use_examples,
            "grounded_names": args.grounded_names,
            "whole_names": args.grounded_names and args.whole_names,
            "names_only": args.grounded_names and args.names_only,
            "max_steps": args.max_steps,
            "max_new_tokens": args.max_new_tokens,
            "answers": args.answers,
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
