"""The repo's response_template: exact round trip, streaming, agent-mode prefix consistency."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ppsf_helpers import (
    any_message,
    assistant_message,
    content,
    hostile_text,
    normalized_assistant,
    repo_tokenizer,
    system_message,
    tool_call,
    tool_schema,
    user_message,
)

from agent.ppsf import REPO_ROOT

SETTINGS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def render(messages, tools=None, add_generation_prompt=False) -> str:
    return repo_tokenizer().apply_chat_template(
        messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=False
    )


def parse(generated: str, prefix: str) -> dict:
    return repo_tokenizer().parse_response(generated, prefix=prefix)


def parse_streaming(generated: str, prefix: str, cuts: list[int]) -> dict:
    parser = repo_tokenizer().get_response_parser(prefix=prefix)
    last = 0
    for cut in sorted(set(c % (len(generated) + 1) for c in cuts)) + [len(generated)]:
        parser.feed(generated[last:cut])
        last = cut
    message, _ = parser.finalize()
    return message


@st.composite
def history(draw) -> list[dict]:
    """A conversation that ends where the assistant speaks next (not after an assistant message)."""
    messages = [draw(system_message)] if draw(st.booleans()) else []
    messages += draw(st.lists(any_message, max_size=4))
    messages.append(draw(st.one_of(user_message(), st.just({"role": "tool", "content": "{}"}))))
    return messages


@SETTINGS
@given(
    h=history(),
    m=assistant_message(),
    tools=st.one_of(st.none(), st.lists(tool_schema, max_size=2)),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_round_trip_agent_mode(h, m, tools, cuts):
    prompt = render(h, tools)
    full = render(h + [m], tools)
    assert full.startswith(prompt)
    generated = full[len(prompt) :]
    expected = normalized_assistant(m)
    assert parse(generated, prompt) == expected
    assert parse_streaming(generated, prompt, cuts) == expected
    # The model stops at the end of its last block, before the blank line: same message.
    assert parse(generated.rstrip("\n"), prompt) == expected


@SETTINGS
@given(
    h=history(),
    answer=content(hostile_text.filter(lambda t: t.strip())),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_round_trip_after_plain_generation_prompt(h, answer, cuts):
    m = {"role": "assistant", "content": answer}
    prompt = render(h, add_generation_prompt=True)
    full = render(h + [m])
    assert full.startswith(prompt) and prompt.endswith("@PHARMACIST")
    generated = full[len(prompt) :]
    assert parse(generated, prompt) == normalized_assistant(m)
    assert parse_streaming(generated, prompt, cuts) == normalized_assistant(m)


def test_parse_seed_example_and_types():
    case = json.loads((REPO_ROOT / "spec" / "golden" / "seed_tool_calling.json").read_text(encoding="utf-8"))
    prompt = render(case["messages"][:2])
    generated = '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {"drug": "Parol"}\n}'
    assert parse(generated, prompt) == {
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "search_drug", "arguments": {"drug": "Parol"}}}],
    }
    answer = parse("\nParol ağrı kesici ve ateş düşürücüdür.", render(case["messages"], add_generation_prompt=True))
    assert answer == {"role": "assistant", "content": "Parol ağrı kesici ve ateş düşürücüdür."}


def test_parse_casts_arguments_with_tool_schemas():
    def calculate_dose(drug: str, weight_kg: float, age_years: float) -> dict:
        """Doz hesaplar.

        Args:
            drug: İlaç.
            weight_kg: Kilo.
            age_years: Yaş.
        """
        return {}

    prompt = render([{"role": "user", "content": "doz?"}], tools=[calculate_dose])
    generated = (
        '@TOOL_CALL\n{"name": "calculate_dose", "arguments": {"drug": "Parol", "weight_kg": "20", "age_years": 6}}'
    )
    parsed = repo_tokenizer().parse_response(generated, prefix=prompt, tools=[calculate_dose])
    assert parsed["tool_calls"][0]["function"]["arguments"] == {"drug": "Parol", "weight_kg": 20, "age_years": 6}


def test_streaming_events_show_regions():
    prompt = render([{"role": "user", "content": "Parol?"}])
    parser = repo_tokenizer().get_response_parser(prefix=prompt)
    events = []
    for chunk in ["@THO", "UGHT\nAra", "ştır.\n\n@PHAR", "MACIST\nParol ", "ağrı kesicidir."]:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    events += final
    assert message == {"role": "assistant", "reasoning_content": "Araştır.", "content": "Parol ağrı kesicidir."}
    streamed = "".join(e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == "content")
    assert streamed == "Parol ağrı kesicidir."
    assert not any("@PHAR" in e.get("text", "") for e in events)


def test_invalid_tool_call_json_is_an_error():
    prompt = render([{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="json"):
        parse('@TOOL_CALL\n{"name": "search_drug", "arguments": {', prompt)


# ---- agent mode: each step's prompt extends the last one by exactly what the model wrote ----
@st.composite
def tool_conversation(draw) -> tuple[list[dict], list[dict]]:
    """A first history and the assistant steps of one multi-step tool run (the last one answers)."""
    h = [{"role": "system", "content": draw(hostile_text)}] if draw(st.booleans()) else []
    h.append(draw(user_message()))
    steps = [
        {"role": "assistant", "tool_calls": draw(st.lists(tool_call(), min_size=1, max_size=3))}
        for _ in range(draw(st.integers(0, 3)))
    ]
    steps.append(draw(assistant_message().filter(lambda m: not m.get("tool_calls"))))
    return h, steps


@SETTINGS
@given(run=tool_conversation(), tools=st.lists(tool_schema, max_size=2), follow_up=hostile_text)
def test_agent_prompts_are_prefix_consistent(run, tools, follow_up):
    messages, steps = run
    for step, m in enumerate(steps):
        prompt = render(messages, tools)
        generated = render(messages + [m], tools)[len(prompt) :].rstrip("\n")  # what the model writes
        assert parse(generated, prompt) == normalized_assistant(m)
        messages = messages + [m]
        for i, call in enumerate(m.get("tool_calls", [])):
            name = call.get("function", call)["name"]
            messages.append({"role": "tool", "name": name, "tool_call_id": f"call_{step}_{i}", "content": "{}"})
        if step == len(steps) - 1:
            messages.append({"role": "user", "content": follow_up})
        assert render(messages, tools).startswith(prompt + generated)
