"""The PPSF agent loop: render (agent mode), generate, parse, run tools, feed results back, repeat.

Domain-free: tools, triage rules (agent.engine.triage, consulted before anything runs), a renderer that may
write the answer from the tools' results, answer checks (agent.engine.checks), the name constraint and the
fallback answer are plugged in; agent.pharmacy.pharmacist_agent wires the pharmacy's.

Who speaks: the model decides (a tool call, or an answer). With a renderer, when the model opens its answer
block after tool results the renderer covers, decoding stops at the marker and the renderer writes the
answer; the model writes only answers no tool result covers. Model prose is never streamed: it is shown once
the checks have passed it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import ppsf
from .backends import Backend
from .call_checks import CallCheck, CallsCheck, with_checks
from .calls import InvalidCall, checked_calls, one_line
from .checks import AnswerCheck, Append, Replace, applied
from .generation import GenerationResult, Generator
from .grounding import GroundedNames, conversation_texts
from .routing import Route, Router, reply_start
from .toolbox import Toolbox
from .toolbox import error as error_result
from .transcript import Transcript
from .triage import Triage

Event = dict[str, Any]
Outcome = tuple[str, bool]  # (tool name, succeeded) of a call
# What to answer when the model gives no answer: (messages, outcomes, max_steps, ran_out) -> text.
Fallback = Callable[[list[dict], list[Outcome], int, bool], str]
# The answer to the current turn written from its tool results, or None when they are not all covered.
Renderer = Callable[[list[dict]], str | None]
ANSWER_MARKER = "@PHARMACIST"


@dataclass(frozen=True)
class AgentConfig:
    """How a run goes: the prompt, the loop's bounds, sampling and where the transcript goes."""

    system_prompt: str | None = None
    max_steps: int = 5  # generation steps before a final answer is forced
    max_new_tokens: int = 256  # per step
    tool_timeout: float = 10.0  # seconds
    temperature: float = 0.0  # 0: greedy
    seed: int | None = None
    reuse_cache: bool = True  # False: every step from an empty KV cache (for comparisons)
    transcript: str | Path | None = None  # a JSONL file, created private (agent.engine.transcript)

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass(frozen=True)
class GroundedArguments:
    """Which tool arguments the local generator grounds in the conversation (agent.engine.grounding).

    arguments: the grounded string argument and list argument; known_name: where a value may not stop short
    of a longer known name ("İzosorbid" of "İzosorbid mononitrat"), None to allow it; names_only: a value must be
    a known name when the conversation holds one."""

    arguments: tuple[str, str]
    known_name: Callable[[str], bool] | None = None
    names_only: bool = False

    def __call__(self, tokenizer: Any, messages: list[dict], written: str = "") -> GroundedNames:
        """The constraint for one step; written: the text the reply starts with (a routed start)."""
        texts = conversation_texts(messages)
        return GroundedNames(
            tokenizer, texts, self.known_name, arguments=self.arguments, names_only=self.names_only, written=written
        )


def no_answer(messages: list[dict], outcomes: list[Outcome], max_steps: int, ran_out: bool) -> str:
    """The default fallback: what was tried, in English (the pharmacy agent answers in the patient's language)."""
    tried = ", ".join(dict.fromkeys(name for name, _ in outcomes)) or "none"
    within = f" within {max_steps} steps" if ran_out else ""
    failed = " Some tool calls failed." if any(not ok for _, ok in outcomes) else ""
    return f"Sorry, I could not reach an answer{within}. Tools used: {tried}.{failed}"


@dataclass
class StepStats:
    """What one generation step cost."""

    step: int
    prompt_tokens: int
    cached_tokens: int
    prefill_tokens: int
    decoded_tokens: int
    stop_reason: str
    seconds: float
    tool_calls: int


