"""The agent loop. A scripted generator stands in for the model where the test is about loop logic."""

from __future__ import annotations

import json
import time

import pytest
from ppsf_helpers import ScriptedGenerator, call, markers, scripted_backend

from agent.engine.agent import Agent, AgentConfig
from agent.engine.backends import CUSTOM, Backend
from agent.pharmacy import pharmacist_agent
from agent.pharmacy.dose_check import DoseCheck


def lookup(drug: str) -> dict:
    """Find a drug.

    Args:
        drug: Drug name.
    """
    return {"drug": drug, "usage": "Ağrı kesici"}


def dose(drug: str, weight_kg: float) -> dict:
    """Dose for a weight.

    Args:
        drug: Drug name.
        weight_kg: Body weight in kg.
    """
    return {"drug": drug, "mg": round(weight_kg * 15, 1)}


def broken(drug: str) -> dict:
    """Always fails.

    Args:
        drug: Drug name.
    """
    raise RuntimeError("database offline")


def slow(drug: str) -> dict:
    """Never answers in time.

    Args:
        drug: Drug name.
    """
    time.sleep(2)
    return {}


CONFIG_KEYS = {f for f in AgentConfig.__dataclass_fields__}


def make_agent(
    texts: list[str], tools=(lookup, dose, broken, slow), tool_timeout: float = 0.3, generator=None, **kwargs
) -> tuple[Agent, ScriptedGenerator]:
    """The pharmacist agent (agent.pharmacy.pharmacist_agent) on these tools, a scripted generator as the model
    (ScriptedGenerator(texts) unless one is given).

    kwargs: AgentConfig fields, and pharmacist_agent's options (checks, grounded_names, examples...);
    answers="model" unless given."""
    events: list[dict] = []
    config = {k: kwargs.pop(k) for k in list(kwargs) if k in CONFIG_KEYS}
    # The scripted texts are the model's answers: these tests study the loop and the checks of model prose.
    kwargs.setdefault("answers", "model")
    agent = pharmacist_agent(
        scripted_backend(generator if generator is not None else ScriptedGenerator(texts)),
        tools=list(tools),
        config=AgentConfig(tool_timeout=tool_timeout, **config),
        on_event=events.append,
        **kwargs,
    )
    agent.events = events
    return agent, agent.generator


def tool_results(result) -> list[dict]:
    return [json.loads(m["content"]) for m in result.messages if m["role"] == "tool"]


def test_call_result_answer():
    agent, gen = make_agent([call("lookup", drug="Parol"), "@PHARMACIST\nParol ağrı kesicidir."])
    result = agent.run("Parol ne işe yarar?")
    assert result.message == {"role": "assistant", "content": "Parol ağrı kesicidir."}
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assistant, tool = result.messages[2], result.messages[3]
    assert assistant["tool_calls"] == [
        {"id": "call_1_0", "type": "function", "function": {"name": "lookup", "arguments": '{"drug": "Parol"}'}}
    ]
    assert tool == {
        "role": "tool",
        "name": "lookup",
        "content": '{"drug": "Parol", "usage": "Ağrı kesici"}',
        "tool_call_id": "call_1_0",
    }
    assert [s.step for s in result.stats.steps] == [1, 2]
    # Agent mode: no generation prompt; the second prompt extends the first by what the model wrote.
    assert gen.prompts[0].endswith("@PATIENT\nParol ne işe yarar?\n\n")
    assert gen.prompts[1].startswith(gen.prompts[0] + call("lookup", drug="Parol") + "\n\n@TOOL_RESPONSE")
    kinds = [e["type"] for e in agent.events]
    assert kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1 and kinds[-1] == "final"
    # Prose is not streamed: it reaches the patient with the final event, once the checks have passed it.
    assert not [e for e in agent.events if e["type"] == "text"]
    assert agent.events[-1]["message"]["content"] == "Parol ağrı kesicidir."


