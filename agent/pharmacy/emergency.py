"""The emergency detector: whether a patient's message speaks of self-harm, a medicine already swallowed in
excess or by mistake, or misuse, read by a trained classifier rather than by word lists.

The linear classifier of agent.pharmacy.textclass (hashed character n-grams and words of the folded text, each
counted once), its weights learned from patient-written wordings (training/emergency/) and chosen on the dev sets
(eval/emergency_dev*.jsonl); training/emergency_detector.py trains it and reports recall and false alarms.
A second head reads the message's language, for messages too short for the function-word reader.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from .textclass import BUCKETS, distinct_features, head_logits, load_weights, softmax

LABELS = ("none", "self_harm", "poisoning", "misuse")
LANGUAGES = ("tr", "en")
WEIGHTS = Path(__file__).with_name("data") / "emergency_detector.safetensors"
_WORD = re.compile(r"[^\W\d_]{2}")


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
        tensors, metadata = load_weights(path)
        return cls(tensors, float(metadata["threshold"]))

    def read(self, text: str) -> Reading:
        ids = distinct_features(text)
        probs = softmax(head_logits(self.label_w, self.label_b, ids))
        lang_logits = head_logits(self.lang_w, self.lang_b, ids)
        language = LANGUAGES[max(range(len(LANGUAGES)), key=lambda i: lang_logits[i])]
        score = 1.0 - probs[0]
        # A message without a word of two letters ("x", "4", "?") states nothing: too little to act on.
        if score < self.threshold or not _WORD.search(text):
            label = "none"
        else:
            label = LABELS[1 + max(range(3), key=lambda i: probs[1 + i])]
        return Reading(label, score, dict(zip(LABELS, probs, strict=True)), language)


@functools.cache
def detector() -> EmergencyDetector:
    """The shipped detector (agent/pharmacy/data/emergency_detector.safetensors), loaded once."""
    return EmergencyDetector.load()


__all__ = ["BUCKETS", "LABELS", "LANGUAGES", "WEIGHTS", "EmergencyDetector", "Reading", "detector", "distinct_features"]