@dataclass
class RunStats:
    steps: list[StepStats] = field(default_factory=list)

    @property
    def prefill_tokens(self) -> int:
        return sum(s.prefill_tokens for s in self.steps)

    @property
    def generated_tokens(self) -> int:
        return sum(s.decoded_tokens for s in self.steps)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    def to_dict(self) -> dict:
        return {
            "steps": len(self.steps),
            "prefill_tokens": self.prefill_tokens,
            "generated_tokens": self.generated_tokens,
            "seconds": round(self.seconds, 3),
            "per_step": [asdict(s) for s in self.steps],
        }


@dataclass
class AgentResult:
    message: dict  # the final assistant message
    messages: list[dict]  # the whole transcript, OpenAI-style
    stats: RunStats
    replaced_answer: str | None = None  # the answer before an answer check changed it (engine.checks)
    answered_by: str = "model"  # "model", "tools" (the renderer), or the name of the triage rule that answered


def _without(messages: list[dict], start: int, count: int) -> list[dict]:
    return messages[:start] + messages[start + count :]


class InputTooLong(ValueError):
    """The conversation does not fit the model's context with room for an answer."""


class Agent:
    """A tool-calling agent over any causal LM, speaking PPSF with this repo's templates.

    >>> backend = build_backend(BackendOptions())  # agent.engine.backends: the bundled model, here
    >>> agent = Agent(backend, [search_drug], config=AgentConfig(max_steps=4))
    >>> result = agent.run("Parol ne işe yarar?")
    >>> result.message["content"], result.stats.to_dict()
    """

    def __init__(
        self,
        backend: Backend,
        tools: list[Callable],
        *,
        config: AgentConfig | None = None,
        checks: list[AnswerCheck] | tuple[AnswerCheck, ...] = (),
        constraint: GroundedArguments | None = None,
        fallback: Fallback = no_answer,
        examples: list[dict] | None = None,
        on_event: Callable[[Event], None] | None = None,
        tool_context: Callable[[list[dict]], dict[str, Any]] | None = None,
        triage: list[Triage] | tuple[Triage, ...] = (),
        renderer: Renderer | None = None,
        router: Router | None = None,
        call_checks: list[CallCheck | CallsCheck] | tuple[CallCheck | CallsCheck, ...] = (),
    ) -> None:
        if not isinstance(backend, Backend):
            raise TypeError(
                f"Agent runs on a Backend (agent.engine.backends.build_backend; Backend.local(model, tokenizer) for "
                f"a model loaded by hand), not on {type(backend).__name__}"
            )
        self.config = config or AgentConfig()
        self.backend = backend
        self.tokenizer = backend.tokenizer
        # This repo's format, whatever templates the model's tokenizer came with (it is not modified).
        self.chat_template = ppsf.chat_template()
        self.response_template = ppsf.response_template()
        # The schemas the model was trained on (agent.engine.models.recorded_tools), else the tools' own.
        self.toolbox = Toolbox(tools, timeout=self.config.tool_timeout, recorded=backend.tool_schemas)
        # The backend's, shared with every agent on it (its KV cache and prefix snapshots included).
        self.generator: Generator = backend.generator
        self.checks = list(checks)
        self.triage = list(triage)
        # None: the model writes every answer.
        self.renderer = renderer
        # Chooses how the first reply to a patient's message starts (agent.engine.routing); None: the model does.
        self.router = router
        # Rules that say what each call runs with (agent.engine.call_checks); the transcript keeps the model's.
        self.call_checks = list(call_checks)
        # A model trained shown only the routed tool (backend.tools_shown): the tools block of a routed run holds
        # the tools the run has chosen so far (TinyAgent's tool retrieval), else every tool.
        self.route_tools = backend.tools_shown == "routed" and router is not None
        self._shown: frozenset[str] | None = None  # this run's tools block (names); None: every tool
        # Applied only by a generator that decodes here (a remote backend's sampler is not ours).
        self.constraint = constraint
        self.fallback = fallback
        # Demonstration turns rendered after the system prompt (few-shot for a model not tuned on PPSF);
        # they are part of every prompt, not of the returned transcript.
        self.examples = [dict(m) for m in examples or []]
        self.on_event = on_event
        # Values for the tools' context arguments (agent.engine.toolbox.context_arguments), from the conversation.
        self.tool_context = tool_context

    @property
    def max_steps(self) -> int:
        return self.config.max_steps

    @property
    def max_new_tokens(self) -> int:
        return self.config.max_new_tokens

    # ---- public API ----
    def run(self, question_or_messages: str | list[dict]) -> AgentResult:
        """Answer a question (or continue a conversation) and return the final message, transcript, stats."""
        log = Transcript(self.config.transcript, uuid.uuid4().hex[:12])
        conversation = self._start(question_or_messages)
        # Input the model cannot read is refused first, with its reason: no rule or classifier answers for it (a
        # linear classifier's score of one word repeated a hundred thousand times says nothing of its meaning).
        self._shown = None
        if not self._fits(prompt := self.render(conversation)):
            raise InputTooLong(self._too_long(prompt))
        if (triaged := self._triage(conversation, log)) is not None:
            return triaged
        route = self._route_run(conversation)
        messages, head, prompt = self._first_prompt(question_or_messages)
        shown = len(self.examples)
        if self.examples:
            log.write("examples", messages=self.examples)
        for message in _without(messages, head, shown):
            log.write("message", message=message)
        self.toolbox.new_run()
        stats = RunStats()
        outcomes: list[Outcome] = []
        answered_by = "model"
        for step in range(1, self.max_steps + 1):
            if step > 1:
                prompt = self.render(messages)
                if not self._fits(prompt):
                    break  # the tool results filled the context: answer from what is known
            rendered = self.renderer(_without(messages, head, shown)) if self.renderer else None
            start = self._reply_start(route) if step == 1 else ""
            result, parsed = self._generate(
                prompt, _without(messages, head, shown), answer_written=rendered is not None, start=start
            )
            self._set_calls(parsed, route if step == 1 else None, _without(messages, head, shown), log)
            calls = parsed.get("tool_calls") or []
            stats.steps.append(self._step_stats(step, result, len(calls)))
            assistant = self._assistant_message(parsed, step)
            if rendered is not None and not calls and "parse_error" not in assistant:
                # The model chose to answer; the tools' results say it (the model's text, if any, is kept).
                if (assistant.get("content") or "").strip():
                    log.write("model_answer", content=assistant["content"])
                assistant["content"], answered_by = rendered, "tools"
            if not calls and "parse_error" not in assistant and not (assistant.get("content") or "").strip():
                # An empty reply is no answer: say so rather than show the patient nothing.
                assistant["content"] = self.fallback(messages, outcomes, self.max_steps, False)
            messages.append(assistant)
            log.write("message", message=assistant)
            if "parse_error" in assistant:
                # The model can fix a call it wrote badly: tell it why, as a tool result, and go on.
                output = error_result("invalid_tool_call", assistant["parse_error"][:500])
                self._append_tool_result(messages, log, "invalid_tool_call", None, output, outcomes)
                continue
            if not calls:
                replaced = self._check_answer(messages, _without(messages, head, shown), log)
                log.write("stats", stats=stats.to_dict())
                self._emit({"type": "final", "message": messages[-1], "stats": stats.to_dict()})
                return AgentResult(messages[-1], _without(messages, head, shown), stats, replaced, answered_by)
            if self._shown is not None:  # the tools it called are in the next prompt's tools block
                self._shown |= {c["name"] for c in calls}
            context = self.tool_context(_without(messages, head, shown)) if self.tool_context else None
            for call, checked in zip(assistant["tool_calls"], calls, strict=True):  # in order
                refused = self._refused(_without(messages, head, shown), checked["name"], checked["arguments"])
                if refused is not None:
                    output = error_result("refused_call", refused)
                else:
                    output = self.toolbox.call(checked["name"], checked["arguments"], context)
                fn = call["function"]
                self._append_tool_result(messages, log, fn["name"], call["id"], output, outcomes)
            log.write("step", stats=asdict(stats.steps[-1]))
        rendered = self.renderer(_without(messages, head, shown)) if self.renderer else None
        if rendered is not None:  # out of steps: what the tools found is the answer
            final, answered_by = {"role": "assistant", "content": rendered}, "tools"
        else:
            final = self._final_answer(messages, outcomes, stats, _without(messages, head, shown))
        messages.append(final)
        log.write("message", message=final)
        replaced = self._check_answer(messages, _without(messages, head, shown), log)
        log.write("stats", stats=stats.to_dict())
        self._emit({"type": "final", "message": messages[-1], "stats": stats.to_dict()})
        return AgentResult(messages[-1], _without(messages, head, shown), stats, replaced, answered_by)

    def _triage(self, conversation: list[dict], log: Transcript) -> AgentResult | None:
        """The first triage rule's answer to the conversation, before any generation or tool; None: none."""
        for rule in self.triage:
            answer = rule.answer(conversation)
            if answer is None:
                continue
            for message in conversation:
                log.write("message", message=message)
            final = {"role": "assistant", "content": answer}
            log.write(rule.name, note=rule.note, message=final)
            self._emit({"type": rule.name, "rule": rule.name, "action": "answer", "note": rule.note})
            stats = RunStats()
            log.write("stats", stats=stats.to_dict())
            self._emit({"type": "final", "message": final, "stats": stats.to_dict()})
            return AgentResult(final, [*conversation, final], stats, None, rule.name)
        return None

    def _refused(self, conversation: list[dict], tool: str, arguments: dict) -> str | None:
        for rule in self.triage:
            if (reason := rule.refuses(conversation, tool, arguments)) is not None:
                self._emit({"type": rule.name, "rule": rule.name, "action": "refuse", "note": reason, "tool": tool})
                return reason
        return None

    def next_message(self, question_or_messages: str | list[dict]) -> dict:
        """The agent's next assistant message for a conversation, one generation step as run's first, no tool run
        and no triage: routed as run routes it, its calls as {"name", "arguments"} dicts (checked, with the
        route's arguments and the call checks applied), or {"invalid", "error"} when they cannot run."""
        route = self._route_run(self._start(question_or_messages))
        messages, head, prompt = self._first_prompt(question_or_messages)
        shown = _without(messages, head, len(self.examples))
        parsed = self._generate(prompt, shown, start=self._reply_start(route))[1]
        self._set_calls(parsed, route, shown)
        return parsed

    def prompt(self, question_or_messages: str | list[dict]) -> str:
        """The text the model continues for its next reply, as run's first step gives it: the agent-mode prompt
        (the routed tools block, for a model trained on one) and the route's start (a call's block up to its
        arguments, or the answer's marker). A plain `pipeline("text-generation")` given it writes what the agent's
        model writes; the reply is the start and what follows it."""
        route = self._route_run(self._start(question_or_messages))
        return self._first_prompt(question_or_messages)[2] + self._reply_start(route)

    def _route_run(self, conversation: list[dict]) -> Route | None:
        """The router's choice for the reply to the conversation, and this run's first tools block set by it."""
        route = self._route(conversation)
        self._shown = self._tools_for(route)
        return route

    def _set_calls(self, parsed: dict, route: Route | None, shown: list[dict], log: Transcript | None = None) -> None:
        """The calls of a parsed reply as they run: the route's arguments (route: the step the router started),
        then the call checks on the conversation shown; what the model had written goes to log."""
        if route is not None and parsed.get("tool_calls"):
            written = parsed["tool_calls"]
            parsed["tool_calls"] = route.apply(written)
            if log is not None and parsed["tool_calls"] != written:  # the developer sees what the model had chosen
                log.write("routed_arguments", model_calls=written, calls=parsed["tool_calls"])
        if self.call_checks and parsed.get("tool_calls"):
            written = parsed["tool_calls"]
            parsed["tool_calls"] = with_checks(self.call_checks, written, shown)
            if log is not None and parsed["tool_calls"] != written:
                names = ", ".join(c.name for c in self.call_checks)
                log.write("call_checks", checks=names, model_calls=written, calls=parsed["tool_calls"])
                action = (
                    "added_calls"
                    if len(parsed["tool_calls"]) > len(written)
                    else "set_tools"
                    if any(c.get("name") != w.get("name") for c, w in zip(parsed["tool_calls"], written, strict=True))
                    else "set_arguments"
                )
                self._emit({"type": "call_checks", "rule": names, "action": action})

    def _reply_start(self, route: Route | None) -> str:
        return reply_start(self.render, route.tool) if route is not None else ""

    def _first_prompt(self, question_or_messages: str | list[dict]) -> tuple[list[dict], int, str]:
        """(messages with the demonstrations after the system prompt, where they start, the first prompt); the
        prompt's fixed part is handed to the generator's prefix cache. Raises InputTooLong when it does not fit."""
        messages = self._start(question_or_messages)
        head = 1 if messages[0].get("role") == "system" else 0
        messages[head:head] = [dict(m) for m in self.examples]
        prompt = self.render(messages)
        if not self._fits(prompt):
            raise InputTooLong(self._too_long(prompt))
        self._cache_prefix(messages[: head + len(self.examples)], prompt)
        return messages, head, prompt

    def _check_answer(self, messages: list[dict], shown: list[dict], log: Transcript) -> str | None:
        """Run the answer checks, in order, on the final answer (messages[-1]), each on what the one before left;
        a check's verdict replaces it or adds to it. shown: the conversation without the demonstration turns
        (what the checks see).

        Returns the answer as it was before the first check changed it, or None. The transcript keeps both."""
        replaced = None
        for check in self.checks:
            answer = messages[-1].get("content") or ""
            verdict = check.check(answer, [*shown[:-1], messages[-1]])
            if verdict is None:
                continue
            if not isinstance(verdict, (Replace, Append)):
                raise TypeError(f"{check.name}.check returned {verdict!r}: Replace, Append or None")
            messages[-1] = {**messages[-1], "content": applied(answer, verdict)}
            action = "replace" if isinstance(verdict, Replace) else "append"
            log.write(check.name, action=action, replaced=answer, message=messages[-1])
            # The event names the rule and what it did; what it replaced stays in the transcript only.
            self._emit({"type": check.name, "rule": check.name, "action": action, "note": check.note})
            replaced = answer if replaced is None else replaced
        return replaced

    def render(self, messages: list[dict]) -> str:
        """The agent-mode prompt: no generation prompt, the model writes its own blocks."""
        return self.tokenizer.apply_chat_template(
            messages, tools=self.shown_schemas(), chat_template=self.chat_template, tokenize=False
        )

    def shown_schemas(self) -> list[dict]:
        """The schemas of the tools block this run's prompts show: every tool, or for a model trained on routed
        tools blocks, the routed tool and those called since (none for a reply routed to an answer)."""
        if self._shown is None:
            return self.toolbox.schemas
        return [s for s in self.toolbox.schemas if s["function"]["name"] in self._shown]

    # ---- one step ----
    def _start(self, question_or_messages: str | list[dict]) -> list[dict]:
        if isinstance(question_or_messages, str):
            if not question_or_messages.strip():
                raise ValueError("The question is empty")
            messages = [{"role": "user", "content": question_or_messages}]
        elif isinstance(question_or_messages, list) and question_or_messages:
            messages = [dict(m) for m in question_or_messages]
        else:
            raise ValueError("run() takes a question string or a non-empty list of messages")
        if self.config.system_prompt and messages[0].get("role") != "system":
            messages.insert(0, {"role": "system", "content": self.config.system_prompt})
        return messages

    def _cache_prefix(self, fixed: list[dict], prompt: str) -> None:
        """Have a generator that keeps prefix snapshots (CachedGenerator) hold the prompt's fixed part: the
        format header, system prompt, tools and demonstrations, the same for every conversation."""
        cache_prefix = getattr(self.generator, "cache_prefix", None)
        if cache_prefix is None or not self.config.reuse_cache or not fixed:  # no messages: nothing renders alone
            return
        prefix = self.render(fixed)
        # Only a block boundary of this very prompt: the template may render a lone system turn otherwise.
        if prefix.endswith("\n\n") and prompt.startswith(prefix) and len(prompt) > len(prefix):
            cache_prefix(prefix, next_text="@")

    def _fits(self, prompt: str) -> bool:
        """Whether prompt leaves max_new_tokens of the generator's context (unknown context: always)."""
        limit = getattr(self.generator, "context_length", None)
        if not limit:
            return True
        if len(prompt) <= limit - self.max_new_tokens:  # every token covers at least one character
            return True
        return self._count(prompt) + self.max_new_tokens <= limit

    def _count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _too_long(self, prompt: str) -> str:
        limit = self.generator.context_length
        return (
            f"The conversation is {self._count(prompt):,} tokens with the system prompt and tools, and the model "
            f"reads at most {limit:,} including the {self.max_new_tokens} of its answer: shorten the question."
        )

    def _route(self, conversation: list[dict]) -> Route | None:
        """The router's choice for the reply to the conversation's last message; None when there is no router, it
        leaves the choice to the model, or it names a tool this agent does not have."""
        route = self.router.route(conversation) if self.router is not None else None
        if route is None or (route.tool is not None and route.tool not in self.toolbox.names):
            return None
        event = {"type": "route", "rule": self.router.name, "tool": route.tool, "confidence": route.confidence}
        self._emit({**event, "arguments": route.arguments} if route.arguments else event)
        return route

    def _tools_for(self, route: Route | None) -> frozenset[str] | None:
        """The run's first tools block: the routed tool alone (none for an answer) when the model was trained so."""
        if not self.route_tools or route is None:
            return None
        return frozenset([route.tool] if route.tool else [])

    def _generate(
        self, prompt: str, shown: list[dict], answer_written: bool = False, start: str = ""
    ) -> tuple[GenerationResult, dict]:
        """Generate one step, streaming parser events; returns the raw result and the parsed message.

        The parsed message's tool_calls are checked (agent.engine.calls) as [{"name", "arguments"}]; a reply the
        parser cannot read, or whose calls cannot run, comes back as {"invalid": text, "error": why}.
        shown: the conversation without the demonstration turns (where grounded names may come from).
        answer_written: the renderer writes this turn's answer, so decoding stops where the model opens it.
        start: text the reply starts with (a routed start): written into the prompt, parsed as the model's."""
        parser = self.tokenizer.get_response_parser(self.response_template, prefix=prompt, tools=self.toolbox.schemas)
        broken: list[str] = []

        def on_text(piece: str) -> None:
            if broken:
                return
            try:
                events = ppsf.feed(parser, piece)  # bounded pieces: a server may send one huge chunk
            except (ValueError, RecursionError) as e:  # a tool call whose JSON does not parse
                broken.append(one_line(e))
                return
            self._emit_parser_events(events)

        if not self.config.reuse_cache:  # every step from an empty KV cache (for comparisons)
            getattr(self.generator, "clear", self.generator.reset)()
        if start:
            on_text(start)
        # Agent mode ends at a block boundary, and the model's next block starts with "@".
        next_text = "@" if prompt.endswith("\n\n") and not start else None
        extra = {}
        if self.constraint is not None and getattr(self.generator, "accepts_constraint", False):
            extra["constraint"] = self.constraint(self.tokenizer, shown, written=start)
        if answer_written and getattr(self.generator, "accepts_stop_blocks", False):
            extra["stop_blocks"] = (ANSWER_MARKER,)
        result = self.generator.generate(
            prompt + start,
            max_new_tokens=self.max_new_tokens,
            on_text=on_text,
            next_text=next_text,
            temperature=self.config.temperature,
            seed=self.config.seed,
            **extra,
        )
        message: dict = {}
        if not broken:
            try:
                message, events = parser.finalize()
                self._emit_parser_events(events)
                if "tool_calls" in message:
                    message["tool_calls"] = checked_calls(message["tool_calls"])
                if not message.get("content") and not message.get("tool_calls") and (start + result.text).strip():
                    # Text outside any block (a model that skipped the marker) is the answer, not dropped.
                    message["content"] = (start + result.text).strip()
                _check_no_marker_line(message.get("content"))
            except (ValueError, RecursionError) as e:  # InvalidCall included
                broken.append(one_line(e))
        if broken:
            return result, {"role": "assistant", "invalid": start + result.text, "error": broken[0]}
        return result, message

    def _assistant_message(self, parsed: dict, step: int) -> dict:
        if "invalid" in parsed:
            # Keep what the model wrote, as an answer the next prompt shows, plus the parse error.
            return {"role": "assistant", "content": parsed["invalid"], "parse_error": parsed["error"]}
        message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content")}
        if parsed.get("reasoning_content"):
            message["reasoning_content"] = parsed["reasoning_content"]
        calls = parsed.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{step}_{i}",
                    "type": "function",
                    # OpenAI-style string; renders exactly as the dict would.
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)},
                }
                for i, call in enumerate(calls)
            ]
        return message

    def _append_tool_result(
        self, messages: list[dict], log: Transcript, name: str, call_id: str | None, output: dict, outcomes: list
    ) -> None:
        message = {"role": "tool", "name": name, "content": json.dumps(output, ensure_ascii=False)}
        if call_id is not None:
            message["tool_call_id"] = call_id
        messages.append(message)
        outcomes.append((name, "error" not in output))
        log.write("message", message=message)
        self._emit({"type": "tool_result", "name": name, "id": call_id, "result": output})

    def _step_stats(self, step: int, result: GenerationResult, n_calls: int) -> StepStats:
        stats = StepStats(
            step=step,
            prompt_tokens=result.prompt_tokens,
            cached_tokens=result.cached_tokens,
            prefill_tokens=result.prefill_tokens,
            decoded_tokens=result.decoded_tokens,
            stop_reason=result.stop_reason,
            seconds=round(result.seconds, 4),
            tool_calls=n_calls,
        )
        self._emit({"type": "step", **asdict(stats)})
        return stats

    def _final_answer(
        self, messages: list[dict], outcomes: list[tuple[str, bool]], stats: RunStats, shown: list[dict]
    ) -> dict:
        """Out of steps: ask for an answer from what is known (plain @PHARMACIST prompt, no more tools).

        Like smolagents' provide_final_answer. If the model still says nothing, say what is missing.
        """
        prompt = self.tokenizer.apply_chat_template(
            messages,
            tools=self.shown_schemas(),
            chat_template=self.chat_template,
            add_generation_prompt=True,
            tokenize=False,
        )
        if not self._fits(prompt):
            return {"role": "assistant", "content": self.fallback(messages, outcomes, self.max_steps, True)}
        result, parsed = self._generate(prompt, shown)
        stats.steps.append(self._step_stats(len(stats.steps) + 1, result, 0))
        content = (parsed.get("content") or "").strip()
        if "invalid" in parsed or parsed.get("tool_calls") or not content:  # no tool runs now: say what is missing
            content = self.fallback(messages, outcomes, self.max_steps, True)
        return {"role": "assistant", "content": content}

    # ---- events ----
    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _emit_parser_events(self, events: list[dict]) -> None:
        """Announce each tool call as its block closes. Prose is never streamed: text before a call of the same
        reply is never checked, and the answer is shown (the final event) only once the checks have passed it."""
        for event in events:
            if event["type"] == "region_close" and event["field"] == "tool_calls":
                try:  # announced only if it can run; a broken call is answered as invalid_tool_call instead
                    (checked,) = checked_calls([event["value"]])
                except InvalidCall:
                    continue
                self._emit({"type": "tool_call", **checked})


def _check_no_marker_line(content: Any) -> None:
    """An answer never holds a block marker line: the format escapes them, so one is a block written wrong
    (a @TOOL_CALL with no blank line before it, say) and must not reach the patient as text."""
    if not isinstance(content, str) or "@" not in content:
        return
    for line in content.split("\n"):
        if line.startswith(ppsf.ASSISTANT_MARKERS + ppsf.FOREIGN_MARKERS):
            raise InvalidCall(
                f"the answer holds a {line.split()[0]!r} line; every block starts on its own line after a blank line"
            )
