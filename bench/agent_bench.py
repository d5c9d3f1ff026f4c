"""Side-by-side benchmark: this agent vs the loops people write with transformers alone and with smolagents.

    python bench/agent_bench.py            # 8 cases, the CLI's defaults: up to 5 steps, 256 new tokens per step
    python bench/agent_bench.py --quick    # 3 cases, up to 2 steps, 256 tokens: a few minutes on a 2-core CPU

Same model (the bundled SmolLM2-135M-Instruct), same questions, same tools, greedy decoding, one process:
  agent      agent.Agent: CachedGenerator (KV cache kept across steps, stops at a closed call / foreign block)
  pipeline   a text-generation pipeline per step on the same PPSF prompt: full re-render and re-prefill,
             stops at EOS or max_new_tokens, tokenizer.parse_response reads the calls
  smolagents ToolCallingAgent + TransformersModel on the model folder (its own prompts and the model's own
             chat template, as a smolagents user gets them), the same tool functions
Each question starts from an empty KV cache. Ratios are measured in this run, never asserted in tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.engine.generation import common_prefix_len

HERE = Path(__file__).resolve().parent
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# question -> the first call a correct agent makes (name, arguments). Arguments compare case-insensitively;
# extra arguments with default values are accepted.
CASES: list[tuple[str, str, dict]] = [
    ("Parol ne işe yarar?", "search_drug", {"drug": "Parol"}),
    ("Aspirin ile Coumadin birlikte kullanılır mı?", "check_interactions", {"drugs": ["Aspirin", "Coumadin"]}),
    (
        "20 kilo, 5 yaşındaki çocuğuma ne kadar Calpol vermeliyim?",
        "calculate_dose",
        {"drug": "Calpol", "weight_kg": 20, "age_years": 5},
    ),
    ("Nurofen'in yan etkileri nelerdir?", "get_drug_info", {"drug": "Nurofen", "section": "side_effects"}),
    ("Augmentin yerine ne kullanabilirim?", "find_alternatives", {"drug": "Augmentin"}),
    ("Hamileyim, Arveles kullanabilir miyim?", "check_contraindications", {"drug": "Arveles", "pregnant": True}),
    ("What is Majezik used for?", "search_drug", {"drug": "Majezik"}),
    ("Can I take ibuprofen with aspirin?", "check_interactions", {"drugs": ["ibuprofen", "aspirin"]}),
]


@dataclass
class SystemRun:
    """One system's totals over the cases."""

    name: str
    key: str = ""  # which of SYSTEMS
    seconds: float = 0.0
    steps: int = 0
    prefill_tokens: int = 0
    decoded_tokens: int = 0
    after_call_tokens: int = 0  # tokens decoded after a tool call's closing "}" (same step)
    calls_closed: int = 0
    call_probes: int = 0  # one-pass checks for a next @TOOL_CALL after a closed call (agent only)
    correct: int = 0
    cases: int = 0
    transcript_tokens: int = 0  # unique tokens of the final transcripts (agent only)
    notes: list[str] = field(default_factory=list)


# ---- helpers ----
def machine_line() -> str:
    import torch
    import transformers

    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores ({torch.get_num_threads()} torch threads), {platform.system()} "
        f"{platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}"
    )


def call_matches(name: str | None, arguments: Any, want_name: str, want_args: dict) -> bool:
    """The evaluation's definition of a correct call (agent.eval.scoring.call_matches), on one first call."""
    from agent.eval.scoring import call_matches as scored_match

    if not isinstance(arguments, dict):
        return False
    from agent.eval.scoring import tool_defaults

    expected, actual = {"name": want_name, "arguments": want_args}, {"name": name, "arguments": arguments}
    return scored_match(expected, actual, tool_defaults())


def tokens_after_cut(tokenizer, token_ids: list[int], text_len: int) -> int:
    """How many of token_ids come after the first prefix whose decoded text reaches text_len characters."""
    for k in range(len(token_ids) + 1):
        if len(tokenizer.decode(token_ids[:k], skip_special_tokens=False)) >= text_len:
            return len(token_ids) - k
    return 0


