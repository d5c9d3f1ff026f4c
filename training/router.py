"""Train the tool router (agent/pharmacy/router.py): which tool the reply to a patient's message calls first,
or none, learned as one classification; chosen and reported on the dev sets (--test: the frozen test sets too,
reported once, never used for a choice).

    python training/router.py            # train, choose on dev, write the weights, print dev figures
    python training/router.py --test     # the same, and print the frozen test sets' figures

Data: the patient turns of the recipe's own training conversations (training/compose.py on generate_data.py's
training split, its mix and surface; a turn's label is the first tool its reply calls, or "none"), and the
patient-written messages of training/decisions/*.jsonl (helpers who had not read eval/ wrote them; cases as
eval's: "query" | "text" | "messages", "expected"). Dev: eval/{freetext,multiturn,templated}_dev.jsonl and the
patient-written eval/{freetext,multiturn}_dev_b.jsonl.
After the tool head, a head per enum argument of the tools' schemas (get_drug_info's section) learns from the
rows whose first call is to its tool.
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

from agent.pharmacy.router import LABELS, WEIGHTS, ArgumentHead, ToolRouter, enum_arguments, route_text  # noqa: E402

POOLS = sorted((ROOT / "training" / "decisions").glob("*.jsonl"))
DEV = tuple(
    ROOT / "eval" / f"{name}.jsonl"
    for name in ("freetext_dev", "multiturn_dev", "templated_dev", "freetext_dev_b", "multiturn_dev_b")
)
TEST = tuple(ROOT / "eval" / f"{name}_test.jsonl" for name in ("freetext", "multiturn", "templated"))
CONVERSATIONS = 3000
# (epochs, Adam's lr, how many times each patient-written row is seen per epoch: they are fewer than the composed
# ones, and written as the held-out sets are)
GRID = [(epochs, lr, repeat) for epochs in (2, 4, 8) for lr in (0.005, 0.01, 0.02) for repeat in (1, 3)]
# The argument heads (get_drug_info's section) learn from far fewer rows: their own grid, chosen on dev.
ARGUMENT_GRID = [(epochs, lr, repeat) for epochs in (4, 8) for lr in (0.01, 0.02) for repeat in (1, 3)]

Row = tuple[str, str, dict]  # (routed text, label, the first call's arguments)


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


def composed_rows(n: int = CONVERSATIONS, seed: int = 7) -> list[Row]:
    """(routed text, label, arguments) of every answered patient turn of n composed training conversations."""
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
                first = calls[0]["function"] if calls else {"name": "none", "arguments": {}}
                arguments = first["arguments"]
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                rows.append((route_text(messages[: i + 1]), first["name"], arguments))
    return rows


def pool_rows() -> list[Row]:
    return [
        (route_text(case_messages(c)), case_label(c), c["expected"][0]["arguments"] if c["expected"] else {})
        for path in POOLS
        for c in read_cases(path)
    ]


def argument_heads(rows: list[Row], epochs: int, lr: float) -> tuple[ArgumentHead, ...]:
    """A head per enum argument of the tools' schemas (`enum_arguments`), learned on the rows whose first call is
    to that tool and sets it, over the values those rows use."""
    heads = []
    for tool, enums in enum_arguments().items():
        for argument, allowed in enums.items():
            labelled = [
                (text, args[argument]) for text, label, args in rows if label == tool and args.get(argument) in allowed
            ]
            values = tuple(v for v in allowed if any(v == x for _, x in labelled))
            if len(values) < 2:
                continue
            y = [values.index(x) for _, x in labelled]
            learned = train_heads([t for t, _ in labelled], {"arg": Head(y, len(values), balanced=True)}, epochs, lr)
            weight, bias = learned["arg"]
            heads.append(ArgumentHead(tool, argument, values, as_shipped(weight), as_shipped(bias)))
    return tuple(heads)


def accuracy(router: ToolRouter, cases: list[dict]) -> dict:
    """The first tool chosen right; and per argument head, of the cases whose first call is to its tool, the
    tool and that argument chosen right."""
    right, misses = 0, []
    arguments: dict[str, list[int]] = {}
    for case in cases:
        got = router.route_messages(case_messages(case))
        if got.label == case_label(case):
            right += 1
        else:
            misses.append(f"{case['id']}:{case_label(case)}->{got.label}")
        for head in router.heads:
            if case_label(case) == head.tool:
                expected = case["expected"][0]["arguments"].get(head.argument)
                tally = arguments.setdefault(head.key, [0, 0])
                tally[0] += got.arguments.get(head.argument) == expected
                tally[1] += 1
    return {
        "cases": len(cases),
        "accuracy": round(right / max(len(cases), 1), 4),
        "arguments": {k: {"cases": n, "accuracy": round(r / n, 4)} for k, (r, n) in arguments.items()},
        "misses": misses,
    }


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
        texts, labels = [t for t, _, _ in rows], [LABELS.index(y) for _, y, _ in rows]
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
    best_args = None
    for a_epochs, a_lr, a_repeat in ARGUMENT_GRID:
        router = ToolRouter(
            as_shipped(weight), as_shipped(bias), 0.0, argument_heads(composed + written * a_repeat, a_epochs, a_lr)
        )
        a_figures = {name: accuracy(router, cases) for name, cases in dev.items()}
        per_set = [a["accuracy"] for f in a_figures.values() for a in f["arguments"].values()]
        key = sum(per_set) / max(len(per_set), 1)
        print(
            f"arguments: epochs={a_epochs} lr={a_lr:g} repeat={a_repeat}: "
            + ", ".join(
                f"{name} {k} {a['accuracy']:.1%} of {a['cases']}"
                for name, f in a_figures.items()
                for k, a in f["arguments"].items()
            )
        )
        if best_args is None or key > best_args[0]:
            best_args = (key, (a_epochs, a_lr, a_repeat), router.heads, a_figures)
    _, argument_values, heads, figures = best_args
    info = {
        "composed_rows": len(composed),
        "written_rows": len(written),
        "composed_conversations": args.conversations,
        "pools": [p.name for p in POOLS],
        "epochs": epochs,
        "lr": lr,
        "repeat": repeat,
        "arguments_epochs_lr_repeat": list(argument_values),
        "dev": {k: {key: f[key] for key in ("cases", "accuracy", "arguments")} for k, f in figures.items()},
    }
    tensors = {"weight": weight, "bias": bias}
    for head in heads:
        tensors[f"{head.key}.weight"], tensors[f"{head.key}.bias"] = head.weight, head.bias
    metadata = {
        "labels": json.dumps(LABELS),
        "arguments": json.dumps({head.key: list(head.values) for head in heads}),
        "info": json.dumps(info),
    }
    save_weights(tensors, args.out, metadata)
    print(f"chosen epochs={epochs} lr={lr:g} repeat={repeat}; {len(composed)} composed + {len(written)} written rows")
    print(f"argument heads: epochs, lr, repeat = {argument_values}")
    for name, f in figures.items():
        print(f"dev {name} ({f['cases']}): {f['accuracy']:.1%}, arguments {f['arguments']}; misses {f['misses']}")
    if args.test:
        router = ToolRouter.load(args.out)
        for path in TEST:
            f = accuracy(router, read_cases(path))
            line = f"{f['accuracy']:.1%}, arguments {f['arguments']}; misses {f['misses']}"
            print(f"test {path.stem} ({f['cases']}): {line}")
    print(f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
