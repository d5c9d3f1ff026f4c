"""The engine: a domain-free PPSF tool-calling loop, its generators (local KV-cached, OpenAI-compatible
server), the toolbox, model loading and transcripts. Domain behaviour is plugged in (agent.pharmacy)."""

from .agent import Agent, AgentConfig, AgentResult, GroundedArguments, InputTooLong, RunStats, StepStats
from .checks import AnswerCheck, Append, Replace
from .generation import CachedGenerator, GenerationResult, Generator

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "AnswerCheck",
    "Append",
    "CachedGenerator",
    "GenerationResult",
    "Generator",
    "GroundedArguments",
    "InputTooLong",
    "Replace",
    "RunStats",
    "StepStats",
]
