"""The pharmacy: offline drug tools and data, the dose check, and `pharmacist_agent`, which wires them
into the domain-free engine (agent.engine)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..engine.agent import Agent, AgentConfig, Event, GroundedArguments
from ..engine.generation import Generator
from .dose_check import DoseCheck
from .prompts import SYSTEM_PROMPT, demo_examples, no_answer
from .tools import PHARMACY_TOOLS, is_known_name

# The tool arguments that name medicines: copied from the conversation while decoding (agent.engine.grounding).
DRUG_ARGUMENTS = ("drug", "drugs")


def pharmacist_agent(
    model: Any,
    tokenizer: Any,
    *,
    config: AgentConfig | None = None,
    generator: Generator | None = None,
    tools: list[Callable] | None = None,
    dose_check: bool = True,
    grounded_names: bool = True,
    whole_names: bool = True,
    examples: list[dict] | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> Agent:
    """The pharmacist agent: the pharmacy tools (or `tools`), SYSTEM_PROMPT unless config names one ("" for
    none), the dose check, medicine names grounded in the conversation, and a no-answer reply in the patient's
    language.

    dose_check=False studies the model alone; grounded_names=False lets calls name what the conversation never
    wrote; whole_names=False lets a grounded name stop short of a longer name in the drug data.
    """
    config = config or AgentConfig()
    if config.system_prompt is None:
        config = replace(config, system_prompt=SYSTEM_PROMPT)
    constraint = GroundedArguments(DRUG_ARGUMENTS, is_known_name if whole_names else None) if grounded_names else None
    return Agent(
        model,
        tokenizer,
        list(tools) if tools is not None else list(PHARMACY_TOOLS),
        config=config,
        generator=generator,
        checks=[DoseCheck()] if dose_check else [],
        constraint=constraint,
        fallback=no_answer,
        examples=examples,
        on_event=on_event,
    )


__all__ = ["DRUG_ARGUMENTS", "PHARMACY_TOOLS", "SYSTEM_PROMPT", "demo_examples", "pharmacist_agent"]
