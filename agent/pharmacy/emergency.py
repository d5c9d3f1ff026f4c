"""The emergency detector: whether a patient's message speaks of self-harm, a medicine already swallowed in
excess or by mistake, or misuse, read by a trained classifier rather than by word lists.

A linear classifier over hashed character n-grams (3-5 letters, inside word boundaries) and word uni- and
bigrams of the folded text (lower case, Turkish letters folded, so "ölmek" and "olmek" meet; digit runs as "0",
so "20 tane" and "40 tane" meet). Character n-grams carry misspellings, Turkish endings and slang that a word
list misses; the weights are learned from patient-written wordings (training/emergency/) and chosen on a dev
set (eval/emergency_dev.jsonl); training/emergency_detector.py trains it and reports recall and false alarms.
A second head reads the message's language, for messages too short for the function-word reader.

Hand-written rather than scikit-learn's HashingVectorizer + LogisticRegression: inference is one sum over a
few hundred features, with numpy only (a transformers dependency), and the features must be the same in
training and here (one function, `features`).
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from .text import fold

LABELS = ("none", "self_harm", "poisoning", "misuse")
LANGUAGES = ("tr", "en")
BUCKETS = 1 << 16
WEIGHTS = Path(__file__).with_name("data") / "emergency_detector.safetensors"
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[^\W\d_]{2}")


def features(text: str) -> list[int]:
    """The hashed feature ids of a message (with repeats: a feature counts as often as it occurs)."""
    words = _DIGITS.sub("0", fold(text)).split()
    out = [f"w:{w}" for w in words]
    out += [f"b:{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    for word in words:
        padded = f" {word} "
        for n in (3, 4, 5):
            out += [f"c:{padded[i : i + n]}" for i in range(max(len(padded) - n + 1, 1))]
    return [zlib.crc32(f.encode()) % BUCKETS for f in out]


@dataclass(frozen=True)
class Reading:
    """What the detector read in one message."""

    label: str  # one of LABELS
    score: float  # probability that the message is an emergency or misuse (1 - P(none))
    probabilities: dict[str, float]
    language: str  # "tr" or "en"


class EmergencyDetector:
    """The trained classifier: `read(text)` -> Reading. threshold: the emergency score from which a message
    counts as one (chosen on the dev set for recall, stored with the weights)."""

    def __init__(self, weights: dict, threshold: float) -> None:
        self.label_w, self.label_b = weights["label_w"], weights["label_b"]
        self.lang_w, self.lang_b = weights["lang_w"], weights["lang_b"]
        self.threshold = threshold

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> EmergencyDetector:
        from safetensors import safe_open
        from safetensors.numpy import load_file

        with safe_open(str(path), framework="numpy") as f:
            threshold = float(f.metadata()["threshold"])
        tensors = load_file(str(path))
        return cls({k: v.astype("float32") for k, v in tensors.items()}, threshold)

    def read(self, text: str) -> Reading:
        ids = features(text)
        scale = 1.0 / math.sqrt(max(len(ids), 1))  # as in training: longer messages are not louder
        logits = self.label_w[ids].sum(axis=0) * scale + self.label_b
        probs = _softmax([float(x) for x in logits])
        lang_logits = self.lang_w[ids].sum(axis=0) * scale + self.lang_b
        language = LANGUAGES[int(lang_logits.argmax())]
        score = 1.0 - probs[0]
        # A message without a word of two letters ("x", "4", "?") states nothing: too little to act on.
        if score < self.threshold or not _WORD.search(text):
            label = "none"
        else:
            label = LABELS[1 + max(range(3), key=lambda i: probs[1 + i])]
        return Reading(label, score, dict(zip(LABELS, probs, strict=True)), language)


def _softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    total = sum(exps)
    return [e / total for e in exps]


@functools.cache
def detector() -> EmergencyDetector:
    """The shipped detector (agent/pharmacy/data/emergency_detector.safetensors), loaded once."""
    return EmergencyDetector.load()
