"""Issue 24's recipe: composed training data, one command from the base model (resumable), the dev/test split."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import compose
import generate_data as gd
import pytest
import recipe
import split_eval
from safetensors.torch import load_file

from agent.engine.toolbox import tool_schema
from agent.pharmacy.text import fold
from agent.pharmacy.tools import PHARMACY_TOOLS

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "training" / "recipes" / "default.yaml"


@pytest.fixture(scope="module")
def composed(names) -> list[dict]:
    values = recipe.load_recipe(RECIPE)["data"]
    rng = random.Random(11)
    gen = compose.ComposedGenerator(rng, names, values["mix"], values["surface"])
    return [gd.conversation(gen, rng) for _ in range(60)]


def user_turns(conversations: list[dict]) -> list[str]:
    return [m["content"] for c in conversations for m in c["messages"] if m["role"] == "user"]


# ---------------------------------------------------------------- the composed data


def asked(conversations: list[dict]):
    """(the user turn, the arguments) of every call, with the turn it answers."""
    for conv in conversations:
        user = ""
        for m in conv["messages"]:
            if m["role"] == "user":
                user = m["content"]
            for t in m.get("tool_calls") or []:
                yield user, json.loads(t["function"]["arguments"])


def test_every_name_a_call_uses_is_a_span_of_its_question(composed):
    # Grounding copies names from the conversation: composition must never change a name it wraps.
    for user, args in asked(composed):
        for name in [args["drug"]] if "drug" in args else args.get("drugs", []):
            assert fold(name) in fold(user), (user, args)


def test_ages_are_copied_in_the_unit_the_patient_wrote(composed):
    in_months = [(user, args) for user, args in asked(composed) if "age_months" in args]
    assert len(in_months) >= 5
    for user, args in in_months:  # the months are in the question, next to a month word (or its typo: "mnoth")
        assert re.search(rf"\b{args['age_months']:g} ?(ay|aylık|month|mo|m[a-z]{{3,5}}\b)", fold(user)), (user, args)


def test_a_temperature_beside_the_weight_is_not_the_weight(composed):
    for user, args in asked(composed):
        if "weight_kg" in args and re.search(r"ateş|fever|temp|degrees", user):
            written = f"{args['weight_kg']:g}".replace(".", "[.,]")
            assert re.search(rf"{written} ?(kg|kilo)", user), (user, args)


def test_every_axis_of_the_surface_shows_up(composed):
    turns = user_turns(composed)
    tr = [t for t in turns if "ı" in t or "ş" in t or "ğ" in t]
    assert any(t == t.lower() and re.search("[a-z]", t) for t in turns)  # all lower case
    assert any(re.search(r"\b(yasinda|aylik|icin|gundur|sabahtan)\b", t) for t in turns)  # no Turkish letters
    assert any(w in fold(t) for t in turns for w in ("izmir", "london", "eczane", "boots", "kahve", "coffee"))
    assert len(tr) > 10
    kinds = {m.get("content") for c in composed for m in c["messages"] if m["role"] == "assistant"}
    assert gd.REFUSAL_ANSWER["tr"] in kinds or gd.REFUSAL_ANSWER["en"] in kinds
    assert compose.DIAGNOSIS_ANSWER["tr"] in kinds or compose.DIAGNOSIS_ANSWER["en"] in kinds


def test_composition_never_reaches_held_out_drugs_or_templates(names, composed):
    report = gd.split_report(names)
    held_out = {fold(n) for n in report["drugs"]["eval"]} - {fold(n) for n in report["drugs"]["train"]}
    words = {w for t in user_turns(composed) for w in re.findall(r"\w+", fold(t))}
    assert not held_out & words
    for conv in composed:
        assert set(conv["meta"]["templates"]) <= report["templates"]["train"]


def test_the_tools_block_is_the_tools_own_schemas(composed):
    assert composed[0]["tools"] == [tool_schema(fn) for fn in PHARMACY_TOOLS]


@pytest.mark.parametrize(("word", "genitive"), [("oğlum", "oğlumun"), ("annem", "annemin"), ("kızımız", "kızımızın")])
def test_turkish_genitive(word, genitive):
    assert compose.genitive(word) == genitive


# ---------------------------------------------------------------- the recipe file


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.lr=abc", "'abc' is not a float"),
        ("train.nope=1", "expected an existing key"),
        ("eval.dev=[x.jsonl]", "no such case file: x.jsonl"),
        ("data.surface.lower=1.5", "lower: a probability is between 0 and 1"),
        ("data.mix.usage=-1", "usage: a weight is a finite number >= 0"),
        ("nothing", "expected an existing key"),
        ("data.tools=short", "tools: 'short'; expected full, compact or routed"),
        ("data.written_examples=-1", "written_examples: how many patient-written calls are examples"),
        ("router.conversations=0", "[router] conversations: a number of composed conversations >= 1"),
        ("data.context=1.5", "context: a probability is between 0 and 1"),
        ("data.examples=-3", "examples: a number of decision examples >= 0"),
    ],
)
def test_recipe_errors_name_the_key(override, message):
    with pytest.raises(recipe.RecipeError, match=re.escape(message)):
        recipe.load_recipe(RECIPE, [override])


def test_a_recipe_file_with_an_unknown_section_or_a_text_number_is_refused(tmp_path):
    text = RECIPE.read_text(encoding="utf-8")
    (tmp_path / "extra.yaml").write_text(text + "\nwandb: {}\n", encoding="utf-8")
    with pytest.raises(recipe.RecipeError, match="unknown section"):
        recipe.load_recipe(tmp_path / "extra.yaml")
    (tmp_path / "lr.yaml").write_text(text.replace("lr: 1.0e-3", "lr: 1e-3"), encoding="utf-8")
    with pytest.raises(recipe.RecipeError, match=r"\[train\] lr: expected a number"):
        recipe.load_recipe(tmp_path / "lr.yaml")


def test_cpu_runs_keep_the_effective_batch():
    values = recipe.load_recipe(RECIPE)
    gpu, cpu = values["train"], values["train"] | values["cpu"]
    assert gpu["batch_size"] * gpu["grad_accum"] == cpu["batch_size"] * cpu["grad_accum"]
    argv = recipe.train_argv(values, Path("/tmp/x"), "cpu", resume=True)
    assert argv[argv.index("--batch-size") + 1] == "1" and "--resume" in argv and argv[-1] == "--resume"


def test_a_continued_run_keeps_the_precision_it_started_with(tmp_path, monkeypatch, capsys):
    import types

    import torch

    monkeypatch.setattr(recipe.train_lora, "default_bf16", lambda cuda: False)  # hardware without native bf16
    assert recipe._run_bf16(None, "cpu") is False  # a new run: the hardware's default
    checkpoint = tmp_path / "checkpoint-5"
    checkpoint.mkdir()
    torch.save(types.SimpleNamespace(bf16=True), checkpoint / "training_args.bin")
    assert recipe._run_bf16(str(checkpoint), "cpu") is True  # continued: what its checkpoints were trained in
    assert "emulates bf16" in capsys.readouterr().err
    monkeypatch.setattr(recipe.train_lora, "default_bf16", lambda cuda: True)
    torch.save(types.SimpleNamespace(bf16=False), checkpoint / "training_args.bin")
    assert recipe._run_bf16(str(checkpoint), "cpu") is False
    values = recipe.load_recipe(RECIPE)
    assert "--no-bf16" in recipe.train_argv(values, tmp_path, "cpu", resume=True, bf16=False)
    assert "--bf16" in recipe.train_argv(values, tmp_path, "cpu", resume=True, bf16=True)
    assert not {"--bf16", "--no-bf16"} & set(recipe.train_argv(values, tmp_path, "cpu", resume=False))


@pytest.mark.parametrize(
    ("record", "changed"),
    [
        # a pool added to training/decisions/ changes the adapter's data only once the recipe names it
        ("adapter", []),
        # the run not adopted (docs/training.md): default.yaml with pools g and h also named, as the --set there
        ("eval/results/recipe_routed/pools_gh/adapter", ["written_pools"]),
    ],
)
def test_the_default_recipe_writes_the_data_a_kept_adapter_trained_on(tmp_path, record, changed):
    """default.yaml, with --set for the [data] values the record differs in (only `changed`), writes the data the
    record's adapter trained on byte for byte."""
    values = recipe.load_recipe(ROOT / "training" / "recipes" / "default.yaml")
    info = json.loads((ROOT / record / "training_info.json").read_text(encoding="utf-8"))
    ran = info["recipe_values"]["data"]
    assert [k for k in ran if ran[k] != values["data"][k]] == changed
    overrides = [f"data.{k}={json.dumps(ran[k])}" for k in changed]
    values = recipe.load_recipe(ROOT / "training" / "recipes" / "default.yaml", overrides)
    path = recipe.write_data(values, tmp_path, "python training/recipe.py training/recipes/default.yaml")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == info["data_sha256"]