class Recorder:
    """Keeps every (prompt, GenerationResult) of a generator the agent drives (same interface)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.steps: list[tuple[str, Any]] = []

    def reset(self) -> None:
        self.inner.reset()

    def __getattr__(self, name: str):  # cache_prefix, prefixes, accepts_constraint, context_length...
        return getattr(self.inner, name)

    def generate(self, prompt: str, **kwargs):
        result = self.inner.generate(prompt, **kwargs)
        self.steps.append((prompt, result))
        return result


def first_call(messages: list[dict]) -> tuple[str | None, Any]:
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = call.get("function", call)
            args = fn.get("arguments")
            return fn.get("name"), json.loads(args) if isinstance(args, str) else args
    return None, None


# The tuned model writes PPSF itself: no worked example in any system's prompt.
EXAMPLES = False


def pharmacist_agent_for(backend, config, answers: str = "tools"):
    from agent.pharmacy import demo_examples, pharmacist_agent

    examples = demo_examples() if EXAMPLES else None
    return pharmacist_agent(backend, config=config, examples=examples, answers=answers)


def cut_at_stop(text: str) -> str:
    """text up to the first of the format's stop strings (generate() and servers may keep it)."""
    from agent.ppsf import STOP_STRINGS

    cuts = [i for i in (text.find(stop) for stop in STOP_STRINGS) if i >= 0]
    return text[: min(cuts)] if cuts else text


# ---- (a) this agent (and (f): the same on llama.cpp) ----
class AgentSystem:
    """agent.Agent with a recording generator (a CachedGenerator of its own, or the llama.cpp one); the KV cache is
    dropped before each question."""

    def __init__(
        self,
        generator,
        tokenizer,
        max_steps: int,
        max_new_tokens: int,
        name: str = "",
        cold: bool = False,
        answers: str = "tools",
    ) -> None:
        from agent.engine.agent import AgentConfig
        from agent.engine.backends import CUSTOM, Backend

        self.tokenizer = tokenizer
        self.recorder = Recorder(generator)
        config = AgentConfig(max_steps=max_steps, max_new_tokens=max_new_tokens)
        # A backend around the recorder (made here, not by build_backend): every step it generates is kept.
        self.agent = pharmacist_agent_for(Backend(CUSTOM, self.recorder, tokenizer), config, answers)
        self.cold = cold
        if cold:
            self.recorder.inner.draft_tokens = 0
        self.run = SystemRun(name or ("agent, previous release (torch, cold)" if cold else "agent (this repo, torch)"))
        self.transcripts: list[list[int]] = []

    def case(self, question: str, want_name: str, want_args: dict) -> None:
        run, tokenizer = self.run, self.tokenizer
        self.recorder.steps.clear()
        # A new conversation: only the prefix snapshot (system prompt, tools) is kept; cold: nothing.
        self.recorder.clear() if self.cold else self.recorder.reset()
        t0 = time.perf_counter()
        result = self.agent.run(question)
        run.seconds += time.perf_counter() - t0
        run.cases += 1
        run.steps += len(result.stats.steps)
        run.prefill_tokens += result.stats.prefill_tokens
        run.decoded_tokens += result.stats.generated_tokens
        for _, step in self.recorder.steps:
            if step.stop_reason == "tool_call":
                run.calls_closed += 1
                run.after_call_tokens += tokens_after_cut(tokenizer, step.token_ids, len(step.text))
            run.call_probes += step.call_probes
        run.correct += call_matches(*first_call(result.messages), want_name, want_args)
        # The final transcript as one text, examples included, as the model saw it.
        messages = list(result.messages)
        head = 1 if messages and messages[0]["role"] == "system" else 0
        messages[head:head] = self.agent.examples
        self.transcripts.append(tokenizer(self.agent.render(messages), add_special_tokens=False)["input_ids"])

    def count_unique_tokens(self) -> None:
        """The tokens of all final transcripts, a prefix they share (the system prompt and tools) counted once."""
        shared = min((common_prefix_len(self.transcripts[0], t) for t in self.transcripts[1:]), default=0)
        self.run.transcript_tokens = sum(len(t) for t in self.transcripts) - shared * (len(self.transcripts) - 1)


