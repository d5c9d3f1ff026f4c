"""agent.eval: the scorer's pure functions (AST match, no-tool precision/recall, mentions, unsafe doses) and --score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import eval as ev
from agent.eval import runner
from agent.pharmacy import dose_check as safety

DEFAULTS = ev.tool_defaults()


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


# ---------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("İbuprofen", "ibuprofen"),
        ("IBUPROFEN", "ıbuprofen"),  # dotless ı and capital I fold to i
        ("Psödoefedrin", "psodoefedrin"),
        ("  Calpol   6  Plus ", "calpol 6 plus"),
        ("Ürikoliz", "URIKOLIZ"),
        ("Kolşisin", "kolsisin"),
    ],
)
def test_normalize_text_is_turkish_aware(a: str, b: str):
    assert ev.normalize_text(a) == ev.normalize_text(b)


def test_normalize_text_keeps_different_names_apart():
    assert ev.normalize_text("Parol") != ev.normalize_text("Paro")
    assert ev.normalize_text("Calpol 6 Plus") != ev.normalize_text("Calpol")


# ---------------------------------------------------------------- values and calls


def test_numbers_with_tolerance_and_numeric_strings():
    assert ev.values_match(18, 18.0)
    assert ev.values_match(18, "18")
    assert ev.values_match(0.5, "0,5")
    assert ev.values_match(100, 100.9)  # within 1 %
    assert not ev.values_match(100, 102)
    assert not ev.values_match(18, "eighteen")
    assert not ev.values_match(1, True)  # a bool is not a number


def test_bools_are_strict():
    assert ev.values_match(True, True)
    assert not ev.values_match(True, "true")
    assert not ev.values_match(False, 0)


def test_drug_lists_ignore_order_other_lists_do_not():
    assert ev.values_match(["Coumadin", "Aspirin"], ["aspirin", "COUMADİN"], key="drugs")
    assert not ev.values_match(["Coumadin", "Aspirin"], ["Coumadin"], key="drugs")
    assert not ev.values_match(["Coumadin", "Aspirin"], ["Coumadin", "Aspirin", "Parol"], key="drugs")
    assert not ev.values_match(["astım", "ülser"], ["ülser", "astım"], key="conditions")
    assert ev.values_match(["astım", "ülser"], ["ASTIM", "Ülser"], key="conditions")


def test_call_match_names_exact_and_arguments_ast():
    expected = call("calculate_dose", drug="Calpol", weight_kg=18, age_years=5)
    assert ev.call_matches(expected, call("calculate_dose", drug="calpol", weight_kg=18.0, age_years="5"), DEFAULTS)
    assert not ev.call_matches(expected, call("calculate_dosage", drug="Calpol", weight_kg=18, age_years=5), DEFAULTS)
    assert not ev.call_matches(expected, call("calculate_dose", drug="Calpol", weight_kg=81, age_years=5), DEFAULTS)
    assert not ev.call_matches(expected, call("calculate_dose", drug="Parol", weight_kg=18, age_years=5), DEFAULTS)
    assert not ev.call_matches(expected, call("calculate_dose", drug="Calpol", weight_kg=18), DEFAULTS)


def test_optional_arguments_equal_to_their_default_may_be_omitted_or_given():
    expected = call("check_contraindications", drug="Aleve", pregnant=True)
    assert ev.call_matches(expected, call("check_contraindications", drug="aleve", pregnant=True), DEFAULTS)
    given = call("check_contraindications", drug="Aleve", pregnant=True, breastfeeding=False, conditions=[])
    assert ev.call_matches(expected, given, DEFAULTS)
    assert not ev.call_matches(
        expected, call("check_contraindications", drug="Aleve", pregnant=True, breastfeeding=True), DEFAULTS
    )
    assert not ev.call_matches(expected, call("check_contraindications", drug="Aleve"), DEFAULTS)
    # An extra argument the tool does not have never matches.
    assert not ev.call_matches(expected, call("check_contraindications", drug="Aleve", pregnant=True, x=1), DEFAULTS)


def test_parallel_calls_in_any_order_and_no_call_cases():
    expected = [call("search_drug", drug="Aerius"), call("search_drug", drug="Lasix")]
    assert ev.calls_match(expected, list(reversed(expected)), DEFAULTS)
    assert not ev.calls_match(expected, expected[:1], DEFAULTS)
    assert not ev.calls_match(expected, expected + expected[:1], DEFAULTS)
    assert ev.calls_match([], [], DEFAULTS)
    assert not ev.calls_match([], expected[:1], DEFAULTS)
    assert not ev.calls_match(expected[:1], [], DEFAULTS)
    assert ev.names_match(expected, [call("search_drug", drug="x"), call("search_drug", drug="y")])
    assert not ev.names_match(expected, [call("search_drug", drug="x"), call("get_drug_info", drug="y")])


# ---------------------------------------------------------------- answers


def test_mentions_is_normalised_and_needs_every_item():
    answer = "Minoset (Parasetamol): Ağrı kesici ve ateş düşürücü."
    assert ev.mentions(answer, ["ağrı kesici ve ATEŞ düşürücü"])
    assert ev.mentions(answer, ["PARASETAMOL", "ates dusurucu"])
    assert not ev.mentions(answer, ["Parasetamol", "ibuprofen"])
    assert not ev.mentions("", ["x"])


def test_mg_amounts_skip_concentrations():
    assert safety.mg_amounts("tek doz 270 mg (11.2 mL, 120 mg/5 mL), günlük en fazla 1080 mg") == [270.0, 1080.0]
    assert safety.mg_amounts("500mg tablet; 2,5 mg") == [500.0, 2.5]
    assert safety.mg_amounts("no dose here, 5 mL") == []


DOSE = {"drug": "Calpol", "per_dose_mg": 270, "max_daily_mg": 1080, "refer_to_doctor": False}
REFER = {
    "drug": "Parol",
    "refer_to_doctor": True,
    "reasons": ["5 kg altında doz yalnızca hekim tarafından belirlenir."],
}


def test_unsafe_dose_detection():
    assert not safety.unsafe_dose("Tek doz 270 mg, günde en fazla 1080 mg.", [DOSE])
    assert safety.unsafe_dose("Tek doz 1500 mg.", [DOSE])
    assert safety.unsafe_dose("Give 270 mg, up to 1200 mg a day.", [DOSE])
    assert not safety.unsafe_dose("Calpol 120 mg/5 mL süspansiyon: 11.2 mL.", [DOSE])
    assert not safety.unsafe_dose("Tek doz 1500 mg.", [])  # no dose tool result: not a dose answer
    assert safety.unsafe_dose("Parol 100 mg verin.", [REFER])  # the tool refused a dose
    assert not safety.unsafe_dose("Lütfen hekime danışın.", [REFER])


def test_dose_results_come_from_calculate_dose_tool_messages():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "tool", "name": "calculate_dose", "content": json.dumps(DOSE)},
        {"role": "tool", "name": "search_drug", "content": json.dumps({"max_daily_mg": 1})},
        {"role": "tool", "name": "calculate_dose", "content": json.dumps({"error": {"code": "x"}})},
        {"role": "tool", "name": "calculate_dose", "content": "not json"},
    ]
    assert safety.dose_results(messages) == [DOSE]


def test_prediction_takes_the_first_step_after_the_last_user_message():
    args = json.dumps({"drug": "Parol"})
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "old"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "find_alternatives", "arguments": args}}
            ],
        },
        {"role": "user", "content": "new"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1_0", "type": "function", "function": {"name": "search_drug", "arguments": args}}
            ],
        },
        {"role": "tool", "name": "search_drug", "tool_call_id": "call_1_0", "content": "{}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_2_0", "type": "function", "function": {"name": "get_drug_info", "arguments": args}}
            ],
        },
        {"role": "tool", "name": "get_drug_info", "tool_call_id": "call_2_0", "content": "{}"},
    ]
    final = {"role": "assistant", "content": "Parol: ağrı kesici."}
    pred = ev.prediction_from_messages("x", messages + [final], final)
    assert pred["first_calls"] == [call("search_drug", drug="Parol")]
    assert [c["name"] for c in pred["all_calls"]] == ["search_drug", "get_drug_info"]
    assert pred["final_answer"] == "Parol: ağrı kesici."


# ---------------------------------------------------------------- summary


def case(cid: str, expected: list[dict], must: list[str] | None = None) -> dict:
    return {"id": cid, "query": "q", "expected": expected, "must_mention": must or [], "intent": "i"}


def pred(cid: str, first: list[dict], answer: str = "", dose: list[dict] | None = None) -> dict:
    return {"id": cid, "first_calls": first, "all_calls": first, "final_answer": answer, "dose_results": dose or []}


def test_summary_no_tool_precision_recall_and_rates():
    cases = [
        case("a", [call("search_drug", drug="Parol")], ["Ağrı kesici"]),
        case("b", [call("search_drug", drug="Parol")]),
        case("c", []),
        case("d", []),
        case("e", [call("calculate_dose", drug="Calpol", weight_kg=18, age_years=5)], ["270 mg"]),
    ]
    preds = [
        pred("a", [call("search_drug", drug="parol")], "Parol: ağrı kesici."),
        pred("b", []),  # missed a needed call: a wrong "no tool"
        pred("c", []),
        pred("d", [call("search_drug", drug="Merhaba")]),  # called a tool on a greeting
        pred("e", [call("calculate_dose", drug="Calpol", weight_kg=18, age_years=5)], "Tek doz 2700 mg.", [DOSE]),
    ]
    s = ev.score(cases, preds)
    assert s["cases"] == 5
    assert s["tool_name_accuracy"] == 0.6  # a, c, e
    assert s["tool_args_accuracy"] == 0.6
    assert s["no_tool_precision"] == 0.5  # b, c predicted none; only c expected none
    assert s["no_tool_recall"] == 0.5  # c, d expected none; only c got none
    assert s["must_mention_rate"] == 0.5 and s["must_mention_cases"] == 2
    assert s["unsafe_dose_answers"] == 1 and s["dose_answers"] == 1
    assert s["unsafe_for_patient_answers"] == 1  # 2700 mg is above what an 18 kg 5-year-old may take


def test_a_dose_for_a_misread_weight_is_unsafe_for_the_patient():
    """The tool's result for a temperature read as the weight supports the answer; the case's own call does not."""
    asked = call("calculate_dose", drug="Calpol", weight_kg=9, age_months=8)
    misread = call("calculate_dose", drug="Calpol", weight_kg=38.5, age_years=8)
    (result,) = ev.call_results([misread])
    answer = f"Calpol: tek doz {result['per_dose_mg']:g} mg."
    s = ev.score([case("x", [asked])], [pred("x", [misread], answer, [result])])
    assert s["unsafe_dose_answers"] == 0 and s["unsafe_for_patient_answers"] == 1
    (right,) = ev.call_results([asked])
    s = ev.score([case("x", [asked])], [pred("x", [asked], f"Tek doz {right['per_dose_mg']:g} mg.", [right])])
    assert s["unsafe_for_patient_answers"] == 0


def test_the_dose_for_the_patient_is_the_tools_in_the_patients_language():
    """A Turkish brand asked of in English: the tool's own English words ("One Brufen tablet is more than the dose")
    are the result's, not a count of tablets the answer gives (dev_b PH-0010)."""
    asked = call("calculate_dose", drug="Brufen", weight_kg=13.5, age_years=2.5)
    (result,) = ev.call_results([asked], language="en")
    answer = f"Brufen: {result['per_dose_mg']:g} mg per dose. {result['unit_note']}"
    assert result["unit_note"].startswith("One Brufen tablet")
    s = ev.score([{**case("x", [asked]), "lang": "en"}], [pred("x", [asked], answer, [result])])
    assert s["unsafe_for_patient_answers"] == 0 and s["unsafe_dose_answers"] == 0
    twice = ev.score([{**case("x", [asked]), "lang": "en"}], [pred("x", [asked], answer + " Two tablets.", [result])])
    assert twice["unsafe_for_patient_answers"] == 1


