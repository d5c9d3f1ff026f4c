"""LoRA fine-tune of the default model (SmolLM2-135M-Instruct) on PPSF agent conversations, with TRL's SFTTrainer.

    python training/generate_data.py                # training/data/train.jsonl (+ eval/cases.jsonl)
    python training/train_lora.py --out adapter/    # adapter/adapter_config.json + adapter_model.safetensors

Runs on CPU (bf16 autocast where the CPU supports it natively) and unchanged on CUDA (bf16); seeded.

How the loss mask is built: each conversation is rendered with the repo's *train* template
(``additional_chat_templates/train.jinja``: the PPSF text with each assistant turn inside ``{% generation %}``)
and ``return_assistant_tokens_mask=True`` -- the call TRL's ``assistant_only_loss`` makes. PPSF has no
end-of-turn token: a turn ends where the next block's marker (``@PATIENT``, ``@TOOL_RESPONSE``) begins, and that
marker is rendered by the *next* message. So the mask is extended over that marker's tokens (`with_turn_stops`):
the model learns to end its turn, and the agent stops on the marker. A model trained on the template mask alone
never sees the loss there and runs on into another @PHARMACIST block. The generator ends every conversation
with a patient message so the last answer has its stop too. TRL gets the tokenized examples (``input_ids`` +
``assistant_masks``) and builds its labels from the mask; the tools block is rendered exactly as the agent
renders it (checked in ``tests/test_train_lora.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

from card import BASE_MODEL_ID, write_card  # a sibling: this runs as a script

from agent.engine.agent import ANSWER_MARKER
from agent.ppsf import FOREIGN_MARKERS

ROOT = Path(__file__).resolve().parent.parent


def train_template() -> str:
    """The repo's training chat template (the PPSF template with {% generation %} around assistant turns)."""
    return (ROOT / "additional_chat_templates" / "train.jinja").read_text(encoding="utf-8")


