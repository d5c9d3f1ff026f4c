"""How often the drug tools suggest a medicine for what is no medicine, and for a real name typed wrong.

A name the tools cannot read gets "did you mean ...?" suggestions: names scoring at least SUGGEST_SCORE
(agent/pharmacy/drugdb.py) against it. Too low a bar offers unrelated medicines for ordinary words and for
medicines the data lacks; too high a bar leaves a misspelt name without its own. This prints, per bar, the
share of both, measured on:

- ordinary words: each word (4+ letters) and each pair of words of the dev questions
  (eval/freetext_dev.jsonl; never the test set) that the tools do not read as a medicine;
- typos: 200 names of the data (6+ letters, one word) with two letters replaced at random (seeded), those the
  typo rule does not correct.

    python scripts/suggestion_scores.py
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from rapidfuzz import fuzz, process

from agent.pharmacy.drugdb import MIN_FUZZY_LEN, SUGGEST_SCORE, load_db
from agent.pharmacy.text import fold, squash

ROOT = Path(__file__).resolve().parent.parent
BARS = (55, 60, 65, 70, 75, 80)


def best_score(db, text: str) -> float:
    """The highest score any name of the data reaches against text, as DrugDB._candidates scores."""
    key = fold(text)
    whole = process.extractOne(squash(key), db._squashed, scorer=fuzz.ratio)
    partial = process.extractOne(key, db._keys, scorer=fuzz.WRatio) if len(squash(key)) >= MIN_FUZZY_LEN else None
    return max(whole[1] if whole else 0.0, partial[1] if partial else 0.0)


def ordinary_words(db) -> list[str]:
    """Words and word pairs of the dev questions that are not read as a medicine."""
    spans: set[str] = set()
    for line in (ROOT / "eval" / "freetext_dev.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        messages = case.get("messages") or [{"role": "user", "content": case["query"]}]
        words = re.findall(r"\w+", " ".join(m["content"] for m in messages if m["role"] == "user"))
        spans.update(w for w in words if len(w) >= 4)
        spans.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False) if len(a) >= 3)
    return sorted(s for s in spans if db.resolve(s).status != "found")


def typos(db, n: int = 200, seed: int = 0) -> list[str]:
    """Names with two letters (not the first) replaced, those the tools do not correct."""
    rng = random.Random(seed)
    names = sorted({k for k in db._keys if " " not in k and len(k) >= 6})
    out = []
    for name in rng.sample(names, n):
        letters = list(name)
        for _ in range(2):
            letters[rng.randrange(1, len(letters))] = rng.choice("abcdefghijklmnoprstuvyz")
        typo = "".join(letters)
        if db.resolve(typo).status != "found":
            out.append(typo)
    return out


def main() -> None:
    db = load_db()
    words, typed = ordinary_words(db), typos(db)
    word_scores = [best_score(db, w) for w in words]
    typo_scores = [best_score(db, t) for t in typed]
    print(f"{len(words)} ordinary words and pairs, {len(typed)} uncorrected typos; SUGGEST_SCORE = {SUGGEST_SCORE}")
    print("| bar | ordinary words given a suggestion | typos given a suggestion |")
    print("|---:|---:|---:|")
    for bar in BARS:
        share = [sum(s >= bar for s in scores) / len(scores) for scores in (word_scores, typo_scores)]
        print(f"| {bar} | {share[0]:.0%} | {share[1]:.0%} |")


if __name__ == "__main__":
    main()