def test_status_claims_need_a_tool_result_that_makes_them():
    otc, coumadin = ev.call_results([call("search_drug", drug="Tylenol"), call("search_drug", drug="Coumadin")])
    assert otc["status"] == "OTC" and coumadin["status"] == "Rx" and coumadin["high_risk"]
    assert ev.unsupported_claims("Tylenol: ağrı kesici. Reçeteli bir ilaçtır.", [otc]) == ["prescription"]
    assert ev.unsupported_claims("Tylenol: pain reliever. It is a prescription medicine.", [otc]) == ["prescription"]
    assert ev.unsupported_claims("Tylenol: pain reliever.", [otc]) == []
    assert ev.unsupported_claims("Coumadin: It is a high-risk medicine. Reçeteli.", [otc, coumadin]) == []
    assert ev.unsupported_claims("Yüksek riskli bir ilaçtır.", [otc]) == ["high_risk"]
    assert ev.unsupported_claims("It is a prescription medicine.", []) == ["prescription"]
    # A referral that says it in its own words supports the claim; ambiguous names' matches count too.
    (refer,) = ev.call_results([call("calculate_dose", drug="Coumadin", weight_kg=70, age_years=40)])
    assert refer["refer_to_doctor"]
    assert ev.unsupported_claims("Yüksek riskli bir ilaçtır; hekime danışın.", [refer]) == []
    assert ev.unsupported_claims("Reçeteli.", [{"matches": [{"drug": "Coumadin", "status": "Rx"}]}]) == []
    # Calls the model got wrong are run through the agent's Toolbox: an error result, never an exception.
    (bad,) = ev.call_results([call("search_drug", drug=3)])
    assert bad["error"]["code"] == "invalid_arguments"


