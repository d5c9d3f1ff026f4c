"""`--backend llamacpp`: the agent's own decode loop (stops, call probes, grounding, streaming, prefix
snapshots) on llama.cpp's forward pass, through llama-cpp-python, on a GGUF.

Only the model's forward pass and KV cache are llama.cpp's; tokenization stays this repo's tokenizer (the GGUF's
vocabulary is the same, written by llama.cpp's converter from tokenizer.json), so prompts, cache reuse and the
name constraint see the very ids the transformers backend sees. llama-cpp-python's own generate()/sampler is not
used: it cannot stop on a closed tool call's "}" without decoding past it, nor probe for a parallel call in one
pass, nor mask logits per token from the conversation.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .generation import CachedGenerator
from .prefix_store import PrefixStore
from .threads import choose_threads

INSTALL_HINT = (
    'CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" pip install --no-cache-dir llama-cpp-python==0.3.36 '
    "(builds llama.cpp, ~4 min; docs/engines.md)"
)


def load_llama(gguf: str | Path, *, threads: int | None = None, n_ctx: int = 0) -> Any:
    """A llama_cpp.Llama on gguf, CPU, quiet; n_ctx 0: the model's trained context."""
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise ImportError(f"--backend llamacpp needs llama-cpp-python: {INSTALL_HINT}") from e
    path = Path(gguf)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF at {path}")
    n = choose_threads(threads)
    llama = Llama(str(path), n_ctx=n_ctx, n_threads=n, n_threads_batch=n, n_batch=512, verbose=False)
    # Freed before the interpreter tears modules down: Llama.__del__ at shutdown finds its ctypes gone.
    atexit.register(llama.close)
    return llama


class LlamaCppGenerator(CachedGenerator):
    """CachedGenerator whose cache is a llama.cpp context (sequence 0) and whose forward pass is llama.cpp's."""

    # Drafts of 8 after a repeated 6-gram. On CPU llama.cpp checks a batch of 2 ids at 2x the cost of one and
    # of 8 at 3-4x (bench/batch_cost.py), so only drafts it mostly accepts pay: after a repeated 3-gram (the
    # torch default) they did not (11.8 s without, 11.7 s with 8, four questions); after a 6-gram ~90 % of the
    # drafted ids were kept and the decode time of the bench's eight questions fell from 14.4 s to 11.8 s.
    draft_tokens: int = 8
    lookup_ngram: int = 6

    def __init__(self, llama: Any, tokenizer: Any, *, prefix_store: PrefixStore | None = None) -> None:
        super().__init__(llama, tokenizer, prefix_store=prefix_store)
        if llama.n_vocab() != len(tokenizer):
            raise ValueError(
                f"the GGUF has {llama.n_vocab()} tokens, the tokenizer {len(tokenizer)}: not the same model"
            )
        self.fingerprint  # noqa: B018 -- now: the file may be rewritten while this process runs

    @property
    def context_length(self) -> int | None:
        return int(self.model.n_ctx())

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def _new_cache(self) -> Any:
        self.model.reset()  # n_tokens = 0; eval() drops the context's cells from there on
        return self.model

    def _crop(self, length: int) -> None:
        if length < len(self._cached_ids):
            self.model._ctx.kv_cache_seq_rm(0, length, -1)
            self.model.n_tokens = length
            self._cached_ids = self._cached_ids[:length]

    def _forward(self, new_ids: list[int]) -> torch.Tensor:
        self.model.eval(new_ids)
        self._cached_ids.extend(new_ids)
        row = self.model._ctx.get_logits_ith(-1)
        # A copy: llama.cpp reuses the buffer at the next decode.
        return torch.from_numpy(np.ctypeslib.as_array(row, shape=(self.model.n_vocab(),)).copy())

    def _forward_rows(self, new_ids: list[int]) -> torch.Tensor:
        """llama.cpp's eval() keeps only the last logits: one batch asking for every position's (the draft check)."""
        llama, n_vocab = self.model, self.model.n_vocab()
        if len(new_ids) > llama.n_batch:
            raise ValueError(f"a draft of {len(new_ids)} ids exceeds the batch of {llama.n_batch}")
        llama._ctx.kv_cache_seq_rm(0, llama.n_tokens, -1)
        llama._batch.set_batch(batch=new_ids, n_past=llama.n_tokens, logits_all=True)
        llama._ctx.decode(llama._batch)
        llama.input_ids[llama.n_tokens : llama.n_tokens + len(new_ids)] = new_ids
        llama.n_tokens += len(new_ids)
        self._cached_ids.extend(new_ids)
        rows = [np.ctypeslib.as_array(llama._ctx.get_logits_ith(i), shape=(n_vocab,)) for i in range(len(new_ids))]
        return torch.from_numpy(np.stack(rows))

    def _snapshot(self, length: int) -> tuple[bytes, int]:
        """Sequence 0's cells (keys and values only, not llama-cpp-python's logits buffer), and the length."""
        import llama_cpp

        ctx = self.model._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        if not written:
            raise RuntimeError("llama.cpp could not copy the prefix's KV cells")
        return bytes(buffer[:written]), length

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """What a stored prefix state depends on: the GGUF's contents (its size and 64 blocks of 64 KiB spread over
        it: the header and tensors of every part of the file), the context size and llama.cpp's build; a state
        that still does not fit is refused by llama.cpp when restored. Taken when the generator is made, from
        the file the model was loaded from."""
        import llama_cpp

        path = Path(self.model.model_path)
        h = hashlib.sha256(f"n_ctx {self.model.n_ctx()}|llama_cpp {llama_cpp.__version__}".encode())
        with path.open("rb") as f:
            size = f.seek(0, 2)
            h.update(str(size).encode())
            for i in range(64):
                f.seek(size * i // 64)
                h.update(f.read(1 << 16))
        return h.hexdigest()

    def _dump_snapshot(self, snapshot: tuple[bytes, int]) -> bytes:
        return snapshot[0]

    def _load_snapshot(self, data: bytes, length: int) -> tuple[bytes, int]:
        return data, length

    def _restore(self, snapshot: tuple[bytes, int]) -> None:
        import llama_cpp

        data, length = snapshot
        self.model._ctx.kv_cache_seq_rm(0, 0, -1)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(self.model._ctx.ctx, buffer, len(data), 0) != len(data):
            raise RuntimeError("llama.cpp could not restore the prefix's KV cells")
        self.model._ctx.kv_cache_seq_rm(0, length, -1)  # a snapshot taken with more cells than the prefix
        self.model.n_tokens = length
        self._cache = self.model
