"""Check a pool of patient-written decisions (training/decisions/*.jsonl) before it trains anything.

    python training/check_pool.py training/decisions/decisions_d.jsonl [...]   # exit 1 when a row is refused

A row is {"id", "text" | "messages", "lang", "expected"}: helpers who have not read eval/ write the patient's
words and the calls the reply should make first. A row is refused, with its reason, when its shape is wrong, its id
is taken, its last patient message is one of an eval set's (the held-out sets stay unseen), or an expected call
fails when the pharmacy tools run it (an unknown tool or medicine, arguments the schema refuses). A condition the
tools do not recognise is reported, not refused: a patient may name one, and the call is still the right one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "training")]

from router import POOLS, case_messages  # noqa: E402  (the pools the router and the recipe read)

LANGS = ("tr", "en")


def last_patient_text(row: dict) -> str:
    """The last user message of a row (a case of eval/ or of a pool), lower case, spaces collapsed."""
    messages = case_messages(row)  # content None where a row has no text: read as empty
    text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    return re.sub(r"\s+", " ", text.casefold()).strip()


def eval_texts() -> set[str]:
    """The last patient message of every case of every eval set (eval/*.jsonl)."""
    out = set()
    for path in sorted((ROOT / "eval").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.add(last_patient_text(json.loads(line)))
    return out


def shape_problem(row: object) -> str | None:
    """Why a row is not a pool row, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if not isinstance(row.get("id"), str) or not row["id"]:
        return "no 'id' string"
    if row.get("lang") not in LANGS:
        return f"'lang' is {row.get('lang')!r}, expected one of {LANGS}"
    if ("text" in row) == ("messages" in row):
        return "exactly one of 'text' and 'messages' is needed"
    if "text" in row and (not isinstance(row["text"], str) or not row["text"].strip()):
        return "'text' is empty or not a string"
    if "messages" in row:
        messages = row["messages"]
        if not isinstance(messages, list) or len(messages) < 3 or len(messages) % 2 == 0:
            return "'messages' must be user, assistant, ..., user (an odd number, at least three)"
        for i, m in enumerate(messages):
            role = "user" if i % 2 == 0 else "assistant"
            if not isinstance(m, dict) or m.get("role") != role or not str(m.get("content") or "").strip():
                return f"message {i} must be a non-empty {role} message"
    calls = row.get("expected")
    if not isinstance(calls, list):
        return "no 'expected' list"
    for call in calls:
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments"), dict)
        ):
            return f"an expected call is not {{'name', 'arguments'}}: {call!r}"
    return None


def call_problems(toolbox, call: dict) -> tuple[str | None, list[str]]:
    """(why the tools refuse the call, or None; notes on what they did not recognise)."""
    result = toolbox.call(call["name"], call["arguments"])
    if "error" in result:
        return f"{call['name']}: {result['error']['message']}", []
    if result.get("unknown"):
        return f"{call['name']}: unknown {[u['name'] for u in result['unknown']]}", []
    notes = [r["factor"] for r in result.get("reasons", []) if isinstance(r, dict) and r.get("level") == "unknown"]
    return None, [f"{call['name']}: condition not recognised: {n}" for n in notes]


def check(paths: list[Path]) -> tuple[list[str], list[str]]:
    """(refusals, notes) for every row of paths; ids are checked against every pool of training/decisions/ too."""
    from agent.engine.toolbox import Toolbox
    from agent.pharmacy import PHARMACY_TOOLS

    toolbox = Toolbox(PHARMACY_TOOLS, repeat_limit=None)
    held_out = eval_texts()
    ids: dict[str, str] = {}
    for pool in POOLS:
        if pool.resolve() in {p.resolve() for p in paths}:
            continue
        for line in pool.read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids[json.loads(line)["id"]] = pool.name
    refused, notes = [], []
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.name}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                refused.append(f"{where}: not JSON ({e})")
                continue
            if (problem := shape_problem(row)) is not None:
                refused.append(f"{where}: {problem}")
                continue
            if row["id"] in ids:
                refused.append(f"{where}: id {row['id']} is taken ({ids[row['id']]})")
                continue
            ids[row["id"]] = path.name
            if last_patient_text(row) in held_out:
                refused.append(f"{where} {row['id']}: its last message is an eval case's")
                continue
            for call in row["expected"]:
                problem, more = call_problems(toolbox, call)
                notes += [f"{where} {row['id']}: {m}" for m in more]
                if problem is not None:
                    refused.append(f"{where} {row['id']}: {problem}")
                    break
    return refused, notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pools", nargs="+", type=Path, help="pool files (JSONL)")
    args = p.parse_args(argv)
    refused, notes = check(args.pools)
    for line in notes:
        print(f"note: {line}")
    for line in refused:
        print(f"refused: {line}")
    print(f"{len(refused)} refused, {len(notes)} notes", file=sys.stderr)
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())
