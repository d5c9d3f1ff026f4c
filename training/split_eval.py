"""Split the templated held-out cases into dev and test by question template (issue 24's protocol).

    python training/split_eval.py     # eval/cases.jsonl -> eval/templated_dev.jsonl + eval/templated_test.jsonl

Each intent and language holds out two question templates (``generate_data.EVAL_TEMPLATES``): cases written with
the first go to dev, with the second to test, so no template is in both and every intent is in both. Dev is for
every choice (mix, steps, learning rate); test is frozen (sha256 in tests/test_recipe.py) and only reported.
"""

from __future__ import annotations

import json
import sys

from generate_data import EVAL_TEMPLATES, ROOT, TEMPLATES, write_jsonl  # a sibling: run as a script

CASES = ROOT / "eval" / "cases.jsonl"
DEV, TEST = ROOT / "eval" / "templated_dev.jsonl", ROOT / "eval" / "templated_test.jsonl"


def template_side(template: str) -> str:
    """ "dev" or "test": which of its list's held-out templates this one is."""
    for by_lang in TEMPLATES.values():
        for items in by_lang.values():
            held = items[-EVAL_TEMPLATES:]
            if template in held:
                return "dev" if held.index(template) == 0 else "test"
    raise ValueError(f"not a held-out question template: {template!r}")


def split(cases: list[dict]) -> tuple[list[dict], list[dict]]:
    dev, test = [], []
    for case in cases:
        sides = {template_side(t) for t in case["templates"]}
        if len(sides) != 1:
            raise ValueError(f"case {case['id']} mixes dev and test templates")
        (dev if sides == {"dev"} else test).append(case)
    return dev, test


def main() -> int:
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]
    dev, test = split(cases)
    write_jsonl(DEV, dev)
    write_jsonl(TEST, test)
    print(f"{len(dev)} dev and {len(test)} test cases from {len(cases)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