def test_a_pool_the_recipe_names_must_exist(tmp_path):
    with pytest.raises(recipe.RecipeError, match=r"written_pools: no such pool in training/decisions/: nope.jsonl"):
        recipe.load_recipe(ROOT / "training" / "recipes" / "default.yaml", ["data.written_pools=[nope.jsonl]"])


def test_more_written_examples_than_the_pools_hold_is_refused_by_name(tmp_path):
    values = recipe.load_recipe(RECIPE)
    values["data"] |= {"conversations": 2, "examples": 2, "written_examples": 10**6}
    values["data"]["mix"] = dict.fromkeys(values["data"]["mix"], 0) | {"usage": 1}
    with pytest.raises(recipe.RecipeError, match=r"written_examples: 1000000, but written_pools hold \d+"):
        recipe.write_data(values, tmp_path, "test")


# ---------------------------------------------------------------- one command, resumable


def tiny_recipe(tmp_path: Path) -> Path:
    values = recipe.load_recipe(RECIPE)
    values["data"] |= {
        "conversations": 2,
        "examples": 2,
        "written_examples": 0,
    }  # two decision examples: two steps of one
    values["data"]["mix"] = dict.fromkeys(values["data"]["mix"], 0) | {"greeting": 1, "usage": 1, "dose_story": 1}
    values["train"] |= {"max_length": 1400, "warmup_steps": 0, "layers": 1}  # the tiny model's top layer
    values["cpu"] |= {"grad_accum": 1, "save_steps": 1}
    values["router"]["conversations"] = 5
    values["eval"]["dev"] = ["eval/templated_dev.jsonl"]
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(values), encoding="utf-8")  # JSON is YAML
    return path


