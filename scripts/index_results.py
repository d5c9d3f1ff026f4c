#!/usr/bin/env python
"""Write eval/results/index.jsonl: one line for every evaluation run ever scored, in tree or archived.

    python scripts/index_results.py          # rewrite the index
    python scripts/index_results.py --check  # exit 1 when the index is not what this script would write

Each line: `name`, `what` (the run, in words), `cases` (the set) and its `cases_sha256`, `command` (when known),
`training_data_sha256` and `training_data_command` (when recorded), where the run's files are, and `figures`:
its summary as `python -m agent.eval` wrote it (every metric and setting, per intent included).

A run whose summary is in the tree (`summary` names it) is indexed from it, so a re-scored summary makes
--check fail until the index is rewritten. A run whose files have left the tree keeps its line as the index
holds it, with `archived`: the paths it had and the last commit that held them (`git show COMMIT:PATH` brings
the predictions back); its figures are as scored then, against that commit's tools, not re-scored today.
RUNS below lists every run; a run missing both from the tree and from the index is an error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("eval") / "results"
INDEX = RESULTS / "index.jsonl"

TEMPLATED = "eval/cases.jsonl"
FREETEXT_DEV = "eval/freetext_dev.jsonl"
FREETEXT_TEST = "eval/freetext_test.jsonl"
EVAL = "python -m agent.eval"
# The ten-stage adapter (the default until the recipe's, issue 39) interpolates stages 9 and 10; its record, kept
# in TEN_STAGES_INFO (it was adapter/training_info.json), is stage 10's.
DEFAULT_STAGE = 10
TEN_STAGES_INFO = RESULTS / "ten_stages" / "training_info.json"
# The default adapter's runs: the recipe's eval phase on the dev sets, the frozen test sets once (RECIPE_DEFAULT/)
RECIPE_DEFAULT = "recipe_default"


@dataclass(frozen=True)
class Run:
    """One scored run: its index name, the files its summary and predictions lie (or lay) in, and what it is."""

    name: str
    stem: str  # RESULTS / f"{stem}_summary.json", f"{stem}_predictions.jsonl"
    cases: str
    what: str
    command: str | None = None
    training_info: str | None = None  # a training_info.json beside the run, whose data_sha256 it trained on
    formerly: str | None = None  # the stem it had before it was named for what it is
    stage: int | None = None  # a stage of the ten-stage adapter: the data_sha256 TEN_STAGES_INFO gives it
    adapter_record: bool = False  # the default adapter's run: adapter/training_info.json names its data


def _recorded_command(info: str) -> str:
    """The recipe command a run's training record (RESULTS / info) says wrote its data: the command as run."""
    return json.loads((ROOT / RESULTS / info).read_text(encoding="utf-8"))["data_command"]


def _stage(n: int, extra: str = "") -> str:
    return f"the adapter after training stages 1-{n} (docs/training.md){extra}"


# The dev and test sets a recipe's eval scores, and the test sets alone (its runs without some part of the agent).
DEVS = ("templated_dev", "freetext_dev", "multiturn_dev")
TESTS = ("templated_test", "freetext_test", "multiturn_test")
SETS = DEVS + TESTS
# The patient-written dev_b sets (issue 39: helpers who had not read eval/ wrote them), scored for the default and
# the candidates compared with it since they were written.
DEV_B = ("freetext_dev_b", "multiturn_dev_b")
OWN = " --no-stated-facts"  # the model's own calls: no call checks


def _recipe_runs(
    root: str, what_run: str, adapter: str, variants: tuple[tuple[str, str, str, tuple[str, ...]], ...], **kept
) -> tuple[Run, ...]:
    """A recipe adapter's kept runs, one per set of each (folder, what, flags, sets) variant, under RESULTS/root;
    adapter: the --adapter flag of their command ("" for the default); kept: Run fields they share."""
    return tuple(
        Run(
            f"{root}/{folder}{stem}",
            f"{root}/{folder}{stem}",
            f"eval/{stem}.jsonl",
            f"{what_run}{what}; {'the frozen test set, reported only' if stem.endswith('_test') else 'a dev set'}",
            f"{EVAL} eval/{stem}.jsonl{adapter} --max-steps 4 --threads 1{flags} "
            f"--predictions eval/results/{root}/{folder}{stem}_predictions.jsonl "
            f"--summary eval/results/{root}/{folder}{stem}_summary.json",
            **kept,
        )
        for folder, what, flags, stems in variants
        for stem in stems
    )