def read_conversations(path: Path, limit: int | None = None) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def template_mask(tokenizer, row: dict) -> dict:
    """input_ids + assistant_masks from the train template, as TRL's assistant_only_loss computes them."""
    return tokenizer.apply_chat_template(
        row["messages"], tools=row["tools"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )


def with_turn_stops(tokenizer, input_ids: list[int], mask: list[int]) -> list[int]:
    """The mask plus, after each assistant span, the tokens of the block marker that follows it (the turn's stop)."""
    out = list(mask)
    i = 0
    while i < len(out):
        if not (out[i] and (i + 1 == len(out) or not out[i + 1])):
            i += 1
            continue
        # i ends an assistant span: take tokens while they still spell the start of a foreign marker
        j, text = i + 1, ""
        while j < len(input_ids):
            text = tokenizer.decode(input_ids[i + 1 : j + 1])
            if not any(m.startswith(text) for m in FOREIGN_MARKERS):
                break
            if text in FOREIGN_MARKERS:
                after = tokenizer.decode(input_ids[i + 1 : j + 2])[len(text) :]
                if after[:1] in ("", " ", "\n"):  # the whole marker word, not "@PATIENTX"
                    out[i + 1 : j + 1] = [1] * (j - i)
                break
            j += 1
        i = j + 1
    return out


def tokenize(tokenizer, row: dict) -> dict:
    """One training example: input_ids and the loss mask (template mask + turn stops).

    row["loss"] (training/decisions.py): "decision" keeps the loss on the last assistant turn only, "marker" on
    only the @PHARMACIST marker that opens it (the tools write that answer); either way the ids end at the last
    loss token, since in a causal model later tokens cannot change the loss."""
    encoded = template_mask(tokenizer, row)
    ids, mask = list(encoded["input_ids"]), list(encoded["assistant_masks"])
    if (loss := row.get("loss", "all")) != "all":
        spans = _spans(mask)
        if loss not in ("decision", "marker") or not spans:
            raise ValueError(f"loss {loss!r}: expected 'all', 'decision' or 'marker' on a row with an assistant turn")
        start, end = spans[-1]
        if loss == "marker":
            end = start + _marker_length(tokenizer, ids[start:end])
        mask = [1 if start <= i < end else 0 for i in range(len(ids))]
    mask = with_turn_stops(tokenizer, ids, mask) if loss != "marker" else mask
    last = max((i for i, m in enumerate(mask) if m), default=len(ids) - 1)
    return {"input_ids": ids[: last + 1], "assistant_masks": mask[: last + 1]}


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each run of 1s in mask."""
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


def _marker_length(tokenizer, ids: list[int]) -> int:
    """How many of ids reach the end of the answer marker ("@PHARMACIST", after a @THOUGHT block if there is one):
    the agent stops decoding there and the tools write the answer."""
    for n in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:n])
        if text.startswith(ANSWER_MARKER) or f"\n{ANSWER_MARKER}" in text:
            return n
    raise ValueError(f"the assistant turn does not open with {ANSWER_MARKER}: {tokenizer.decode(ids)[:40]!r}")


def to_dataset(tokenizer, rows: list[dict]):
    """The tokenized dataset TRL trains on; it turns assistant_masks into labels (-100 outside the mask)."""
    from datasets import Dataset

    return Dataset.from_list([tokenize(tokenizer, r) for r in rows])


class EarlyStop:
    """Stops training cleanly after `minutes`, or after step `step` of the schedule (the adapter is still saved).

    The learning-rate schedule still spans --max-steps, so a run cut by the clock is reproduced exactly by
    the same --max-steps and --stop-at-step set to the step it reached (training_info.json's "steps").
    """

    def __init__(self, minutes: float | None, step: int | None = None) -> None:
        self.deadline = None if minutes is None else time.monotonic() + minutes * 60
        self.step = step

    def callback(self):
        from transformers import TrainerCallback

        deadline, last = self.deadline, self.step

        class _Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if deadline is not None and time.monotonic() > deadline:
                    print(f"\ntime limit reached at step {state.global_step}: stopping", file=sys.stderr, flush=True)
                    control.should_training_stop = True
                if last is not None and state.global_step >= last:
                    control.should_training_stop = True
                return control

        return _Stop()


def loss_positions_trainer():
    """SFTTrainer whose loss scores only the positions that predict a loss token.

    PPSF examples keep ~3/4 of their tokens out of the loss (system prompt, tools block, tool results), but
    TRL's fused head computes log-probs, entropy and accuracy at every position. Asking the model for logits
    only where labels are set (``logits_to_keep``) gives the same loss and gradients and about twice the CPU
    throughput (bench: ``python training/train_lora.py --limit 8 --max-steps 4`` with ``--no-fast-loss``).
    """
    import torch
    from trl import SFTTrainer

    class LossPositionsSFTTrainer(SFTTrainer):
        shared_prefix = None  # a SharedPrefix (use_shared_prefix), for LoRA on the top layers only

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs or not model.training:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            labels = inputs["labels"][:, 1:]  # position t predicts token t + 1
            keep = (labels != -100).any(dim=0).nonzero().squeeze(-1)
            forward = {k: v for k, v in inputs.items() if k != "labels"}
            prefix = self.shared_prefix
            if prefix is not None and prefix.starts(inputs["input_ids"]) and _unpadded(inputs):
                logits = prefix.logits(inputs["input_ids"], keep).float()  # training/shared_prefix.py
            else:
                logits = model(**forward, use_cache=False, logits_to_keep=keep).logits.float()
            target = labels[:, keep]
            loss = torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), target.flatten(), ignore_index=-100, reduction="sum"
            )
            valid = target != -100
            num_tokens = valid.sum() if num_items_in_batch is None else num_items_in_batch
            loss = loss / torch.as_tensor(num_tokens, device=loss.device).clamp(min=1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes
            with torch.no_grad():
                correct = ((logits.argmax(-1) == target) & valid).sum()
                self._metrics["train"]["mean_token_accuracy"].append((correct / valid.sum().clamp(min=1)).item())
            self._total_train_tokens += int(inputs["attention_mask"].sum()) if "attention_mask" in inputs else 0
            self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
            return loss

    return LossPositionsSFTTrainer


FIT_FILE = "fit.json"  # in --work-dir: the examples a fitted run trains on, so that a continued run keeps them


def fit_examples(trainer, minutes: float, started: float, probe: int = 8) -> dict:
    """How many of the trainer's examples, in order, this process trains within `minutes` of wall time since
    `started`: their tokens at the tokens/s of the trainer's own forward and backward pass, timed here on `probe`
    batches (the first untimed: it sets oneDNN up). A slower machine trains on fewer of the (shuffled) examples, with
    the schedule those make, instead of running past a session. The probe changes no weight: its gradients, the
    trainer's metrics and every random state are put back, so a run the budget does not cut is the run without it."""
    import copy
    import itertools

    import numpy as np
    import torch

    states = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    metrics, seen = copy.deepcopy(trainer._metrics), trainer._total_train_tokens
    tokens, seconds = 0, 0.0
    for i, batch in enumerate(itertools.islice(trainer.get_train_dataloader(), probe)):
        clock = time.perf_counter()
        trainer.model.train()
        with trainer.compute_loss_context_manager():  # what Trainer.training_step runs: autocast, loss, backward
            loss = trainer.compute_loss(trainer.model, trainer._prepare_inputs(batch))
        loss.backward()
        if i:
            seconds += time.perf_counter() - clock
            tokens += int(batch["attention_mask"].sum()) if "attention_mask" in batch else batch["input_ids"].numel()
    trainer.model.zero_grad(set_to_none=True)
    trainer._metrics, trainer._total_train_tokens = metrics, seen
    random.setstate(states[0]), np.random.set_state(states[1]), torch.set_rng_state(states[2])
    rate = tokens / max(seconds, 1e-9)
    budget = (minutes * 60 - (time.time() - started)) * rate
    lengths = [len(x) for x in trainer.train_dataset["input_ids"]]
    total, n = 0, 0
    while n < len(lengths) and total + lengths[n] <= budget:
        total, n = total + lengths[n], n + 1
    if n == 0:
        raise SystemExit(f"--fit-minutes {minutes:g}: no example fits at {rate:.0f} tokens/s measured here")
    return {"minutes": minutes, "probe_tokens_per_second": round(rate, 1), "examples": n, "of": len(lengths)}


def _unpadded(inputs: dict) -> bool:
    mask = inputs.get("attention_mask")
    return mask is None or bool(mask.all())


def use_shared_prefix(trainer, layers: int, base: bool = False) -> None:
    """With LoRA on the top `layers` only, run the prefix all examples share through the layers below once
    (training/shared_prefix.py); base: through every layer once with the adapter off, so each step runs only the
    example's own tokens (the adapter acts after the prefix: activated LoRA). A no-op for all-layer LoRA without
    base, TRL's own loss, or examples that share too little."""
    if not (layers or base) or not hasattr(trainer, "shared_prefix"):
        return
    from shared_prefix import SharedPrefix, common_prefix

    data = trainer.train_dataset
    ids = data["input_ids"]
    masks = data["assistant_masks"] if "assistant_masks" in data.column_names else None
    first_loss = [m.index(1) if masks else len(x) for x, m in zip(ids, masks or ids, strict=True)]
    # - 1: the position that predicts the first loss token is the example's own (the adapter acts there)
    n = common_prefix(ids, min(first_loss) - 1)
    if base:  # end where the agent's prefix cache ends, at a block boundary: the engine's base model reads just that
        tokenizer = trainer.processing_class
        while n > 0 and not tokenizer.decode(ids[0][:n]).endswith("\n\n"):
            n -= 1
    if n < 64:
        return
    total = trainer.model.get_base_model().config.num_hidden_layers
    first = total - layers if layers else 0
    trainer.shared_prefix = SharedPrefix(trainer.model, ids[0][:n], first_trained=first, base=base)
    where = "every layer, adapter off" if base else f"the lower {first} layers"
    print(f"shared prefix: {n} tokens through {where}, once", file=sys.stderr, flush=True)


def last_checkpoint(work_dir: Path) -> str | None:
    """The newest ``checkpoint-N`` folder the Trainer saved in work_dir, or None."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(work_dir)) if work_dir.is_dir() else None


def default_bf16(cuda: bool) -> bool:
    """bf16 autocast where the hardware computes in bf16: a CUDA GPU that supports it, or a CPU that oneDNN runs
    bf16 on (AVX-512/AMX). An AVX2-only CPU emulates bf16, tens of times slower than fp32
    (training/train_precision.py)."""
    import torch

    if cuda:
        return torch.cuda.is_bf16_supported()
    # torch has no public query for this; torch._inductor asks oneDNN the same way.
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def build_trainer(model, tokenizer, rows: list[dict], args: argparse.Namespace):
    import torch
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available() and args.device != "cpu"
    bf16 = args.bf16 if args.bf16 is not None else default_bf16(cuda)
    config = SFTConfig(
        output_dir=str(args.work_dir),
        num_train_epochs=args.epochs,
        max_steps=args.max_steps if args.max_steps else -1,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        learning_rate=args.lr,
        lr_scheduler_type="cosine",
        warmup_steps=args.warmup_steps,
        weight_decay=0.0,
        logging_steps=args.logging_steps,
        save_strategy="steps" if args.save_steps else "no",
        **({"save_steps": args.save_steps, "save_total_limit": 2} if args.save_steps else {}),
        report_to=[],
        seed=args.seed,
        data_seed=args.seed,
        bf16=bf16,
        use_cpu=not cuda,
        # The examples come tokenized with their assistant_masks (template mask + turn stops, see to_dataset);
        # TRL builds the labels from that column. assistant_only_loss=True would re-render conversations instead.
        assistant_only_loss=False,
        max_length=args.max_length,
        packing=False,
        gradient_checkpointing=False,  # a 135M model fits easily; checkpointing only slows CPU training
        dataset_num_proc=None,
        disable_tqdm=False,
        dataloader_num_workers=0,
    )
    lora = LoraConfig(
        r=args.rank,
        lora_alpha=args.alpha,
        lora_dropout=args.dropout,
        task_type="CAUSAL_LM",
        **lora_layers(model, args.layers),
    )
    callbacks = [EarlyStop(args.max_minutes, args.stop_at_step).callback()]
    trainer_class = loss_positions_trainer() if args.fast_loss else SFTTrainer
    if args.init_adapter is not None:
        # Continue training a saved adapter (its own LoRA config); the rank/alpha/dropout flags do not apply.
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(args.init_adapter), is_trainable=True)
        lora = None
    trainer = trainer_class(
        model=model,
        args=config,
        train_dataset=to_dataset(tokenizer, rows),
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=callbacks,
    )
    if lora is not None:
        use_shared_prefix(trainer, args.layers, base=args.base_prefix)
    return trainer


def lora_layers(model, top: int) -> dict:
    """LoraConfig's target arguments: every linear layer (top 0), or those of the top `top` decoder layers only.

    The layers below then need no backward pass (nothing there is trained): on this CPU a step over the top 10 of
    SmolLM2's 30 layers costs about 0.6 of one over all of them (docs/training.md)."""
    if top == 0:
        return {"target_modules": "all-linear"}
    import torch

    total = model.config.num_hidden_layers
    if not 0 < top <= total:
        raise ValueError(f"--layers {top}: the model has {total} decoder layers")
    # peft's layers_to_transform needs module names, not "all-linear": the decoder's linear layers by name.
    names = {
        n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in n
    }
    return {"target_modules": sorted(names), "layers_to_transform": list(range(total - top, total))}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="LoRA fine-tune of the default model on PPSF conversations (TRL SFT).")
    p.add_argument("--data", type=Path, default=ROOT / "training" / "data" / "train.jsonl")
    p.add_argument("--out", type=Path, default=ROOT / "adapter")
    p.add_argument("--model", help="model folder or Hub id (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--limit", type=int, help="use only the first N conversations")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument(
        "--max-steps",
        type=int,
        default=170,
        help="optimizer steps (default: the committed adapter's run, about an hour on 2 CPU cores); 0 = --epochs",
    )
    p.add_argument("--max-minutes", type=float, help="stop after this many minutes (the adapter is still saved)")
    p.add_argument(
        "--fit-minutes",
        type=float,
        help="train on as many of the first examples as this command reaches in this many minutes, at the tokens/s "
        "measured here first (fit_examples; a continued run keeps the examples its start chose)",
    )
    p.add_argument(
        "--stop-at-step",
        type=int,
        help="stop after this step of the --max-steps schedule (reproduces a run that --max-minutes cut short)",
    )
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup-steps", type=int, default=8)
    p.add_argument(
        "--init-adapter",
        type=Path,
        help="start from this saved adapter instead of a fresh LoRA (a second stage on other data)",
    )
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=int, default=32)
    p.add_argument("--dropout", type=float, default=0.05)
    p.add_argument("--layers", type=int, default=0, help="LoRA on the top N decoder layers only (0: all of them)")
    p.add_argument(
        "--base-prefix",
        action="store_true",
        help="the prefix all examples share is read by the base model (adapter off), once per run: each step runs "
        "only the example's own tokens (activated LoRA; docs/training.md)",
    )
    p.add_argument("--max-length", type=int, default=4096)
    p.add_argument("--logging-steps", type=int, default=5)
    p.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bf16 autocast (default: on where the CPU or CUDA GPU computes in bf16 natively, see default_bf16)",
    )
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument(
        "--fast-loss",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compute logits only at loss positions (same loss; --no-fast-loss uses TRL's own loss)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", type=Path, help="trainer output folder (default: a folder in the PPSF cache)")
    p.add_argument(
        "--save-steps",
        type=int,
        default=0,
        help="keep a checkpoint (adapter, optimizer, scheduler, RNG, data position) in --work-dir every N steps",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in --work-dir (same data and flags): the same result as one run",
    )
    p.add_argument("--card-only", action="store_true", help="only rewrite OUT/README.md (with eval scores)")
    p.add_argument("--results", type=Path, default=ROOT / "eval" / "results", help="eval summaries for the card")
    return p.parse_args(argv)


def card_only(out: Path, results: Path) -> int:
    """Rewrite out/README.md from out/training_info.json and results/{base,default}_summary.json."""
    info = json.loads((out / "training_info.json").read_text(encoding="utf-8"))

    def load(name: str) -> dict | None:
        path = results / f"{name}_summary.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    print(write_card(out, info, load("base"), load("default")))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.card_only:
        return card_only(args.out, args.results)
    import torch
    from transformers import set_seed

    from agent.engine.models import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    set_seed(args.seed)
    started = time.time()
    if args.work_dir is None:
        from agent.engine.models import cache_dir

        args.work_dir = cache_dir() / "training-runs" / "last"
    rows = read_conversations(args.data, args.limit)
    if not rows:
        raise SystemExit(f"no conversations in {args.data}")
    device = "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
    # The base weights stay float32 (bf16 is autocast only); the adapter must not be loaded into the base here.
    model, tokenizer = load_model(args.model, device=device, dtype="float32", adapter=None)
    model.requires_grad_(False)
    tokenizer.chat_template = train_template()  # {% generation %} spans -> assistant mask
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    trainer = build_trainer(model, tokenizer, rows, args)
    fit = fitted(trainer, args, started) if args.fit_minutes else None
    if fit is not None and fit["examples"] < len(rows):
        rows = rows[: fit["examples"]]
        trainer.train_dataset = trainer.train_dataset.select(range(len(rows)))
        print(f"fit: {len(rows)} of {fit['of']} examples in {args.fit_minutes:g} min", file=sys.stderr, flush=True)
    n_tokens = sum(len(x) for x in trainer.train_dataset["input_ids"])
    n_loss = sum(sum(1 for t in x if t != -100) for x in trainer.train_dataset["labels"])
    print(f"{len(rows)} conversations, {n_tokens} tokens ({n_loss} in the loss)", file=sys.stderr, flush=True)
    train_started = time.time()
    checkpoint = last_checkpoint(args.work_dir) if args.resume else None
    if args.resume and checkpoint is None:
        print(f"no checkpoint in {args.work_dir}: starting from step 0", file=sys.stderr, flush=True)
    elif checkpoint is not None:
        print(f"resuming from {checkpoint}", file=sys.stderr, flush=True)
    trainer.train(resume_from_checkpoint=checkpoint)
    wall = time.time() - started
    train_seconds = time.time() - train_started
    args.out.mkdir(parents=True, exist_ok=True)
    trainer.model.save_pretrained(str(args.out))
    _weights_to_bf16(args.out)
    _record_tools(args.out, rows)
    if args.model is None:
        _fix_base_model(args.out)
    info_path = args.out / "training_info.json"
    history = [h for h in trainer.state.log_history if "loss" in h]
    info = {
        "base_model": BASE_MODEL_ID if args.model is None else args.model,
        "data": str(args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data),
        "conversations": len(rows),
        "conversations_seen": round((trainer.state.epoch or 0.0) * len(rows)),
        "tokens": n_tokens,
        "loss_tokens": n_loss,
        "steps": trainer.state.global_step,
        "schedule_steps": args.max_steps or None,
        "epochs": round(trainer.state.epoch or 0.0, 3),
        "lr": args.lr,
        "rank": args.rank,
        "layers": args.layers or None,  # LoRA on the top N decoder layers; None: all
        "base_prefix": args.base_prefix,  # trained with the prefix read by the base model (agent: not yet served)
        "alpha": args.alpha,
        "dropout": args.dropout,
        "batch_size": args.batch_size,
        "grad_accum": args.grad_accum,
        "warmup_steps": args.warmup_steps,
        "bf16": trainer.args.bf16,
        "device": device,
        **({"gpu": torch.cuda.get_device_name()} if device == "cuda" else {}),
        "seed": args.seed,
        "init_adapter": _init_adapter_info(args.init_adapter),
        "wall_seconds": round(wall, 1),
        "train_seconds": round(train_seconds, 1),  # the optimizer loop alone (no loading or tokenizing)
        # tokens through the model per second of that loop: the examples' tokens seen in this process (padding
        # excluded; a continued run counts only the steps since its checkpoint)
        "tokens_per_second": round(_tokens_seen(trainer, n_tokens, checkpoint) / max(train_seconds, 1e-9), 1),
        "fit": fit,  # --fit-minutes: the examples trained within the budget (fit_examples)
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
        "trl": __import__("trl").__version__,
        "peft": __import__("peft").__version__,
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
    }
    info |= _data_source(args.data)
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    write_card(args.out, info)
    print(json.dumps(info), flush=True)
    return 0


def fitted(trainer, args: argparse.Namespace, started: float) -> dict:
    """fit_examples for this run, or what a continued run's start chose (--work-dir's fit.json)."""
    path = args.work_dir / FIT_FILE
    if args.resume and last_checkpoint(args.work_dir) is not None and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    fit = fit_examples(trainer, args.fit_minutes, started)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fit, indent=2) + "\n", encoding="utf-8")
    return fit