# ---- (b) the plain transformers loop ----
class PipelineSystem:
    """What a user writes with transformers alone, on the agent's control flow and prompts.

    Each step: render the whole conversation (PPSF agent mode), run a text-generation pipeline on it (full
    prefill, greedy, until EOS or max_new_tokens), read calls with tokenizer.parse_response, run them with
    the same Toolbox; out of steps, one last plain-answer generation, as the agent does.
    """

    def __init__(self, model, tokenizer, max_steps: int, max_new_tokens: int, stop_strings: bool = False) -> None:
        from transformers import pipeline

        from agent.engine.toolbox import Toolbox
        from agent.pharmacy import default_tool_schemas
        from agent.pharmacy.tools import PHARMACY_TOOLS
        from agent.ppsf import STOP_STRINGS

        self.tokenizer, self.max_steps, self.max_new_tokens = tokenizer, max_steps, max_new_tokens
        self.generate = pipeline("text-generation", model=model, tokenizer=tokenizer)
        self.toolbox = Toolbox(list(PHARMACY_TOOLS), recorded=default_tool_schemas())  # the agent's tools block
        # (d): what a careful user adds, generate()'s stop_strings on the lines only the prompt writes.
        self.stops = {"stop_strings": list(STOP_STRINGS), "tokenizer": tokenizer} if stop_strings else {}
        self.run = SystemRun("transformers loop + stop_strings" if stop_strings else "transformers pipeline loop")

    def step(self, messages: list[dict], final: bool = False) -> dict:
        from agent.engine.generation import StopDetector

        tokenizer, run = self.tokenizer, self.run
        prompt = tokenizer.apply_chat_template(
            messages, tools=self.toolbox.schemas, add_generation_prompt=final, tokenize=False
        )
        prompt_len = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        out = self.generate(
            prompt, max_new_tokens=self.max_new_tokens, do_sample=False, return_tensors=True, **self.stops
        )
        new_ids = out[0]["generated_token_ids"][prompt_len:]
        text = tokenizer.decode(new_ids, skip_special_tokens=True)
        text = cut_at_stop(text) if self.stops else text  # generate() keeps the stop string in the text
        run.steps += 1
        run.prefill_tokens += prompt_len
        run.decoded_tokens += len(new_ids)
        detector = StopDetector()  # only to count what was decoded after a call closed
        stop = detector.feed(text) or detector.finish()  # finish(): the text may end right after the call
        if stop is not None and stop.reason == "tool_call":
            run.calls_closed += 1
            run.after_call_tokens += tokens_after_cut(tokenizer, new_ids, stop.cut)
        try:
            return tokenizer.parse_response(text, prefix=prompt, tools=self.toolbox.schemas)
        except ValueError:  # a call whose JSON does not parse: keep the text as the answer
            return {"role": "assistant", "content": text}

    def case(self, question: str, want_name: str, want_args: dict) -> None:
        from agent.pharmacy import SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
        from agent.pharmacy import demo_examples

        self.toolbox.new_run()
        messages = [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT}, *(demo_examples() if EXAMPLES else [])]
        messages.append({"role": "user", "content": question})
        first: tuple[str | None, Any] = (None, None)
        t0 = time.perf_counter()
        for _ in range(self.max_steps):
            parsed = self.step(messages)
            calls = parsed.get("tool_calls") or []
            if first[0] is None and calls:
                first = first_call([parsed])
            messages.append({"role": "assistant", "content": parsed.get("content"), "tool_calls": calls})
            if not calls:
                break
            for call in calls:
                fn = call["function"]
                result = self.toolbox.call(fn["name"], fn.get("arguments", {}))
                messages.append({"role": "tool", "name": fn["name"], "content": json.dumps(result, ensure_ascii=False)})
        else:
            self.step(messages, final=True)
        self.run.seconds += time.perf_counter() - t0
        self.run.cases += 1
        self.run.correct += call_matches(*first, want_name, want_args)


