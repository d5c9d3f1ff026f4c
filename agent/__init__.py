"""PPSF agent: a pharmacist that speaks the Pharmacy Prompt Serialization Format and calls local tools."""

from .agent import Agent, AgentResult, RunStats, StepStats
from .ppsf import REPO_ROOT, chat_template, load_tokenizer, response_template, use_ppsf

__all__ = [
    "Agent",
    "AgentResult",
    "RunStats",
    "StepStats",
    "REPO_ROOT",
    "chat_template",
    "load_tokenizer",
    "response_template",
    "use_ppsf",
]