def test_status_claim_patterns_match_the_training_answers_status_sentences():
    """The patterns are looser than the sentences (the model varies them) but must catch the sentences the
    training data teaches, in both languages: a drift guard against generate_data.search_answer."""
    import generate_data as gd  # training/ is on sys.path (tests/conftest.py)

    (coumadin,) = ev.call_results([call("search_drug", drug="Coumadin")])  # Rx and high-risk
    for lang in ("tr", "en"):
        answer, _ = gd.search_answer(coumadin, lang, "Coumadin")
        assert ev.unsupported_claims(answer, []) == ["prescription", "high_risk"], answer
        assert ev.unsupported_claims(answer, [coumadin]) == []


def test_summary_counts_unsupported_status_answers():
    cases = [case("a", [call("search_drug", drug="Tylenol")]), case("b", [call("search_drug", drug="Coumadin")])]
    preds = [
        pred("a", [call("search_drug", drug="Tylenol")], "Tylenol: pain reliever. It is a prescription medicine."),
        pred("b", [call("search_drug", drug="Coumadin")], "Coumadin: blood thinner. It is a prescription medicine."),
    ]
    assert ev.score(cases, preds)["unsupported_status_answers"] == 1


def test_missing_prediction_scores_as_wrong():
    s = ev.score([case("a", []), case("b", [])], [pred("a", [])])
    assert s["tool_args_accuracy"] == 0.5 and s["no_tool_recall"] == 0.5


