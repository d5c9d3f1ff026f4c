"""Routing (agent.engine.routing): a router chooses how the first reply starts, the model writes the rest; the
pharmacy's tool router (agent.pharmacy.router) and its training (training/router.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, call, repo_tokenizer, scripted_backend

from agent.engine.agent import Agent
from agent.engine.routing import Route, reply_start
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.router import LABELS, WEIGHTS, ToolRouter, route_text, tool_router

ROOT = Path(__file__).resolve().parent.parent


def lookup(drug: str) -> dict:
    """Find a drug.

    Args:
        drug: Drug name.
    """
    return {"drug": drug, "usage": "Ağrı kesici"}


def pair(drugs: list[str]) -> dict:
    """Check two drugs.

    Args:
        drugs: Drug names.
    """
    return {"drugs": drugs, "interaction": None}


class FixedRouter:
    name = "fixed_router"

    def __init__(self, route: Route | None) -> None:
        self.route_ = route
        self.seen: list[list[dict]] = []

    def route(self, messages: list[dict]) -> Route | None:
        self.seen.append(messages)
        return self.route_


def routed_agent(route: Route | None, texts: list[str], tools=(lookup, pair)) -> tuple[Agent, ScriptedGenerator]:
    gen = ScriptedGenerator(texts)
    events: list[dict] = []
    agent = Agent(scripted_backend(gen), list(tools), router=FixedRouter(route), on_event=events.append)
    agent.events = events
    return agent, gen


def test_reply_start_is_what_the_template_renders_for_a_call_and_an_answer():
    agent, _ = routed_agent(None, [])
    start = reply_start(agent.render, "lookup")
    assert start == '@TOOL_CALL\n{\n  "name": "lookup",\n  "arguments":'
    whole = agent.render([{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "lookup", "arguments": {"drug": "Parol"}}}]}])  # fmt: skip
    assert start + ' {"drug": "Parol"}\n}' in whole
    assert reply_start(agent.render, None) == "@PHARMACIST\n"


def test_a_routed_call_starts_in_the_prompt_and_the_model_writes_its_arguments():
    agent, gen = routed_agent(Route("pair", 0.9), [' {"drugs": ["Parol", "Coraspin"]}\n}', "@PHARMACIST\nTamam."])
    result = agent.run("Parol ile Coraspin birlikte olur mu?")
    assert gen.prompts[0].endswith(
        '@PATIENT\nParol ile Coraspin birlikte olur mu?\n\n@TOOL_CALL\n{\n  "name": "pair",\n  "arguments":'
    )
    call_message = result.messages[1]
    assert call_message["tool_calls"][0]["function"] == {
        "name": "pair",
        "arguments": '{"drugs": ["Parol", "Coraspin"]}',
    }
    assert json.loads(result.messages[2]["content"])["drugs"] == ["Parol", "Coraspin"]
    assert result.message["content"] == "Tamam."
    # Only the first reply is routed: the second prompt is the conversation so far, ending at a block boundary.
    assert gen.prompts[1].endswith("\n\n") and len(agent.router.seen) == 1
    route = [e for e in agent.events if e["type"] == "route"]
    assert route == [{"type": "route", "rule": "fixed_router", "tool": "pair", "confidence": 0.9}]


def test_a_routed_answer_starts_with_the_answer_marker():
    agent, gen = routed_agent(Route(None, 0.8), ["Merhaba, nasıl yardımcı olabilirim?"])
    result = agent.run("merhaba")
    assert gen.prompts[0].endswith("@PATIENT\nmerhaba\n\n@PHARMACIST\n")
    assert result.message["content"] == "Merhaba, nasıl yardımcı olabilirim?" and len(result.messages) == 2


@pytest.mark.parametrize("route", [None, Route("no_such_tool", 0.99)])
def test_no_route_or_a_tool_the_agent_lacks_leaves_the_choice_to_the_model(route):
    agent, gen = routed_agent(route, [call("lookup", drug="Parol"), "@PHARMACIST\nAğrı kesici."])
    result = agent.run("Parol ne?")
    assert gen.prompts[0].endswith("@PATIENT\nParol ne?\n\n")
    assert result.messages[1]["tool_calls"][0]["function"]["name"] == "lookup"
    assert not [e for e in agent.events if e["type"] == "route"]


def test_a_routed_call_the_model_breaks_is_kept_whole_with_its_error():
    agent, _ = routed_agent(Route("lookup", 0.9), [' {"drug": "Parol"', "@PHARMACIST\nBilmiyorum."])
    result = agent.run("Parol ne?")
    broken = result.messages[1]
    assert broken["content"].startswith('@TOOL_CALL\n{\n  "name": "lookup",\n  "arguments": {"drug": "Parol"')
    assert "parse_error" in broken


def test_the_grounded_names_constraint_reads_the_routed_start_as_written():
    from agent.engine.grounding import GroundedNames

    tok = repo_tokenizer()
    start = '@TOOL_CALL\n{\n  "name": "lookup",\n  "arguments": {"drug": "'
    constraint = GroundedNames(tok, ["Parol ne işe yarar?"], arguments=("drug", "drugs"), written=start)
    constraint.reset()
    allowed = constraint.allowed()
    assert allowed is not None  # inside the drug value: only tokens that keep it a span of the conversation
    ids = tok("Parol", add_special_tokens=False)["input_ids"]
    assert ids[0] in set(allowed.tolist() if hasattr(allowed, "tolist") else allowed)
    assert GroundedNames(tok, ["Parol"], arguments=("drug", "drugs")).allowed() is None


def test_the_pharmacist_is_routed_for_the_tuned_model_only_unless_told():
    backend = scripted_backend()
    assert pharmacist_agent(backend).router is None  # a model of one's own chooses alone
    assert pharmacist_agent(backend, routed=True).router is tool_router()
    from dataclasses import replace

    assert pharmacist_agent(replace(backend, tuned=True)).router is tool_router()
    assert pharmacist_agent(replace(backend, tuned=True), routed=False).router is None


def test_the_router_reads_the_latest_patient_message_in_any_content_shape():
    pieces = [{"type": "text", "text": "peki hamileyken"}, {"type": "text", "text": "olur mu"}]
    parts = [
        {"role": "user", "content": "Parol?"},
        {"role": "assistant", "content": "Ağrı kesici."},
        {"role": "user", "content": pieces},
    ]
    assert route_text(parts) == "peki hamileyken olur mu"
    assert route_text([{"role": "system", "content": "x"}]) == ""


def test_the_shipped_router_loads_with_its_labels_and_a_bad_file_is_refused(tmp_path):
    router = ToolRouter.load()
    assert router.weight.shape[1] == len(LABELS) == len(router.bias)
    route = router.route_messages([{"role": "user", "content": "Parol ile Nurofen birlikte alınır mı?"}])
    assert route.label in LABELS and 0 < route.confidence <= 1
    sys.path.insert(0, str(ROOT / "training"))
    from textclass import save_weights

    bad = tmp_path / "router.safetensors"
    save_weights({"weight": router.weight, "bias": router.bias}, bad, {"labels": json.dumps(["none", "x"])})
    with pytest.raises(ValueError, match="labels"):
        ToolRouter.load(bad)


def test_the_shipped_routers_dev_figures_are_what_its_weights_score():
    """The figures the training recorded with the weights are what the shipped weights score on dev now (the
    weights, the dev sets and the feature function have not drifted apart)."""
    from safetensors import safe_open

    sys.path.insert(0, str(ROOT / "training"))
    import router as training_router

    with safe_open(str(WEIGHTS), framework="numpy") as f:
        info = json.loads(f.metadata()["info"])
    router = ToolRouter.load()
    for path in training_router.DEV:
        figures = training_router.accuracy(router, training_router.read_cases(path))
        assert figures["accuracy"] == info["dev"][path.stem]["accuracy"], path.stem
        assert figures["arguments"] == info["dev"][path.stem]["arguments"], path.stem


def test_cli_and_eval_take_router_flags():
    from agent.eval.runner import build_parser

    assert build_parser().parse_args(["x.jsonl"]).router is None
    assert build_parser().parse_args(["x.jsonl", "--no-router"]).router is False
    assert build_parser().parse_args(["x.jsonl", "--router"]).router is True


def test_the_routers_training_pools_are_well_formed_and_held_apart_from_eval():
    """training/decisions/: patient-written messages, each with the call it needs, checked against the tools when
    added; none of them is a case of an eval set (compared folded, punctuation aside)."""
    import re

    sys.path.insert(0, str(ROOT / "training"))
    import router as training_router

    from agent.pharmacy.text import fold

    def key(case: dict) -> str:
        texts = [m["content"] for m in training_router.case_messages(case) if m["role"] == "user"]
        return re.sub(r"\W+", " ", fold(" ".join(texts))).strip()

    pools = [c for path in training_router.POOLS for c in training_router.read_cases(path)]
    assert len(pools) >= 1000 and {training_router.case_label(c) for c in pools} == set(LABELS)
    held = {key(c) for path in (ROOT / "eval").glob("*.jsonl") if "emergency" not in path.name
            for c in training_router.read_cases(path)}  # fmt: skip
    assert not {key(c) for c in pools} & held


def routed_tools_agent(route: Route | None, texts: list[str]) -> tuple[Agent, ScriptedGenerator]:
    """An agent on a model trained shown only the routed tool (backend.tools_shown == "routed")."""
    from dataclasses import replace

    gen = ScriptedGenerator(texts)
    backend = replace(scripted_backend(gen), tools_shown="routed")
    return Agent(backend, [lookup, pair], router=FixedRouter(route)), gen


def tools_block(prompt: str) -> list[str]:
    """The tool names a prompt's @TOOLS block shows."""
    return [json.loads(line)["function"]["name"] for line in prompt.splitlines() if line.startswith('{"type"')]


