"""Command-line options shared by `python -m agent` (agent.cli) and `python -m agent.eval` (agent.eval.runner),
declared once here so that neither front end imports the other."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_run_options(p: argparse.ArgumentParser, *, max_steps: int, max_new_tokens: int) -> None:
    """--device, --dtype, --max-steps, --max-new-tokens and --answers, declared once for the CLI and agent.eval
    (whose defaults differ on purpose: its committed results ran with 4 steps of 128 tokens)."""
    p.add_argument(
        "--answers",
        default="tools",
        choices=["tools", "model"],
        help="who writes an answer the tools' results cover: the tools (the phrasebook; default, for the bundled "
        "model) or the model (a larger one); the safety rules apply either way",
    )
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument(
        "--max-steps", type=positive_int, default=max_steps, help="generation steps before a final answer is forced"
    )
    p.add_argument("--max-new-tokens", type=positive_int, default=max_new_tokens, help="tokens per generation step")
