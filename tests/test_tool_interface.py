"""A model is shown the tool schemas it was trained on (tools.json beside its adapter or weights)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, call, scripted_backend

from agent.engine.models import ModelLoadError, default_adapter_dir, recorded_tools
from agent.engine.toolbox import Toolbox, fit_schema, tool_schema
from agent.eval.scoring import call_matches, tool_defaults
from agent.pharmacy import default_tool_schemas, pharmacist_agent
from agent.pharmacy.tools import PHARMACY_TOOLS, calculate_dose, check_contraindications

# The ten-stage adapter's record (the default before the recipe's): trained before age_months existed.
TEN_STAGES = Path(__file__).resolve().parents[1] / "eval" / "results" / "ten_stages"


def test_the_committed_adapter_is_shown_the_schemas_it_was_trained_on():
    recorded = default_tool_schemas()
    assert recorded is not None and set(recorded) == {fn.__name__ for fn in PHARMACY_TOOLS}
    # Its record fits today's tools (a drift check: a tool may gain optional parameters, never lose one) and, the
    # recipe having trained on today's tools, shows every parameter of each.
    toolbox = Toolbox(list(PHARMACY_TOOLS), recorded=recorded)
    for fn in PHARMACY_TOOLS:
        own, old = tool_schema(fn)["function"]["parameters"], recorded[fn.__name__]["function"]["parameters"]
        assert set(old["properties"]) == set(own["properties"]), fn.__name__
    assert "age_months" in json.dumps(toolbox.schemas)


def test_an_older_record_is_shown_as_it_was_and_today_s_parameters_stay_hidden():
    recorded = recorded_tools(TEN_STAGES)
    toolbox = Toolbox(list(PHARMACY_TOOLS), recorded=recorded)
    shown = {s["function"]["name"]: s["function"]["parameters"] for s in toolbox.schemas}
    assert "age_months" not in shown["calculate_dose"]["properties"]
    assert shown["calculate_dose"]["required"] == ["drug", "weight_kg", "age_years"]
    # The tools that gained age_months show everything else; the others are shown exactly as they are today.
    for fn in PHARMACY_TOOLS:
        own, old = tool_schema(fn)["function"]["parameters"], recorded[fn.__name__]["function"]["parameters"]
        if fn in (calculate_dose, check_contraindications):
            assert set(old["properties"]) == set(own["properties"]) - {"age_months"}, fn.__name__
        else:
            assert old == own, fn.__name__


def test_the_agent_shows_the_recorded_schemas_and_refuses_what_they_hide():
    agent = pharmacist_agent(scripted_backend(), tool_schemas=recorded_tools(TEN_STAGES))
    assert "age_months" not in json.dumps(agent.toolbox.schemas)
    refused = agent.toolbox.call("calculate_dose", {"drug": "Calpol", "weight_kg": 12, "age_months": 9})
    assert refused["error"]["code"] == "invalid_arguments" and "age_months" in refused["error"]["message"]
    # A model trained on today's tools (the default adapter's record) may give the age in months.
    trained = pharmacist_agent(scripted_backend())
    result = trained.toolbox.call("calculate_dose", {"drug": "Calpol", "weight_kg": 8.5, "age_months": 9})
    assert result["age_years"] == 0.75 and result["per_dose_mg"] > 0


@pytest.mark.parametrize(("record", "months_shown"), [(None, True), (TEN_STAGES, False)])
def test_the_recorded_schema_is_what_the_prompt_shows(record, months_shown):
    schemas = recorded_tools(record) if record else None
    backend = scripted_backend(ScriptedGenerator([call("search_drug", drug="Parol")]))
    agent = pharmacist_agent(backend, tool_schemas=schemas)
    prompt = agent.tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tools=agent.toolbox.schemas, chat_template=agent.chat_template,
        tokenize=False,
    )  # fmt: skip
    assert "age_years" in prompt and ("age_months" in prompt) == months_shown


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["function"]["parameters"]["properties"].update(height={"type": "number"}), "lacks: height"),
        (lambda s: s["function"]["parameters"]["properties"].pop("drug"), "hides required parameter(s): drug"),
        (lambda s: s["function"].update(name="calc"), "not a function schema named 'calculate_dose'"),
        (lambda s: s["function"]["parameters"]["required"].append("ghost"), "requires parameter(s) it does not show"),
    ],
)
def test_a_record_that_does_not_fit_the_tool_is_refused_by_name(change, message):
    schema = copy.deepcopy(tool_schema(calculate_dose))
    change(schema)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fit_schema(calculate_dose, schema)


def test_recorded_tools_reads_the_first_folder_that_has_them(tmp_path):
    assert recorded_tools(None, tmp_path) is None
    (tmp_path / "tools.json").write_text(json.dumps([tool_schema(check_contraindications)]), encoding="utf-8")
    assert set(recorded_tools(None, tmp_path)) == {"check_contraindications"}
    assert set(recorded_tools(default_adapter_dir(), tmp_path)) == {fn.__name__ for fn in PHARMACY_TOOLS}
    for bad, message in [("{", "not readable JSON"), ('{"a": 1}', "expected a list of function schemas")]:
        (tmp_path / "tools.json").write_text(bad, encoding="utf-8")
        with pytest.raises(ModelLoadError, match=message):
            recorded_tools(tmp_path)


@pytest.mark.parametrize(
    ("actual", "same"),
    [({"age_months": 9}, True), ({"age_months": "9"}, True), ({"age_years": 0, "age_months": 9}, True),
     ({"age_years": 9}, False), ({"age_months": "nine"}, False), ({"age_months": 10}, False)],
)  # fmt: skip
def test_an_age_in_months_matches_the_same_age_in_years(actual, same):
    expected = {"name": "calculate_dose", "arguments": {"drug": "Calpol", "weight_kg": 8, "age_years": 0.75}}
    got = {"name": "calculate_dose", "arguments": {"drug": "Calpol", "weight_kg": 8, **actual}}
    assert call_matches(expected, got, tool_defaults()) is same