def _tokens_seen(trainer, n_tokens: int, checkpoint: str | None) -> float:
    """The tokens of the examples this process trained on: the epochs' share of n_tokens, less a checkpoint's."""
    steps, start = trainer.state.global_step, int(checkpoint.rsplit("-", 1)[1]) if checkpoint else 0
    return (trainer.state.epoch or 0.0) * n_tokens * ((steps - start) / steps if steps else 0.0)


def _data_source(data: Path) -> dict:
    """{"data_command", "data_sha256"} from the record generate_data.py writes beside its output; {} when there
    is none, or when the data no longer has the bytes that command wrote (then the card falls back to a note)."""
    from generate_data import source_path

    path = source_path(data)
    if not path.is_file():
        return {}
    source = json.loads(path.read_text(encoding="utf-8"))
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    if source.get("sha256") != sha:
        print(f"warning: {data} changed after {path} was written; its command is not recorded", file=sys.stderr)
        return {}
    return {"data_command": source["command"], "data_sha256": sha}


def _init_adapter_info(path: Path | None) -> dict | None:
    """Where a second-stage run started: the adapter folder and its own training_info.json."""
    if path is None:
        return None
    info = path / "training_info.json"
    return {
        "path": str(path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path),
        "training_info": json.loads(info.read_text(encoding="utf-8")) if info.is_file() else None,
    }


