"""The internals check: a final answer never shows the agent's machinery to the person it answers.

Small models copy what they see. After a failed call they repeat it ("'find_warnings' returned an error code:
unknown_tool. Please use the search_drug function.", "'check_interactions' failed with code
'invalid_tool_call': 'json parser could not parse region as JSON ...'"), and without one they sometimes answer
with their plan ("I should look it up with find_alternatives first."). None of that helps a patient, and it
tells whoever probes the agent what its tools and parser are. So an answer that names a tool, a tool argument
or an error code, or quotes an error message the engine wrote, is replaced by the agent's fallback (what was
tried, what to do, in the conversation's language where the fallback knows it). The model's text stays in the
transcript and the check's event.

What counts as an identifier is what no prose has: a name with an underscore ("search_drug", "age_years",
"unknown_drug"). Plain-word names ("lookup", "drug") are left alone, and so is any identifier the user wrote
themselves (an answer may repeat their words).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

from .agent import Fallback
from .checks import Replace, current_turn, named_results
from .toolbox import ENGINE_ERROR_CODES

QUOTE_WORDS = 6  # this many consecutive words of an engine error message in the answer are a quote of it


def is_identifier(word: str) -> bool:
    """A code-like name no prose uses: letters, digits and underscores, with an underscore inside."""
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+", word))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _error(result: dict) -> dict | None:
    error = result.get("error")
    return error if isinstance(error, dict) else None


class InternalsCheck:
    """An answer check (agent.engine.checks.AnswerCheck): no tool names, argument names, error codes or engine
    error messages in the answer. tools: the agent's tool functions; fallback: the agent's no-answer text."""

    name = "internals_check"
    note = "the answer showed the agent's internals (a tool, an argument or an error code); a plain answer instead"

    def __init__(self, tools: list[Callable], fallback: Fallback) -> None:
        names = {fn.__name__ for fn in tools}
        names |= {p for fn in tools for p in inspect.signature(fn).parameters}
        self.identifiers = {n for n in names | set(ENGINE_ERROR_CODES) if is_identifier(n)}
        self.fallback = fallback

    def leaks(self, answer: str, conversation: list[dict]) -> list[str]:
        """What of the machinery answer shows: the identifiers and engine error messages it contains."""
        turn = current_turn(conversation)
        results = named_results(turn)
        names = set(self.identifiers)
        names |= {tool for tool, _ in results if is_identifier(tool)}
        names |= {c["function"]["name"] for m in turn for c in m.get("tool_calls") or [] if _function(c)}
        names |= {str(e.get("code")) for _, r in results if (e := _error(r)) is not None}
        written = {w for m in conversation if m.get("role") == "user" for w in _words(str(m.get("content") or ""))}
        words = set(_words(answer))
        found = sorted(n for n in names if is_identifier(n) and n.casefold() in words - written)
        said = f" {' '.join(_words(answer))} "
        for _, result in results:
            error = _error(result)
            if error is None or error.get("code") not in ENGINE_ERROR_CODES:
                continue  # a tool's own message is for the answer ("'X' was not found ...")
            message = _words(str(error.get("message") or ""))
            for i in range(len(message) - QUOTE_WORDS + 1):
                if f" {' '.join(message[i : i + QUOTE_WORDS])} " in said:
                    found.append(str(error.get("message")))
                    break
        return found

    def check(self, answer: str, conversation: list[dict]) -> Replace | None:
        if not self.leaks(answer, conversation):
            return None
        outcomes = [(tool, _error(result) is None) for tool, result in named_results(current_turn(conversation))]
        return Replace(self.fallback(conversation[:-1], outcomes, 0, False))


def _function(call: dict) -> bool:
    function = call.get("function") if isinstance(call, dict) else None
    return isinstance(function, dict) and isinstance(function.get("name"), str)