# ---- (e) llama.cpp's own completion loop ----
class LlamaCppLoopSystem(PipelineSystem):
    """What a CPU user writes with llama-cpp-python on the same GGUF: the PPSF prompt re-rendered each step,
    `Llama.create_completion` (llama.cpp's sampler, greedy, the format's stop strings, its own reuse of the KV
    prefix it already holds, across questions too), the same parsing, tools and control flow as (b)."""

    def __init__(self, llama, tokenizer, max_steps: int, max_new_tokens: int) -> None:
        from agent.engine.toolbox import Toolbox
        from agent.pharmacy import default_tool_schemas
        from agent.pharmacy.tools import PHARMACY_TOOLS
        from agent.ppsf import STOP_STRINGS

        self.llama, self.tokenizer = llama, tokenizer
        self.max_steps, self.max_new_tokens = max_steps, max_new_tokens
        self.toolbox = Toolbox(list(PHARMACY_TOOLS), recorded=default_tool_schemas())  # the agent's tools block
        self.stop = list(STOP_STRINGS)
        self.run = SystemRun("llama.cpp completion loop")

    def step(self, messages: list[dict], final: bool = False) -> dict:
        from agent.engine.generation import StopDetector, common_prefix_len

        tokenizer, run, llama = self.tokenizer, self.run, self.llama
        prompt = tokenizer.apply_chat_template(
            messages, tools=self.toolbox.schemas, add_generation_prompt=final, tokenize=False
        )
        ids = llama.tokenize(prompt.encode(), add_bos=False, special=True)
        # What create_completion will prefill: all but the prefix its context already holds (at least one id).
        held = common_prefix_len(list(llama.input_ids[: llama.n_tokens]), ids)
        out = llama.create_completion(
            prompt, max_tokens=self.max_new_tokens, temperature=0.0, top_k=1, stop=self.stop, seed=0
        )
        text = out["choices"][0]["text"]
        run.steps += 1
        run.prefill_tokens += len(ids) - min(held, len(ids) - 1)
        run.decoded_tokens += out["usage"]["completion_tokens"]
        detector = StopDetector()
        stop = detector.feed(text) or detector.finish()
        if stop is not None and stop.reason == "tool_call":
            run.calls_closed += 1
            # llama.cpp returns no ids: its count of decoded ids (the stop string's included) minus the call's.
            upto = len(tokenizer(text[: stop.cut], add_special_tokens=False)["input_ids"])
            run.after_call_tokens += max(0, out["usage"]["completion_tokens"] - upto)
        try:
            return tokenizer.parse_response(text, prefix=prompt, tools=self.toolbox.schemas)
        except ValueError:
            return {"role": "assistant", "content": text}


# ---- (c) smolagents ----
def smolagents_tool(fn: Callable, schema: dict):
    """A smolagents Tool around one of our functions, described by the same JSON schema our prompt shows.

    Built from the schema rather than with smolagents.tool(fn), which re-parses the function's source
    and rejects decorated or multi-line definitions.
    """
    from smolagents import Tool

    spec = schema["function"]
    parameters = spec.get("parameters", {})
    required = set(parameters.get("required", []))
    inputs = {}
    for name, prop in parameters.get("properties", {}).items():
        entry = {"type": prop.get("type", "any"), "description": prop.get("description", name)}
        if "enum" in prop:
            entry["enum"] = prop["enum"]
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry

    def forward(self, **kwargs: Any) -> dict:
        return fn(**{k: v for k, v in kwargs.items() if v is not None})

    attributes = {
        "name": spec["name"],
        "description": spec.get("description", ""),
        "inputs": inputs,
        "output_type": "object",
        "skip_forward_signature_validation": True,
        "forward": forward,
    }
    return type(f"{spec['name']}_tool", (Tool,), attributes)()


class SmolagentsSystem:
    """smolagents' ToolCallingAgent + TransformersModel on the model folder, with the same tool functions."""

    def __init__(self, model_dir: Path, max_steps: int, max_new_tokens: int) -> None:
        from smolagents import ToolCallingAgent, TransformersModel

        from agent.engine.toolbox import Toolbox
        from agent.pharmacy import default_tool_schemas
        from agent.pharmacy.tools import PHARMACY_TOOLS

        toolbox = Toolbox(list(PHARMACY_TOOLS), recorded=default_tool_schemas())
        tools = [smolagents_tool(fn, schema) for fn, schema in zip(PHARMACY_TOOLS, toolbox.schemas, strict=True)]
        # torch_dtype, not dtype: TransformersModel forwards unknown kwargs to every generate() call.
        model = TransformersModel(
            model_id=str(model_dir), device_map="cpu", torch_dtype="float32", max_new_tokens=max_new_tokens
        )
        self.agent = ToolCallingAgent(tools=tools, model=model, max_steps=max_steps, verbosity_level=0)
        self.run = SystemRun("smolagents ToolCallingAgent")

    def case(self, question: str, want_name: str, want_args: dict) -> None:
        run = self.run
        t0 = time.perf_counter()
        try:  # smolagents prints its parse errors even at verbosity 0: keep them out of the report
            with contextlib.redirect_stdout(io.StringIO()):
                self.agent.run(question)
        except Exception as e:  # a failed run still counts its time and tokens
            run.notes.append(f"{question!r}: {type(e).__name__}: {e}")
        run.seconds += time.perf_counter() - t0
        run.cases += 1
        first: tuple[str | None, Any] = (None, None)
        for step in self.agent.memory.steps:
            usage = getattr(step, "token_usage", None)
            if usage is not None:
                run.steps += 1
                run.prefill_tokens += usage.input_tokens
                run.decoded_tokens += usage.output_tokens
            for call in getattr(step, "tool_calls", None) or []:
                if first[0] is None and call.name != "final_answer":
                    args = call.arguments
                    first = (call.name, json.loads(args) if isinstance(args, str) else args)
        run.correct += call_matches(*first, want_name, want_args)