def _record_tools(out: Path, rows: list[dict]) -> None:
    """OUT/tools.json: the tool schemas the data showed, which the agent then shows this adapter (the tools may
    gain parameters later; agent.engine.toolbox.fit_schema)."""
    if any(r.get("shown") == "routed" for r in rows):  # each example shows its routed tools: record them all
        schemas = {t["function"]["name"]: t for r in rows for t in r.get("tools") or []}
        if any(
            json.dumps(t, sort_keys=True) != json.dumps(schemas[t["function"]["name"]], sort_keys=True)
            for r in rows
            for t in r.get("tools") or []
        ):
            print("warning: one tool shown with two schemas: no tools.json written", file=sys.stderr)
            return
        text = json.dumps(list(schemas.values()), ensure_ascii=False, indent=2) + "\n"
        (out / "tools.json").write_text(text, encoding="utf-8")
        (out / "tools_shown.txt").write_text("routed\n", encoding="utf-8")  # agent.engine.models.SHOWN_FILE
        return
    blocks = {json.dumps(r.get("tools"), sort_keys=True) for r in rows}
    if len(blocks) != 1 or not rows[0].get("tools"):
        print("warning: the conversations do not share one tools block: no tools.json written", file=sys.stderr)
        return
    text = json.dumps(rows[0]["tools"], ensure_ascii=False, indent=2) + "\n"
    (out / "tools.json").write_text(text, encoding="utf-8")


def _weights_to_bf16(out: Path) -> None:
    """Store the LoRA weights in bfloat16 (half the size; peft casts them back when it loads the adapter)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    path = out / "adapter_model.safetensors"
    with safe_open(str(path), "pt") as f:
        metadata = f.metadata()
    tensors = load_file(str(path))
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}, str(path), metadata=metadata)


def _fix_base_model(out: Path) -> None:
    """Name the Hub base model in adapter_config.json (the model was loaded from a local converted folder)."""
    path = out / "adapter_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = BASE_MODEL_ID
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
