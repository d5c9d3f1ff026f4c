"""The prefix every example shares, through the untrained layers once per run instead of once per example.

With LoRA on the top layers only (train_lora --layers), the layers below are the base model's: for the tokens
every example starts with (format header, system prompt, tools block: ~700 of a decision example's ~950), their
keys, values and output are the same in every example and every step. So they are computed once, and each step
runs only the example's own tokens through the lower layers (attending to the stored keys and values), then the
whole sequence through the trained layers as usual. The loss and gradients are those of the plain forward pass
(tests/test_train_lora.py compares them); the adapter and inference are unchanged.

Why by hand: transformers runs a model's layers as one stack, and a cache of the lower layers alone is not one of
its options. This follows LlamaModel.forward (embed_tokens, rotary_emb, layers, norm: the default model's family).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.masking_utils import create_causal_mask


class SharedPrefix:
    """The lower layers' pass over prefix_ids (kept), for forward passes over ids that start with them."""

    def __init__(self, model, prefix_ids: list[int], first_trained: int, *, base: bool = False) -> None:
        self.inner = _decoder(model)
        self.head = (model.get_base_model() if hasattr(model, "get_base_model") else model).lm_head
        self.ids = torch.tensor([prefix_ids], device=self.inner.embed_tokens.weight.device)
        self.split = first_trained
        self.base = base
        self.cache = DynamicCache(config=self.inner.config)
        with torch.no_grad():
            if base:  # every layer's keys and values of the prefix, the adapter off (activated LoRA)
                with model.disable_adapter():
                    self._layers(self.ids, 0, self.cache, stop=len(self.inner.layers))
                self.kv = [(layer.keys, layer.values) for layer in self.cache.layers]
            else:
                self.hidden = self._layers(self.ids, 0, self.cache, stop=self.split)

    def __len__(self) -> int:
        return self.ids.shape[1]

    def starts(self, input_ids: torch.Tensor) -> bool:
        """Whether this batch is one example that begins with the prefix (and goes on past it)."""
        n = len(self)
        return input_ids.shape[0] == 1 and input_ids.shape[1] > n and bool((input_ids[:, :n] == self.ids).all())

    def _layers(
        self, ids: torch.Tensor, start: int, cache: DynamicCache, stop: int, grad_from: int | None = None
    ) -> torch.Tensor:
        """ids (at positions start...) through layers [0, stop), adding their keys and values to cache; gradients
        only from layer grad_from on (None: as the caller's grad mode says)."""
        h = self.inner.embed_tokens(ids)
        positions = torch.arange(start, start + ids.shape[1], device=ids.device)[None]
        mask = create_causal_mask(
            config=self.inner.config, inputs_embeds=h, attention_mask=None, cache=cache, position_ids=positions
        )
        rotary = self.inner.rotary_emb(h, position_ids=positions)
        grad = torch.is_grad_enabled()
        for i, layer in enumerate(self.inner.layers[:stop]):
            with torch.set_grad_enabled(grad and (grad_from is None or i >= grad_from)):
                h = layer(
                    h,
                    attention_mask=mask,
                    position_embeddings=rotary,
                    position_ids=positions,
                    cache=cache,
                    use_cache=True,
                )
        return h

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The last hidden states (after the final norm) of one example that starts() with the prefix; with a base
        prefix, of the example's own tokens only (positions len(self)...)."""
        n = len(self)
        if self.base:  # a fresh cache from the stored tensors: they are never part of a step's graph
            cache = DynamicCache(ddp_cache_data=self.kv, config=self.inner.config)
            own = self._layers(input_ids[:, n:], n, cache, stop=len(self.inner.layers), grad_from=self.split)
            return self.inner.norm(own)
        with torch.no_grad():  # nothing below the split is trained
            own = self._layers(input_ids[:, n:], n, self.cache, stop=self.split)
        self.cache.crop(-own.shape[1])  # back to the prefix alone for the next example (a negative crop removes)
        h = torch.cat([self.hidden, own], dim=1)
        positions = torch.arange(h.shape[1], device=h.device)[None]
        mask = create_causal_mask(
            config=self.inner.config, inputs_embeds=h, attention_mask=None, cache=None, position_ids=positions
        )
        rotary = self.inner.rotary_emb(h, position_ids=positions)
        for layer in self.inner.layers[self.split : self.inner.config.num_hidden_layers]:
            h = layer(h, attention_mask=mask, position_embeddings=rotary, position_ids=positions)
        return self.inner.norm(h)

    def logits(self, input_ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """The model's logits at positions keep of one example that starts() with the prefix."""
        h = self.hidden_states(input_ids)
        return self.head(h[:, keep - len(self)] if self.base else h[:, keep])


def _decoder(model):
    """The decoder stack of a (peft-wrapped) causal LM of the Llama family, or a clear error."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", None)
    if not all(hasattr(inner, a) for a in ("embed_tokens", "rotary_emb", "layers", "norm")):
        raise ValueError(
            f"{type(base).__name__}: a shared prefix needs a Llama-style decoder (embed_tokens, "
            "rotary_emb, layers, norm); train without --layers"
        )
    return inner


def common_prefix(rows: list[list[int]], limit: int) -> int:
    """How many leading ids all rows share, at most limit (the earliest loss position: the prefix is never trained)."""
    n, first = limit, rows[0]
    for ids in rows[1:]:
        n = min(n, len(ids))
        n = next((i for i in range(n) if ids[i] != first[i]), n)
    return n
