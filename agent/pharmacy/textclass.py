"""The linear text classifier the emergency detector and the tool router share: hashed character n-grams
(3-5 letters, inside word boundaries) and word uni- and bigrams of the folded text (lower case, Turkish letters
folded, so "ölmek" and "olmek" meet; digit runs as "0", so "20 tane" and "40 tane" meet), summed per head and
scaled by 1/sqrt(feature count), so longer messages are not louder. Character n-grams carry misspellings,
Turkish endings and slang that a word list misses; the weights are learned from patient-written wordings
(training/textclass.py trains the heads).

Hand-written rather than scikit-learn's HashingVectorizer + LogisticRegression: inference is one sum over a
few hundred features, with numpy only (a transformers dependency), and the features must be the same in
training and here (one function, `features`).
"""

from __future__ import annotations

import math
import re
import zlib
from pathlib import Path

import numpy as np

from .text import fold

BUCKETS = 1 << 16
_DIGITS = re.compile(r"\d+")


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


def distinct_features(text: str) -> list[int]:
    """The hashed feature ids of a message, each once: a word said ten times reads as said once, so no message
    grows louder by repeating itself (the emergency detector; chosen on its dev set, where it also lowered the
    false alarms)."""
    return sorted(set(features(text)))


def head_logits(weight: np.ndarray, bias: np.ndarray, ids: list[int]) -> list[float]:
    """One head's logits for a message's feature ids (as training computes them)."""
    scale = 1.0 / math.sqrt(max(len(ids), 1))
    return [float(x) for x in weight[ids].sum(axis=0) * scale + bias]


def softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    total = sum(exps)
    return [e / total for e in exps]


def load_weights(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(float32 tensors, metadata) of a classifier's safetensors file."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    with safe_open(str(path), framework="numpy") as f:
        metadata = dict(f.metadata() or {})
    return {k: v.astype("float32") for k, v in load_file(str(path)).items()}, metadata
