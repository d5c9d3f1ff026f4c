"""Train the tool router (agent/pharmacy/router.py): which tool the reply to a patient's message calls first,
or none, learned as one classification; chosen and reported on the dev sets (--test: the frozen test sets too,
reported once, never used for a choice).

    python training/router.py            # train, choose on dev, write the weights, print dev figures
    python training/router.py --test     # the same, and print the frozen test sets' figures

Data: the patient turns of the recipe's own training conversations (training/compose.py on generate_data.py's
training split, its mix and surface; a turn's label is the first tool its reply calls, or "none"), and the
patient-written messages of training/decisions/*.jsonl (helpers who had not read eval/ wrote them; cases as
eval's: "query" | "text" | "messages", "expected"). Dev: eval/{freetext,multiturn,templated}_dev.jsonl.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training"))

import textclass  # noqa: E402
from textclass import Head, as_shipped, save_weights, train_heads  # noqa: E402

from agent.pharmacy.router import LABELS, WEIGHTS, ToolRouter, route_text  # noqa: E402

POOLS = sorted((ROOT / "training" / "decisions").glob("*.jsonl"))
DEV = tuple(ROOT / "eval" / f"{name}_dev.jsonl" for name in ("freetext", "multiturn", "templated"))
TEST = tuple(ROOT / "eval" / f"{name}_test.jsonl" for name in ("freetext", "multiturn", "templated"))
CONVERSATIONS = 3000
# (epochs, Adam's lr, how many times each patient-written row is seen per epoch: they are fewer than the composed
# ones, and written as the held-out sets are)
GRID = [(epochs, lr, repeat) for epochs in (2, 4, 8) for lr in (0.005, 0.01, 0.02) for repeat in (1, 3)]


def read_cases(path: Path) -> list[dict]:
    return textclass.read_cases(path, _problem)


def _problem(case: dict) -> str | None:
    if not isinstance(case.get("expected"), list):
        return "a case needs an 'expected' list of calls"
    if not any(isinstance(case.get(k), (str, list)) for k in ("query", "text", "messages")):
        return "a case needs a 'query' or 'text' string or a 'messages' list"
    return None


def case_messages(case: dict) -> list[dict]:
    if isinstance(case.get("messages"), list):
        return case["messages"]
    return [{"role": "user", "content": case.get("query") or case.get("text")}]


def case_label(case: dict) -> str:
    calls = case["expected"]
    name = calls[0]["name"] if calls else "none"
    if name not in LABELS:
        raise ValueError(f"case {case.get('id')}: {name!r} is not a tool the router knows ({LABELS})")
    return name


def composed_rows(n: int = CONVERSATIONS, seed: int = 7) -> list[tuple[str, str]]:
    """(routed text, label) of every answered patient turn of n composed training conversations."""
    import generate_data as gd
    from compose import ComposedGenerator
    from recipe import load_recipe

    data = load_recipe(ROOT / "training" / "recipes" / "default.yaml")["data"]
    rng = random.Random(seed)
    gen = ComposedGenerator(rng, gd.build_names(), data["mix"], data["surface"])
    rows = []
    for _ in range(n):
        messages = [m for m in gd.conversation(gen, rng)["messages"] if m["role"] != "system"]
        for i, (m, reply) in enumerate(zip(messages, messages[1:], strict=False)):
            if m["role"] == "user" and reply["role"] == "assistant":
                calls = reply.get("tool_calls") or []
                rows.append((route_text(messages[: i + 1]), calls[0]["function"]["name"] if calls else "none"))
    return rows


def pool_rows() -> list[tuple[str, str]]:
    return [(route_text(case_messages(c)), case_label(c)) for path in POOLS for c in read_cases(path)]


def accuracy(router: ToolRouter, cases: list[dict]) -> dict:
    right, misses = 0, []
    for case in cases:
        got = router.route_messages(case_messages(case))
        if got.label == case_label(case):
            right += 1
        else:
            misses.append(f"{case['id']}:{case_label(case)}->{got.label}")
    return {"cases": len(cases), "accuracy": round(right / max(len(cases), 1), 4), "misses": misses}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--test", action="store_true", help="also report the frozen test sets (once, at the end)")
    p.add_argument("--out", type=Path, default=WEIGHTS)
    p.add_argument("--conversations", type=int, default=CONVERSATIONS)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    composed, written = composed_rows(args.conversations), pool_rows()
    dev = {path.stem: read_cases(path) for path in DEV}
    best = None
    for epochs, lr, repeat in GRID:
        rows = composed + written * repeat
        texts, labels = [t for t, _ in rows], [LABELS.index(y) for _, y in rows]
        learned = train_heads(texts, {"tool": Head(labels, len(LABELS), balanced=True)}, epochs, lr)
        weight, bias = learned["tool"]
        router = ToolRouter(as_shipped(weight), as_shipped(bias))
        figures = {name: accuracy(router, cases) for name, cases in dev.items()}
        # The patient-written sets weigh as much as the templated one.
        key = sum(f["accuracy"] for f in figures.values()) / len(figures)
        scores = ", ".join(f"{k} {f['accuracy']:.1%}" for k, f in figures.items())
        print(f"epochs={epochs} lr={lr:g} repeat={repeat}: {scores}")
        if best is None or key > best[0]:
            best = (key, epochs, lr, repeat, weight, bias, figures)
    _, epochs, lr, repeat, weight, bias, figures = best
    info = {
        "composed_rows": len(composed),
        "written_rows": len(written),
        "composed_conversations": args.conversations,
        "pools": [p.name for p in POOLS],
        "epochs": epochs,
        "lr": lr,
        "repeat": repeat,
        "dev": {k: {"cases": f["cases"], "accuracy": f["accuracy"]} for k, f in figures.items()},
    }
    save_weights({"weight": weight, "bias": bias}, args.out, {"labels": json.dumps(LABELS), "info": json.dumps(info)})
    print(f"chosen epochs={epochs} lr={lr:g} repeat={repeat}; {len(composed)} composed + {len(written)} written rows")
    for name, f in figures.items():
        print(f"dev {name} ({f['cases']}): {f['accuracy']:.1%}; misses {f['misses']}")
    if args.test:
        router = ToolRouter.load(args.out)
        for path in TEST:
            f = accuracy(router, read_cases(path))
            print(f"test {path.stem} ({f['cases']}): {f['accuracy']:.1%}; misses {f['misses']}")
    print(f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
