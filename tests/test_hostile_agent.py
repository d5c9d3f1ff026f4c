"""The agent loop under hostile or broken model output, long input and hanging tools: no crash, no leak.

A scripted generator plays the model (tests/ppsf_helpers.py); a Hypothesis property drives it with arbitrary
text. Each numbered test reproduces an item of issue 23.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ppsf_helpers import ScriptedGenerator, call, repo_tokenizer, scripted_backend

from agent.engine.agent import AgentConfig, InputTooLong
from agent.engine.toolbox import Toolbox, tool_schema
from agent.engine.transcript import Transcript, new_transcript_path
from agent.pharmacy import pharmacist_agent
from agent.ppsf import REPO_ROOT, parse_reply

RAN: list[tuple[str, dict]] = []  # (tool, arguments) of every call that reached a tool function


def lookup(drug: str) -> dict:
    """Find a drug.

    Args:
        drug: Drug name.
    """
    RAN.append(("lookup", {"drug": drug}))
    return {"drug": drug, "usage": "Ağrı kesici"}


def dose(drug: str, weight_kg: float) -> dict:
    """Dose for a weight.

    Args:
        drug: Drug name.
        weight_kg: Body weight in kg.
    """
    RAN.append(("dose", {"drug": drug, "weight_kg": weight_kg}))
    return {"drug": drug, "mg": weight_kg * 15}


TOOLS = [lookup, dose]
SCHEMAS = {tool_schema(t)["function"]["name"]: tool_schema(t)["function"]["parameters"] for t in TOOLS}


def agent_for(texts: list[str], tmp_path: Path | None = None, **kwargs):
    transcript = tmp_path / "t.jsonl" if tmp_path is not None else None
    context_length = kwargs.pop("context_length", None)
    config = AgentConfig(transcript=transcript, tool_timeout=5.0, **kwargs)
    generator = ScriptedGenerator(texts, context_length=context_length)
    return pharmacist_agent(scripted_backend(generator), tools=TOOLS, config=config)


def tool_errors(result) -> list[dict]:
    return [json.loads(m["content"]).get("error") for m in result.messages if m["role"] == "tool"]


# ---- 2. malformed tool calls are answered as invalid_tool_call --------------------------------------------

MALFORMED = {
    "arguments a string": '@TOOL_CALL\n{"name": "lookup", "arguments": "Parol"}',
    "arguments a list": '@TOOL_CALL\n{"name": "lookup", "arguments": ["Parol"]}',
    "arguments null": '@TOOL_CALL\n{"name": "lookup", "arguments": null}',
    "name missing": '@TOOL_CALL\n{"arguments": {"drug": "Parol"}}',
    "name a number": '@TOOL_CALL\n{"name": 7, "arguments": {"drug": "Parol"}}',
    "name null": '@TOOL_CALL\n{"name": null, "arguments": {"drug": "Parol"}}',
    "name empty": '@TOOL_CALL\n{"name": "", "arguments": {"drug": "Parol"}}',
    "name a list": '@TOOL_CALL\n{"name": ["lookup"], "arguments": {"drug": "Parol"}}',
    "call an array": '@TOOL_CALL\n[{"name": "lookup", "arguments": {"drug": "Parol"}}]',
    "call a string": '@TOOL_CALL\n"lookup"',
    "lone surrogate": '@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": "Par\\ud800ol"}}',
    "deep nesting": '@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": ' + "[" * 5000 + "]" * 5000 + "}}",
    "nested arguments": '@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": ' + '{"a": ' * 12 + "1" + "}" * 12 + "}}",
    "NaN": '@TOOL_CALL\n{"name": "dose", "arguments": {"drug": "Parol", "weight_kg": NaN}}',
    "extra key": '@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": "Parol"}, "name2": "x"}',
    "marker inside the answer": "@PHARMACIST\n@TOOL_CALL\n" + '{"name": "lookup", "arguments": {"drug": "Parol"}}',
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_calls_become_invalid_tool_call_results(text, tmp_path):
    RAN.clear()
    agent = agent_for([text, "@PHARMACIST\nTamam."], tmp_path)
    result = agent.run("Parol ne işe yarar?")
    errors = tool_errors(result)
    assert errors and errors[0]["code"] == "invalid_tool_call", result.messages
    assert result.message == {"role": "assistant", "content": "Tamam."}
    assert RAN == []  # nothing ran
    for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line)
    agent.render(result.messages)  # the next turn renders (a bad call used to break the template)


# ---- 5. parsing is linear in the reply's length ---------------------------------------------------------


@pytest.mark.parametrize("marker", ["@PHARMACIST", "@THOUGHT"])
def test_a_reply_of_escaped_marker_lines_parses_fast_and_exactly(marker):
    """200 escaped lines took 7.3 s (a lookbehind back to the block's marker for each line); now milliseconds."""
    body = "".join(f"@TOOL_CALL line {i}\n" for i in range(200)).rstrip("\n")
    escaped = "\n".join("\\" + line for line in body.split("\n"))
    field = "content" if marker == "@PHARMACIST" else "reasoning_content"
    prefix = "@FORMAT PPSF/1.0\n\n@PATIENT\nsoru\n\n"
    start = time.perf_counter()
    whole = repo_tokenizer().parse_response(marker + "\n" + escaped, prefix=prefix)
    bounded = parse_reply(repo_tokenizer(), marker + "\n" + escaped, prefix=prefix)
    assert time.perf_counter() - start < 2.0  # generous: a machine many times slower still passes
    assert whole[field] == bounded[field] == body


def test_one_huge_chunk_from_a_server_is_parsed_in_bounded_pieces():
    escaped = "\n".join(f"\\@line {i}" for i in range(2000))
    agent = agent_for(["@PHARMACIST\n" + escaped])

    def generate(prompt, on_text=None, **kwargs):
        text = agent.generator.texts.pop(0)
        on_text(text)
        return ScriptedGenerator([text]).generate(prompt)

    agent.generator.generate = generate
    start = time.perf_counter()
    result = agent.run("soru")
    assert time.perf_counter() - start < 5.0
    assert result.message["content"] == escaped.replace("\\@", "@")


# ---- 8. transcripts are private, one file per run --------------------------------------------------------


def test_transcripts_are_created_0600_in_a_0700_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "umask", os.umask)  # restore whatever the test changes
    old = os.umask(0o022)
    try:
        path = tmp_path / "a" / "b" / "t.jsonl"
        Transcript(path, "run").write("message", message={"role": "user", "content": "hamileyim"})
        first, second = new_transcript_path(tmp_path / "c"), new_transcript_path(tmp_path / "c")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    assert first != second and first.parent == second.parent  # one file per run


