"""Parse time of a reply per KB at 1, 10 and 100 KB: it must grow linearly with the reply's length.

The worst case for the PPSF response template is a block whose every line is an escaped marker (each one
closes and reopens the block). Measured the way the agent parses (`agent.ppsf.parse_reply`: pieces of
PARSE_PIECE characters, as a token stream arrives) and, for comparison, fed whole to transformers'
`parse_response`. Prints ms per KB side by side and the ratio of the largest to the smallest (target <= 2).

    .venv/bin/python bench/parse_speed.py
"""

from __future__ import annotations

import argparse
import time

from agent.ppsf import load_tokenizer, parse_reply

PREFIX = "@FORMAT PPSF/1.0\n\n@PATIENT\nParol ne işe yarar?\n\n"
SIZES_KB = (1, 10, 100)


def reply(kb: int, marker: str) -> str:
    """A reply of about kb KB: marker, then lines that each start with an escaped marker."""
    lines, size, i = [], 0, 0
    while size < kb * 1024:
        line = f"\\@TOOL_CALL line {i} of a hostile reply"
        lines.append(line)
        size, i = size + len(line) + 1, i + 1
    return marker + "\n" + "\n".join(lines)


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-whole", action="store_true", help="do not time parse_response fed whole")
    args = parser.parse_args(argv)
    tokenizer = load_tokenizer()
    print(f"{'block':<12} {'KB':>4} {'agent ms/KB':>12} {'whole ms/KB':>12}")
    for marker in ("@PHARMACIST", "@THOUGHT"):
        per_kb = []
        for kb in SIZES_KB:
            text = reply(kb, marker)
            agent = best_of(args.repeats, lambda t=text: parse_reply(tokenizer, t, PREFIX)) * 1000 / kb
            per_kb.append(agent)
            whole = "-"
            if not args.skip_whole:
                seconds = best_of(1, lambda t=text: tokenizer.parse_response(t, prefix=PREFIX))
                whole = f"{seconds * 1000 / kb:.3f}"
            print(f"{marker:<12} {kb:>4} {agent:>12.3f} {whole:>12}")
        ratio = max(per_kb) / min(per_kb)
        verdict = "met" if ratio <= 2 else "NOT met"
        print(f"{marker:<12} largest / smallest ms per KB: {ratio:.2f} (target <= 2: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