RUNS: tuple[Run, ...] = (
    # ---- kept in the tree: what README.md and the docs cite as current
    # the default adapter: the recipe's eval phase (dev), the frozen test sets once, the learned parts' own calls
    # and the language model alone on them
    *_recipe_runs(
        RECIPE_DEFAULT,
        "the default adapter (python training/recipe.py training/recipes/default.yaml, one command on a session's CPU)",
        "",
        (
            ("", ", through the agent as it ships (the router, the call checks)", "", SETS + DEV_B),
            ("own/", ", the learned parts' own calls (the router and the model, no call checks)", OWN, TESTS),
            (
                "alone/",
                ", the language model alone (no router: shown every tool, which it was never trained to choose among)",
                " --no-router" + OWN,
                TESTS,
            ),
        ),
        adapter_record=True,
    ),
    Run(
        "templated/default",
        "default",
        TEMPLATED,
        "the ten-stage adapter (stages 9 and 10 interpolated, WiSE-FT 0.7; then the default), grounded whole names",
        f"{EVAL} {TEMPLATED} --predictions eval/results/default_predictions.jsonl",
        formerly="adapter",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "templated/base",
        "base",
        TEMPLATED,
        "the base model, SmolLM2-135M-Instruct without an adapter, with the one-shot worked example",
        f"{EVAL} {TEMPLATED} --adapter none --predictions eval/results/base_predictions.jsonl",
    ),
    Run(
        "freetext/default_dev",
        "freetext/default_dev",
        FREETEXT_DEV,
        "the then-default ten-stage adapter and agent: answers written from the tools' results (answers='tools'), "
        "emergency triage before generation, the answer checks; free-text dev set",
        f"{EVAL} {FREETEXT_DEV} --predictions eval/results/freetext/default_dev_predictions.jsonl",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "multiturn/default_dev",
        "multiturn/default_dev",
        "eval/multiturn_dev.jsonl",
        "the then-default ten-stage adapter and agent (answers='tools', triage, the answer checks) on the "
        "multi-turn dev set: the last patient message of each conversation scored",
        f"{EVAL} eval/multiturn_dev.jsonl --predictions eval/results/multiturn/default_dev_predictions.jsonl "
        "--summary eval/results/multiturn/default_dev_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/default_test",
        "freetext/default_test",
        FREETEXT_TEST,
        "the then-default ten-stage adapter and agent (answers='tools', triage) on the frozen free-text test set, "
        "reported only",
        f"{EVAL} {FREETEXT_TEST} --predictions eval/results/freetext/default_test_predictions.jsonl",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "routed/freetext_dev",
        "routed/freetext_dev",
        "eval/freetext_dev.jsonl",
        "the ten-stage adapter and agent with the tool router choosing how the first reply starts and "
        "get_drug_info's section (agent.pharmacy.router, trained by training/router.py); free-text dev set",
        f"{EVAL} eval/freetext_dev.jsonl --predictions eval/results/routed/freetext_dev_predictions.jsonl "
        "--summary eval/results/routed/freetext_dev_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "routed/multiturn_dev",
        "routed/multiturn_dev",
        "eval/multiturn_dev.jsonl",
        "as routed/freetext_dev, on the multi-turn dev set",
        f"{EVAL} eval/multiturn_dev.jsonl --predictions eval/results/routed/multiturn_dev_predictions.jsonl "
        "--summary eval/results/routed/multiturn_dev_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "routed/freetext_test",
        "routed/freetext_test",
        "eval/freetext_test.jsonl",
        "as routed/freetext_dev, on the frozen free-text test set, reported only",
        f"{EVAL} eval/freetext_test.jsonl --predictions eval/results/routed/freetext_test_predictions.jsonl "
        "--summary eval/results/routed/freetext_test_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "routed/multiturn_test",
        "routed/multiturn_test",
        "eval/multiturn_test.jsonl",
        "as routed/freetext_dev, on the frozen multi-turn test set, reported only",
        f"{EVAL} eval/multiturn_test.jsonl --predictions eval/results/routed/multiturn_test_predictions.jsonl "
        "--summary eval/results/routed/multiturn_test_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "routed/templated_test",
        "routed/templated_test",
        "eval/templated_test.jsonl",
        "as routed/freetext_dev, on the frozen templated test set, reported only",
        f"{EVAL} eval/templated_test.jsonl --predictions eval/results/routed/templated_test_predictions.jsonl "
        "--summary eval/results/routed/templated_test_summary.json",
        stage=DEFAULT_STAGE,
    ),
    *(
        Run(
            f"stated_facts/{stem}",
            f"stated_facts/{stem}",
            f"eval/{stem}.jsonl",
            "the ten-stage adapter and routed agent with the patient's facts of a call (weight, age, pregnancy, "
            f"breastfeeding, conditions) set as their words state them (agent.pharmacy.facts_check); {label}",
            f"{EVAL} eval/{stem}.jsonl --threads 1 --predictions eval/results/stated_facts/{stem}_predictions.jsonl "
            f"--summary eval/results/stated_facts/{stem}_summary.json",
            stage=DEFAULT_STAGE,
        )
        for stem, label in (
            ("freetext_dev", "free-text dev set"),
            ("multiturn_dev", "multi-turn dev set"),
            ("templated_dev", "templated dev set"),
            ("freetext_test", "the frozen free-text test set, reported only"),
            ("multiturn_test", "the frozen multi-turn test set, reported only"),
            ("templated_test", "the frozen templated test set, reported only"),
        )
    ),
    Run(
        "multiturn/default_test",
        "multiturn/default_test",
        "eval/multiturn_test.jsonl",
        "the ten-stage adapter and agent without the router (the model chooses alone) on the frozen multi-turn "
        "test set, reported only",
        f"{EVAL} eval/multiturn_test.jsonl --no-router "
        "--predictions eval/results/multiturn/default_test_predictions.jsonl "
        "--summary eval/results/multiturn/default_test_summary.json",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/model_answers_dev",
        "freetext/model_answers_dev",
        FREETEXT_DEV,
        "the ten-stage adapter with the agent of commit 8187aa6: the model writes every answer, answer checks and the "
        "crisis word lists (the baseline of the phrasebook); free-text dev set",
        f"{EVAL} {FREETEXT_DEV} --predictions eval/results/freetext/default_dev_predictions.jsonl (at 8187aa6)",
        formerly="freetext/dev_patient_words",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/model_answers_test",
        "freetext/model_answers_test",
        FREETEXT_TEST,
        "the ten-stage adapter with the agent of commit 8187aa6 (the model writes every answer) on the frozen "
        "free-text test set, reported only",
        f"{EVAL} {FREETEXT_TEST} --predictions eval/results/freetext/default_test_predictions.jsonl (at 8187aa6)",
        formerly="freetext/test_patient_words",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "templated_test/default",
        "templated_test/default",
        "eval/templated_test.jsonl",
        "the then-default ten-stage adapter and agent (answers='tools', triage) on the frozen templated test split, "
        "reported only",
        f"{EVAL} eval/templated_test.jsonl --predictions eval/results/templated_test/default_predictions.jsonl",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "recipe_probe/freetext_dev",
        "recipe_probe/freetext_dev",
        FREETEXT_DEV,
        "the CPU probe of the recipe's composed data (the default continued 70 steps), free-text dev",
        training_info="recipe_probe/training_info.json",
    ),
    Run(
        "recipe_probe/templated_dev",
        "recipe_probe/templated_dev",
        "eval/templated_dev.jsonl",
        "the CPU probe of the recipe's composed data (the default continued 70 steps), templated dev",
        training_info="recipe_probe/training_info.json",
    ),
    Run(
        "recipe_cpu/freetext_dev",
        "recipe_cpu/freetext_dev",
        FREETEXT_DEV,
        "the one-hour CPU recipe (training/recipes/default.yaml: 640 decision examples, compact tools, LoRA on the "
        "top 10 layers, from the base model), free-text dev",
        "python training/recipe.py training/recipes/default.yaml",
        training_info="recipe_cpu/training_info.json",
    ),
    *(
        Run(
            f"recipe_base_prefix/{stem}",
            f"recipe_base_prefix/{stem}",
            cases,
            "the recipe with the prefix read by the base model in training (train.base_prefix, 900 decision "
            f"examples, after_results 0.5) and the agent's usual merged adapter at inference, {label}",
            "python training/recipe.py training/recipes/default.yaml --set train.base_prefix=true "
            "--set data.examples=900 --set data.after_results=0.5",
            training_info="recipe_base_prefix/training_info.json",
        )
        for stem, cases, label in (
            ("freetext_dev", FREETEXT_DEV, "free-text dev"),
            ("templated_dev", "eval/templated_dev.jsonl", "templated dev"),
        )
    ),
    *(
        Run(
            f"recipe_base_prefix/base_read/{stem}",
            f"recipe_base_prefix/base_read/{stem}",
            cases,
            "the same adapter (eval/results/recipe_base_prefix/adapter) with the prompt prefix read by the base model "
            f"at inference too, as in its training (agent.engine.models.prefix_reader), {label}",
            f"{EVAL} {cases} --adapter eval/results/recipe_base_prefix/adapter --max-steps 4 --threads 1",
            training_info="recipe_base_prefix/training_info.json",
        )
        for stem, cases, label in (
            ("freetext_dev", FREETEXT_DEV, "free-text dev"),
            ("templated_dev", "eval/templated_dev.jsonl", "templated dev"),
        )
    ),
    *(
        Run(
            f"recipe_gpu/{variant}/{stem}",
            f"recipe_gpu/{variant}/{stem}",
            cases,
            f"the recipe on one H200 (device_run.sh session), {what}, {label}",
            f"python training/recipe.py training/recipes/default.yaml --device cuda{sets}",
            training_info=f"recipe_gpu/{variant}/adapter/training_info.json",
        )
        for variant, what, sets in (
            ("decision", "as committed (640 decision examples, LoRA on the top 10 layers)", ""),
            (
                "full",
                "at full size (1,200 whole conversations, LoRA on all 30 layers)",
                " --set data.conversations=1200 --set data.examples=0 --set train.layers=30",
            ),
        )
        for stem, cases, label in (
            ("freetext_dev", FREETEXT_DEV, "free-text dev"),
            ("templated_dev", "eval/templated_dev.jsonl", "templated dev"),
        )
    ),
    Run(
        "recipe_gpu/many10/freetext_dev",
        "recipe_gpu/many10/freetext_dev",
        FREETEXT_DEV,
        "the recipe on one H200, 4,000 decision examples of 1,200 conversations, every decision after results, LoRA "
        "on the top 10 layers, free-text dev (its templated dev run was cut by the session's device time)",
        "python training/recipe.py training/recipes/default.yaml --device cuda --set data.conversations=1200 "
        "--set data.examples=4000 --set data.after_results=1.0 --set train.layers=10",
        training_info="recipe_gpu/many10/adapter/training_info.json",
    ),
    *(
        Run(
            f"recipe_routed/{variant}/{stem}",
            f"recipe_routed/{variant}/{stem}",
            cases,
            f"the recipe on this CPU with routed tools blocks and the router it trains (data.tools routed), {what}, "
            f"through the routed agent, {label}",
            _recorded_command(f"recipe_routed/{variant}/{info}"),
            training_info=f"recipe_routed/{variant}/{info}",
        )
        for variant, what, info in (
            ("top10", "as committed (2,464 decision examples, LoRA on the top 10 layers)", "training_info.json"),
            ("all30", "2,264 decision examples, fewer after results, LoRA on all 30 layers", "training_info.json"),
            (  # the adapters kept beside their runs (docs/training.md), with their training records
                "layers16",
                "2,464 decision examples, LoRA on the top 16 layers, the router with its section head",
                "adapter/training_info.json",
            ),
            (
                "mix",
                "2,414 decision examples, LoRA on the top 16 layers, more context exchanges and a mix weighted "
                "towards the kinds of its dev misses (two medicines at once, doses, contraindications)",
                "adapter/training_info.json",
            ),
            (
                "two",
                "as mix with two-medicine questions weighted 24 and doses and contraindications at the recipe's "
                "weights (the patient's facts now read from their words), scored with them",
                "adapter/training_info.json",
            ),
        )
        for stem, cases, label in (
            ("freetext_dev", FREETEXT_DEV, "free-text dev"),
            ("multiturn_dev", "eval/multiturn_dev.jsonl", "multi-turn dev"),
            ("templated_dev", "eval/templated_dev.jsonl", "templated dev"),
        )
    ),
    # the recipe as default.yaml held it (top 16 layers), run once on an AVX2 machine in fp32, its adapter kept
    *_recipe_runs(
        "recipe_routed/fp32",
        "the recipe as training/recipes/default.yaml holds it (2,464 decision examples, LoRA on the top 16 layers), "
        "one command on this AVX2 CPU in fp32, through the routed agent",
        " --adapter eval/results/recipe_routed/fp32/adapter",
        (
            ("", " with its call checks (the medicine and the patient's facts from their words)", "", SETS),
            ("own/", ", the model's own calls (--no-stated-facts)", OWN, TESTS),
        ),
        training_info="recipe_routed/fp32/adapter/training_info.json",
    ),
    # the recipe with pools g and h named (written_pools a-h), one command on an AVX2 CPU in fp32: not adopted
    *_recipe_runs(
        "recipe_routed/pools_gh",
        "the recipe as training/recipes/default.yaml holds it with pools g and h also named (data.written_pools "
        "a-h), one command on an AVX2 CPU in fp32 (1,432 of its 2,000 examples fit 45 min), through the agent",
        " --adapter eval/results/recipe_routed/pools_gh/adapter",
        (("", " with its call checks (the medicine and the patient's facts from their words)", "", DEVS + DEV_B),),
        training_info="recipe_routed/pools_gh/adapter/training_info.json",
    ),
    # ---- archived: the history docs/training.md tells (git history keeps the files)
    Run("templated/stage1", "stage1", TEMPLATED, _stage(1), stage=1),
    Run("templated/stage1_grounded", "stage1_grounded", TEMPLATED, _stage(1, ", grounded names"), stage=1),
    Run(
        "templated/extended",
        "extended",
        TEMPLATED,
        "a fresh LoRA trained on the extended recipe (stage 2's data) alone",
        training_info="extended_training_info.json",
    ),
    Run("templated/stage2", "stage2", TEMPLATED, _stage(2, ", grounded names"), stage=2),
    Run("templated/stage3", "stage3", TEMPLATED, _stage(3, ", grounded names"), stage=3),
    Run("templated/stage4", "stage4", TEMPLATED, _stage(4, ", grounded names"), stage=4),
    Run("templated/stage5", "stage5", TEMPLATED, _stage(5, ", grounded names"), stage=5),
    Run("templated/stage6", "stage6", TEMPLATED, _stage(6, ", grounded names"), stage=6),
    Run("templated/stage6_whole_names", "stage6_whole_names", TEMPLATED, _stage(6, ", grounded whole names"), stage=6),
    Run("templated/stage7", "stage7", TEMPLATED, _stage(7, ", grounded whole names"), stage=7),
    Run("templated/stage8", "stage8", TEMPLATED, _stage(8, ", grounded whole names"), stage=8),
    Run(
        "templated/gpu_fresh",
        "gpu_fresh",
        TEMPLATED,
        "a fresh LoRA trained on the stage-9 data alone in one GPU run, grounded whole names",
        training_info="gpu_fresh_training_info.json",
    ),
    Run("templated/stage9", "stage9", TEMPLATED, _stage(9, ", grounded whole names"), stage=9),
    Run(
        "templated/gpu_second_epoch",
        "gpu_second_epoch",
        TEMPLATED,
        "stage 9 continued one more GPU epoch on a mix weighted to its failures, grounded whole names",
        training_info="gpu_second_epoch_training_info.json",
    ),
    Run(
        "templated/round6_cpu",
        "round6_cpu",
        TEMPLATED,
        "stage 10 alone: stage 9 continued one CPU stage on the sixth phrasing round, grounded whole names",
        training_info="round6_cpu_training_info.json",
    ),
    Run(
        "templated/wise_ft_05",
        "wise_ft_05",
        TEMPLATED,
        "stages 9 and 10 interpolated at weight 0.5 (WiSE-FT's usual choice), grounded whole names",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_names_any",
        "freetext/dev_names_any",
        FREETEXT_DEV,
        "the default, names not held to medicines",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev",
        "freetext/dev",
        FREETEXT_DEV,
        "the default with names only (the first free-text dev run)",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/test",
        "freetext/test",
        FREETEXT_TEST,
        "the default with names only (the first test run)",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_adult_band",
        "freetext/dev_adult_band",
        FREETEXT_DEV,
        "the default, once calculate_dose referred adults under 18.7 kg",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_as_written",
        "freetext/dev_as_written",
        FREETEXT_DEV,
        "the default, once calculate_dose read weight and age as the patient wrote them",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_interaction_check",
        "freetext/dev_interaction_check",
        FREETEXT_DEV,
        "the default with the agent's interaction check",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_checks",
        "freetext/dev_checks",
        FREETEXT_DEV,
        "the default, once check_contraindications checked only what the patient spoke of",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/test_checks",
        "freetext/test_checks",
        FREETEXT_TEST,
        "as freetext/dev_checks, on the test set",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_answer_checks",
        "freetext/dev_answer_checks",
        FREETEXT_DEV,
        "the default with the verdict and suggestion checks, suggestions only for close names",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/test_answer_checks",
        "freetext/test_answer_checks",
        FREETEXT_TEST,
        "as freetext/dev_answer_checks, on the test set",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/dev_internals_check",
        "freetext/dev_internals_check",
        FREETEXT_DEV,
        "the default with the internals check (no tool name or error code in an answer)",
        stage=DEFAULT_STAGE,
    ),
    Run(
        "freetext/test_internals_check",
        "freetext/test_internals_check",
        FREETEXT_TEST,
        "as freetext/dev_internals_check, on the test set",
        stage=DEFAULT_STAGE,
    ),
)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _paths(run: Run) -> dict[str, str]:
    return {
        "summary": str(RESULTS / f"{run.stem}_summary.json"),
        "predictions": str(RESULTS / f"{run.stem}_predictions.jsonl"),
    }


