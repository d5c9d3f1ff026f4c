"""Prefix KV states on disk: a new process starts its first conversation from the fixed prompt prefix's keys and
values (format header, system prompt, tools) instead of prefilling ~1,000 tokens again.

A state is filed under a key naming everything it depends on: the exact prefix ids and the generator's
fingerprint (its weights, dtype, device and library versions; agent.engine.generation.CachedGenerator.fingerprint).
A file that cannot be read back into the generator is dropped and the prefix computed again.

Why not a library: llama-cpp-python's LlamaDiskCache stores whole llama states (logits of every prompt position
included, ~200 MB for this prefix) for its own generate(); transformers has no KV cache on disk.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

# The states kept (newest used first): a few prompts x models; each is ~43 MB for the default model in float32
# (a 7B model's would be GBs: pass a smaller max_files there).
MAX_FILES = 8


class PrefixStore:
    """A folder of prefix states, one file per (fingerprint, prefix ids)."""

    def __init__(self, folder: str | os.PathLike, max_files: int = MAX_FILES) -> None:
        self.folder = Path(folder)
        self.max_files = max_files

    @staticmethod
    def key(fingerprint: str, ids: Sequence[int]) -> str:
        """The file name of a state: a hash of the fingerprint and the exact ids."""
        h = hashlib.sha256(fingerprint.encode())
        h.update(b"\0" + ",".join(map(str, ids)).encode())
        return h.hexdigest()[:32] + ".kv"

    def load(self, key: str) -> bytes | None:
        """The state filed under key, or None; a hit counts as a use (the least recently used go first)."""
        path = self.folder / key
        try:
            data = path.read_bytes()
            os.utime(path)
        except OSError:
            return None
        return data

    def save(self, key: str, data: bytes) -> None:
        """File a state (written whole, then renamed: a reader never sees half a file); keep max_files.

        A full disk or read-only cache only costs the next process its prefill: nothing is raised."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")  # 0600: only this user reads it
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.folder / key)
        except OSError:
            return
        finally:
            Path(tmp).unlink(missing_ok=True)  # gone after the rename; a write cut short leaves nothing
        self._evict()

    def _evict(self) -> None:
        """Keep the max_files most recently used states (another process may remove files meanwhile)."""
        used = []
        for path in self.folder.glob("*.kv"):
            try:
                used.append((path.stat().st_mtime, path))
            except OSError:
                continue
        for _, path in sorted(used, reverse=True)[self.max_files :]:
            path.unlink(missing_ok=True)

    def drop(self, key: str) -> None:
        """Remove a state that could not be used."""
        (self.folder / key).unlink(missing_ok=True)