def test_a_model_trained_on_routed_tools_is_shown_the_routed_tool_then_those_it_called():
    agent, gen = routed_tools_agent(
        Route("lookup", 0.9),
        [' {"drug": "Parol"}\n}', call("pair", drugs=["Parol", "Coraspin"]), "@PHARMACIST\nTamam."],
    )
    agent.run("Parol ne, Coraspin ile olur mu?")
    assert [tools_block(p) for p in gen.prompts] == [["lookup"], ["lookup"], ["lookup", "pair"]]


def test_a_reply_routed_to_an_answer_shows_no_tools_and_unrouted_runs_show_them_all():
    agent, gen = routed_tools_agent(Route(None, 0.8), ["Merhaba."])
    agent.run("merhaba")
    assert "@TOOLS" not in gen.prompts[0] and gen.prompts[0].endswith("@PHARMACIST\n")
    agent, gen = routed_tools_agent(None, ["@PHARMACIST\nMerhaba."])  # the router leaves the choice to the model
    agent.run("merhaba")
    assert tools_block(gen.prompts[0]) == ["lookup", "pair"]
    # A model trained on every tool is shown every tool, routed or not.
    agent, gen = routed_agent(Route("pair", 0.9), [' {"drugs": ["A", "B"]}\n}', "@PHARMACIST\nTamam."])
    agent.run("A ile B?")
    assert tools_block(gen.prompts[0]) == ["lookup", "pair"]


