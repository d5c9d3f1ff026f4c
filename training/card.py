"""The adapter card (adapter/README.md): front matter, data, the recipe's commands, scores.

Written from the training_info.json that train_lora.py records; a stage that continues another reads that
stage's record in turn, so the card gives every stage and the commands that reproduce it.
"""

from __future__ import annotations

import re
from pathlib import Path

BASE_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def _card_data():
    from huggingface_hub import ModelCardData

    return ModelCardData(
        base_model=BASE_MODEL_ID,
        library_name="peft",
        license="apache-2.0",
        language=["tr", "en"],
        pipeline_tag="text-generation",
        tags=["lora", "trl", "sft", "ppsf", "pharmacy", "tool-calling"],
    )


CARD_METRICS = [
    ("tool_args_accuracy", "tool + arguments accuracy (AST match)"),
    ("tool_name_accuracy", "tool name accuracy"),
    ("no_tool_precision", "no-tool precision"),
    ("no_tool_recall", "no-tool recall"),
    ("must_mention_rate", "answers mentioning the key fact"),
    ("unsafe_dose_model_answers", "unsafe dose answers written by the model"),
    ("unsafe_dose_answers", "unsafe dose answers given (after the agent's dose check)"),
    ("unsupported_status_answers", "answers calling it prescription / high-risk without a tool result saying so"),
]


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value * 100:.1f} %"
    return str(value)


def _on(grounded: bool | None) -> str:
    return "on" if grounded else "off (the run predates the option)" if grounded is None else "off"


def _steps(info: dict) -> tuple[int | None, int | None]:
    """(steps run, steps the learning-rate schedule spans): they differ when a run was stopped early."""
    return info.get("steps"), info.get("schedule_steps") or info.get("steps")


