"""What checking a prompt-lookup draft costs: one forward pass over k new ids (logits for every row, as the draft
check needs them) against k passes of one id, on each local engine, on top of a 1,000-token context.

A draft of k ids pays only when the ids the model agrees with outweigh the batch's extra cost, so the ratio
printed here decides each engine's `draft_tokens` (docs/engines.md). Nothing is asserted.

    .venv/bin/python bench/batch_cost.py                   # torch (tuned model, fp32) and llama.cpp (its q8_0 GGUF)
    .venv/bin/python bench/batch_cost.py --engines llamacpp --sizes 1,2,4,8,16,32
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when run as a script

CONTEXT = 1000  # about the agent's system prompt and tools block


def batch_ms(generator, size: int, repeats: int) -> float:
    """Median ms of one _forward_rows over `size` ids on top of the same cached context."""
    context = generator._cached_ids[:CONTEXT]
    times = []
    for _ in range(repeats):
        generator._crop(CONTEXT)
        ids = [(7 * i + 1000) % 40000 + 100 for i in range(size)]
        start = time.perf_counter()
        generator._forward_rows(ids)
        times.append((time.perf_counter() - start) * 1000)
    generator._crop(len(context))
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engines", default="torch,llamacpp", help="comma-separated: torch, llamacpp")
    p.add_argument("--sizes", default="1,2,4,8", help="draft batch sizes (ids per forward pass)")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--threads", type=int, help="CPU threads (default: the usable cores not busy)")
    p.add_argument("--gguf", type=Path, action="append", help="llama.cpp's GGUF (repeatable; default: the q8_0 export)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    import torch

    from agent.engine.backends import BackendOptions, build_backend
    from agent.engine.threads import choose_threads

    threads = choose_threads(args.threads)
    torch.set_num_threads(threads)
    generators = {}
    for engine in args.engines.split(","):
        # Only forward passes are timed: no prefix state is read or written.
        if engine == "torch":
            options = BackendOptions(device="cpu", dtype="float32", threads=threads, prefix_store=False)
            generators["torch fp32"] = build_backend(options).generator
        elif engine == "llamacpp":
            from agent.export import default_gguf

            for gguf in args.gguf or [default_gguf()]:
                options = BackendOptions(backend="llamacpp", gguf=gguf, threads=threads, prefix_store=False)
                generators[f"llama.cpp {gguf.stem}"] = build_backend(options).generator
        else:
            p.error(f"unknown engine {engine!r}: torch or llamacpp")
    print(f"{threads} threads; context {CONTEXT} ids; median of {args.repeats}\n")
    print("| engine | " + " | ".join(f"{k} ids ms (x one id)" for k in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    with torch.inference_mode():
        for name, generator in generators.items():
            generator.reset()
            generator._cache = generator._new_cache()
            generator._prefill([(11 * i) % 40000 + 100 for i in range(CONTEXT)], 0)
            one = batch_ms(generator, 1, args.repeats)
            cells = [f"{ms:.1f} ({ms / one:.2f}x)" for ms in (batch_ms(generator, k, args.repeats) for k in sizes)]
            print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