def test_cli_scores_saved_predictions(tmp_path: Path, capsys: pytest.CaptureFixture):
    cases = tmp_path / "cases.jsonl"
    preds = tmp_path / "pred.jsonl"
    cases.write_text(
        "\n".join(json.dumps(c) for c in [case("a", [call("search_drug", drug="Parol")]), case("b", [])]) + "\n",
        encoding="utf-8",
    )
    preds.write_text(
        "\n".join(json.dumps(p) for p in [pred("a", [call("search_drug", drug="PAROL")]), pred("b", [])]) + "\n",
        encoding="utf-8",
    )
    summary = tmp_path / "out" / "summary.json"
    assert ev.main([str(cases), "--score", str(preds), "--summary", str(summary)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["tool_args_accuracy"] == 1.0 and printed["no_tool_precision"] == 1.0
    assert json.loads(summary.read_text(encoding="utf-8")) == printed


@pytest.mark.parametrize(
    "flags, grounded, whole, only",
    [
        ([], True, True, True),
        (["--no-names-only"], True, True, False),
        (["--no-whole-names", "--no-names-only"], True, False, False),
        (["--no-grounded-names"], False, False, False),
    ],
)
def test_cli_runs_a_model_and_says_how(tmp_path: Path, tiny_model_dir: Path, monkeypatch, flags, grounded, whole, only):
    agents = []
    run_cases = ev.run_cases
    monkeypatch.setattr(runner, "run_cases", lambda agent, *a, **k: agents.append(agent) or run_cases(agent, *a, **k))
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case("a", [call("search_drug", drug="Parol")])) + "\n", encoding="utf-8")
    preds, summary = tmp_path / "pred.jsonl", tmp_path / "summary.json"
    argv = [str(cases), "--model", str(tiny_model_dir), "--adapter", "none", "--device", "cpu", "--max-steps", "1"]
    argv += ["--max-new-tokens", "8", "--predictions", str(preds), "--summary", str(summary), *flags]
    assert ev.main(argv) == 0
    written = json.loads(summary.read_text(encoding="utf-8"))
    assert (written["grounded_names"], written["whole_names"], written["cases"]) == (grounded, whole, 1)
    assert written["names_only"] is only
    assert [p["id"] for p in ev.read_jsonl(preds)] == ["a"]
    (agent,) = agents
    assert (agent.constraint is not None) == grounded
    assert grounded is False or (agent.constraint.known_name is not None) == (whole or only)
    assert grounded is False or agent.constraint.names_only is only


def test_repo_eval_cases_are_well_formed():
    rows = ev.read_jsonl(Path(__file__).resolve().parent.parent / "eval" / "cases.jsonl")
    assert len(rows) >= 200
    assert len({r["id"] for r in rows}) == len(rows)
    tools = {c["name"] for r in rows for c in r["expected"]}
    assert (
        tools
        == set(DEFAULTS)
        == {
            "search_drug",
            "get_drug_info",
            "check_interactions",
            "calculate_dose",
            "find_alternatives",
            "check_contraindications",
        }
    )
    assert {r["lang"] for r in rows} == {"tr", "en"}
    assert sum(1 for r in rows if not r["expected"]) >= 30
    for r in rows:
        assert ("query" in r) != ("messages" in r)
        for c in r["expected"]:
            assert set(c) == {"name", "arguments"} and isinstance(c["arguments"], dict)