# ---- decode speed: CachedGenerator vs model.generate on one prompt ----
def decode_speed(model, tokenizer, repeats: int) -> tuple[float, float, int]:
    """(agent tokens/s, model.generate tokens/s, tokens): decode only, best of `repeats`, same token count."""
    import torch

    from agent.engine.generation import CachedGenerator

    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Parasetamol nedir, nasıl kullanılır? Ayrıntılı anlat."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    generator = CachedGenerator(model, tokenizer)
    ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
    ours, raw, n = [], [], 0
    pad = tokenizer.eos_token_id

    @torch.inference_mode()
    def timed_generate(count: int) -> float:
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=count, min_new_tokens=count, do_sample=False, pad_token_id=pad)
        return time.perf_counter() - t0

    for _ in range(repeats):
        generator.reset()
        result = generator.generate(prompt, max_new_tokens=96)
        n = result.decoded_tokens
        ours.append(result.tokens_per_second)
        # model.generate for n tokens minus its time for 1 (the prefill): the same decode-only rate.
        raw.append((n - 1) / max(timed_generate(n) - timed_generate(1), 1e-9))
    return max(ours), max(raw), n


def llama_decode_speed(generator, repeats: int) -> tuple[float, float, int]:
    """(LlamaCppGenerator tokens/s, llama-cpp-python's own Llama.generate tokens/s, tokens) on one GGUF: decode
    only (the first token, which comes from the prefill, is not timed), best of `repeats`, same token count."""
    llama, tokenizer = generator.model, generator.tokenizer
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Parasetamol nedir, nasıl kullanılır? Ayrıntılı anlat."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    ours, raw, n = [], [], 0
    for _ in range(repeats):
        generator.clear()
        result = generator.generate(prompt, max_new_tokens=96)
        n = result.decoded_tokens
        ours.append(result.tokens_per_second)
        llama.reset()
        count, t_first = 0, 0.0
        for _token in llama.generate(ids, temp=0.0, top_k=1, reset=True):
            count += 1
            if count == 1:
                t_first = time.perf_counter()
            if count >= n:
                break
        raw.append((n - 1) / max(time.perf_counter() - t_first, 1e-9))
    generator.clear()
    return max(ours), max(raw), n


# ---- template render and parse speed: PPSF vs Qwen3 ----
def conversation(tools: list[dict]) -> list[dict]:
    """20 messages: a system prompt, four (question, call, result, answer) rounds, then a question, call, result."""
    messages = [{"role": "system", "content": "Sen dikkatli bir eczacı asistanısın."}]
    drugs = ["Parol", "Majezik", "Nurofen", "Augmentin", "Arveles"]
    for i, drug in enumerate(drugs):
        messages.append({"role": "user", "content": f"{drug} ne işe yarar? Günde kaç kez alabilirim?"})
        call = {"name": "search_drug", "arguments": {"drug": drug}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]})
        result = {"drug": drug, "usage": "Ağrı kesici", "forms": ["500 mg tablet"], "status": "OTC"}
        messages.append({"role": "tool", "name": "search_drug", "content": json.dumps(result, ensure_ascii=False)})
        if i < 4:
            answer = f"{drug} bir ağrı kesicidir; prospektüsteki dozu aşmayın."
            messages.append({"role": "assistant", "content": answer})
    assert len(messages) == 20
    return messages