def test_one_command_trains_and_a_stopped_run_continues_to_the_same_adapter(tmp_path, tiny_model_dir):
    path = tiny_recipe(tmp_path)
    common = ["--model", str(tiny_model_dir), "--device", "cpu"]
    assert recipe.main([str(path), "--out", str(tmp_path / "a"), *common, "--eval-limit", "2"]) == 0
    a = tmp_path / "a"
    info = json.loads((a / "adapter" / "training_info.json").read_text(encoding="utf-8"))
    assert info["steps"] == 2 and info["recipe"].endswith("tiny.yaml") and info["init_adapter"] is None
    assert info["dropout"] == 0 and info["layers"] == 1 and info["tokens_per_second"] > 0
    assert set(info["phase_seconds"]) == {"data", "router", "train", "eval"}
    assert info["router"] == {"file": "tool_router.safetensors", "same_as_shipped": False}  # 5 conversations
    assert (a / "tool_router.safetensors").is_file()
    assert info["data_command"].startswith("python training/recipe.py ") and "--model" in info["data_command"]
    rows = [json.loads(line) for line in (a / "data.jsonl").read_text(encoding="utf-8").splitlines()]
    recorded = json.loads((a / "adapter" / "tools.json").read_text(encoding="utf-8"))
    assert all(t in recorded for r in rows for t in r["tools"])  # each example shows the tools of its route
    assert (a / "adapter" / "tools_shown.txt").read_text(encoding="utf-8") == "routed\n"
    report = (a / "eval" / "report.md").read_text(encoding="utf-8")
    assert "recipe: templated_dev" in report and "| tool + arguments |" in report
    card = (a / "adapter" / "README.md").read_text(encoding="utf-8")
    assert "python training/recipe.py" in card and report.strip() in card

    # A test set scored after the run (agent.eval into OUT/eval): --card writes the card again with it, dev beside
    # test, and leaves the run's record as it was.
    record = (a / "adapter" / "training_info.json").read_bytes()
    summary = json.loads((a / "eval" / "templated_dev_summary.json").read_text(encoding="utf-8"))
    (a / "eval" / "freetext_test_summary.json").write_text(json.dumps(summary | {"cases": 7}), encoding="utf-8")
    assert recipe.main([str(path), "--out", str(a), "--card"]) == 0
    card = (a / "adapter" / "README.md").read_text(encoding="utf-8")
    assert "| metric | recipe: templated_dev | recipe: freetext_test |" in card and "| cases | 2 | 7 |" in card
    assert (a / "adapter" / "training_info.json").read_bytes() == record
    with pytest.raises(SystemExit, match="run the recipe first"):
        recipe.main([str(path), "--out", str(tmp_path / "none"), "--card"])

    # The same run stopped after its first checkpoint, then the same command again: the same weights.
    b = tmp_path / "b"
    b.mkdir()
    for name in ("recipe.json", "data.jsonl", "data.jsonl.source.json"):
        (b / name).write_bytes((a / name).read_bytes())
    (b / "checkpoints").mkdir()
    import shutil

    shutil.copytree(a / "checkpoints" / "checkpoint-1", b / "checkpoints" / "checkpoint-1")
    assert recipe.main([str(path), "--out", str(b), *common, "--no-eval"]) == 0
    first, second = (load_file(str(d / "adapter" / "adapter_model.safetensors")) for d in (a, b))
    assert first.keys() == second.keys() and all((first[k] == second[k]).all() for k in first)
    resumed = json.loads((b / "adapter" / "training_info.json").read_text(encoding="utf-8"))
    assert resumed["steps"] == 2
    assert resumed["bf16"] == info["bf16"]