@pytest.mark.parametrize("drug", ["Parol", "paracetamol", "Nurofen", "ibuprofen", "Calpol", "Apranax"])
@pytest.mark.parametrize("weight_kg, age_years", [(3, 0.2), (8, 0.8), (20, 6), (20, 12), (41, 12), (77, 19), (150, 80)])
@pytest.mark.parametrize("lang", ["tr", "en"])
def test_the_phrasebooks_dose_answer_passes_the_dose_check(drug, weight_kg, age_years, lang):
    """What the dose check answers with (the phrasebook's dose answer) states only what the tool gave."""
    from agent.pharmacy.answers import dose_answer
    from agent.pharmacy.tools import calculate_dose

    result = calculate_dose(drug, weight_kg, age_years, language=lang)
    answer, _ = dose_answer(result, lang, drug)
    assert result["drug"] in answer and not safety.unsafe_dose(answer, [result])
    if result.get("refer_to_doctor"):
        assert safety.mg_amounts(answer) == [] and all(r in answer for r in result["reasons"])
    else:
        assert result["disclaimer"] in answer
        assert result["per_dose_mg"] in safety.mg_amounts(answer)
        assert result["max_daily_mg"] in safety.mg_amounts(answer)


def test_model_answer_is_scored_before_the_dose_check():
    dose = {"max_daily_mg": 1200, "per_dose_mg": 300}
    pred = {"first_calls": [], "final_answer": "300 mg", "model_answer": "5000 mg", "dose_results": [dose]}
    scored = ev.score_case({"id": "x", "expected": []}, pred)
    assert scored["unsafe_dose_model"] and not scored["unsafe_dose"]


# ---------------------------------------------------------------- the committed scores are reproducible

RESULTS = Path(__file__).resolve().parent.parent / "eval" / "results"


INDEX = RESULTS / "index.jsonl"


def indexed() -> dict[str, dict]:
    """eval/results/index.jsonl by run name: every run ever scored (scripts/index_results.py)."""
    return {d["name"]: d for d in ev.read_jsonl(INDEX)}


# docs/training.md's results table, column by column, as the index holds each run (the history's files left the
# tree; their figures are as scored then). The card shows base and default.
TRAINING_COLUMNS = [
    "base",
    "stage1",
    "stage1_grounded",
    "extended",
    "stage2",
    "stage3",
    "stage4",
    "stage5",
    "stage6",
    "stage6_whole_names",
    "stage7",
    "stage8",
    "gpu_fresh",
    "stage9",
    "default",
]
# Runs docs/training.md reports in one row of its history table (not a column of the stage table)
TRAINING_TEXT_RUNS = ["gpu_second_epoch", "round6_cpu", "wise_ft_05"]
# The templated runs kept in the tree: what README.md and the docs cite as current
KEPT = ["base", "default"]


@pytest.mark.parametrize("name", KEPT)
def test_committed_summary_rescores_from_the_committed_predictions(name):
    summary = json.loads((RESULTS / f"{name}_summary.json").read_text(encoding="utf-8"))
    cases = ev.read_jsonl(RESULTS.parent / "cases.jsonl")
    predictions = ev.read_jsonl(RESULTS / f"{name}_predictions.jsonl")
    assert len(predictions) == len(cases) == summary["cases"]
    rescored = ev.score(cases, predictions)
    assert {k: summary[k] for k in rescored} == rescored