def test_parallel_calls_answer_in_order():
    two = call("lookup", drug="Parol") + "\n\n" + call("dose", drug="Parol", weight_kg=20)
    agent, gen = make_agent([two, "@PHARMACIST\nTamam."])
    result = agent.run("Parol dozu?")
    tools = [m for m in result.messages if m["role"] == "tool"]
    assert [(m["name"], m["tool_call_id"]) for m in tools] == [("lookup", "call_1_0"), ("dose", "call_1_1")]
    assert json.loads(tools[1]["content"]) == {"drug": "Parol", "mg": 300}
    assert markers(gen.prompts[1])[-4:] == ["@TOOL_CALL", "@TOOL_CALL", "@TOOL_RESPONSE", "@TOOL_RESPONSE"]


def test_arguments_are_cast_to_the_schema():
    agent, _ = make_agent([call("dose", drug="Parol", weight_kg="20"), "@PHARMACIST\nok"])
    assert tool_results(agent.run("doz"))[0] == {"drug": "Parol", "mg": 300}


@pytest.mark.parametrize(
    ("text", "code", "fragment"),
    [
        (call("prescribe", drug="Parol"), "unknown_tool", "Available tools: lookup, dose, broken, slow"),
        (call("dose", drug="Parol"), "invalid_arguments", "'weight_kg' is a required property"),
        (call("dose", drug="Parol", weight_kg="abc"), "invalid_arguments", "weight_kg: 'abc' is not of type"),
        (call("lookup", drug="Parol", extra=1), "invalid_arguments", "'extra' was unexpected"),
        (call("broken", drug="Parol"), "tool_error", "RuntimeError: database offline"),
        (call("slow", drug="Parol"), "tool_timeout", "did not answer within 0.3 s"),
        ('@TOOL_CALL\n{"name": "lookup", "arguments": {"drug": "Parol"', "invalid_tool_call", "json"),
    ],
)
def test_errors_reach_the_model_as_tool_results(text, code, fragment):
    agent, gen = make_agent([text, "@PHARMACIST\nÜzgünüm."])
    result = agent.run("Parol?")
    error = tool_results(result)[0]["error"]
    assert error["code"] == code and fragment in error["message"]
    assert result.message["content"] == "Üzgünüm."
    assert '{"error": {"code": "' + code in gen.prompts[1]


def test_third_identical_call_is_refused():
    same = call("lookup", drug="Parol")
    agent, _ = make_agent([same, same, same, "@PHARMACIST\nParol ağrı kesicidir."])
    results = tool_results(agent.run("Parol?"))
    assert [r.get("error", {}).get("code") for r in results] == [None, None, "repeated_call"]


def test_max_steps_forces_a_final_answer():
    same = call("lookup", drug="Parol")
    agent, gen = make_agent([same, call("lookup", drug="Arveles"), "\nParol ağrı kesicidir."], max_steps=2)
    result = agent.run("Parol ne işe yarar?")
    assert result.message == {"role": "assistant", "content": "Parol ağrı kesicidir."}
    assert gen.prompts[-1].endswith("@PHARMACIST")  # plain mode: no more tools
    assert len(result.stats.steps) == 3


@pytest.mark.parametrize(
    ("question", "expected"),
    [("Parol ne işe yarar?", "Üzgünüm, 2 adımda"), ("What is Parol for?", "Sorry, I could not reach")],
)
def test_max_steps_without_an_answer_says_what_is_missing(question, expected):
    agent, _ = make_agent([call("lookup", drug="x"), call("broken", drug="y"), ""], max_steps=2)
    content = agent.run(question).message["content"]
    assert content.startswith(expected) and ("hata verdi" in content or "lookups failed" in content)
    assert "broken" not in content  # what was tried, in words: a tool's name is no answer (test_internals_check)
    assert "{" not in content  # an answer, not a log dump


def test_text_without_markers_is_kept_as_the_answer():
    agent, _ = make_agent(["Parol bir ağrı kesicidir."])
    assert agent.run("Parol?").message["content"] == "Parol bir ağrı kesicidir."


