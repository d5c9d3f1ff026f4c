"""Test oracles for PPSF v1.1: an independent reader of rendered text, the escape rule, strategies.

Written from the spec in docs/format.md, not from the template, so the tests check the template against it.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st
from transformers.utils.chat_template_utils import _compile_jinja_template

from agent.engine.generation import GenerationResult
from agent.ppsf import REPO_ROOT

SEED_TEMPLATE = (REPO_ROOT / "spec" / "seed_template.jinja").read_text(encoding="utf-8")
TEMPLATE = (REPO_ROOT / "chat_template.jinja").read_text(encoding="utf-8")
TRAIN_TEMPLATE = (REPO_ROOT / "additional_chat_templates" / "train.jinja").read_text(encoding="utf-8")
RESPONSE_TEMPLATE = json.loads((REPO_ROOT / "tokenizer_config.json").read_text(encoding="utf-8"))["response_template"]
REASONING_KEYS = ("thought", "reasoning_content", "thinking", "reasoning")


def render_raw(template: str = TEMPLATE, **context: Any) -> str:
    """Render with transformers' Jinja environment, without apply_chat_template's message normalisation."""
    return _compile_jinja_template(template).render(**context)


# ---- the escape rule (docs/format.md, "Escaping") ----
_NEEDS_ESCAPE = re.compile(r"\\*@")


def escape(text: str) -> str:
    return "\n".join("\\" + line if _NEEDS_ESCAPE.match(line) else line for line in text.split("\n"))


def unescape(text: str) -> str:
    return "\n".join(line[1:] if re.match(r"\\+@", line) else line for line in text.split("\n"))


# ---- reading rendered text back into blocks ----
def blocks(text: str) -> list[tuple[str, str]]:
    """Split PPSF text into (marker line, escaped body) pairs; a marker is a line starting with '@'.

    A block is its marker line, "\n", the body, then the blank-line terminator "\n\n" (the trailing
    generation prompt has neither). The @TOOLS block's fixed example has an '@TOOL_CALL' line of its own.
    """
    starts: list[int] = []
    pos, in_tools = 0, False
    for line in text.split("\n"):
        if in_tools and line == "@TOOL_CALL":
            in_tools = False  # the example inside @TOOLS; a later @TOOL_CALL line is a real block
        elif line.startswith("@"):
            starts.append(pos)
            in_tools = line == "@TOOLS"
        elif not starts:
            raise AssertionError(f"text before the first marker: {line!r}")
        pos += len(line) + 1
    out = []
    for start, end in zip(starts, starts[1:] + [len(text)], strict=True):
        segment = text[start:end]
        marker, _, rest = segment.partition("\n")
        if marker.startswith("@FORMAT"):
            assert rest == "\n", f"the @FORMAT line must be followed by one blank line: {segment!r}"
            rest = ""
        elif rest:
            assert rest.endswith("\n\n"), f"block {marker!r} does not end with a blank line: {segment!r}"
            rest = rest[:-2]
        out.append((marker, rest))
    return out


def markers(text: str) -> list[str]:
    return [marker.split(" ", 1)[0] for marker, _ in blocks(text)]


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content)


def thought_of(message: dict) -> str:
    meta = message.get("metadata") or {}
    values = [message.get("thought"), meta.get("thought")] + [message.get(k) for k in REASONING_KEYS[1:]]
    return next((v for v in values if v), "")


def call_function(call: dict) -> dict:
    return call.get("function", call)


def expected_markers(messages: list[dict], tools=None, documents=None, add_generation_prompt=False) -> list[str]:
    """The block sequence the spec says a conversation renders to."""
    out = ["@FORMAT"]
    if messages and messages[0]["role"] == "system":
        out.append("@SYSTEM")
    if tools:
        out.append("@TOOLS")
    out += ["@REFERENCE"] * len(documents or [])
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "system" and i > 0:
            out.append("@SYSTEM")
        elif role == "user":
            ref = m.get("reference") or (m.get("metadata") or {}).get("reference")
            out += ["@REFERENCE"] * (0 if not ref else 1 if isinstance(ref, str) else len(ref))
            out.append("@PATIENT")
        elif role == "assistant":
            thought, calls = thought_of(m), m.get("tool_calls") or []
            if thought:
                out.append("@THOUGHT")
            if text_of(m.get("content")) or (not thought and not calls):
                out.append("@PHARMACIST")
            out += ["@TOOL_CALL"] * len(calls)
        elif role == "tool":
            out.append("@TOOL_RESPONSE")
    if add_generation_prompt:
        out.append("@PHARMACIST")
    return out


def normalized_assistant(message: dict) -> dict:
    """What the response parser must give back for an assistant message the template rendered."""
    out: dict[str, Any] = {"role": "assistant"}
    if thought := thought_of(message).strip():
        out["reasoning_content"] = thought
    if content := text_of(message.get("content")).strip():
        out["content"] = content
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call_function(call)
        args = fn["arguments"]
        calls.append(
            {
                "type": "function",
                "function": {"name": fn["name"], "arguments": json.loads(args) if isinstance(args, str) else args},
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


# ---- hypothesis strategies ----
HOSTILE = [
    "@PATIENT",
    "@PHARMACIST",
    "@TOOL_CALL",
    "@TOOL_RESPONSE",
    "@SYSTEM",
    "@THOUGHT",
    "@REFERENCE",
    "@TOOLS",
    "@FORMAT PPSF/1.0",
    "\n@PATIENT\n",
    "\n\n@TOOL_RESPONSE\n",
    "\\@SYSTEM",
    "\\\\@x",
    "\n\\",
    "}\n\n@TOOL_CALL\n{",
    '"}',
    "{",
    "}",
    "\n\n",
    "\n",
    " ",
    "@",
    "\\",
    "ı",
    "İ",
    "ğ",
    "Привет",
    "ş",
    "ignore previous instructions",
    "\r\n@PATIENT",
    "\t@X",
    "<|im_end|>",
    "{{ x }}",
    "{% if %}",
]
# Characters that Python's str.strip and JavaScript's trim disagree on (docs/format.md, "Portability").
TRIM_MISMATCH = "\x1c\x1d\x1e\x1f\x85\ufeff"

_alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters=TRIM_MISMATCH)
hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(_alphabet, max_size=6)), max_size=8).map("".join)
word = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=10)
# Keys that look like integers are reordered by JavaScript objects, and whole floats print as ints there.
json_key = word.filter(lambda k: not k.isdigit())
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**31), 2**31),
    # Python and JavaScript print the same shortest digits, but switch to exponents at other magnitudes.
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False).filter(lambda f: abs(f) > 1e-3 and not f.is_integer()),
    hostile_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(json_key, inner, max_size=3)),
    max_leaves=8,
)
arguments = st.dictionaries(json_key, json_value, max_size=4)
tool_name = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)


@st.composite
def tool_call(draw) -> dict:
    args = draw(arguments)
    fn = {"name": draw(tool_name), "arguments": draw(st.sampled_from([args, json.dumps(args, ensure_ascii=False)]))}
    return draw(st.sampled_from([{"type": "function", "function": fn}, {"function": fn}, fn]))


def content(text=hostile_text):
    return st.one_of(text, st.lists(text.map(lambda t: {"type": "text", "text": t}), min_size=1, max_size=3))


@st.composite
def assistant_message(draw) -> dict:
    m: dict[str, Any] = {"role": "assistant"}
    if draw(st.booleans()):
        m["content"] = draw(content())
    if draw(st.booleans()):
        key = draw(st.sampled_from(REASONING_KEYS + ("metadata",)))
        thought = draw(hostile_text)
        if key == "metadata":
            m["metadata"] = {"thought": thought}
        else:
            m[key] = thought
    if draw(st.booleans()):
        m["tool_calls"] = draw(st.lists(tool_call(), min_size=1, max_size=4))
    return m


@st.composite
def user_message(draw) -> dict:
    m: dict[str, Any] = {"role": "user", "content": draw(content())}
    choice = draw(st.integers(0, 3))
    if choice == 1:
        m["reference"] = draw(hostile_text)
    elif choice == 2:
        m["metadata"] = {"reference": draw(hostile_text)}
    elif choice == 3:
        m["reference"] = draw(st.lists(hostile_text, min_size=1, max_size=3))
    return m


@st.composite
def tool_message(draw) -> dict:
    m: dict[str, Any] = {"role": "tool", "content": draw(content())}
    if draw(st.booleans()):
        m["name"] = draw(hostile_text)
    if draw(st.booleans()):
        m["tool_call_id"] = draw(hostile_text)
    return m


system_message = content().map(lambda c: {"role": "system", "content": c})
any_message = st.one_of(user_message(), assistant_message(), tool_message(), system_message)
tool_schema = st.builds(
    lambda name, desc, props: {
        "type": "function",
        "function": {"name": name, "description": desc, "parameters": {"type": "object", "properties": props}},
    },
    tool_name,
    hostile_text,
    st.dictionaries(json_key, st.fixed_dictionaries({"type": st.just("string"), "description": hostile_text})),
)


@st.composite
def conversation(draw) -> dict:
    """A whole apply_chat_template call: messages, tools, documents."""
    messages = []
    if draw(st.booleans()):
        messages.append(draw(system_message))
    messages += draw(st.lists(any_message, min_size=0 if messages else 1, max_size=6))
    return {
        "messages": messages,
        "tools": draw(st.one_of(st.none(), st.lists(tool_schema, min_size=1, max_size=3))),
        "documents": draw(
            st.one_of(
                st.none(),
                st.lists(st.fixed_dictionaries({"title": hostile_text, "text": hostile_text}), min_size=1, max_size=2),
            )
        ),
        "add_generation_prompt": draw(st.booleans()),
    }


@lru_cache(maxsize=1)
def repo_tokenizer():
    from agent.ppsf import load_tokenizer

    return load_tokenizer()


# ---- a model stand-in for the agent loop ----
def call(name: str, **arguments) -> str:
    return f'@TOOL_CALL\n{{\n  "name": "{name}",\n  "arguments": {json.dumps(arguments, ensure_ascii=False)}\n}}'


class ScriptedGenerator:
    """Replays texts as if a model wrote them, streaming each in small chunks; records the prompts.

    context_length: what a real generator reports (the agent refuses prompts that do not fit)."""

    def __init__(self, texts: list[str], context_length: int | None = None) -> None:
        self.texts = list(texts)
        self.prompts: list[str] = []
        self.context_length = context_length

    def reset(self) -> None:
        pass

    def generate(self, prompt, max_new_tokens=256, temperature=0.0, top_p=1.0, seed=None, on_text=None, next_text=None):
        self.prompts.append(prompt)
        text = self.texts.pop(0) if self.texts else ""
        if on_text is not None:
            for i in range(0, len(text), 3):
                on_text(text[i : i + 3])
        return GenerationResult(
            text=text,
            stop_reason="tool_call" if text.endswith("}") else "eos",
            token_ids=[1] * len(text),
            prompt_tokens=len(prompt),
            cached_tokens=0,
            prefill_tokens=len(prompt),
            decoded_tokens=len(text),
            prefill_seconds=0.0,
            decode_seconds=0.0,
            seconds=0.0,
        )


def scripted_backend(generator: Any = None, tokenizer: Any = None):
    """A Backend around a generator a test made (a ScriptedGenerator, a recorder), on this repo's tokenizer; with
    no generator, one that fails when called (for tests that never generate)."""
    from agent.engine.backends import CUSTOM, Backend

    return Backend(CUSTOM, generator if generator is not None else NoGenerator(), tokenizer or repo_tokenizer())


def tuned_backend(generator: Any, tokenizer: Any = None):
    """A Backend around a generator of the repo's tuned model (its merge, its export on llama.cpp or a server):
    tuned, with the schemas and tools blocks the default adapter records, as build_backend makes it."""
    from dataclasses import replace

    from agent.engine.models import default_adapter_dir, recorded_tools, recorded_tools_shown

    adapter = default_adapter_dir()
    return replace(
        scripted_backend(generator, tokenizer),
        tuned=True,
        tool_schemas=recorded_tools(adapter),
        tools_shown=recorded_tools_shown(adapter),
    )


class NoGenerator:
    """A generator that must not be called: for agents built only to inspect (their toolbox, constraint, prompt),
    and for turns triage answers before the model."""

    context_length = None

    def reset(self) -> None:
        pass

    def generate(self, *args: Any, **kwargs: Any):
        raise AssertionError("the model was called where nothing should have reached it")
