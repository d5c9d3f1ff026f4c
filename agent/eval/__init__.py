"""Evaluation of the pharmacist agent: scoring (pure functions) and the runner (`python -m agent.eval`)."""

from .runner import main, read_jsonl, run_cases
from .scoring import (
    arguments_match,
    call_matches,
    call_results,
    calls_match,
    calls_of,
    mentions,
    names_match,
    normalize_text,
    prediction_from_messages,
    score,
    score_case,
    summarize,
    tool_defaults,
    unsupported_claims,
    values_match,
)

__all__ = [
    "arguments_match",
    "call_matches",
    "call_results",
    "calls_match",
    "calls_of",
    "main",
    "mentions",
    "names_match",
    "normalize_text",
    "prediction_from_messages",
    "read_jsonl",
    "run_cases",
    "score",
    "score_case",
    "summarize",
    "tool_defaults",
    "unsupported_claims",
    "values_match",
]
