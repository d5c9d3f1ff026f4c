"""PPSF: the Pharmacy Prompt Serialization Format, a domain-free agent engine that speaks it, and a pharmacist
agent built on it.

- `agent.ppsf`: the format (templates, markers, tokenizers, parsing);
- `agent.engine`: the loop, generators, toolbox, model loading;
- `agent.pharmacy`: tools, drug data, the dose check, `pharmacist_agent`;
- `agent.eval`: scoring and the evaluation runner.
"""

from .engine import Agent, AgentConfig, AgentResult, RunStats, StepStats
from .engine.models import load_model
from .pharmacy import pharmacist_agent
from .ppsf import chat_template, load_tokenizer, response_template, use_ppsf

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "RunStats",
    "StepStats",
    "chat_template",
    "load_model",
    "load_tokenizer",
    "pharmacist_agent",
    "response_template",
    "use_ppsf",
]