def _loss(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _stages(info: dict) -> list[dict]:
    """The training runs behind an adapter, first to last (each --init-adapter run names the one it continued)."""
    stages = [info]
    while (stages[0].get("init_adapter") or {}).get("training_info"):
        stages.insert(0, stages[0]["init_adapter"]["training_info"])
    return stages


def _without_train(command: str) -> str:
    """A generate_data.py command without its --train N (the sample size, not the recipe)."""
    return re.sub(r" --train \d+", "", command, count=1)


def _stage_note(command: str, previous: str | None = None) -> str:
    """What a later stage's data adds, read from the generate_data.py flags of its command (the card names it)."""
    train = re.search(r" --train (\d+)", command)
    if train and previous is not None and _without_train(command) == _without_train(previous):
        return f"the previous stage's recipe and mix again, {train.group(1)} new conversations drawn from it."
    reweighted = "an intent mix reweighted toward the intents it still got wrong."
    if more := re.search(r"--more-phrasings(?: (\d+))?", command):
        n = int(more.group(1) or 1)
        rounds = "round 1" if n == 1 else f"rounds 1-{n}"
        return (
            f"the previous stage's recipe plus {rounds} of the further training-only question frames"
            f" (`training/phrasings.py` MORE_ROUNDS) and {reweighted}"
        )
    if "--weights" in command:
        return f"the previous stage's recipe with {reweighted}"
    if "--extended" in command:
        return (
            "the same drugs and tools, plus training-only question templates (`training/phrasings.py`), openers"
            " and other words for the label sections, more weight on the intents the first stage got wrong."
        )
    return "the data that command writes."


def _data_command(i: dict, stage: int) -> str:
    """The generate_data.py command of a stage (recorded in training_info.json as data_command)."""
    default = "python training/generate_data.py" + (" --extended" if stage > 1 else "")
    return i.get("data_command") or default


def _card_data_section(info: dict) -> list[str]:
    """The card's data paragraph; an adapter trained in stages names each stage's data."""
    stages = _stages(info)

    def amount(i: dict) -> str:
        return (
            f"{i.get('conversations')} synthetic conversations ({i.get('tokens')} tokens, {i.get('loss_tokens')} "
            f"of them in the loss; the run saw {i.get('conversations_seen', i.get('conversations'))} of them)"
        )

    lines = [
        f"`training/generate_data.py` (seeded): {amount(stages[0])}, 3-6 exchanges each and the patient's",
        "next message, rendered with the repo's `train` template exactly as the agent prompts (same system prompt,",
        "tools block and message shapes). Every tool result is a real call of `agent.pharmacy.tools`; answers",
        "restate its fact. Turns: every tool, parallel calls, multi-step (search, then interactions),",
        "unknown/ambiguous names and tool errors, dosing with caps and refer-to-doctor, greetings, thanks, off-topic",
        "and refused requests, optional `@THOUGHT` and `@REFERENCE`. Held out for evaluation: 17 active ingredients",
        "(all their names and brands), 4 brands of paracetamol/ibuprofen, and 2 question templates per intent and",
        "language.",
    ]
    for k, i in enumerate(stages[1:], 2):
        command = _data_command(i, k)
        note = _stage_note(command, _data_command(stages[k - 2], k - 1))
        lines += ["", f"Stage {k}: `{command.removeprefix('python ')}`, {amount(i)}, 4-8 exchanges each: {note}"]
    return lines


def _where(info: dict) -> str:
    """Where a run trained and for how long (GPU runs record the device name and the optimizer loop's time)."""
    if info.get("device") == "cuda":
        train, wall = info.get("train_seconds"), info.get("wall_seconds")
        return f"{train} s of training ({wall} s in all) on one {info.get('gpu')}"
    return f"wall time {info.get('wall_seconds')} s on a shared 2-core CPU"


def _stop_flag(info: dict) -> str:
    """--stop-at-step for a run cut before the end of its schedule; nothing for a run that finished it."""
    stop, schedule = _steps(info)
    return "" if stop == schedule else f" --stop-at-step {stop}"


def _run_flags(info: dict) -> str:
    """The train_lora.py flags a run set away from their defaults, besides the learning rate and steps."""
    from train_lora import parse_args  # the trainer's own defaults (imported here: it imports this module)

    defaults = vars(parse_args([]))
    keys = ("batch_size", "grad_accum", "warmup_steps")
    flags = [f"--{k.replace('_', '-')} {info[k]}" for k in keys if k in info and info[k] != defaults[k]]
    if info.get("device") == "cuda":
        flags.append("--device cuda")
    if "bf16" in info:  # the default follows the hardware (default_bf16), so the command names the run's choice
        flags.append("--bf16" if info["bf16"] else "--no-bf16")
    return "".join(f" {f}" for f in flags)


def _card_recipe_section(info: dict) -> list[str]:
    """The card's recipe paragraph and commands; an adapter trained in stages gives every run."""
    stages = _stages(info)

    def run(i: dict) -> str:
        stop, schedule = _steps(i)
        steps = f"{stop} steps" if schedule == stop else f"{stop} of {schedule} scheduled steps (time limit)"
        return (
            f"lr {i.get('lr')} cosine, batch {i.get('batch_size')} x {i.get('grad_accum')} accumulation, "
            f"{steps} ({i.get('epochs')} epoch), seed {i.get('seed')}, "
            f"{'bf16 autocast' if i.get('bf16') else 'fp32'} on {i.get('device')}; "
            f"loss {_loss(i.get('first_loss'))} -> {_loss(i.get('last_loss'))}; "
            f"{_where(i)}"
        )

    lines = [
        f"TRL {info.get('trl')} `SFTTrainer`; loss on each assistant turn (the train template's `{{% generation %}}`",
        "mask) and on its stop, the `@PATIENT` / `@TOOL_RESPONSE` marker that follows it; logits only at loss",
        f"positions. peft {info.get('peft')} LoRA r={info.get('rank')}, alpha={info.get('alpha')}, "
        f"dropout={info.get('dropout')} on all linear layers.",
        "",
    ]
    if len(stages) == 1:
        return lines + [
            f"Run: {run(info)}.",
            "",
            "```bash",
            f"python training/generate_data.py && python training/train_lora.py{_run_flags(info)} --out adapter/",
            "```",
        ]
    lines += [f"Stage 1: {run(stages[0])}.", ""]
    first = f"python training/train_lora.py{_run_flags(stages[0])} --out runs/stage1/"
    commands = [f"python training/generate_data.py && {first}"]
    previous = "runs/stage1/"  # the adapter the next stage starts from
    for k, i in enumerate(stages[1:], 2):
        lines += [f"Stage {k}, from the stage-{k - 1} adapter: {run(i)}.", ""]
        stop, schedule = _steps(i)
        mix, last = i.get("interpolation"), k == len(stages)
        data, out = f"training/data/stage{k}.jsonl", "adapter/" if last and not mix else f"runs/stage{k}/"
        commands += [
            f"{_data_command(i, k)} --out {data}",
            f"python training/train_lora.py --data {data} --init-adapter {previous} \\",
            f"    --lr {i.get('lr')} --max-steps {schedule}{_stop_flag(i)}{_run_flags(i)} --out {out}",
        ]
        if mix:  # training/interpolate_adapter.py: the weights between where the stage started and where it ended
            w, mixed = mix["weight"], "adapter/" if last else f"runs/stage{k}-wise-ft/"
            lines += [
                f"Then WiSE-FT (`training/interpolate_adapter.py`): every LoRA tensor is {1 - w:g} x the stage-{k - 1}",
                f"adapter + {w:g} x stage {k}, weights between the start and the end of stage {k}. The weight is",
                "chosen after training; the repo's docs/training.md says how.",
                "",
            ]
            commands += [f"python training/interpolate_adapter.py {previous} {out} --weight {w!r} --out {mixed}"]
            out = mixed
        previous = out
    return lines + ["```bash", *commands, "```"]


def _recipe_sections(info: dict, report: str | None) -> list[str]:
    """Data, recipe and scores of an adapter made by training/recipe.py (one run from the base model)."""
    data, train = info["recipe_values"]["data"], info["recipe_values"]["train"]
    if data.get("examples"):
        # written_examples: the recipe's key since the patient-written pools are drawn from (older records lack it)
        written = data.get("written_examples")
        what = [
            f"{info.get('conversations')} decision examples ({info.get('tokens')} tokens, {info.get('loss_tokens')}",
            f"in the loss): {data['examples']} cut from {data['conversations']} synthetic conversations",
            "(`training/decisions.py`)"
            + (
                f" and {written} patient-written messages with their checked calls (`training/decisions/`)"
                if written is not None
                else ""
            )
            + ". Each ends at one decision of the model (a call, a text no tool answers, or the",
            "answer marker after results, whose answer the tools write), a cut one with the exchange before it in",
            f"{data['context']:.0%} of them; tools block {data['tools']}; rendered with the repo's `train` template",
            "exactly as the agent prompts.",
        ]
    else:
        what = [
            f"{info.get('conversations')} synthetic conversations ({info.get('tokens')} tokens, "
            f"{info.get('loss_tokens')}",
            "in the loss), 4-8 exchanges each, rendered with the repo's `train` template exactly as the agent prompts.",
        ]
    layers = f"the top {info['layers']} decoder layers" if info.get("layers") else "all linear layers"
    phases = info.get("phase_seconds") or {}
    timing = ", ".join(f"{k} {v / 60:.1f} min" for k, v in phases.items())
    lines = [
        "## Data",
        "",
        *what,
        "Every tool result is a real call of `agent.pharmacy.tools`; answers restate its fact. Questions come from",
        "`training/compose.py`: every training phrasing, with context sentences, relatives, ages in years and months,",
        "distractor words, lower case, Turkish without Turkish letters, typos and code-switching drawn per question,",
        "and stories, misuse and diagnosis requests. Held out for evaluation: 17 active ingredients (all their names",
        "and brands), 4 brands of paracetamol/ibuprofen, and 2 question templates per intent and language.",
        f"Intent mix: {', '.join(f'{k} {v:g}' for k, v in data['mix'].items())}.",
        "",
        "## Recipe",
        "",
        f"`{info['recipe']}`, from the base model: TRL {info.get('trl')} `SFTTrainer`, loss on each assistant turn",
        "and its stop marker, logits only at loss positions; peft "
        f"{info.get('peft')} LoRA r={info.get('rank')}, alpha={info.get('alpha')}, dropout={info.get('dropout')}"
        f" on {layers}; lr {train['lr']} cosine, warmup {train['warmup_steps']}, batch "
        f"{info.get('batch_size')} x {info.get('grad_accum')}, {info.get('steps')} steps ({info.get('epochs')} epoch),",
        f"{'bf16 autocast' if info.get('bf16') else 'fp32'}; loss {_loss(info.get('first_loss'))} -> "
        f"{_loss(info.get('last_loss'))}; {_where(info)}"
        + (f"; {timing}, {info.get('tokens_per_second')} tokens/s trained." if timing else "."),
        "",
        "```bash",
        info["data_command"],
        "```",
    ]
    if report:
        lines += [
            "",
            "## Evaluation",
            "",
            "`python -m agent.eval`, greedy, grounded names, through the agent as it ships: the tool router",
            "(`agent/pharmacy/data/tool_router.safetensors`, trained by the same command) chooses the first call's",
            "tool or none, the model writes the rest, and the call checks set each call's tool where its arguments",
            "ask another's, its medicine, and the patient's facts as their words state them (`--no-stated-facts`:",
            "the model's own calls). Dev sets chose every value of the recipe; test sets were frozen before training",
            "and only reported.",
            "",
            report,
        ]
    return lines


def write_card(
    out: Path, info: dict, base: dict | None = None, tuned: dict | None = None, report: str | None = None
) -> Path:
    """adapter/README.md: front matter, data, recipe, wall time and (when given) base vs adapter scores; an
    adapter of training/recipe.py gets its recipe and its dev/test ``report`` instead."""
    lines = [
        "---",
        *_card_data().to_yaml().splitlines(),
        "---",
        "",
        "# PPSF LoRA adapter for SmolLM2-135M-Instruct",
        "",
        "Teaches SmolLM2-135M-Instruct the PPSF v1.1 agent format of this repo: it writes `@TOOL_CALL` blocks for",
        "the six pharmacy tools, reads `@TOOL_RESPONSE` results and answers in `@PHARMACIST` from them only, in",
        "Turkish or English. `agent.engine.models.load_model()` merges it into the default model (`--adapter none`",
        "to disable). Not medical advice.",
        "",
    ]
    if info.get("recipe"):
        lines += _recipe_sections(info, report)
    else:
        lines += ["## Data", "", *_card_data_section(info), "", "## Recipe", "", *_card_recipe_section(info)]
    if base or tuned:
        lines += [
            "",
            "## Evaluation",
            "",
            f"`python -m agent.eval eval/cases.jsonl` on {(tuned or base or {}).get('cases')} held-out cases",
            "(drugs and question templates never seen in training; TR and EN; every tool and no-tool turns). The",
            "base model gets the one-shot worked example, as the CLI gives it; the adapter gets none. Grounded",
            "medicine names (`agent/engine/grounding.py`): "
            f"{_on((tuned or {}).get('grounded_names'))} for the adapter, "
            f"{_on((base or {}).get('grounded_names'))} for the base model; whole names (no name cut short",
            f"inside a longer name of the drug data): {_on((tuned or {}).get('whole_names'))} for the adapter, "
            f"{_on((base or {}).get('whole_names'))} for the base model.",
            "",
            "| metric | base (one-shot) | base + adapter |",
            "|---|---|---|",
        ]
        for key, label in CARD_METRICS:
            lines.append(f"| {label} | {_fmt((base or {}).get(key))} | {_fmt((tuned or {}).get(key))} |")
    path = out / "README.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
