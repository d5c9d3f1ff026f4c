"""PPSF: the Pharmacy Prompt Serialization Format, a domain-free agent engine that speaks it, and a pharmacist
agent built on it.

- `agent.ppsf`: the format (templates, markers, tokenizers, parsing);
- `agent.engine`: the loop, generators, toolbox, model loading;
- `agent.pharmacy`: tools, drug data, the dose check, `pharmacist_agent`;
- `agent.eval`: scoring and the evaluation runner.

The names below are imported on first use (PEP 562 `__getattr__`): `import agent.ppsf`, the format alone,
runs this file first, and must not pay for torch and transformers, which the engine imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each public name and the submodule that defines it.
_EXPORTS = {
    "Agent": ".engine",
    "AgentConfig": ".engine",
    "AgentResult": ".engine",
    "Backend": ".engine",
    "BackendOptions": ".engine",
    "RunStats": ".engine",
    "StepStats": ".engine",
    "build_backend": ".engine",
    "chat_template": ".ppsf",
    "load_model": ".engine.models",
    "load_tokenizer": ".ppsf",
    "pharmacist_agent": ".pharmacy",
    "response_template": ".ppsf",
    "use_ppsf": ".ppsf",
}

# Spelled out (not sorted(_EXPORTS)) so that linters and type checkers read it; a test keeps the two equal.
__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "Backend",
    "BackendOptions",
    "RunStats",
    "StepStats",
    "build_backend",
    "chat_template",
    "load_model",
    "load_tokenizer",
    "pharmacist_agent",
    "response_template",
    "use_ppsf",
]

if TYPE_CHECKING:
    from .engine import Agent, AgentConfig, AgentResult, Backend, BackendOptions, RunStats, StepStats, build_backend
    from .engine.models import load_model
    from .pharmacy import pharmacist_agent
    from .ppsf import chat_template, load_tokenizer, response_template, use_ppsf


def __getattr__(name: str) -> Any:
    """Import the submodule that defines `name` (see _EXPORTS) and return the name from it."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
