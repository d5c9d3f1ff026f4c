"""One recipe, one command: composed data, a LoRA trained from the base model, scores on the dev sets.

    python training/recipe.py training/recipes/default.yaml                 # -> runs/default/
    python training/recipe.py RECIPE --set train.lr=3e-4 --out runs/lr3e-4  # a variant, for a choice made on dev
    python training/recipe.py RECIPE --test --compare adapter/              # a release: test sets, beside the default
    python training/recipe.py RECIPE --card    # the card again, after agent.eval scored the test sets into OUT/eval

OUT/data.jsonl is what training/compose.py writes for the recipe's [data]; OUT/checkpoints/ keeps a checkpoint
every save_steps, and running the same command again continues from the newest one (same data, same schedule,
same result), so a long CPU run can be stopped and continued; OUT/adapter/ is the adapter and its card;
OUT/eval/ holds predictions and summaries of every set scored. Runs on CUDA when there is one, else on CPU with
the recipe's [cpu] values over [train]'s (the same effective batch, checkpoints more often).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import generate_data as gd  # siblings: run as a script
import train_lora
import yaml
from card import _fmt, write_card
from compose import SURFACE, ComposedGenerator
from decisions import decision_rows

ROOT = gd.ROOT
DECISIONS = ROOT / "training" / "decisions"  # the patient-written pools ([data] written_pools names them)
SECTIONS: dict[str, set[str]] = {
    "data": {
        "conversations",
        "seed",
        "mix",
        "surface",
        "examples",
        "context",
        "after_results",
        "tools",
        "written_examples",
        "written_pools",
    },
    "train": {
        "epochs",
        "batch_size",
        "grad_accum",
        "lr",
        "warmup_steps",
        "rank",
        "layers",
        "base_prefix",
        "alpha",
        "dropout",
        "max_length",
        "seed",
        "save_steps",
        "fit_minutes",
    },
    "cpu": {"batch_size", "grad_accum", "save_steps", "fit_minutes"},
    "router": {"conversations"},
    "eval": {"max_steps", "dev", "test"},
}
SWITCHES = {"base_prefix"}  # [train] keys that are true or false (train_lora.py flags)
# What the card and docs print of each summary, in this order.
METRICS = [
    ("tool_args_accuracy", "tool + arguments"),
    ("tool_name_accuracy", "tool name"),
    ("no_tool_precision", "no-tool precision"),
    ("no_tool_recall", "no-tool recall"),
    ("must_mention_rate", "key fact"),
    ("answer_language_match", "answer language"),
    ("unsafe_dose_answers", "unsafe doses"),
    ("unsafe_for_patient_answers", "unsafe doses for the patient"),  # held to the case's own dose call
    ("cases", "cases"),
]


class RecipeError(ValueError):
    """A recipe file or --set override that cannot be used; the message names the key."""


def load_recipe(path: Path, overrides: list[str] = ()) -> dict[str, Any]:
    """The recipe file with its --set overrides applied, checked key by key."""
    try:
        recipe = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise RecipeError(f"{path}: {e}") from None
    if not isinstance(recipe, dict):
        raise RecipeError(f"{path}: a recipe is a mapping of sections (data, train, cpu, eval)")
    for item in overrides:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        node = recipe
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not sep or not isinstance(node, dict) or parts[-1] not in node:
            raise RecipeError(f"--set {item!r}: expected an existing key as section.key=value")
        old = node[parts[-1]]
        try:
            value = yaml.safe_load(text) if isinstance(old, (list, dict)) else type(old)(text)
        except (ValueError, yaml.YAMLError):
            raise RecipeError(f"--set {item!r}: {text!r} is not a {type(old).__name__}") from None
        node[parts[-1]] = value
    _check(recipe)
    return recipe


def _check(recipe: dict) -> None:
    if unknown := set(recipe) - set(SECTIONS):
        raise RecipeError(f"unknown section(s): {', '.join(sorted(unknown))}; known: {', '.join(SECTIONS)}")
    for section, keys in SECTIONS.items():
        got = set(recipe.get(section, {}))
        if missing := keys - got:
            raise RecipeError(f"[{section}] lacks {', '.join(sorted(missing))}")
        if extra := got - keys:
            raise RecipeError(f"[{section}] has unknown key(s): {', '.join(sorted(extra))}")
    for section in ("train", "cpu"):
        numbers = {k: v for k, v in recipe[section].items() if k not in SWITCHES}
        if bad := [k for k, v in numbers.items() if isinstance(v, bool) or not isinstance(v, (int, float))]:
            raise RecipeError(f"[{section}] {', '.join(bad)}: expected a number (YAML reads 5e-4 as text: 5.0e-4)")
    if bad := [k for k in SWITCHES if not isinstance(recipe["train"][k], bool)]:
        raise RecipeError(f"[train] {', '.join(bad)}: expected true or false")
    for key in ("dev", "test"):
        sets = recipe["eval"][key]
        if not isinstance(sets, list) or not all(isinstance(x, str) for x in sets):
            raise RecipeError(f"[eval] {key}: expected a list of case files")
        if missing := [x for x in sets if not (ROOT / x).is_file()]:
            raise RecipeError(f"[eval] {key}: no such case file: {', '.join(missing)}")
    data = recipe["data"]
    if data["tools"] not in ("full", "compact", "routed"):
        raise RecipeError(f"[data] tools: {data['tools']!r}; expected full, compact or routed")
    if not isinstance(recipe["router"]["conversations"], int) or recipe["router"]["conversations"] < 1:
        raise RecipeError("[router] conversations: a number of composed conversations >= 1")
    written = data["written_examples"]
    if isinstance(written, bool) or not isinstance(written, int) or written < 0:
        raise RecipeError("[data] written_examples: how many patient-written calls are examples, an integer >= 0")
    pools = data["written_pools"]
    if not isinstance(pools, list) or not all(isinstance(x, str) for x in pools):
        raise RecipeError("[data] written_pools: expected a list of pool files of training/decisions/")
    if missing := [x for x in pools if not (DECISIONS / x).is_file()]:
        raise RecipeError(f"[data] written_pools: no such pool in training/decisions/: {', '.join(missing)}")
    if written and not data["examples"]:
        raise RecipeError("[data] written_examples: the patient-written calls are decision examples; set examples > 0")
    if bad := [k for k in ("context", "after_results") if not 0 <= data[k] <= 1]:
        raise RecipeError(f"[data] {', '.join(bad)}: a probability is between 0 and 1")
    if isinstance(data["examples"], bool) or not isinstance(data["examples"], int) or data["examples"] < 0:
        raise RecipeError("[data] examples: a number of decision examples >= 0 (0: whole conversations)")
    surface = recipe["data"]["surface"]
    if set(surface) != set(SURFACE):
        raise RecipeError(f"[data.surface] must set exactly {', '.join(SURFACE)}")
    if bad := [k for k, v in surface.items() if not 0 <= v <= 1]:
        raise RecipeError(f"[data.surface] {', '.join(bad)}: a probability is between 0 and 1")
    if bad := [k for k, v in recipe["data"]["mix"].items() if not 0 <= v < float("inf")]:
        raise RecipeError(f"[data.mix] {', '.join(bad)}: a weight is a finite number >= 0")


def write_data(recipe: dict, out: Path, command: str) -> Path:
    """OUT/data.jsonl for the recipe's [data], and beside it the command that writes it (for the card)."""
    data = recipe["data"]
    rng = random.Random(data["seed"])
    try:
        gen = ComposedGenerator(rng, gd.build_names(), data["mix"], data["surface"])
    except ValueError as e:
        raise RecipeError(f"[data.mix]: {e}") from None
    rows = [gd.conversation(gen, rng) for _ in range(data["conversations"])]
    routed = data["tools"] == "routed"
    if data["tools"] in ("compact", "routed"):
        rows = [r | {"tools": gd.tools_block(compact=True)} for r in rows]
    if data["examples"]:  # cut at the decisions (training/decisions.py), `examples` of them
        rows = [d for r in rows for d in decision_rows(r, rng, data["context"], data["after_results"], routed)]
        if len(rows) < data["examples"]:
            raise RecipeError(
                f"[data] {data['conversations']} conversations give {len(rows)} decision examples, fewer than "
                f"examples: {data['examples']}; compose more conversations"
            )
        rows = rng.sample(rows, data["examples"])  # drawn from all of them: varied over many conversations
        pools = [DECISIONS / name for name in data["written_pools"]]
        written = written_rows(rows[0]["messages"][:1], gd.tools_block(compact=True), routed, pools)
        if data["written_examples"] > len(written):
            raise RecipeError(
                f"[data] written_examples: {data['written_examples']}, but written_pools hold {len(written)} "
                "patient-written calls; ask for fewer or write more"
            )
        written = rng.sample(written, data["written_examples"])  # drawn from every pool named: more varied
        rows = rng.sample(rows + written, len(rows) + len(written))
    if routed:  # what the adapter records (train_lora: tools.json, tools_shown.txt)
        rows = [r | {"shown": "routed"} for r in rows]
    path = out / "data.jsonl"
    gd.write_jsonl(path, rows)
    source = {"command": command, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    gd.source_path(path).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")
    return path


def written_rows(head: list[dict], tools: list[dict], routed: bool, pools: list[Path]) -> list[dict]:
    """A decision example for each patient-written message of the pools (of training/decisions/) that a tool
    answers (helpers who had not read eval/ wrote them, each expected call checked against the tools): head (the
    system message), the conversation, and the expected calls as the reply. The turns no tool answers come without
    an answer to learn, so only the router learns them."""
    from decisions import shown_tools
    from router import case_messages, read_cases

    out = []
    for path in pools:
        for case in read_cases(path):
            if not case["expected"]:
                continue
            calls = [
                {
                    "id": f"call_1_{j}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)},
                }
                for j, c in enumerate(case["expected"])
            ]
            reply = {"role": "assistant", "content": None, "tool_calls": calls}
            # The result renders the call's stop marker; tokenize cuts what follows it, so it is never trained on.
            result = {"role": "tool", "name": calls[0]["function"]["name"], "tool_call_id": "call_1_0", "content": "{}"}
            turn = [*case_messages(case), reply]
            shown = shown_tools(tools, [turn[-2], reply]) if routed else tools
            meta = {"lang": case.get("lang"), "written": case.get("id")}
            out.append({"messages": [*head, *turn, result], "tools": shown, "meta": meta, "loss": "decision"})
    return out


ROUTER_FILE = "tool_router.safetensors"


def train_router(path: Path, conversations: int) -> dict:
    """The tool router's phase (training/router.py on the patient turns of `conversations` composed conversations
    and the patient-written pools; deterministic, chosen on dev) into path; whether it equals the router the agent
    ships, which the eval phase runs (adopting a run copies both the adapter and this file, docs/training.md)."""
    import router

    from agent.pharmacy.router import WEIGHTS

    if not path.is_file():  # a continued run keeps the router it trained
        router.main(["--out", str(path), "--conversations", str(conversations)])
    same = WEIGHTS.is_file() and _weights_equal(path, WEIGHTS)
    if not same:
        print(
            f"note: {path} differs from the shipped router ({WEIGHTS}); the eval runs the shipped one", file=sys.stderr
        )
    return {"file": ROUTER_FILE, "same_as_shipped": same}


def _weights_equal(a: Path, b: Path) -> bool:
    """Whether two safetensors files hold the same tensors (the header's metadata may differ in key order)."""
    from safetensors.numpy import load_file

    x, y = load_file(str(a)), load_file(str(b))
    return x.keys() == y.keys() and all((x[k] == y[k]).all() for k in x)


def train_argv(
    recipe: dict, out: Path, device: str, resume: bool, model: str | None = None, bf16: bool | None = None
) -> list[str]:
    """train_lora.py's arguments for the recipe's [train] (and [cpu] when training on CPU); bf16 None: the
    hardware's default (train_lora.default_bf16)."""
    train = dict(recipe["train"]) | (recipe["cpu"] if device == "cpu" else {})
    argv = ["--data", str(out / "data.jsonl"), "--out", str(out / "adapter"), "--work-dir", str(out / "checkpoints")]
    argv += ["--device", device, "--max-steps", "0"] + (["--model", model] if model else [])
    argv += [] if bf16 is None else ["--bf16" if bf16 else "--no-bf16"]
    for key, value in train.items():
        if isinstance(value, bool):  # a switch: --base-prefix, or nothing
            argv += [f"--{key.replace('_', '-')}"] if value else []
        else:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv + (["--resume"] if resume else [])


def evaluate(
    adapter: Path,
    sets: list[str],
    out: Path,
    max_steps: int,
    device: str,
    model: str | None = None,
    limit: int | None = None,
) -> dict[str, dict]:
    """python -m agent.eval on each set with this adapter (on model, default the bundled one); {set: summary}.

    The sets run side by side, one process each: on CUDA a 135M model leaves the GPU idle between tokens; on CPU
    each process gets its share of the cores (one thread each on 2 cores: decoding one token at a time scales
    poorly past one thread, so two sets at once take about as long as the longer one).
    """
    out.mkdir(parents=True, exist_ok=True)
    commands = {}
    for name in sets:
        stem = Path(name).stem
        command = [sys.executable, "-m", "agent.eval", str(ROOT / name), "--adapter", str(adapter)]
        command += ["--max-steps", str(max_steps), "--device", device] + (["--model", model] if model else [])
        command += ["--limit", str(limit)] if limit else []
        command += ["--threads", str(max(1, (os.cpu_count() or 1) // len(sets)))] if device == "cpu" else []
        command += ["--predictions", str(out / f"{stem}_predictions.jsonl")]
        commands[stem] = command + ["--summary", str(out / f"{stem}_summary.json")]
    running = {stem: subprocess.Popen(c, cwd=ROOT) for stem, c in commands.items()}
    failed = [stem for stem, proc in running.items() if proc.wait() != 0]
    if failed:
        raise RecipeError(f"agent.eval failed on {', '.join(failed)} (its output is above)")
    return {stem: json.loads((out / f"{stem}_summary.json").read_text(encoding="utf-8")) for stem in commands}


def table(columns: dict[str, dict[str, dict]]) -> str:
    """A Markdown table: one row per metric, one column per (run, set)."""
    heads = [(run, stem) for run, sets in columns.items() for stem in sets]
    lines = ["| metric | " + " | ".join(f"{run}: {stem}" for run, stem in heads) + " |"]
    lines.append("|---|" + "---:|" * len(heads))
    for key, label in METRICS:
        lines.append(f"| {label} | " + " | ".join(_fmt(columns[run][stem].get(key)) for run, stem in heads) + " |")
    return "\n".join(lines)


def _device(choice: str) -> str:
    if choice != "auto":
        return choice
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("recipe", type=Path, help="a recipe file (training/recipes/default.yaml)")
    p.add_argument("--out", type=Path, help="run folder (default: runs/<recipe name>)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a recipe value")
    p.add_argument("--model", help="base model folder or Hub id (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--restart", action="store_true", help="drop OUT's checkpoints and train from step 0")
    p.add_argument("--no-eval", action="store_true", help="stop after training")
    p.add_argument("--test", action="store_true", help="also score the frozen test sets (once per release)")
    p.add_argument("--compare", type=Path, help="also score this adapter (the current default) on the same sets")
    p.add_argument("--eval-limit", type=int, help="only the first N cases of each set (a smoke run)")
    p.add_argument(
        "--card",
        action="store_true",
        help="only write OUT/adapter's card again, from the summaries in OUT/eval (after agent.eval scored more of "
        "the recipe's sets there, e.g. the test sets once per release; the run's record is kept as it is)",
    )
    args = p.parse_args(argv)
    try:
        recipe = load_recipe(args.recipe, args.set)
    except RecipeError as e:
        p.error(str(e))
    out = args.out or ROOT / "runs" / args.recipe.stem
    if args.card:
        return write_card_again(recipe, out)
    device = _device(args.device)
    out.mkdir(parents=True, exist_ok=True)
    lock = out / "recipe.json"
    # What the checkpoints were trained under: the recipe, its overrides, the base model and the device (its batch).
    resolved = json.dumps({"model": args.model, "device": device, "recipe": recipe}, indent=2, sort_keys=True) + "\n"
    checkpoints = out / "checkpoints"
    if args.restart and checkpoints.exists():
        import shutil

        shutil.rmtree(checkpoints)
    newest = train_lora.last_checkpoint(checkpoints)
    resume = newest is not None
    if resume and lock.is_file() and lock.read_text(encoding="utf-8") != resolved:
        p.error(f"{out} holds checkpoints of another recipe ({lock}): pass --restart, or another --out")
    lock.write_text(resolved, encoding="utf-8")
    bf16 = _run_bf16(newest, device)
    relative = args.recipe.resolve().relative_to(ROOT) if args.recipe.resolve().is_relative_to(ROOT) else args.recipe
    command = " ".join(["python training/recipe.py", str(relative), *(f"--set {s}" for s in args.set)])
    command += f" --model {args.model}" if args.model else ""
    clock = time.monotonic()
    if not (resume and _data_intact(out / "data.jsonl")):  # a continued run trains on the data it started with
        print(f"data: {recipe['data']['conversations']} conversations -> {out / 'data.jsonl'}", file=sys.stderr)
        write_data(recipe, out, command)
    phases = {"data": time.monotonic() - clock}
    clock = time.monotonic()
    router_check = train_router(out / ROUTER_FILE, recipe["router"]["conversations"])
    phases["router"] = time.monotonic() - clock
    clock = time.monotonic()
    train_lora.main(train_argv(recipe, out, device, resume, args.model, bf16))
    phases["train"] = time.monotonic() - clock
    info_path = out / "adapter" / "training_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) | {"recipe": str(relative), "recipe_values": recipe}
    info["router"] = router_check
    report = None
    clock = time.monotonic()
    if not args.no_eval:
        sets = recipe["eval"]["dev"] + (recipe["eval"]["test"] if args.test else [])
        run = {"max_steps": recipe["eval"]["max_steps"], "device": device, "model": args.model}
        columns = {"recipe": evaluate(out / "adapter", sets, out / "eval", **run, limit=args.eval_limit)}
        if args.compare:
            columns["compare"] = evaluate(args.compare, sets, out / "eval" / "compare", **run, limit=args.eval_limit)
        report = table(columns)
        (out / "eval" / "report.md").write_text(report + "\n", encoding="utf-8")
        print(report)
        phases["eval"] = time.monotonic() - clock
    # The wall time of each phase of this command (a continued run: of this part of it), beside the tokens trained
    # per second of the optimizer loop (train_lora's own record).
    info["phase_seconds"] = {k: round(v, 1) for k, v in phases.items()}
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    print(
        "time: "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in phases.items())
        + f"; {info.get('tokens_per_second')} tokens/s trained",
        file=sys.stderr,
    )
    write_card(out / "adapter", info, report=report)  # over train_lora's: the recipe's card
    return 0


def write_card_again(recipe: dict, out: Path) -> int:
    """OUT/adapter/README.md from the run's record and every summary of the recipe's sets in OUT/eval (and in
    OUT/eval/compare): the card of a finished run, with the test sets scored after it."""
    info_path = out / "adapter" / "training_info.json"
    if not info_path.is_file():
        raise SystemExit(f"{info_path} does not exist: run the recipe first")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    columns: dict[str, dict[str, dict]] = {}
    for run, folder in (("recipe", out / "eval"), ("compare", out / "eval" / "compare")):
        for name in recipe["eval"]["dev"] + recipe["eval"]["test"]:
            summary = folder / f"{Path(name).stem}_summary.json"
            if summary.is_file():
                columns.setdefault(run, {})[Path(name).stem] = json.loads(summary.read_text(encoding="utf-8"))
    if not columns:
        raise SystemExit(f"{out / 'eval'} holds no summary of the recipe's sets")
    report = table(columns)
    (out / "eval" / "report.md").write_text(report + "\n", encoding="utf-8")
    print(report)
    write_card(out / "adapter", info, report=report)
    return 0


def _run_bf16(checkpoint: str | None, device: str) -> bool:
    """The run's precision: a continued run keeps the one its checkpoints were trained in (the Trainer's own record,
    `training_args.bin`), so a run continued on other hardware gives the same adapter; a new run takes the
    hardware's default."""
    native = train_lora.default_bf16(device == "cuda")
    if checkpoint is None:
        return native
    import torch

    # The Trainer's pickle of its arguments, written by this run beside the optimizer and RNG files it loads too.
    bf16 = bool(torch.load(Path(checkpoint) / "training_args.bin", weights_only=False).bf16)
    if bf16 and not native:
        print("this run trains in bf16, as it started; this machine emulates bf16: much slower", file=sys.stderr)
    return bf16


def _data_intact(path: Path) -> bool:
    """Whether path still has the bytes its source record says write_data wrote."""
    source = gd.source_path(path)
    if not path.is_file() or not source.is_file():
        return False
    return json.loads(source.read_text(encoding="utf-8"))["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