def test_checkpoints_of_another_recipe_are_not_continued(tmp_path, tiny_model_dir, capsys):
    path = tiny_recipe(tmp_path)
    out = tmp_path / "run"
    (out / "checkpoints" / "checkpoint-1").mkdir(parents=True)
    (out / "recipe.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit):
        recipe.main([str(path), "--out", str(out), "--model", str(tiny_model_dir), "--device", "cpu"])
    assert "holds checkpoints of another recipe" in capsys.readouterr().err


# ---------------------------------------------------------------- the protocol: dev and frozen test

# Re-frozen once, before the recipe run that restarted on the same change: unknown names are offered only close
# names (SUGGEST_SCORE 70), so three test cases' key fact is "not found", no longer an unrelated suggestion.
# Re-frozen a second time for the drug review 2 (issue 40), whose name rules change four cases' key fact and no
# question: a made-up name is no longer offered a medicine that only shares letters ("Lutrexa": Lustral is now "not
# found"), and "sertra" is offered Sertraline, not Septra. The committed adapter's rows in docs/training.md are
# rescored on it. A third time for the same review's form bands (N-I4): the Aerius tablet is from 12 years, so one
# case's key fact ("4 yaş için Aerius sakıncalı mı?") is "caution" (use the syrup), no longer "ok"; no question changed.
TEMPLATED_TEST_SHA256 = "7b40a48582920f45f652287b50b23fe2e317929b404571056402d4b3f7065ec4"


def test_the_templated_split_is_what_the_script_writes_and_test_is_frozen():
    cases = [json.loads(line) for line in (ROOT / "eval" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    dev, test = split_eval.split(cases)
    on_disk = {
        name: [json.loads(line) for line in (ROOT / "eval" / f"templated_{name}.jsonl").read_text().splitlines()]
        for name in ("dev", "test")
    }
    assert on_disk == {"dev": dev, "test": test}
    assert hashlib.sha256((ROOT / "eval" / "templated_test.jsonl").read_bytes()).hexdigest() == TEMPLATED_TEST_SHA256
    assert {c["id"] for c in dev}.isdisjoint({c["id"] for c in test}) and len(dev) + len(test) == len(cases)
    templates = [{t for c in side for t in c["templates"]} for side in (dev, test)]
    assert templates[0].isdisjoint(templates[1])
    assert {c["intent"] for c in dev} == {c["intent"] for c in test}  # every intent on both sides
    # Key facts are today's tools' ("not in the reference"), not the ones cases.jsonl was written with.
    stale = ("no known interaction in this database", "bu veritabanında bilinen etkileşim yok")
    assert any(m in stale for c in cases for m in c["must_mention"])
    assert not any(m in stale for c in dev + test for m in c["must_mention"])


@pytest.mark.parametrize(
    ("stem", "predictions"),
    [
        ("templated_dev", "default_predictions.jsonl"),
        ("templated_test", "default_predictions.jsonl"),
        ("freetext_dev", "freetext/default_dev_predictions.jsonl"),
        ("freetext_test", "freetext/default_test_predictions.jsonl"),
    ],
)
def test_the_defaults_figures_on_the_four_sets_rescore(stem, predictions):
    from agent.eval import runner

    cases = runner.read_jsonl(ROOT / "eval" / f"{stem}.jsonl")
    by_id = {p["id"]: p for p in runner.read_jsonl(ROOT / "eval" / "results" / predictions)}
    s = runner.score(cases, [by_id[c["id"]] for c in cases])
    pct = lambda key: f"{s[key] * 100:.1f} %"  # noqa: E731
    row = (
        f"| {stem} | {pct('tool_args_accuracy')} | {pct('no_tool_precision')} / {pct('no_tool_recall')} | "
        f"{pct('must_mention_rate')} | {pct('answer_language_match')} | {s['unsafe_dose_answers']} | {s['cases']} |"
    )
    assert row in (ROOT / "docs" / "training.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("stem", ["freetext_dev", "templated_dev"])
def test_the_cpu_probe_summaries_rescore(stem):
    from agent.eval import runner

    folder = ROOT / "eval" / "results" / "recipe_probe"
    summary = json.loads((folder / f"{stem}_summary.json").read_text(encoding="utf-8"))
    cases = runner.read_jsonl(ROOT / "eval" / f"{stem}.jsonl")
    s = runner.score(cases, runner.read_jsonl(folder / f"{stem}_predictions.jsonl"))
    assert {k: summary[k] for k in s} == s
    pct = lambda key: f"{s[key] * 100:.1f} %"  # noqa: E731
    row = (
        f"| recipe_probe | {stem} | {pct('tool_args_accuracy')} | {pct('no_tool_precision')} / "
        f"{pct('no_tool_recall')} | {pct('must_mention_rate')} | {pct('answer_language_match')} | "
        f"{s['unsafe_dose_answers']} |"
    )
    assert row in (ROOT / "docs" / "training.md").read_text(encoding="utf-8")


def test_the_default_recipe_ran_within_the_hour_on_both_kinds_of_cpu():
    """The committed adapter's run (AVX-512, bf16) and the same command on an AVX2 CPU (fp32, its record in
    eval/results/recipe_avx2/adapter/): the same data, every example trained, each whole command under 60 minutes, as
    docs/training.md reports them."""
    default = json.loads((ROOT / "adapter" / "training_info.json").read_text(encoding="utf-8"))
    avx2 = json.loads(
        (ROOT / "eval" / "results" / "recipe_avx2" / "adapter" / "training_info.json").read_text(encoding="utf-8")
    )
    assert (
        avx2["data_sha256"] == default["data_sha256"]
        and avx2["recipe_values"]["data"] == default["recipe_values"]["data"]
    )
    assert (default["bf16"], avx2["bf16"]) == (True, False) and avx2["fit"]["examples"] == avx2["fit"]["of"] == 2000
    assert avx2["steps"] == default["steps"] and avx2["tokens"] == default["tokens"]
    docs = " ".join((ROOT / "docs" / "training.md").read_text(encoding="utf-8").split())
    for info in (default, avx2):
        minutes = sum(info["phase_seconds"].values()) / 60
        assert minutes < 60 and f"{minutes:.1f} min for the whole command" in docs, minutes
        assert f"{info['tokens_per_second']} tokens/s" in docs