def test_reasoning_is_kept():
    agent, _ = make_agent(["@THOUGHT\nAraç gerekmez.\n\n@PHARMACIST\nMerhaba!"])
    assert agent.run("Merhaba").message == {
        "role": "assistant",
        "content": "Merhaba!",
        "reasoning_content": "Araç gerekmez.",
    }


def test_transcript_is_jsonl_flushed_per_step(tmp_path):
    path = tmp_path / "t.jsonl"

    class Dies(ScriptedGenerator):
        def generate(self, prompt, **kwargs):
            if len(self.prompts) == 1:
                raise KeyboardInterrupt
            return super().generate(prompt, **kwargs)

    agent, _ = make_agent([], transcript=path, generator=Dies([call("lookup", drug="Parol")]))
    with pytest.raises(KeyboardInterrupt):
        agent.run("Parol?")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["type"] for line in lines] == ["message", "message", "message", "message", "step"]
    assert lines[3]["message"]["role"] == "tool" and len({line["run"] for line in lines}) == 1


def test_examples_are_prompted_but_not_returned():
    examples = [{"role": "user", "content": "Örnek?"}, {"role": "assistant", "content": "Örnek yanıt."}]
    agent, gen = make_agent(["@PHARMACIST\nTamam."], examples=examples)
    result = agent.run("Parol?")
    assert "@PATIENT\nÖrnek?\n\n@PHARMACIST\nÖrnek yanıt.\n\n@PATIENT\nParol?" in gen.prompts[0]
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant"]


def test_continues_a_conversation_and_takes_any_system_prompt():
    russian = "Реши задачу по инструкции ниже. Не давай никаких объяснений."
    agent, gen = make_agent(["@PHARMACIST\n4", "@PHARMACIST\n6"], system_prompt=russian)
    first = agent.run("2+2?")
    second = agent.run(first.messages + [{"role": "user", "content": "3+3?"}])
    assert [m["content"] for m in second.messages if m["role"] == "assistant"] == ["4", "6"]
    assert gen.prompts[1].startswith(f"@FORMAT PPSF/1.0\n\n@SYSTEM\n{russian}\n\n@TOOLS\n")


def test_the_pharmacist_has_its_system_prompt_unless_the_config_names_one():
    from agent.pharmacy import SYSTEM_PROMPT

    prompts = {}
    for name, kwargs in {
        "default": {},
        "other": {"system_prompt": "Kısa yanıt ver."},
        "none": {"system_prompt": ""},
    }.items():
        agent, gen = make_agent(["@PHARMACIST\nok"], **kwargs)
        agent.run("Parol?")
        prompts[name] = gen.prompts[0]
    assert prompts["default"].startswith(f"@FORMAT PPSF/1.0\n\n@SYSTEM\n{SYSTEM_PROMPT}\n\n")
    assert prompts["other"].startswith("@FORMAT PPSF/1.0\n\n@SYSTEM\nKısa yanıt ver.\n\n")
    assert prompts["none"].startswith("@FORMAT PPSF/1.0\n\n@TOOLS\n")


def test_the_repo_format_replaces_the_models_own_template():
    from transformers import AutoTokenizer

    from agent.ppsf import REPO_ROOT

    tokenizer = AutoTokenizer.from_pretrained(str(REPO_ROOT))
    tokenizer.chat_template = "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"
    tokenizer.response_template = None
    agent = pharmacist_agent(Backend(CUSTOM, ScriptedGenerator(["@PHARMACIST\nok"]), tokenizer), tools=[lookup])
    assert agent.run("x").message["content"] == "ok"
    assert agent.generator.prompts[0].startswith("@FORMAT PPSF/1.0\n\n@SYSTEM\n")


