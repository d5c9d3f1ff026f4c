"""No text in any field can create, close or fake a PPSF block; the escape is reversible."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ppsf_helpers import (
    blocks,
    conversation,
    escape,
    expected_markers,
    hostile_text,
    markers,
    render_raw,
    repo_tokenizer,
    text_of,
    thought_of,
    unescape,
)

FIELD_SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@given(hostile_text)
@settings(max_examples=2000, deadline=None)
def test_escape_rule_is_reversible(text):
    escaped = escape(text)
    assert unescape(escaped) == text
    assert not any(line.startswith("@") for line in escaped.split("\n"))


def _bodies(text: str, marker: str) -> list[str]:
    return [unescape(body) for line, body in blocks(text) if line.split(" ", 1)[0] == marker]


@FIELD_SETTINGS
@given(s=hostile_text)
def test_every_field_holds_any_string(s):
    """One hostile string in every field at once: the block sequence is exactly the structural one."""
    messages = [
        {"role": "system", "content": s},
        {"role": "user", "content": s, "reference": s},
        {
            "role": "assistant",
            "content": s,
            "thought": s,
            "tool_calls": [{"name": "search_drug", "arguments": {"drug": s, s or "k": [s]}}],
        },
        {"role": "tool", "name": s, "tool_call_id": s, "content": s},
        {"role": "system", "content": s},
    ]
    tools = [{"type": "function", "function": {"name": "search_drug", "description": s}}]
    documents = [{"title": s, "text": s}]
    text = render_raw(messages=messages, tools=tools, documents=documents, add_generation_prompt=True)
    assert markers(text) == expected_markers(messages, tools, documents, add_generation_prompt=True)
    assert _bodies(text, "@SYSTEM") == [s.strip(), s.strip()]
    assert _bodies(text, "@PATIENT") == [s.strip()]
    assert _bodies(text, "@THOUGHT") == ([s.strip()] if s else [])
    assert _bodies(text, "@TOOL_RESPONSE") == [s.strip()]
    call = json.loads(_bodies(text, "@TOOL_CALL")[0])
    assert call == {"name": "search_drug", "arguments": {"drug": s, s or "k": [s]}}
    response_line = next(line for line, _ in blocks(text) if line.startswith("@TOOL_RESPONSE"))
    assert json.loads(response_line[len("@TOOL_RESPONSE ") :]) == {"name": s, "tool_call_id": s}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conversation())
def test_whole_conversations_never_forge_blocks(case):
    text = repo_tokenizer().apply_chat_template(
        case["messages"],
        tools=case["tools"],
        documents=case["documents"],
        add_generation_prompt=case["add_generation_prompt"],
        tokenize=False,
    )
    assert markers(text) == expected_markers(**case)
    bodies = iter(blocks(text))
    next(bodies)  # @FORMAT
    for message in case["messages"]:
        if message["role"] == "user":
            patient = next(body for line, body in bodies if line == "@PATIENT")
            assert unescape(patient) == text_of(message["content"]).strip()
        elif message["role"] == "assistant" and thought_of(message):
            thought = next(body for line, body in bodies if line == "@THOUGHT")
            assert unescape(thought) == thought_of(message).strip()


@given(st.text(st.sampled_from("@\\\nab"), max_size=20))
@settings(max_examples=500, deadline=None)
def test_escape_in_template_matches_the_spec(s):
    text = render_raw(messages=[{"role": "user", "content": s}])
    body = blocks(text)[-1][1]
    assert body == escape(s.strip())
