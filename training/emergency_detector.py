"""Train the emergency detector (agent/pharmacy/emergency.py) and report it on the dev set (--test: the
frozen test sets, reported once, never used for a choice).

    python training/emergency_detector.py            # train, choose on dev, write the weights, print dev figures
    python training/emergency_detector.py --test     # the same, and print the frozen test sets' figures

Data: training/emergency/*.jsonl (patient-written wordings; helpers who had not seen the detector wrote them),
every eval/emergency_dev*.jsonl for every choice (epochs, the learning rate, the threshold, the features),
eval/emergency_test.jsonl and eval/emergency_test_b.jsonl frozen by hash (tests/test_triage.py). A case is
{"id", "text" | "messages", "label", "lang"}; a conversation's label holds at its last message, and an intent
stated earlier holds for the rest of it, so a conversation is read as its user messages together (and each alone,
for the turn that states it). The threshold is set so that each dev file, at a threshold chosen on the others,
keeps recall at TARGET_RECALL (`threshold_for_new_writers`): the recall a writer it never saw gets.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.pharmacy.emergency import LABELS, LANGUAGES, WEIGHTS, EmergencyDetector  # noqa: E402
from agent.pharmacy.textclass import distinct_features  # noqa: E402
from agent.pharmacy.triage import held_readings  # noqa: E402

sys.path.insert(0, str(ROOT / "training"))

import router  # noqa: E402  (its pools and the agent's dev sets)
import textclass  # noqa: E402
from textclass import BATCH, Head, as_shipped, save_weights, train_heads  # noqa: E402

TRAIN = sorted((ROOT / "training" / "emergency").glob("*.jsonl"))
# The dev set: the first dev set and every test set before the current one (each reported once while a detector
# was made, and so dev data since); eval/emergency_test.jsonl is the newest, written by helpers who had not seen the
# detector and frozen (tests/test_triage.py) before the detector was trained with the pools written with it.
DEV = tuple(sorted((ROOT / "eval").glob("emergency_dev*.jsonl")))
TEST = ROOT / "eval" / "emergency_test.jsonl"
# The eighth set: written after the detector it first scored (pools x and y) was trained, to read that one on
# writers it had never met (the seventh had been read for it); frozen by hash too.
TEST_B = ROOT / "eval" / "emergency_test_b.jsonl"
# Recall first: 98 % of the emergencies, on writers the threshold never saw (the target). What it costs in
# false alarms is printed per grid point and, for the shipped weights, in docs/security.md (tests/test_triage.py).
TARGET_RECALL = 0.98
# Ordinary pharmacy questions: the patient messages of the recipe's own training conversations (what the model
# is taught to look up) and every other patient-written message of the router's pools that needs a tool call
# (training/decisions/: chosen on dev, it halved the false alarms on the other half) are ordinary ones to learn
# from; the cases of the agent's dev sets (router.DEV: free-text, templated, multi-turn and the patient-written
# dev_b sets) that need a tool call and that other half measure the false alarms of everyday traffic (dev sets:
# for choices), read as the agent holds a conversation's intent (each message alone and all together:
# triage.held_readings), since a context message ("it's been 3 days now") read alone and taken for an emergency
# refuses the rest of it.
ORDINARY_TRAIN = 1500
# The router's pools the shipped detector learned from and measures on: a pool added for the router reaches the
# detector only where it is named here (pools i-l were tried: docs/security.md, not kept).
ORDINARY_POOLS = tuple(f"decisions_{x}.jsonl" for x in "abcdefgh")
GRID = [(epochs, lr) for epochs in (3, 4, 6) for lr in (0.005, 0.01, 0.02)]  # (epochs, Adam's lr)


def read_cases(path: Path) -> list[dict]:
    return textclass.read_cases(path, _problem)


def _problem(case: dict) -> str | None:
    if case.get("label") not in LABELS:
        return f"label must be one of {LABELS}, got {case.get('label')!r}"
    if not isinstance(case.get("text"), str) and not isinstance(case.get("messages"), list):
        return "a case needs a 'text' string or a 'messages' list"
    return None


def read_dev() -> list[dict]:
    """The dev cases, every dev file together."""
    return [case for path in DEV for case in read_cases(path)]


def user_texts(case: dict) -> list[str]:
    if isinstance(case.get("text"), str):
        return [case["text"]]
    return [m["content"] for m in case["messages"] if m.get("role") == "user" and isinstance(m.get("content"), str)]


def examples(cases: list[dict]) -> list[tuple[str, int, int]]:
    """(text, label index, language index) to learn from: a conversation as its user messages together, and
    each of its messages alone when nothing in it is an emergency."""
    out = []
    for case in cases:
        texts, label = user_texts(case), LABELS.index(case["label"])
        lang = LANGUAGES.index(case["lang"]) if case.get("lang") in LANGUAGES else 0
        out.append(("\n".join(texts), label, lang))
        if len(texts) > 1 and label == 0:
            out += [(t, 0, lang) for t in texts]
    return out


def ordinary_messages(n: int = ORDINARY_TRAIN, seed: int = 11) -> list[dict]:
    """n patient messages of the recipe's training conversations (its mix and surface), as "none" cases; the
    exchanges the data answers with its refusal (a lethal amount asked) are left out."""
    import random

    import generate_data as gd
    from compose import ComposedGenerator
    from recipe import load_recipe

    from agent.pharmacy.answers import REFUSAL_ANSWER

    data = load_recipe(ROOT / "training" / "recipes" / "default.yaml")["data"]
    rng = random.Random(seed)
    gen = ComposedGenerator(rng, gd.build_names(), data["mix"], data["surface"])
    refusals = set(REFUSAL_ANSWER.values())
    out: list[dict] = []
    while len(out) < n:
        messages = gd.conversation(gen, rng)["messages"]
        for m, after in zip(messages, messages[1:], strict=False):
            if m["role"] == "user" and isinstance(m.get("content"), str) and after.get("content") not in refusals:
                out.append({"id": f"ORD-{len(out)}", "text": m["content"], "label": "none"})
    return out[:n]


def written_ordinary() -> tuple[list[dict], list[dict]]:
    """The patient-written messages of the router's pools named in ORDINARY_POOLS that need a tool call, as
    ordinary ("none") cases, alternately: (to learn from, to measure)."""
    pools = [path for path in router.POOLS if path.name in ORDINARY_POOLS]
    if missing := set(ORDINARY_POOLS) - {path.name for path in pools}:
        raise FileNotFoundError(f"ORDINARY_POOLS: no such pool in training/decisions/: {', '.join(sorted(missing))}")
    cases = [
        {"id": c.get("id"), "messages": router.case_messages(c), "label": "none"}
        for path in pools
        for c in router.read_cases(path)
        if c["expected"]
    ]
    return cases[0::2], cases[1::2]


def ordinary_dev() -> list[dict]:
    """The dev cases of the agent's own evaluation that need a tool call and the measured half of
    `written_ordinary`, as ordinary ("none") cases."""
    cases = list(written_ordinary()[1])
    for path in router.DEV:
        for case in router.read_cases(path):
            if case["expected"]:
                cases.append(
                    {"id": f"{path.stem}-{case['id']}", "messages": router.case_messages(case), "label": "none"}
                )
    return cases


def held_false_alarms(det: EmergencyDetector, cases: list[dict]) -> tuple[float, list[str]]:
    """(share, ids) of ordinary cases in which the agent would hold an emergency (triage.held_readings)."""
    ids = [c["id"] for c in cases if any(r.label != "none" for r in held_readings(user_texts(c), det.read))]
    return round(len(ids) / max(len(cases), 1), 4), ids


def train(rows: list[tuple[str, int, int]], epochs: int, lr: float, seed: int = 0) -> dict:
    """The label and language heads (training/textclass.py); each label weighs alike in the loss (it ranks
    emergencies better on dev than the data's own mix), and the threshold, chosen on dev, trades recall for
    false alarms."""
    heads = {
        "label": Head([y for _, y, _ in rows], len(LABELS), balanced=True),
        "lang": Head([g for _, _, g in rows], len(LANGUAGES)),
    }
    learned = train_heads([t for t, _, _ in rows], heads, epochs, lr, seed, BATCH, distinct_features)
    (label_w, label_b), (lang_w, lang_b) = learned["label"], learned["lang"]
    return {"label_w": label_w, "label_b": label_b, "lang_w": lang_w, "lang_b": lang_b}


def conversation_score(det: EmergencyDetector, case: dict) -> tuple[float, str, str]:
    """(emergency score, label, language) of a case as the agent reads a conversation: its latest message,
    or the strongest of its user messages together (an intent stated earlier holds)."""
    texts = user_texts(case)
    readings = [det.read(texts[-1])] + ([det.read("\n".join(texts))] if len(texts) > 1 else [])
    best = max(readings, key=lambda r: r.score)
    return best.score, best.label, readings[0].language


def figures(det: EmergencyDetector, cases: list[dict]) -> dict:
    """Recall (emergency or misuse recognised as one), false alarms (an ordinary message taken for one), the
    class right among the recognised, and the language read right."""
    hits = alarms = right_class = right_lang = positives = negatives = 0
    missed, false = [], []
    for case in cases:
        _, label, lang = conversation_score(det, case)
        if case.get("lang") in LANGUAGES:
            right_lang += lang == case["lang"]
        if case["label"] == "none":
            negatives += 1
            if label != "none":
                alarms += 1
                false.append(case["id"])
        else:
            positives += 1
            if label != "none":
                hits += 1
                right_class += label == case["label"]
            else:
                missed.append(case["id"])
    return {
        "cases": len(cases),
        "recall": round(hits / max(positives, 1), 4),
        "false_alarms": round(alarms / max(negatives, 1), 4),
        "class_right": round(right_class / max(hits, 1), 4),
        "language_right": round(right_lang / max(len(cases), 1), 4),
        "missed": missed,
        "false_alarm_ids": false,
    }


def pick_threshold(det: EmergencyDetector, cases: list[dict], target: float) -> float:
    """The highest threshold at which recall on cases, as `figures` reads them, is >= target (det unchanged):
    just under the score of the k-th best-scored emergency, k the fewest hits the target needs."""
    kept, det.threshold = det.threshold, 0.0
    positives = [c for c in cases if c["label"] != "none"]
    # At threshold 0 a case is flagged unless it holds no word to act on; such a case is never a hit.
    scored = [conversation_score(det, c) for c in positives]
    readable = sorted((score for score, label, _ in scored if label != "none"), reverse=True)
    det.threshold = kept
    need = math.ceil(target * len(positives) - 1e-9)
    if need == 0:
        return 1.0
    if need > len(readable):
        return 0.0
    return max(readable[need - 1] - 1e-6, 0.0)


def held_out_by_file(det: EmergencyDetector, target: float) -> tuple[float, float]:
    """(recall, false alarms) over every dev file, each scored at the threshold chosen on the other files: the
    threshold on writers it never saw (det unchanged)."""
    files = {path.stem: read_cases(path) for path in DEV}
    kept, hits, alarms, positives, negatives = det.threshold, 0, 0, 0, 0
    for name, cases in files.items():
        det.threshold = pick_threshold(det, [c for n, v in files.items() if n != name for c in v], target)
        f = figures(det, cases)
        pos = sum(c["label"] != "none" for c in cases)
        hits += pos - len(f["missed"])
        alarms += len(f["false_alarm_ids"])
        positives, negatives = positives + pos, negatives + len(cases) - pos
    det.threshold = kept
    return hits / positives, alarms / negatives


# The in-sample recall targets the threshold may be set for, lowest first: the threshold is set for the first at
# which each dev file, at a threshold chosen on the others, reaches TARGET_RECALL (what a writer the threshold
# never saw gets), not merely for TARGET_RECALL on the dev set it was chosen on.
SET_FOR = (0.98, 0.985, 0.99, 0.995)


def threshold_for_new_writers(det: EmergencyDetector, dev: list[dict], target: float) -> tuple[float, float]:
    """(threshold, recall on writers it never saw): the threshold at the first of SET_FOR at which
    `held_out_by_file` recall reaches target, else at the last (det unchanged)."""
    for goal in SET_FOR:
        recall, _ = held_out_by_file(det, goal)
        if recall >= target:
            break
    return pick_threshold(det, dev, goal), recall


def save(weights: dict, threshold: float, path: Path, info: dict) -> None:
    save_weights(
        weights, path, {"threshold": f"{threshold:.6f}", "info": json.dumps(info)}
    )  # float16: scores agree to 1e-3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--test", action="store_true", help="also report the frozen test set (once, at the end)")
    p.add_argument("--out", type=Path, default=WEIGHTS)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    train_cases = [c for path in TRAIN for c in read_cases(path)]
    dev, everyday = read_dev(), ordinary_dev()
    rows = examples(train_cases + ordinary_messages() + written_ordinary()[0])
    best = None
    for epochs, lr in GRID:
        weights = train(rows, epochs, lr)
        det = EmergencyDetector(_weights(weights), 0.5)
        det.threshold, unseen = threshold_for_new_writers(det, dev, TARGET_RECALL)
        dev_figures = figures(det, dev)
        print(f"epochs={epochs} lr={lr:g}: threshold {det.threshold:.3f} dev {_line(dev_figures)}")
        print(f"    recall on writers the threshold never saw: {unseen:.1%}")
        # Chosen by the false alarms at 95 % recall too: at 98 % a few dev cases decide alone.
        det95 = EmergencyDetector(_weights(weights), pick_threshold(det, dev, 0.95))
        fa95 = figures(det95, dev)["false_alarms"]
        dev_figures["everyday_false_alarms"], dev_figures["everyday_false_alarm_ids"] = held_false_alarms(det, everyday)
        print(
            f"    false alarms at 95 % recall: {fa95:.1%}; on everyday dev questions {_everyday(dev_figures, everyday)}"
        )
        dev_figures["recall_unseen_writers"] = round(unseen, 4)
        key = (
            unseen >= TARGET_RECALL,
            -(dev_figures["false_alarms"] + fa95 + dev_figures["everyday_false_alarms"]),
            unseen,
        )
        if best is None or key > best[0]:
            best = (key, epochs, lr, weights, det.threshold, dev_figures)
    _, epochs, lr, weights, threshold, dev_figures = best
    info = {
        "train_cases": len(train_cases),
        "ordinary_train": ORDINARY_TRAIN,
        "written_ordinary_train": len(written_ordinary()[0]),
        "epochs": epochs,
        "lr": lr,
        "batch": BATCH,
        "dev": _public(dev_figures),
    }
    save(weights, threshold, args.out, info)
    print(f"chosen epochs={epochs} lr={lr:g} threshold {threshold:.3f}; {len(train_cases)} training cases")
    print(f"dev  ({len(dev)}): {_line(dev_figures)}; everyday {_everyday(dev_figures, everyday)}")
    print(f"dev missed: {dev_figures['missed']}")
    print(f"everyday false alarms: {dev_figures['everyday_false_alarm_ids']}")
    print(f"recall on writers the threshold never saw: {dev_figures['recall_unseen_writers']:.1%}")
    if args.test:
        det = EmergencyDetector.load(args.out)
        for path in (TEST, TEST_B):
            test_figures = figures(det, read_cases(path))
            print(f"{path.stem} ({test_figures['cases']}): {_line(test_figures)}; missed {test_figures['missed']}")
    print(f"{time.perf_counter() - t0:.1f} s")
    return 0


def _weights(weights: dict) -> dict:
    return {k: as_shipped(v) for k, v in weights.items()}


def _everyday(f: dict, everyday: list[dict]) -> str:
    return f"{f['everyday_false_alarms']:.1%} of {len(everyday)}"


def _public(f: dict) -> dict:
    return {k: v for k, v in f.items() if k not in ("missed", "false_alarm_ids", "everyday_false_alarm_ids")}


def _line(f: dict) -> str:
    return (
        f"recall {f['recall']:.1%}, false alarms {f['false_alarms']:.1%}, class {f['class_right']:.1%}, "
        f"language {f['language_right']:.1%}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