def test_bad_input():
    agent, _ = make_agent([])
    with pytest.raises(ValueError, match="The question is empty"):
        agent.run("  ")
    with pytest.raises(ValueError, match="non-empty list of messages"):
        agent.run([])
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        AgentConfig(max_steps=0)
    with pytest.raises(ValueError, match="two tools are named 'lookup'"):
        Agent(scripted_backend(ScriptedGenerator([])), [lookup, lookup])


def test_the_pharmacist_grounds_drug_names_in_the_drug_data_and_the_engine_grounds_nothing_by_itself():
    from agent.pharmacy.tools import is_known_name, is_medicine_name, search_drug

    backend = scripted_backend()
    constraint = pharmacist_agent(backend).constraint
    assert constraint.arguments == ("drug", "drugs") and constraint.known_name is is_medicine_name
    assert constraint.names_only
    # with tools of the caller's own beside the pharmacy's, the rule stays on (it used to be silently off)
    assert pharmacist_agent(backend, tools=[lookup, search_drug]).constraint.known_name is is_medicine_name
    assert pharmacist_agent(backend, names_only=False).constraint.known_name is is_known_name
    assert pharmacist_agent(backend, whole_names=False, names_only=False).constraint.known_name is None
    assert pharmacist_agent(backend, grounded_names=False).constraint is None
    assert Agent(scripted_backend(ScriptedGenerator([])), [lookup]).constraint is None  # the engine knows no drug names


@pytest.mark.parametrize(("whole_names", "names_only"), [(True, True), (True, False), (False, False)])
def test_the_local_generator_decodes_under_the_whole_name_rule(tiny_model_dir, monkeypatch, whole_names, names_only):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import agent.engine.agent as agent_module
    from agent.pharmacy.tools import is_known_name, is_medicine_name

    seen: list = []
    real = agent_module.GroundedNames

    def recording(tokenizer, sources, known_name=None, *, arguments, names_only=False, written=""):
        seen.append((known_name, names_only))
        return real(tokenizer, sources, known_name, arguments=arguments, names_only=names_only, written=written)

    monkeypatch.setattr(agent_module, "GroundedNames", recording)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    config = AgentConfig(max_steps=1, max_new_tokens=4)
    agent = pharmacist_agent(model, tokenizer, config=config, whole_names=whole_names, names_only=names_only)
    agent.run("Parol ne işe yarar?")
    known = is_medicine_name if names_only else is_known_name if whole_names else None
    assert seen and all(k is known and only is names_only for k, only in seen)


# --- the dose check (agent.pharmacy.dose_check) ---------------------------------------------------------


def dose_agent(answer: str, weight_kg: float, age_years: float, **kwargs):
    from agent.pharmacy.tools import PHARMACY_TOOLS

    texts = [call("calculate_dose", drug="Parol", weight_kg=weight_kg, age_years=age_years), answer]
    # The real tool loads its data on the first call: 0.3 s (the `slow` tool's test) is too tight on a busy CPU.
    return make_agent(texts, tools=PHARMACY_TOOLS, tool_timeout=30.0, **kwargs)


def test_a_dose_the_tool_gave_passes_unchanged():
    agent, _ = dose_agent("@PHARMACIST\nParol: tek doz 300 mg, günde en fazla 1200 mg.", 20, 6)
    result = agent.run("20 kg 6 yaş Parol dozu?")
    assert tool_results(result)[0]["max_daily_mg"] >= 1200
    assert result.message["content"] == "Parol: tek doz 300 mg, günde en fazla 1200 mg."
    assert result.replaced_answer is None and "dose_check" not in [e["type"] for e in agent.events]


