"""Split the templated held-out cases into dev and test by question template (issue 24's protocol).

    python training/split_eval.py     # eval/cases.jsonl -> eval/templated_dev.jsonl + eval/templated_test.jsonl

Each intent and language holds out two question templates (``generate_data.EVAL_TEMPLATES``): cases written with
the first go to dev, with the second to test, so no template is in both and every intent is in both. Dev is for
every choice (mix, steps, learning rate); test is frozen (sha256 in tests/test_recipe.py) and only reported.

eval/cases.jsonl keeps the key facts the tools stated when it was written (the committed results are scored on
them); 29 of them are no longer what the tools say ("no known interaction in this database" is now "not in the
reference", an implausible weight is referred before the 5 kg floor...). The split's cases carry the key facts
of today's tools: ``generate_data``'s answer for the expected calls' results, as a training answer states it.
"""

from __future__ import annotations

import json
import re
import sys

import generate_data as gd  # a sibling: run as a script
from generate_data import EVAL_TEMPLATES, ROOT, TEMPLATES, write_jsonl

from agent.pharmacy import answers  # the phrasebook: key facts are what the agent's answers state

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


def _run(name: str, lang: str, **arguments) -> dict:
    return gd.TOOLS_BY_NAME[name](**arguments, language=lang)


def _names(template: str, query: str) -> dict[str, str]:
    """The names a template's {a}/{b}/{d} took in query (the question may lose its final stop or first capital)."""
    pattern = re.escape(template.rstrip("?.!")).replace(r"\{a\}", "(?P<a>.+?)").replace(r"\{b\}", "(?P<b>.+?)")
    match = re.fullmatch(pattern.replace(r"\{d\}", "(?P<d>.+?)") + r"[?.!]?", query, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"{query!r} is not written with {template!r}")
    return match.groupdict()


def key_facts(case: dict) -> list[str]:
    """The case's key facts as today's tools state them (the generator's answer for the expected calls)."""
    intent, lang, calls = case["intent"], case["lang"], case["expected"]
    if not calls:
        return case["must_mention"]  # no call: the facts are the answer's own (a reference note)
    first = calls[0]["arguments"]
    results = [_run(c["name"], lang, **c["arguments"]) for c in calls]
    asked = first.get("drug", "")
    if intent in ("usage", "ingredient", "ambiguous_drug", "unknown_drug", "multi_step"):
        if "error" in results[0]:
            facts = answers.error_answer(results[0], lang, asked)[1]
        else:
            facts = answers.search_answer(results[0], lang, asked, ingredient_first=intent == "ingredient")[1]
        if intent == "multi_step":  # its second step checks the pair the question names
            names = _names(case["templates"][0], case["query"])
            pair = _run("check_interactions", lang, drugs=[names["a"], names["b"]])
            facts = facts + answers.interaction_answer(pair, lang)[1]
        return facts
    answer = {
        "section": lambda: answers.section_answer(results[0], lang, asked, first["section"]),
        "interaction": lambda: answers.interaction_answer(results[0], lang),
        "dose": lambda: answers.dose_answer(results[0], lang, asked),
        "dose_refer": lambda: answers.dose_answer(results[0], lang, asked),
        "alternatives": lambda: answers.alternatives_answer(results[0], lang, asked),
        "contraindication": lambda: answers.contra_answer(results[0], lang, asked),
        "parallel": lambda: (
            "",
            answers.search_answer(results[0], lang, asked)[1]
            + answers.search_answer(results[1], lang, calls[1]["arguments"]["drug"])[1],
        ),
    }
    return answer[intent]()[1]


def split(cases: list[dict]) -> tuple[list[dict], list[dict]]:
    """(dev, test), each case with today's key facts."""
    dev, test = [], []
    for case in cases:
        case = {**case, "must_mention": key_facts(case)}
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
