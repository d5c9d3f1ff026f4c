"""WiSE-FT for a LoRA stage: interpolate a continued adapter with the adapter it continued.

    python training/interpolate_adapter.py runs/stage9/ runs/stage10/ --weight 0.7 --out adapter/

writes ``(1 - weight) * START + weight * END`` on every LoRA tensor (Wortsman et al., "Robust fine-tuning of
zero-shot models", 2022: the weights between a model and its fine-tune keep much of what the fine-tune
forgot and much of what it gained). END must have been trained with ``--init-adapter START``
(its training_info.json says so); the result's training_info.json is END's plus an ``interpolation``
record, so the card (``card.write_card``) gives every stage and this command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "training_info.json")


class InterpolationError(ValueError):
    """The two adapters cannot be interpolated (missing files, other shapes, END not trained from START)."""


def _read(folder: Path, role: str) -> tuple[dict, dict, dict]:
    """(adapter config, tensors, training info) of an adapter folder."""
    from safetensors.torch import load_file

    missing = [name for name in ADAPTER_FILES if not (folder / name).is_file()]
    if missing:
        raise InterpolationError(f"{role} {folder}: no {', '.join(missing)} there (expected a train_lora.py output)")
    from peft import PeftConfig

    config = vars(PeftConfig.from_pretrained(str(folder)))  # target_modules as a set: saved in any order
    info = json.loads((folder / "training_info.json").read_text(encoding="utf-8"))
    return config, load_file(str(folder / "adapter_model.safetensors")), info


def interpolate(start: Path, end: Path, weight: float, out: Path) -> dict:
    """Write out/ = (1 - weight) * start + weight * end (config, weights, training_info.json); returns the info."""
    from safetensors.torch import save_file

    if not 0.0 <= weight <= 1.0:
        raise InterpolationError(f"--weight {weight}: must be in [0, 1] (0 = START, 1 = END)")
    if out.resolve() in (start.resolve(), end.resolve()):
        raise InterpolationError(f"--out {out} is START or END: the card's commands need both kept as they are")
    start_config, start_tensors, start_info = _read(start, "START")
    end_config, end_tensors, end_info = _read(end, "END")
    differ = sorted(k for k in start_config.keys() | end_config.keys() if start_config.get(k) != end_config.get(k))
    if differ:
        raise InterpolationError(f"START and END adapter configs differ in {', '.join(differ)}")
    if start_tensors.keys() != end_tensors.keys():
        key = min(start_tensors.keys() ^ end_tensors.keys())
        raise InterpolationError(f"{key} is only in {'START' if key in start_tensors else 'END'}")
    for key, tensor in start_tensors.items():
        other = end_tensors[key]
        if (tensor.shape, tensor.dtype) != (other.shape, other.dtype):
            raise InterpolationError(
                f"{key}: {tuple(tensor.shape)} {tensor.dtype} in START, {tuple(other.shape)} {other.dtype} in END"
            )
    if "interpolation" in end_info:
        raise InterpolationError(f"END {end} is itself an interpolation; pass the adapter its stage trained")
    if (end_info.get("init_adapter") or {}).get("training_info") != start_info:
        raise InterpolationError(
            f"END {end} was not trained from START {start} (its training_info.json names another --init-adapter)"
        )
    # The LoRA factors themselves, as WiSE-FT interpolates a fine-tune's own parameters. peft's
    # add_weighted_adapter does not do this: "linear" scales A and B by sqrt(weight) (made for unrelated
    # adapters), "cat" keeps both deltas exactly but doubles the rank. END's factors start at START's and move
    # little (stage 10: 7 % of a tensor's norm on average, 16 % at most), so B @ A stays close to the
    # interpolated delta (within 0.4 % for stage 9 -> 10), at the same rank and size.
    mixed = {
        key: ((1.0 - weight) * tensor.float() + weight * end_tensors[key].float()).to(tensor.dtype).contiguous()
        for key, tensor in start_tensors.items()
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(mixed, str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
    (out / "adapter_config.json").write_bytes((end / "adapter_config.json").read_bytes())
    info = end_info | {"interpolation": {"weight": weight}}
    (out / "training_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Interpolate a continued LoRA stage with the adapter it started from.")
    p.add_argument("start", type=Path, help="the adapter END continued (its --init-adapter)")
    p.add_argument("end", type=Path, help="the adapter trained from START")
    p.add_argument("--weight", type=float, required=True, help="END's share: 0 = START, 1 = END")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        info = interpolate(args.start, args.end, args.weight, args.out)
    except InterpolationError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from card import write_card  # a sibling: this runs as a script

    print(write_card(args.out, info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
