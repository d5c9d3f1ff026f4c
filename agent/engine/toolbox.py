"""Running the model's tool calls: lookup, argument validation against the JSON schema, timeout, errors.

Every failure becomes a structured error result the model can read and act on; nothing raises out.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from transformers.utils import get_json_schema

REPEAT_LIMIT = 3  # the third identical call (same name and arguments) in one run is refused
MAX_STUCK = 8  # calls that timed out and still run; past this, tools are refused until some return


def context_arguments(fn: Callable) -> tuple[str, ...]:
    """The arguments of fn that the agent supplies, not the model (``fn.context_arguments``, e.g. the patient's
    language): they are left out of the schema the model sees and filled from the conversation."""
    return tuple(getattr(fn, "context_arguments", ()))


def tool_schema(fn: Callable) -> dict:
    """The JSON schema of a typed, Google-docstring function, as the prompt shows it."""
    schema = get_json_schema(fn)
    schema["function"].pop("return", None)  # the model never needs it; it only costs prompt tokens
    parameters = schema["function"].get("parameters", {})
    for name in context_arguments(fn):
        parameters.get("properties", {}).pop(name, None)
        if name in parameters.get("required", []):
            raise ValueError(f"{schema['function']['name']}: a context argument ({name}) must be optional")
    return schema


def fit_schema(fn: Callable, schema: dict) -> dict:
    """``schema`` for fn (a model's recorded tool interface, e.g. an adapter's tools.json), checked against fn.

    A model is served with the schema it was trained on: it may show fewer parameters than fn takes (ones added
    since, with defaults), never one fn lacks, and it must show every parameter fn requires.
    """
    name = fn.__name__
    function = schema.get("function") if isinstance(schema, dict) else None
    if not isinstance(function, dict) or function.get("name") != name:
        raise ValueError(f"the recorded schema for {name} is not a function schema named {name!r}")
    own = tool_schema(fn)["function"].get("parameters", {})
    parameters = function.get("parameters", {})
    shown = set(parameters.get("properties", {}))
    if unknown := shown - set(own.get("properties", {})):
        raise ValueError(
            f"the recorded schema for {name} shows parameter(s) {name} lacks: {', '.join(sorted(unknown))}"
        )
    if hidden := set(own.get("required", [])) - shown:
        raise ValueError(f"the recorded schema for {name} hides required parameter(s): {', '.join(sorted(hidden))}")
    if bad := set(parameters.get("required", [])) - shown:
        raise ValueError(f"the recorded schema for {name} requires parameter(s) it does not show: {sorted(bad)}")
    return copy.deepcopy(schema)


def arguments_schema(parameters: dict) -> dict:
    """A parameters schema as standard JSON Schema (for jsonschema, an MCP tool's inputSchema): `nullable`
    (get_json_schema's Optional) as a null type, no extra properties."""

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: fix(v) for k, v in node.items()}
            if node.pop("nullable", False) and isinstance(node.get("type"), str):
                node["type"] = [node["type"], "null"]
            return node
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    schema = fix(copy.deepcopy(parameters))
    schema.setdefault("type", "object")
    schema["additionalProperties"] = False
    return schema


# The codes of the failures the engine itself reports (the tools' own codes are theirs to define):
# invalid_tool_call is the agent's answer to a call it could not parse (agent.engine.agent).
ENGINE_ERROR_CODES = (
    "unknown_tool",
    "invalid_arguments",
    "repeated_call",
    "tool_unavailable",
    "tool_timeout",
    "tool_error",
    "invalid_tool_call",
    "refused_call",
)


def error(code: str, message: str) -> dict:
    """A failed call's result; code is one of ENGINE_ERROR_CODES."""
    return {"error": {"code": code, "message": message}}


@dataclass
class Toolbox:
    """The tools an agent may call, with their schemas and a per-run call ledger.

    recorded: the schemas a model was trained on ({name: schema}, see fit_schema); a tool it lacks shows its own.
    repeat_limit: the identical call refused within a run (None: never, for callers that are not one agent run).
    """

    functions: list[Callable]
    timeout: float = 10.0
    recorded: dict[str, dict] | None = None
    repeat_limit: int | None = REPEAT_LIMIT
    schemas: list[dict] = field(init=False)
    _by_name: dict[str, tuple[Callable, Any]] = field(init=False, repr=False)
    _seen: dict[str, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        recorded = self.recorded or {}
        self.schemas = [
            fit_schema(fn, recorded[fn.__name__]) if fn.__name__ in recorded else tool_schema(fn)
            for fn in self.functions
        ]
        self._by_name = {}
        for fn, schema in zip(self.functions, self.schemas, strict=True):
            name = schema["function"]["name"]
            if name in self._by_name:
                raise ValueError(f"two tools are named {name!r}")
            validator = jsonschema.Draft202012Validator(arguments_schema(schema["function"].get("parameters", {})))
            self._by_name[name] = (fn, validator)
        # Each call runs in a daemon thread of its own: Python cannot stop a thread, so a tool that hangs
        # keeps its thread, but it neither takes a worker from later calls (a pool would) nor keeps the
        # process from exiting (a pool's threads are joined at exit).
        self._stuck: set[threading.Thread] = set()

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    def new_run(self) -> None:
        """Forget the calls of the previous run (the repeat limit is per run)."""
        self._seen = {}

    def call(self, name: str, arguments: Any, context: dict[str, Any] | None = None) -> dict:
        """Run one call; the result, or {"error": {"code", "message"}} naming what went wrong. context: values
        for the tool's context arguments (others are ignored; None values are not passed)."""
        if name not in self._by_name:
            return error("unknown_tool", f"There is no tool {name!r}. Available tools: {', '.join(self.names)}.")
        if not isinstance(arguments, dict):
            return error("invalid_arguments", f"{name}: arguments must be a JSON object, got {arguments!r}.")
        if self.repeat_limit is not None:  # no ledger at all without a limit: a server's would only grow
            key = name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)
            self._seen[key] = self._seen.get(key, 0) + 1
            if self._seen[key] >= self.repeat_limit:
                return error(
                    "repeated_call",
                    f"{name} was already called {self._seen[key] - 1} times with these arguments; "
                    "use the earlier results or answer the patient.",
                )
        fn, validator = self._by_name[name]
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        if problems:
            details = "; ".join(f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in problems)
            return error("invalid_arguments", f"{name}: {details}.")
        self._stuck = {t for t in self._stuck if t.is_alive()}
        if len(self._stuck) >= MAX_STUCK:
            return error("tool_unavailable", f"{len(self._stuck)} earlier tool calls are still running; try later.")
        outcome: dict[str, Any] = {}
        supplied = {k: v for k, v in (context or {}).items() if k in context_arguments(fn) and v is not None}

        def target() -> None:
            try:
                outcome["result"] = fn(**arguments, **supplied)
            except Exception as e:  # a tool's bug must reach the model as a result, not end the run
                outcome["error"] = e

        thread = threading.Thread(target=target, name=f"ppsf-tool-{name}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            self._stuck.add(thread)
            return error("tool_timeout", f"{name} did not answer within {self.timeout:g} s.")
        if "error" in outcome:
            e = outcome["error"]
            return error("tool_error", f"{name} failed: {type(e).__name__}: {e}")
        result = outcome.get("result")
        try:
            json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            return error("tool_error", f"{name} returned something that is not JSON: {e}")
        return result
