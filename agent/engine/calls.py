"""What a model-written tool call must be before anything renders or runs it; one check for every backend.

The response parser turns a @TOOL_CALL block into whatever its JSON holds: an array, a bare string, a
number as the name, arguments as a string or null, NaN, lone surrogates, nesting a thousand deep. None of
that may reach the template (which would raise on the next render), the toolbox or the transcript: a
step with such a call is answered as an `invalid_tool_call` the model can correct.
"""

from __future__ import annotations

import math
import re
from typing import Any

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")
MAX_DEPTH = 8  # tool arguments are flat records; deeper nesting is a broken or hostile reply
MAX_CALLS = 8  # parallel calls in one step


def one_line(value: object, limit: int = 500) -> str:
    """A message as one line of at most limit characters (errors become tool results and CLI lines)."""
    text = " ".join(str(value).split()) or type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


class InvalidCall(ValueError):
    """A tool call the model wrote that cannot run; the message says what is wrong, for the model to fix."""


def checked_calls(calls: Any) -> list[dict[str, Any]]:
    """The parsed calls as [{"name": str, "arguments": dict}], or InvalidCall naming the first problem."""
    if not isinstance(calls, list):
        raise InvalidCall(f"tool calls must be a list, got {type(calls).__name__}")
    if len(calls) > MAX_CALLS:
        raise InvalidCall(f"{len(calls)} tool calls in one step; at most {MAX_CALLS}")
    return [_checked(call, i) for i, call in enumerate(calls)]


def _checked(call: Any, index: int) -> dict[str, Any]:
    where = f"tool call {index}"
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        raise InvalidCall(f'{where}: write one JSON object {{"name": ..., "arguments": {{...}}}}, got {_kind(fn)}')
    extra = sorted(set(fn) - {"name", "arguments"})
    if extra:
        raise InvalidCall(f'{where}: only "name" and "arguments" are allowed, not {", ".join(map(repr, extra))}')
    name = fn.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidCall(f'{where}: "name" must be a tool name (letters, digits, "_"), got {_short(name)}')
    if "arguments" not in fn:
        raise InvalidCall(f'{where} ({name}): "arguments" is missing; write {{}} for none')
    arguments = fn["arguments"]
    if not isinstance(arguments, dict):
        raise InvalidCall(f'{where} ({name}): "arguments" must be a JSON object, got {_kind(arguments)}')
    _check_value(arguments, f"{where} ({name}) arguments", 1)
    return {"name": name, "arguments": arguments}


def _check_value(value: Any, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidCall(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise InvalidCall(f"{where}: a string holds a lone surrogate (not valid Unicode text)")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidCall(f"{where}: {value} is not a number JSON allows")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_value(key, where, depth)
            _check_value(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_value(item, where, depth + 1)


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