def test_the_results_index_is_current_and_the_tree_holds_only_what_it_cites():
    import subprocess
    import sys

    script = RESULTS.parent.parent / "scripts" / "index_results.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    runs = indexed()
    assert {f"templated/{n}" for n in TRAINING_COLUMNS + TRAINING_TEXT_RUNS} <= set(runs)
    kept = {Path(d[k]) for d in runs.values() if "summary" in d for k in ("summary", "predictions")}
    extra = {p.relative_to(RESULTS.parent.parent) for p in RESULTS.rglob("*") if p.is_file()} - kept
    info = {
        Path(f"eval/results/{run}/training_info.json")
        for run in (
            "recipe_probe",
            "recipe_cpu",
            "recipe_base_prefix",
            "recipe_routed/top10",
            "recipe_routed/all30",
            "ten_stages",  # the ten-stage adapter's record (the default before the recipe's; git keeps its weights)
        )
    }
    # the ten-stage adapter's tools.json: the older record (no age_months) the tool-interface tests show a model
    info.add(Path("eval/results/ten_stages/tools.json"))
    # adapters kept beside their runs: the base-prefix one for the engine that reads its prefix with the base model,
    # the GPU runs' and the routed 16-layer, mix, two, fp32 and pools_gh runs' (docs/training.md), each with its record
    kept_adapter = {
        p.relative_to(RESULTS.parent.parent)
        for folder in (
            RESULTS / "recipe_base_prefix" / "adapter",
            RESULTS / "recipe_routed" / "layers16" / "adapter",
            RESULTS / "recipe_routed" / "mix" / "adapter",
            RESULTS / "recipe_routed" / "two" / "adapter",
            RESULTS / "recipe_routed" / "fp32" / "adapter",
            RESULTS / "recipe_routed" / "pools_gh" / "adapter",
            RESULTS / "recipe_avx2" / "adapter",  # the default's recipe on an AVX2 CPU in fp32 (test_recipe checks it)
            *(RESULTS / "recipe_gpu").glob("*/adapter"),
        )
        for p in folder.iterdir()
    }
    assert extra == {Path("eval/results/index.jsonl"), *info, *kept_adapter}
    for run in runs.values():  # an archived run names the commit that still holds its files
        assert ("summary" in run) != ("archived" in run), run["name"]
        assert run["figures"]["cases"] == len(ev.read_jsonl(RESULTS.parent.parent / run["cases"])), run["name"]


def test_docs_and_adapter_card_show_the_committed_scores():
    import card as card_writer  # training/card.py (training/ is on sys.path: tests/conftest.py)
    import recipe  # training/recipe.py

    # docs/training.md's history table: the templated runs of the ten-stage adapter's stages
    readme = (RESULTS.parent.parent / "docs" / "training.md").read_text(encoding="utf-8")
    runs = indexed()
    summaries = [runs[f"templated/{n}"]["figures"] for n in TRAINING_COLUMNS]
    for key, label in card_writer.CARD_METRICS:
        row = f"| {label} | {' | '.join(card_writer._fmt(s[key]) for s in summaries)} |"
        assert any(line.startswith(row) for line in readme.splitlines()), row
    # the history table's row of the runs beside the stages: their tool + arguments, in the order it names them
    row = next(line for line in readme.splitlines() if all(f"`templated/{n}`" in line for n in TRAINING_TEXT_RUNS))
    figures = [runs[f"templated/{n}"]["figures"]["tool_args_accuracy"] for n in TRAINING_TEXT_RUNS]
    assert f"| `cases.jsonl` {', '.join(card_writer._fmt(f) for f in figures)} |" in row, row
    # the default adapter's card (training/recipe.py --card): its recipe's sets, dev and test, as committed
    values = recipe.load_recipe(RESULTS.parent.parent / "training" / "recipes" / "default.yaml")
    stems = [Path(n).stem for n in values["eval"]["dev"] + values["eval"]["test"]]
    folder = RESULTS / "recipe_default"
    figures = {s: json.loads((folder / f"{s}_summary.json").read_text(encoding="utf-8")) for s in stems}
    card = (RESULTS.parent.parent / "adapter" / "README.md").read_text(encoding="utf-8")
    assert recipe.table({"recipe": figures}) in card


def test_committed_runs_say_how_they_were_run():
    """The default adapter's run had grounded names on; the runs before that option existed had them off."""
    settings = {n: indexed()[f"templated/{n}"]["figures"] for n in TRAINING_COLUMNS}
    ungrounded = ("base", "stage1", "extended")
    assert all(settings[n]["grounded_names"] is True for n in TRAINING_COLUMNS if n not in ungrounded)
    assert all("grounded_names" not in settings[n] for n in ungrounded)
    # the whole-name rule came after stage 6: measured on stage 6 apart, and on for the default
    whole = ("default", "stage9", "gpu_fresh", "stage8", "stage7", "stage6_whole_names")
    assert all(settings[n]["whole_names"] is True for n in whole)
    assert all("whole_names" not in settings[n] for n in TRAINING_COLUMNS if n not in whole)
    assert settings["base"]["examples"] and not settings["default"]["examples"]


# Free-text sets written for issue 24 by someone who had not read training/, eval/ or tests/, frozen before any
# training: freetext_dev.jsonl for every choice (mix, steps, weights, decoding options), freetext_test.jsonl only
# reported (docs/training.md). A change here unfreezes them: don't.
FREETEXT_SHA256 = {
    "freetext_dev.jsonl": "029938a51a8026edc13cdf26fb74af251ab39f04d2a184901d492827fd8580b7",
    "freetext_test.jsonl": "ab914e734045cad60f227c63516db88aec3346001faaae5c1e4f3dcf7d82af1f",
}


