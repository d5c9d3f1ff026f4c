"""Side-by-side: one forward + backward of SmolLM2-135M-shaped MLP layers in fp32 and under bf16 autocast on CPU.

    python training/train_precision.py          # 2048 tokens, 4 layers, 3 repeats

train_lora.py turns bf16 autocast on by default only where oneDNN computes bf16 natively (AVX-512 / AMX,
``default_bf16``). This prints both times and their ratio on this CPU, so the choice can be checked on a machine.
Ratios are measured in this run, never asserted in tests.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import time

import torch
from train_lora import default_bf16  # a sibling: this runs as a script

HIDDEN, INTERMEDIATE = 576, 1536  # SmolLM2-135M


def step_seconds(layers: torch.nn.Module, x: torch.Tensor, bf16: bool, repeats: int) -> float:
    """Best of ``repeats`` forward + backward passes."""
    best = float("inf")
    for _ in range(repeats):
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        start = time.perf_counter()
        with ctx:
            loss = layers(x).float().pow(2).mean()
        loss.backward()
        best = min(best, time.perf_counter() - start)
        layers.zero_grad(set_to_none=True)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    torch.manual_seed(0)
    blocks = []
    for _ in range(args.layers):
        blocks += [torch.nn.Linear(HIDDEN, INTERMEDIATE), torch.nn.SiLU(), torch.nn.Linear(INTERMEDIATE, HIDDEN)]
    layers = torch.nn.Sequential(*blocks)
    x = torch.randn(args.tokens, HIDDEN)
    fp32 = step_seconds(layers, x, bf16=False, repeats=args.repeats)
    bf16 = step_seconds(layers, x, bf16=True, repeats=args.repeats)
    cpu = platform.processor() or platform.machine()
    print(f"cpu: {cpu}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"train_lora's CPU default here: {'bf16 autocast' if default_bf16(cuda=False) else 'fp32'}")
    print(f"fp32          {fp32 * 1000:9.1f} ms")
    print(f"bf16 autocast {bf16 * 1000:9.1f} ms")
    print(f"bf16 / fp32   {bf16 / fp32:9.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