def test_what_tools_block_a_model_was_trained_on_is_read_beside_its_tools_record(tmp_path):
    from agent.engine.backends import Backend
    from agent.engine.models import ModelLoadError, recorded_tools_shown

    assert recorded_tools_shown(tmp_path, None) == "all"  # no tools.json: nothing recorded
    (tmp_path / "tools.json").write_text("[]", encoding="utf-8")
    assert recorded_tools_shown(tmp_path) == "all"
    (tmp_path / "tools_shown.txt").write_text("routed\n", encoding="utf-8")
    assert recorded_tools_shown(None, tmp_path) == "routed"
    (tmp_path / "tools_shown.txt").write_text("some\n", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="tools_shown.txt: 'some'; expected all or routed"):
        recorded_tools_shown(tmp_path)
    with pytest.raises(ValueError, match="unknown tools_shown 'some'"):
        Backend("custom", None, None, tools_shown="some")


def info(drug: str, section: str) -> dict:
    """Read one section of a leaflet.

    Args:
        drug: Drug name.
        section: Which section.
    """
    return {"drug": drug, "section": section}


def test_the_routes_arguments_replace_the_models_in_its_first_calls_to_the_routed_tool():
    route = Route("info", 0.9, {"section": "side_effects"})
    agent, gen = routed_agent(route, [' {"drug": "Parol", "section": "dosage"}\n}', "@PHARMACIST\nTamam."], (info,))
    result = agent.run("Parolün yan etkileri?")
    calls = [m for m in result.messages if m.get("tool_calls")]
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {
        "drug": "Parol",
        "section": "side_effects",
    }
    assert [e["arguments"] for e in agent.events if e["type"] == "route"] == [{"section": "side_effects"}]
    # Other tools' calls, and calls of later steps, keep what the model wrote.
    mixed = [
        {"name": "info", "arguments": {"drug": "A", "section": "x"}},
        {"name": "lookup", "arguments": {"drug": "B"}},
    ]
    assert route.apply(mixed) == [{"name": "info", "arguments": {"drug": "A", "section": "side_effects"}}, mixed[1]]
    assert Route("info", 0.9).apply(mixed) is mixed


