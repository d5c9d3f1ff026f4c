"""Training for agent.pharmacy.textclass: the heads of a linear classifier over hashed text features, learned
together by Adam over shuffled mini-batches (the emergency detector and the tool router use it).

    weights = train_heads(texts, {"label": Head(labels, 4, balanced=True)}, epochs=4, lr=0.01)
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.pharmacy.textclass import BUCKETS, features  # noqa: E402

BATCH = 32


def read_cases(path: Path, problem) -> list[dict]:
    """The JSONL cases of path; problem(case) names what is wrong with a case (None: nothing), which is raised
    with the file and line."""
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        case = json.loads(line)
        if (why := problem(case)) is not None:
            raise ValueError(f"{path}:{n}: {why}")
        cases.append(case)
    return cases


@dataclass(frozen=True)
class Head:
    """One output of the classifier: a label index per text, the number of labels, and whether each label
    weighs alike in the loss (the data's prior is then put back into the bias afterwards, so a text with
    nothing the model knows reads as the most common label)."""

    labels: list[int]
    size: int
    balanced: bool = False


@functools.cache
def text_features(text: str, featurize: Callable[[str], list[int]] = features) -> tuple[int, ...]:
    return tuple(featurize(text))


def train_heads(
    texts: list[str],
    heads: dict[str, Head],
    epochs: int,
    lr: float,
    seed: int = 0,
    batch: int = BATCH,
    featurize: Callable[[str], list[int]] = features,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{head: (weight [BUCKETS, size], bias [size])}, learned on texts (one label per text per head) read by
    featurize (the one inference reads them with); mini-batches rank better on dev than one full-batch step per
    epoch, in a twentieth of the time."""
    torch.manual_seed(seed)
    # dtype: a text with no features (an emoji alone) would make an empty float tensor, which torch.cat promotes.
    feats = [torch.tensor(text_features(t, featurize), dtype=torch.long) for t in texts]
    params, layers = [], {}
    for name, head in heads.items():
        if len(head.labels) != len(texts):
            raise ValueError(f"head {name!r} has {len(head.labels)} labels for {len(texts)} texts")
        weight = torch.nn.EmbeddingBag(BUCKETS, head.size, mode="sum")
        torch.nn.init.zeros_(weight.weight)
        bias = torch.zeros(head.size, requires_grad=True)
        labels = torch.tensor(head.labels)
        counts = torch.bincount(labels, minlength=head.size).clamp(min=1).float()
        class_weight = counts.sum() / (head.size * counts) if head.balanced else None
        layers[name] = (weight, bias, labels, counts, class_weight)
        params += [weight.weight, bias]
    opt = torch.optim.Adam(params, lr=lr)
    order = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(texts), generator=order).tolist()
        for i in range(0, len(texts), batch):
            rows = perm[i : i + batch]
            ids = [feats[j] for j in rows]
            offsets = torch.tensor([0, *torch.cumsum(torch.tensor([len(x) for x in ids]), 0)[:-1].tolist()])
            flat = torch.cat(ids)
            scale = torch.tensor([1.0 / math.sqrt(max(len(x), 1)) for x in ids])[:, None]
            opt.zero_grad()
            loss = torch.zeros(())
            for weight, bias, labels, _, class_weight in layers.values():
                logits = weight(flat, offsets) * scale + bias
                loss = loss + torch.nn.functional.cross_entropy(logits, labels[rows], weight=class_weight)
            loss.backward()
            opt.step()
    out = {}
    for name, (weight, bias, _, counts, class_weight) in layers.items():
        b = bias.detach() + ((counts / counts.sum()).log() if class_weight is not None else 0)
        out[name] = (weight.weight.detach().numpy().copy(), b.numpy().copy())
    return out


def as_shipped(array: np.ndarray) -> np.ndarray:
    """An array as the shipped file holds it (float16), for scoring what will ship."""
    return array.astype("float16").astype("float32")


def save_weights(tensors: dict[str, np.ndarray], path: Path, metadata: dict[str, str]) -> None:
    from safetensors.numpy import save_file

    save_file({k: v.astype("float16") for k, v in tensors.items()}, str(path), metadata=metadata)
