"""The engine: a domain-free PPSF tool-calling loop, its backends (local KV-cached, llama.cpp, OpenAI-compatible
server) built by one function, the toolbox, model loading and transcripts. Domain behaviour is plugged in
(agent.pharmacy)."""

from .agent import Agent, AgentConfig, AgentResult, GroundedArguments, InputTooLong, RunStats, StepStats
from .backends import Backend, BackendOptions, build_backend
from .checks import AnswerCheck, Append, Replace
from .generation import CachedGenerator, GenerationResult, Generator

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentResult",
    "AnswerCheck",
    "Append",
    "Backend",
    "BackendOptions",
    "CachedGenerator",
    "GenerationResult",
    "Generator",
    "GroundedArguments",
    "InputTooLong",
    "Replace",
    "RunStats",
    "StepStats",
    "build_backend",
]