def test_a_transcript_keeps_a_lone_surrogate_as_valid_json(tmp_path):
    path = tmp_path / "t.jsonl"
    Transcript(path, "run").write("message", message={"content": "Par\udcffol"})
    assert json.loads(path.read_text(encoding="utf-8"))["message"]["content"] == "Par\udcffol"


# ---- 9. tools that hang ---------------------------------------------------------------------------------

RELEASE = threading.Event()


def hang(drug: str) -> dict:
    """Never answers.

    Args:
        drug: Drug name.
    """
    RELEASE.wait()
    return {}


def quick(drug: str) -> dict:
    """Answers at once.

    Args:
        drug: Drug name.
    """
    return {"drug": drug}


def test_hanging_tools_do_not_starve_later_calls():
    """Four hung calls used to fill the worker pool: every later call then timed out too."""
    box = Toolbox([hang, quick], timeout=0.05)
    try:
        for i in range(6):
            assert box.call("hang", {"drug": str(i)})["error"]["code"] == "tool_timeout"
        assert box.call("quick", {"drug": "Parol"}) == {"drug": "Parol"}
        for i in range(6, 12):
            box.call("hang", {"drug": str(i)})
        assert box.call("quick", {"drug": "x"})["error"]["code"] == "tool_unavailable"  # bounded, and says so
    finally:
        RELEASE.set()