def test_the_shipped_router_chooses_get_drug_infos_section_and_a_head_outside_the_enum_is_refused(tmp_path):
    router = ToolRouter.load()
    assert [h.key for h in router.heads] == ["get_drug_info.section"]
    route = router.route_messages([{"role": "user", "content": "Parol'ün yan etkileri nelerdir?"}])
    assert route.tool == "get_drug_info" and route.arguments == {"section": "side_effects"}
    assert router.route_messages([{"role": "user", "content": "Parol ne işe yarar?"}]).arguments == {}
    sys.path.insert(0, str(ROOT / "training"))
    from textclass import save_weights

    head = router.heads[0]
    bad = tmp_path / "router.safetensors"
    tensors = {"weight": router.weight, "bias": router.bias, f"{head.key}.weight": head.weight}
    tensors[f"{head.key}.bias"] = head.bias
    metadata = {"labels": json.dumps(LABELS), "arguments": json.dumps({head.key: ["dosage", "price"]})}
    save_weights(tensors, bad, metadata)
    with pytest.raises(ValueError, match=r"get_drug_info.section.*not all values of that argument's enum"):
        ToolRouter.load(bad)


def _unsure_router(p_none: float) -> ToolRouter:
    """A router that reads every message alike: "none" at p_none, find_alternatives next, the rest below it."""
    import numpy as np

    from agent.pharmacy.textclass import BUCKETS

    probs = np.full(len(LABELS), (1 - p_none) * 0.2 / (len(LABELS) - 2))
    probs[0], probs[LABELS.index("find_alternatives")] = p_none, (1 - p_none) * 0.8
    return ToolRouter(np.zeros((BUCKETS, len(LABELS)), dtype=np.float32), np.log(probs).astype(np.float32))


def test_an_unsure_none_about_a_named_medicine_calls_the_likeliest_tool():
    def routed(router, *texts):
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
        return router.route(messages).tool, router.route_messages(messages).tool

    unsure, sure = _unsure_router(0.6), _unsure_router(0.95)
    assert routed(unsure, "Nurofen'in daha ucuzu var mı, çok pahalı") == ("find_alternatives", None)
    # a follow-up names no medicine; an earlier message of the patient does
    assert routed(unsure, "Nurofen kullanıyorum", "Anladım.", "peki bunun muadili var mı") == (
        "find_alternatives",
        None,
    )
    assert routed(unsure, "daha ucuzu var mı, çok pahalı") == (None, None)  # no medicine named
    assert routed(sure, "Nurofen'in daha ucuzu var mı, çok pahalı") == (None, None)  # the router is sure
    # where only an earlier message names one, the router need only be surer of none than FOLLOW_UP_SURE
    fairly_sure = _unsure_router(0.8)
    assert routed(fairly_sure, "Nurofen'in daha ucuzu var mı, çok pahalı") == ("find_alternatives", None)
    assert routed(fairly_sure, "Nurofen kullanıyorum", "Anladım.", "tamam sağolun görüşürüz") == (None, None)
    # an emergency now, or earlier in the conversation, is never turned into a lookup
    assert routed(unsure, "bir kutu parol içtim ölmek istiyorum") == (None, None)
    assert routed(unsure, "bir kutu parol içtim ölmek istiyorum", "112'yi arayın.", "nurofen daha ucuz mu") == (
        None,
        None,
    )