def per_call_us(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm caches (compiled templates)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn()
        times.append((time.perf_counter() - t0) / repeats)
    return min(times) * 1e6


def template_speed(tokenizer, repeats: int) -> list[tuple[str, float, float]]:
    """[(template, render µs, parse µs)] on the same 20-message conversation and the same reply."""
    from agent.engine.toolbox import Toolbox
    from agent.pharmacy import default_tool_schemas
    from agent.pharmacy.tools import PHARMACY_TOOLS
    from agent.ppsf import chat_template, response_template

    try:  # transformers' own response template for Qwen3 (what `transformers serve` parses Qwen3 with)
        from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

        qwen_rt = next(v for k, v in _RESPONSE_TEMPLATE_FALLBACKS.items() if "qwen3" in k)
    except ImportError:
        qwen_rt = None
    tools = Toolbox(list(PHARMACY_TOOLS), recorded=default_tool_schemas()).schemas
    messages = conversation(tools)
    args = '{"drug": "Parol", "weight_kg": 70, "age_years": 30}'
    ppsf_reply = (
        "@THOUGHT\nParol'ün dozunu kontrol etmeliyim.\n\n@PHARMACIST\nBakıyorum.\n\n"
        f'@TOOL_CALL\n{{\n  "name": "calculate_dose",\n  "arguments": {args}\n}}'
    )
    qwen_reply = (
        "<think>\nParol'ün dozunu kontrol etmeliyim.\n</think>\n\nBakıyorum.\n<tool_call>\n"
        f'{{"name": "calculate_dose", "arguments": {args}}}\n</tool_call><|im_end|>'
    )
    qwen_template = (HERE / "qwen3_template.jinja").read_text(encoding="utf-8")
    rows = []
    for name, template, rt, reply in (
        ("PPSF v1.1", chat_template(), response_template(), ppsf_reply),
        ("Qwen3", qwen_template, qwen_rt, qwen_reply),
    ):

        def render(template: str = template) -> str:
            return tokenizer.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False)

        def render_qwen_prompt(template: str = template) -> str:
            text = tokenizer.apply_chat_template(
                messages, tools=tools, chat_template=template, add_generation_prompt=True, tokenize=False
            )
            return text.removesuffix("<|im_start|>assistant ") + "<|im_start|>assistant\n"

        render_us = per_call_us(render, repeats)
        parse_us = float("nan")
        if rt is not None:  # with its prompt as prefix, as an agent or a server parses
            prefix = render()
            if name == "Qwen3":  # its generation prompt, with the newline the flattening turned into a space
                prefix = render_qwen_prompt(template)

            def parse(rt: dict = rt, reply: str = reply, prefix: str = prefix) -> dict:
                return tokenizer.parse_response(reply, rt, prefix=prefix, tools=tools)

            assert parse().get("tool_calls"), f"{name}: the reply did not parse: {parse()}"
            parse_us = per_call_us(parse, repeats)
        rows.append((name, render_us, parse_us))
    return rows