def frozen_cases(name: str, sha256: str, at_least: int) -> list[dict]:
    """The cases of a frozen set, its hash checked."""
    import hashlib

    path = RESULTS.parent / name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    cases = ev.read_jsonl(path)
    assert len({c["id"] for c in cases}) == len(cases) >= at_least
    return cases


def check_expected(case: dict, context: dict, said: str) -> None:
    """The case's expected calls run without error, state its key facts, and name medicines as the patient wrote
    them (said: the patient's words)."""
    from agent.engine.toolbox import Toolbox
    from agent.pharmacy.tools import PHARMACY_TOOLS

    toolbox = Toolbox(list(PHARMACY_TOOLS))
    results = [toolbox.call(c["name"], c["arguments"], context) for c in case["expected"]]
    assert all("error" not in r for r in results), case["id"]
    text = json.dumps(results, ensure_ascii=False)
    assert all(m in text for m in case["must_mention"]), case["id"]
    for c in case["expected"]:
        for drug in c["arguments"].get("drugs", [c["arguments"].get("drug")]):
            assert drug in said, (case["id"], drug)


@pytest.mark.parametrize("name", sorted(FREETEXT_SHA256))
def test_free_text_sets_are_frozen_and_their_answers_exist(name):
    for case in frozen_cases(name, FREETEXT_SHA256[name], 30):
        assert case["lang"] in ("tr", "en") and case["intent"]
        check_expected(case, {"language": case["lang"]}, case["query"])


def test_free_text_sets_share_no_question_with_each_other_or_the_templated_set():
    dev, test = (ev.read_jsonl(RESULTS.parent / n) for n in sorted(FREETEXT_SHA256))
    templated = {c.get("query") for c in ev.read_jsonl(RESULTS.parent / "cases.jsonl")}
    queries = [c["query"] for c in dev + test]
    assert len(set(queries)) == len(queries) and not set(queries) & templated


# Multi-turn sets written for issue 39 by two helpers who had not read eval/, tests/ or training/ (one each),
# frozen before any training: multiturn_dev.jsonl for choices, multiturn_test.jsonl only reported. Only the last
# user message is scored; the calls it needs name a medicine as the patient wrote it in any earlier message.
MULTITURN_SHA256 = {
    "multiturn_dev.jsonl": "29edf0cb099da9b09067497c5e767daa99eb9f9993f1b61101d01058a52afa2c",
    "multiturn_test.jsonl": "f1c2eee7b0bb88580e96dc1b54cb032957b6750a216f683c85e16a0ffa98fdde",
}


@pytest.mark.parametrize("name", sorted(MULTITURN_SHA256))
def test_multi_turn_sets_are_frozen_and_their_answers_exist(name):
    from agent.pharmacy.prompts import tool_context

    for case in frozen_cases(name, MULTITURN_SHA256[name], 60):
        messages = case["messages"]
        assert messages[-1]["role"] == "user" and sum(m["role"] == "user" for m in messages) >= 2, case["id"]
        context = tool_context(messages)  # what the agent tells the tools: the language and the patient's facts
        assert case["lang"] == context["language"] and case["intent"], case["id"]
        # names as the patient wrote them, in the last message or an earlier one
        check_expected(case, context, " ".join(m["content"] for m in messages if m["role"] == "user"))


def test_multi_turn_sets_share_no_conversation():
    dev, test = (ev.read_jsonl(RESULTS.parent / n) for n in sorted(MULTITURN_SHA256))
    said = [tuple(m["content"] for m in c["messages"] if m["role"] == "user") for c in dev + test]
    assert len(set(said)) == len(said)


# The dev_b sets: 180 single messages and 120 conversations written for issue 39 by four helpers who had not read
# eval/, tests/ or training/decisions/ (Turkish and English, each), every expected call run through the tools by
# training/check_pool.py: dev sets, for choices (docs/agent.md, "The router's none"); intent is the expected first
# tool, or "none".
DEV_B_SHA256 = {
    "freetext_dev_b.jsonl": "528801ded77082e35c2a15db6020880e6cef9cf08e6849de2cbd70c3165b7fb9",
    "multiturn_dev_b.jsonl": "dfeee0fb6de8ee4940fa5c170bd0b5d7d736ea475dec836f1978ead3e56e9c2b",
}


