"""The pharmacy: offline drug tools and data, the answer checks, and `pharmacist_agent`, which wires them
into the domain-free engine (agent.engine)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..engine.agent import Agent, AgentConfig, Event, GroundedArguments
from ..engine.backends import Backend
from ..engine.checks import AnswerCheck
from ..engine.internals_check import InternalsCheck
from ..engine.triage import Triage
from .answers import render_turn
from .dose_check import DoseCheck
from .facts_check import StatedFacts
from .interaction_check import InteractionCheck
from .medicine_check import NamedMedicines
from .prompts import SYSTEM_PROMPT, conversation_language, demo_examples, no_answer, tool_context
from .router import tool_router
from .tool_check import AnsweringTool
from .tools import PHARMACY_TOOLS, is_known_name, is_medicine_name
from .triage import AmountsAfterIntent, EmergencyTriage
from .verdict_check import VerdictCheck

ANSWERS = ("tools", "model")

# The tool arguments that name medicines: copied from the conversation while decoding (agent.engine.grounding).
DRUG_ARGUMENTS = ("drug", "drugs")


def default_checks(tools: list[Callable] | None = None) -> list[AnswerCheck]:
    """The pharmacy's answer checks, in the order they run, each on what the one before left: the dose and
    verdict checks (an amount or a verdict the tools did not give is replaced by theirs), the internals check
    (after them: a leak they let pass; tools: the agent's, whose names it keeps out), the interaction check
    (it adds a serious interaction nothing said), and last the amounts-after-an-emergency rule (nothing follows
    the emergency answer)."""
    tools = list(tools) if tools is not None else list(PHARMACY_TOOLS)
    return [DoseCheck(), VerdictCheck(), InternalsCheck(tools, no_answer), InteractionCheck(), AmountsAfterIntent()]


def default_triage() -> list[Triage]:
    """The pharmacy's triage: emergencies answered before anything runs, and no amounts once one is held."""
    return [EmergencyTriage()]


def pharmacist_agent(
    backend: Backend | Any,
    tokenizer: Any = None,
    *,
    config: AgentConfig | None = None,
    tools: list[Callable] | None = None,
    checks: Sequence[AnswerCheck] | None = None,
    triage: Sequence[Triage] | None = None,
    answers: str = "tools",
    grounded_names: bool = True,
    whole_names: bool = True,
    names_only: bool = True,
    examples: list[dict] | None = None,
    on_event: Callable[[Event], None] | None = None,
    language: str | None = None,
    tool_schemas: dict[str, dict] | None = None,
    routed: bool | None = None,
    stated_facts: bool = True,
) -> Agent:
    """The pharmacist agent on backend (agent.engine.backends.build_backend): the pharmacy tools (or `tools`),
    SYSTEM_PROMPT unless config names one ("" for none), emergency triage before anything runs, answers written
    from the tools' results (answers="tools", the phrasebook agent.pharmacy.answers; "model": the model writes
    them, for a larger model), the answer checks, medicine names grounded in the conversation, and a no-answer
    reply in the patient's language, which every tool result is written in.

    checks: the answer checks, in order (default_checks(tools) by default; a list without some, or [], studies
    the model alone); triage: the rules consulted before generation (default_triage(); [] studies the model
    alone, never for patients). grounded_names=False lets calls name what the conversation never wrote;
    whole_names=False lets a grounded name stop short of a longer name in the drug data; names_only=True (the
    default) makes a grounded name one of the medicine names the conversation holds (data or reference), when
    it holds any (not "İstanbul" or "ateş" beside "Coumadin"); False lets it be any span. language ("tr", "en")
    fixes the language the tools answer in; by default it is read from the patient's messages.
    tool_schemas: the schemas the model was trained on (agent.engine.models.recorded_tools); by default the
    backend's, else for a tuned model those of the repo's adapter (default_tool_schemas), else the tools' own full
    schemas (a model that was never shown any). routed=True: the tool router (agent.pharmacy.router) chooses how
    the reply to the patient's message starts, the tool it calls or an answer, and the model writes the rest;
    False: the model chooses alone; None (the default): routed when the backend is the PPSF-tuned model, whose
    recipe trains the router, or a model trained on routed tools blocks (its tools_shown.txt).
    stated_facts=True (the default): a call's tool is the one its arguments ask (a medicine and a disease:
    check_contraindications; agent.pharmacy.tool_check), its medicine the one the patient's latest message names,
    with a call for each medicine written beside it (agent.pharmacy.medicine_check), and its weight, age, pregnancy,
    breastfeeding and conditions are set as the patient's words state them (agent.pharmacy.facts_check), the
    model's calls kept in the transcript; False studies the model's own calls.

    `pharmacist_agent(model, tokenizer)` (load_model's pair, a model loaded by hand) runs on
    Backend.local(model, tokenizer); a Backend carries its own tokenizer, so none is given with one.
    """
    backend = _backend(backend, tokenizer)
    if language not in (None, "tr", "en"):
        raise ValueError(f"language must be 'tr', 'en' or None, not {language!r}")
    if answers not in ANSWERS:
        raise ValueError(f"answers must be one of {ANSWERS}, not {answers!r}")
    config = config or AgentConfig()
    tools = list(tools) if tools is not None else list(PHARMACY_TOOLS)
    if config.system_prompt is None:
        config = replace(config, system_prompt=SYSTEM_PROMPT)
    schemas = tool_schemas if tool_schemas is not None else backend.tool_schemas
    if schemas is None and backend.tuned:  # a tuned model with no record of its own: the repo adapter's schemas
        schemas = default_tool_schemas()
    if schemas is not backend.tool_schemas:  # a copy that shows them: the caller's backend stays as it was made
        backend = replace(backend, tool_schemas=schemas)
    # A model trained on routed tools blocks has never chosen among all the tools: it runs routed.
    if routed is None:
        routed = backend.tuned or backend.tools_shown == "routed"
    # names_only needs the reference's substances too: a medicine the data lacks is still a name to copy.
    known = is_medicine_name if names_only else is_known_name if whole_names else None
    constraint = GroundedArguments(DRUG_ARGUMENTS, known, names_only=names_only) if grounded_names else None
    return Agent(
        backend,
        tools,
        config=config,
        checks=default_checks(tools) if checks is None else list(checks),
        triage=default_triage() if triage is None else list(triage),
        renderer=_renderer(language) if answers == "tools" else None,
        router=tool_router() if routed else None,
        # AnsweringTool first: a lookup it makes the interaction check of medicines asked of together is not first
        # copied by NamedMedicines for each of them
        call_checks=[AnsweringTool(), NamedMedicines(), StatedFacts()] if stated_facts else [],
        constraint=constraint,
        fallback=no_answer,
        examples=examples,
        on_event=on_event,
        tool_context=tool_context
        if language is None
        else (lambda messages: tool_context(messages) | {"language": language}),
    )


def _backend(backend: Backend | Any, tokenizer: Any) -> Backend:
    """backend itself, or Backend.local of a model loaded by hand and its tokenizer (tuned, with the schemas and
    tools blocks it was trained on, where load_model merged an adapter into it)."""
    if isinstance(backend, Backend):
        if tokenizer is not None:
            raise TypeError("pharmacist_agent(backend) takes no tokenizer: the backend carries its own")
        return backend
    if backend is None or tokenizer is None:
        raise TypeError(
            "pharmacist_agent runs on a Backend (agent.engine.backends.build_backend, or Backend(kind, generator, "
            "tokenizer) for a generator of your own) or on a loaded model and its tokenizer"
        )
    from ..engine.models import merged_adapter, recorded_tools, recorded_tools_shown

    # What the model was trained on, as the local backend reads it: the adapter load_model merged into it (the
    # model is then tuned), else its own folder (an export holds its tools.json).
    adapter = merged_adapter(backend)
    folders = (adapter, getattr(backend, "name_or_path", None) or None)
    return Backend.local(
        backend,
        tokenizer,
        tool_schemas=recorded_tools(*folders),
        tuned=adapter is not None,
        adapter=adapter,
        tools_shown=recorded_tools_shown(*folders),
    )


def _renderer(language: str | None) -> Callable[[list[dict]], str | None]:
    """The phrasebook as the engine's renderer, in the patient's language (or the one the agent was given)."""

    def render(messages: list[dict]) -> str | None:
        return render_turn(messages, language or conversation_language(messages) or "en")

    return render


@functools.cache  # read once: the web app builds an agent for every turn (Toolbox copies what it shows)
def default_tool_schemas() -> dict[str, dict] | None:
    """The tool schemas the repo's adapter was trained on (adapter/tools.json): what the default model is shown.

    A tool that gains a parameter (calculate_dose's age_months) shows it only to a model trained with it: the
    committed adapter, shown age_months, wrote "4 yaşında" as 4 months (free-text dev 70.0 % -> 63.3 %).
    """
    from ..engine.models import default_adapter_dir, recorded_tools

    return recorded_tools(default_adapter_dir())


__all__ = [
    "ANSWERS",
    "DRUG_ARGUMENTS",
    "PHARMACY_TOOLS",
    "SYSTEM_PROMPT",
    "default_checks",
    "default_tool_schemas",
    "default_triage",
    "demo_examples",
    "pharmacist_agent",
]