def test_a_hanging_tool_does_not_keep_the_process_alive():
    code = (
        "import threading\n"
        "from agent.engine.toolbox import Toolbox\n"
        "def hang(drug: str) -> dict:\n"
        '    """Hangs.\n\n    Args:\n        drug: Drug name.\n    """\n'
        "    threading.Event().wait()\n"
        "print(Toolbox([hang], timeout=0.1).call('hang', {'drug': 'x'})['error']['code'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "tool_timeout", done.stderr


# ---- 10. input longer than the model's context -----------------------------------------------------------


def test_a_question_longer_than_the_context_is_refused_before_generating():
    agent = agent_for(["@PHARMACIST\nx"], context_length=8192)
    start = time.perf_counter()
    with pytest.raises(InputTooLong, match="reads at most 8,192 .* shorten the question"):
        agent.run("Parol " * 200_000)
    assert time.perf_counter() - start < 30 and agent.generator.prompts == []


def test_tool_results_that_fill_the_context_end_the_run_with_an_answer():
    big = "@TOOL_CALL\n" + json.dumps({"name": "lookup", "arguments": {"drug": "P" * 3000}})
    agent = agent_for([big, big, big], context_length=3000, max_new_tokens=64)
    # a question that names no medicine: the call's name stands as the model wrote it (agent.pharmacy.medicine_check)
    result = agent.run("Bu ilaç ne?")
    assert result.message["content"].startswith("Üzgünüm") or result.message["content"].startswith("Sorry")
    assert len(agent.generator.prompts) == 1


# ---- 11. a call written in the forced final step is not the answer ---------------------------------------


def test_a_call_in_the_forced_final_step_is_never_returned_as_the_answer():
    calls = [call("lookup", drug=f"Parol{i}") for i in range(3)]
    agent = agent_for(calls, max_steps=2)
    result = agent.run("Parol ne işe yarar?")
    assert "@TOOL_CALL" not in result.message["content"] and '"name"' not in result.message["content"]
    assert result.message["content"].startswith("Üzgünüm, 2 adımda")  # the out-of-steps reply


# ---- the property: any model output ---------------------------------------------------------------------

MARKERS = ["@PHARMACIST", "@THOUGHT", "@TOOL_CALL", "@PATIENT", "@TOOL_RESPONSE", "@SYSTEM", "@TOOLS", "\\@"]
pieces = st.one_of(
    st.sampled_from(MARKERS).map(lambda m: m + "\n"),
    st.sampled_from(["\n", "\n\n", "{", "}", "[", "]", '"', ":", ",", "\\", "\u2028", "\x85", "\r", "\ud800"]),
    st.sampled_from(['"name": "lookup"', '"arguments": {"drug": "Parol"}', '"weight_kg": 1e999', '"name": 3']),
    st.text(max_size=30),
    st.just(call("lookup", drug="Parol")),
    st.just(call("dose", drug="Parol", weight_kg=20)),
    st.integers(1, 400).map(lambda n: "[" * n),
    st.integers(1_000, 60_000).map(lambda n: "@PHARMACIST\n" + "a" * n),  # huge
)
model_output = st.lists(pieces, max_size=25).map("".join)


@settings(
    max_examples=int(os.environ.get("PPSF_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(outputs=st.lists(model_output, min_size=1, max_size=6))
def test_any_model_output_ends_in_an_answer_and_a_valid_transcript(outputs, tmp_path_factory):
    RAN.clear()
    folder = tmp_path_factory.mktemp("run")
    agent = agent_for(outputs, folder, max_steps=3)
    result = agent.run("Parol ne işe yarar?")
    assert isinstance(result.message.get("content"), str) and result.message["content"].strip()
    assert len(result.stats.steps) <= agent.max_steps + 1
    lines = (folder / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)
    for name, arguments in RAN:  # every call that ran was valid against its schema
        jsonschema.validate(arguments, SCHEMAS[name])
    agent.render(result.messages)  # and the conversation renders for the next turn