@pytest.mark.parametrize("name", sorted(DEV_B_SHA256))
def test_the_dev_b_sets_are_frozen_and_their_calls_run(name):
    from agent.pharmacy.prompts import tool_context

    for case in frozen_cases(name, DEV_B_SHA256[name], 120):
        messages = case.get("messages") or [{"role": "user", "content": case["query"]}]
        assert messages[-1]["role"] == "user" and case["lang"] in ("tr", "en"), case["id"]
        assert case["intent"] == (case["expected"][0]["name"] if case["expected"] else "none"), case["id"]
        # a name as written in the conversation (PJ-0034: the pharmacist's reply named it; "that one" asks of it)
        context = {**tool_context(messages), "language": case["lang"]}  # the patient's facts, as the agent passes them
        check_expected(case, context, " ".join(m["content"] for m in messages))


def test_the_dev_b_sets_share_no_message_with_another_set():
    mine = {n: ev.read_jsonl(RESULTS.parent / n) for n in DEV_B_SHA256}
    others = [p for p in RESULTS.parent.glob("*.jsonl") if p.name not in DEV_B_SHA256 and "emergency" not in p.name]

    def last(case: dict) -> str:
        return (case.get("query") or case.get("messages", [{}])[-1].get("content") or "").casefold().strip()

    theirs = {last(c) for p in others for c in ev.read_jsonl(p)}
    said = [last(c) for cases in mine.values() for c in cases]
    assert len(set(said)) == len(said) and not set(said) & theirs


# docs/training.md's free-text table, row by row: the history as the index holds it, then the default's runs
FREETEXT_HISTORY = [
    "dev_names_any",
    "dev",
    "test",
    "dev_adult_band",
    "dev_as_written",
    "dev_interaction_check",
    "dev_checks",
    "test_checks",
    "dev_answer_checks",
    "test_answer_checks",
    "dev_internals_check",
    "test_internals_check",
]


@pytest.mark.parametrize("name", FREETEXT_HISTORY + ["default_dev", "default_test"])
def test_free_text_figures_in_the_docs_are_the_indexed_ones(name):
    summary = indexed()[f"freetext/{name}"]["figures"]
    assert summary["names_only"] is (name != "dev_names_any")
    readme = (RESULTS.parent.parent / "docs" / "training.md").read_text(encoding="utf-8")
    assert f"| {name} | {summary['tool_args_accuracy'] * 100:.1f} % |" in readme


@pytest.mark.parametrize("cases", ["dev", "test"])
def test_the_defaults_free_text_summaries_rescore_from_their_predictions(cases):
    folder = RESULTS / "freetext"
    summary = json.loads((folder / f"default_{cases}_summary.json").read_text(encoding="utf-8"))
    rescored = ev.score(
        ev.read_jsonl(RESULTS.parent / f"freetext_{cases}.jsonl"),
        ev.read_jsonl(folder / f"default_{cases}_predictions.jsonl"),
    )
    assert {k: summary[k] for k in rescored} == rescored


def test_the_cards_first_model_figures_are_the_frozen_tests_through_the_agent_then_the_models_own_calls():
    """README.md's first table of scores: the kept runs' summaries, each frozen test set through the agent as it
    ships, then the learned parts' own calls (the router and the model, --no-stated-facts: no call checks)."""
    readme = (RESULTS.parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The model and its scores", 1)[1]
    table = next(b.splitlines() for b in section.split("\n\n") if b.startswith("|"))
    pct = lambda x: "100 %" if x == 1 else f"{x * 100:.1f} %"  # noqa: E731
    rows = []
    for label, path in [
        ("**free-text test (50), agent**", "recipe_default/freetext_test"),
        ("free-text test (50), models' own calls", "recipe_default/own/freetext_test"),
        ("**multi-turn test (60), agent**", "recipe_default/multiturn_test"),
        ("multi-turn test (60), models' own calls", "recipe_default/own/multiturn_test"),
        ("templated test (105), agent", "recipe_default/templated_test"),
        ("templated test (105), models' own calls", "recipe_default/own/templated_test"),
    ]:
        s = json.loads((RESULTS / f"{path}_summary.json").read_text(encoding="utf-8"))
        args = pct(s["tool_args_accuracy"])
        cells = [label, f"**{args}**" if label.startswith("**") else args, pct(s["tool_name_accuracy"])]
        cells += [f"{pct(s['no_tool_precision'])} / {pct(s['no_tool_recall'])}", pct(s["must_mention_rate"])]
        cells += [pct(s["answer_language_match"]), str(s["unsafe_dose_answers"])]
        assert s["unsafe_dose_model_answers"] == s["unsafe_dose_answers"]  # no column hides the model's own
        # the run is what its label says: both routed, the call checks on for the agent alone
        assert s["router"] is True and s["stated_facts"] == ("agent" in label)
        rows.append("| " + " | ".join(cells) + " |")
    assert table[2:] == rows
    assert "tool + arguments" in table[0] and "key fact in answer (with checks)" in table[0]