def _stage_infos() -> list[dict]:
    """The ten-stage adapter's training runs, first to last (each names the run it continued), as training/card.py."""
    stages = [json.loads((ROOT / TEN_STAGES_INFO).read_text(encoding="utf-8"))]
    while (stages[0].get("init_adapter") or {}).get("training_info"):
        stages.insert(0, stages[0]["init_adapter"]["training_info"])
    return stages


def _training_data(run: Run, read) -> dict[str, str | None]:
    """The data the run's adapter trained on last (sha256 and generating command), where a training record has it."""
    if run.stage is not None:
        info = _stage_infos()[run.stage - 1]
    elif run.training_info is not None:
        info = json.loads(read(str(RESULTS / run.training_info)))
    elif run.adapter_record:
        info = json.loads(read("adapter/training_info.json"))
    else:
        info = {}
    return {"training_data_sha256": info.get("data_sha256"), "training_data_command": info.get("data_command")}


def entry(run: Run, old: dict | None) -> dict:
    """The index line of `run`: from its summary when it is in the tree, else as `old` (the index) holds it."""
    paths = _paths(run)
    line = {"name": run.name, "what": run.what, "cases": run.cases, "command": run.command}
    if (ROOT / paths["summary"]).is_file():
        read = lambda path: (ROOT / path).read_bytes()  # noqa: E731
        line |= {"cases_sha256": _sha256(read(run.cases))} | _training_data(run, read)
        formerly = {"formerly": str(RESULTS / f"{run.formerly}_summary.json")} if run.formerly else {}
        return line | paths | formerly | {"figures": json.loads(read(paths["summary"]))}
    if old is not None and "archived" in old:
        kept = ("cases_sha256", "training_data_sha256", "training_data_command", "archived", "figures")
        return line | {k: old[k] for k in kept}
    # Leaving the tree now: the last commit that added or changed it still holds it.
    commit = _git("log", "-1", "--diff-filter=AM", "--format=%H", "--", paths["summary"]).strip()
    if not commit:
        raise SystemExit(f"{run.name}: {paths['summary']} is neither in the tree, nor in the index, nor in git")
    read = lambda path: _git("show", f"{commit}:{path}").encode()  # noqa: E731
    line |= {"cases_sha256": _sha256(read(run.cases))} | _training_data(run, read)
    return line | {"archived": paths | {"commit": commit}, "figures": json.loads(read(paths["summary"]))}


def build() -> str:
    """The index's text: one JSON line per run of RUNS, in RUNS' order."""
    path = ROOT / INDEX
    old = {}
    if path.is_file():
        old = {d["name"]: d for d in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    names = [r.name for r in RUNS]
    if len(set(names)) != len(names):
        raise SystemExit("RUNS names a run twice")
    return "".join(json.dumps(entry(r, old.get(r.name)), ensure_ascii=False) + "\n" for r in RUNS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="report whether the index is current; write nothing")
    args = p.parse_args(argv)
    text = build()
    path = ROOT / INDEX
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            print(f"{INDEX} is out of date: run python scripts/index_results.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {INDEX}: {len(RUNS)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