# ---- report ----
def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def report(
    runs: list[SystemRun],
    speeds: list[tuple[str, str, float, float, int, float]],
    templates,
    settings: str,
) -> str:
    """The table, then every target as a ratio measured in this run. speeds: (ours, theirs, ours tok/s,
    theirs tok/s, tokens, target)."""
    lines = [f"machine: {machine_line()}", f"settings: {settings}", ""]
    lines.append(
        "| system | wall s | s/question | steps | prefill tok | decoded tok | decode tok/s | tok after call close "
        "| first call right |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        after = f"{r.after_call_tokens} in {r.calls_closed} calls" if r.calls_closed else "no call closed"
        rate = f"{r.decoded_tokens / r.seconds:.1f}" if r.seconds else "-"
        lines.append(
            f"| {r.name} | {r.seconds:.1f} | {ratio(r.seconds, r.cases):.2f} | {r.steps} | {r.prefill_tokens} "
            f"| {r.decoded_tokens} | {rate} | {after} | {r.correct}/{r.cases} |"
        )
    by = {r.key: r for r in runs}
    lines.append("")

    def faster(ours: str, theirs: str, target: float) -> None:
        a, b = by.get(ours), by.get(theirs)
        if a is not None and b is not None:
            x = ratio(b.seconds, a.seconds)
            lines.append(
                f"wall time: {a.name} {x:.2f}x faster than {b.name} (target >= {target:g}x: "
                f"{'met' if x >= target else 'NOT met'})"
            )

    faster("agent_llamacpp", "agent_cold", 3.0)
    faster("agent", "agent_cold", 1.0)
    faster("agent", "agent_model_answers", 1.0)
    a, b = by.get("agent"), by.get("agent_model_answers")
    if a is not None and b is not None and a.cases and b.cases:
        lines.append(
            f"per conversation: {a.name} {a.decoded_tokens / a.cases:.1f} decoded tokens, {a.seconds / a.cases:.2f} s; "
            f"{b.name} {b.decoded_tokens / b.cases:.1f} decoded tokens, {b.seconds / b.cases:.2f} s (same questions)"
        )
    faster("agent_llamacpp", "stops", 1.5)
    faster("agent_llamacpp", "llamacpp_loop", 1.5)
    faster("agent", "pipeline", 3.0)
    faster("agent", "smolagents", 5.0)
    for key in ("agent_cold", "agent", "agent_llamacpp"):
        r = by.get(key)
        if r is None:
            continue
        x = ratio(r.prefill_tokens, r.transcript_tokens)
        lines.append(
            f"prefill: {r.name} {r.prefill_tokens} tokens = {x:.3f}x the {r.transcript_tokens} unique tokens of its "
            f"final transcripts, the shared prefix once (target <= 1.05x: {'met' if x <= 1.05 else 'NOT met'})"
        )
        verdict = "met" if r.after_call_tokens == 0 else "NOT met"
        lines.append(
            f"after a call closes: {r.name} decoded {r.after_call_tokens} tokens in {r.calls_closed} calls "
            f"(target 0: {verdict}); {r.call_probes} one-pass probes for a next @TOOL_CALL"
        )
    for ours, theirs, a, b, n, target in speeds:
        x = ratio(a, b)
        lines.append(
            f"decode speed ({n} tokens, best of runs): {ours} {a:.1f} tok/s vs {theirs} {b:.1f} tok/s = {x:.2f}x "
            f"(target >= {target:g}x: {'met' if x >= target else 'NOT met'})"
        )
    if templates:
        lines += ["", "| template (20 messages, 6 tools) | render µs | parse reply µs |", "|---|---:|---:|"]
        for name, render_us, parse_us in templates:
            lines.append(f"| {name} | {render_us:.0f} | {parse_us:.0f} |")
        base = templates[-1]
        for name, render_us, parse_us in templates[:-1]:
            lines.append(
                f"{name} vs {base[0]}: render {ratio(base[1], render_us):.2f}x, parse {ratio(base[2], parse_us):.2f}x "
                "(>1 = PPSF faster)"
            )
    for r in runs:
        for note in r.notes:
            lines.append(f"note ({r.name}): {note}")
    return "\n".join(lines)


SYSTEMS = (
    "agent_cold",
    "agent_model_answers",
    "agent",
    "agent_llamacpp",
    "pipeline",
    "stops",
    "llamacpp_loop",
    "smolagents",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="3 cases, 2 steps, fewer speed repeats")
    p.add_argument("--cases", type=int, help="how many of the built-in cases (default: all, 3 with --quick)")
    p.add_argument("--max-steps", type=int, help="agent steps per question (default 5, 2 with --quick)")
    p.add_argument("--max-new-tokens", type=int, help="tokens per step (default 256, the CLI's)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {', '.join(SYSTEMS)}")
    p.add_argument(
        "--gguf", type=Path, help="the GGUF of the llama.cpp rows (default: the default model's q8_0 export)"
    )
    p.add_argument("--skip-speed", action="store_true", help="skip the decode and template speed checks")
    p.add_argument(
        "--threads", type=int, help="CPU threads for torch and llama.cpp (default: the usable cores not busy)"
    )
    p.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = p.parse_args(argv)
    n_cases = args.cases or (3 if args.quick else len(CASES))
    max_steps = args.max_steps or (2 if args.quick else 5)
    max_new_tokens = args.max_new_tokens or 256
    names = {s.strip() for s in args.systems.split(",")}
    unknown = names - set(SYSTEMS)
    if unknown:
        p.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    cases = CASES[:n_cases]

    import torch

    from agent.engine.backends import BackendOptions, build_backend
    from agent.engine.generation import CachedGenerator
    from agent.engine.threads import choose_threads
    from agent.export import default_export_dir, default_gguf
    from agent.ppsf import load_tokenizer

    threads = choose_threads(args.threads)  # chosen once, before any system loads: all run on the same count
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    # The tuned model everywhere (the PPSF adapter merged; its export for llama.cpp and smolagents). No prefix state
    # on disk: every system starts its first question from the same empty cache.
    local = build_backend(BackendOptions(device="cpu", dtype="float32", threads=threads, prefix_store=False))
    model, tokenizer = local.generator.model, local.tokenizer
    repo_tokenizer = load_tokenizer()  # this repo as a user loads it: the loops' tokenizer
    settings = (
        f"{len(cases)} cases, max_steps={max_steps}, max_new_tokens={max_new_tokens}, greedy, tuned model, "
        f"{threads} threads; each system keeps what it keeps across questions (none for the transformers loops)"
    )
    print(f"machine: {machine_line()}\nsettings: {settings}", file=sys.stderr)
    llama = llama_generator = None
    if names & {"agent_llamacpp", "llamacpp_loop"}:
        gguf = args.gguf or default_gguf()
        options = BackendOptions(backend="llamacpp", gguf=gguf, threads=threads, prefix_store=False)
        llama_generator = build_backend(options).generator
        settings += f"; GGUF {gguf.name}"
    systems: list[Any] = []

    def add(key: str, system: Any) -> None:
        system.run.key = key
        systems.append(system)

    # Each torch system has a generator of its own on the one model: its own KV cache, prefix snapshots, drafts.
    if "agent_cold" in names:  # the previous release: every question from an empty cache, no lookahead
        cold = CachedGenerator(model, tokenizer)
        add("agent_cold", AgentSystem(cold, tokenizer, max_steps, max_new_tokens, cold=True))
    if "agent_model_answers" in names:  # before the phrasebook: the model writes every answer
        name = "agent, the model writes answers (torch)"
        writes = CachedGenerator(model, tokenizer)
        add("agent_model_answers", AgentSystem(writes, tokenizer, max_steps, max_new_tokens, name, answers="model"))
    if "agent" in names:  # the tools' results write the answers they cover (answers="tools", the default)
        add("agent", AgentSystem(CachedGenerator(model, tokenizer), tokenizer, max_steps, max_new_tokens))
    if "agent_llamacpp" in names:
        name = "agent (this repo, llama.cpp)"
        add("agent_llamacpp", AgentSystem(llama_generator, repo_tokenizer, max_steps, max_new_tokens, name))
    if "pipeline" in names:
        add("pipeline", PipelineSystem(model, repo_tokenizer, max_steps, max_new_tokens))
    if "stops" in names:
        add("stops", PipelineSystem(model, repo_tokenizer, max_steps, max_new_tokens, stop_strings=True))
    if "llamacpp_loop" in names:
        from agent.engine.llamacpp_backend import load_llama

        # Its own Llama on the same file: llama.cpp's loop keeps its own context, not the agent's.
        llama = load_llama(args.gguf or default_gguf(), threads=threads)
        add("llamacpp_loop", LlamaCppLoopSystem(llama, repo_tokenizer, max_steps, max_new_tokens))
    if "smolagents" in names:
        try:
            default_gguf()  # the export, folder included
            add("smolagents", SmolagentsSystem(default_export_dir(), max_steps, max_new_tokens))
        except ImportError as e:
            print(f"smolagents skipped: {e} (pip install smolagents)", file=sys.stderr)
    # Interleaved, case by case: a machine that slows down mid-run slows every system alike.
    for i, case in enumerate(cases, 1):
        for system in systems:
            system.case(*case)
        done = ", ".join(f"{s.run.key} {s.run.seconds:.1f} s" for s in systems)
        print(f"case {i}/{len(cases)}: {done}", file=sys.stderr)
    for system in systems:
        if isinstance(system, AgentSystem):
            system.count_unique_tokens()
    runs = [s.run for s in systems]
    speeds: list[tuple[str, str, float, float, int, float]] = []
    templates = None
    if not args.skip_speed:
        repeats = 2 if args.quick else 5
        from agent.engine.generation import CachedGenerator

        drafts = f"drafts of {CachedGenerator.draft_tokens}"
        speeds.append(
            (f"CachedGenerator (torch, {drafts})", "model.generate", *decode_speed(model, tokenizer, repeats), 0.95)
        )
        if llama_generator is not None:
            # As the agent runs (drafts), and one id per pass: the loop itself against llama.cpp's.
            raw_name = "llama-cpp-python Llama.generate"
            drafts = f"drafts of {llama_generator.draft_tokens} after a {llama_generator.lookup_ngram}-gram"
            speeds.append(
                (f"LlamaCppGenerator ({drafts})", raw_name, *llama_decode_speed(llama_generator, repeats), 0.9)
            )
            llama_generator.draft_tokens = 0
            speeds.append(
                ("LlamaCppGenerator (one id per pass)", raw_name, *llama_decode_speed(llama_generator, repeats), 0.9)
            )
            llama_generator.draft_tokens = type(llama_generator).draft_tokens
        templates = template_speed(repo_tokenizer, repeats=50 if args.quick else 300)
    text = report(runs, speeds, templates, settings)
    print(text)
    if args.json is not None:
        data = {
            "machine": machine_line(),
            "settings": settings,
            "systems": [r.__dict__ for r in runs],
            "decode_speed": speeds,
            "templates": templates,
        }
        args.json.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