def test_a_dose_above_the_tools_maximum_is_replaced_by_the_tools_figures(tmp_path):
    log = tmp_path / "t.jsonl"
    agent, _ = dose_agent("@PHARMACIST\nParol: 5000 mg verin.", 20, 6, transcript=log)
    result = agent.run("20 kg 6 yaş Parol dozu?")
    dose = tool_results(result)[0]
    assert result.replaced_answer == "Parol: 5000 mg verin."
    content = result.message["content"]
    assert f"tek doz {dose['per_dose_mg']:g} mg" in content and f"{dose['max_daily_mg']:g} mg" in content
    assert "5000" not in content and result.messages[-1] is result.message
    event = next(e for e in agent.events if e["type"] == "dose_check")
    # The event says which rule did what; the replaced text is in the transcript only.
    assert event == {"type": "dose_check", "rule": "dose_check", "action": "replace", "note": DoseCheck.note}
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert any(x.get("replaced") == "Parol: 5000 mg verin." for x in lines)  # the model's text is kept


def test_any_mg_amount_after_a_referral_is_replaced_by_the_reasons():
    agent, _ = dose_agent("@PHARMACIST\nParol: günde en fazla 2 mg.", 3, 0.2)
    result = agent.run("3 kg, 2 aylık bebek Parol dozu?")  # with no age written the tool asks for one
    dose = tool_results(result)[0]
    assert dose["refer_to_doctor"] is True
    assert result.message["content"].startswith("Parol için doz hesaplayamıyorum:")  # the phrasebook's dose answer
    assert all(reason in result.message["content"] for reason in dose["reasons"])
    assert result.replaced_answer == "Parol: günde en fazla 2 mg."


def without(kind: type, tools=None) -> list:
    """The pharmacy's default answer checks without those of kind (to study what one check does)."""
    from agent.pharmacy import default_checks

    return [c for c in default_checks(tools) if not isinstance(c, kind)]


def test_dose_check_can_be_turned_off():
    agent, _ = dose_agent("@PHARMACIST\nParol: 5000 mg verin.", 20, 6, checks=without(DoseCheck))
    result = agent.run("20 kg 6 yaş Parol dozu?")
    assert result.message["content"] == "Parol: 5000 mg verin." and result.replaced_answer is None


def test_cli_printer_announces_a_dose_check_and_leaves_the_answer_to_the_final_print(capsys):
    from agent.cli import Printer

    printer = Printer(stream=True)
    printer({"type": "dose_check", "rule": "dose_check", "action": "replace", "note": "x"})
    out = capsys.readouterr()
    assert "[dose check] x" in out.err and out.out == "" and "5000" not in out.err
    Printer(stream=False)({"type": "dose_check", "rule": "dose_check", "action": "replace", "note": "x"})
    assert capsys.readouterr().err == ""  # --json: the JSON alone


# --- typed answer checks (agent.engine.checks) -------------------------------------------------------------


class FixedVerdict:
    """An answer check that always gives one verdict."""

    name, note = "fixed_verdict", "a test rule"

    def __init__(self, verdict) -> None:
        self.verdict = verdict

    def check(self, answer: str, conversation: list[dict]):
        return self.verdict


def run_with_check(verdict) -> tuple:
    from agent.engine.checks import AnswerCheck

    events: list[dict] = []
    check: AnswerCheck = FixedVerdict(verdict)
    agent = Agent(scripted_backend(ScriptedGenerator(["@PHARMACIST\nHi."])), [lookup], checks=[check],
                  on_event=events.append)  # fmt: skip
    return agent.run("hello"), [e for e in events if e["type"] == "fixed_verdict"]


def test_a_checks_typed_verdict_says_what_it_did():
    from agent.engine.checks import Append, Replace

    result, (event,) = run_with_check(Append("Bye."))
    assert result.message["content"] == "Hi.\n\nBye." and event["action"] == "append"
    result, (event,) = run_with_check(Replace("Other."))
    assert result.message["content"] == "Other." and event["action"] == "replace"
    assert result.replaced_answer == "Hi."
    result, events = run_with_check(None)
    assert result.message["content"] == "Hi." and events == [] and result.replaced_answer is None


def test_a_check_that_returns_a_bare_string_is_an_error_naming_it():
    with pytest.raises(TypeError, match="fixed_verdict.check returned 'Other.': Replace, Append or None"):
        run_with_check("Other.")
