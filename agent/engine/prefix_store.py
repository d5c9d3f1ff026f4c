"""Prefix KV states on disk: a new process starts its first conversation from the fixed prompt prefix's keys and
values (format header, system prompt, tools) instead of prefilling ~1,000 tokens again.

A state is filed under a key naming everything it depends on: the exact prefix ids and the generator's
fingerprint (its weights, dtype, device and library versions; agent.engine.generation.CachedGenerator.fingerprint).
A file that cannot be read back into the generator is dropped and the prefix computed again.

A state is loaded into the model as it is, so only this user may be able to write one: a folder (or a folder
above it, or a state) that another user owns or can write is refused with `UnsafePrefixFolder`, before anything in
it is read or written (a sticky folder such as /tmp may be above it, not be it: anyone could create a state there).

Why not a library: llama-cpp-python's LlamaDiskCache stores whole llama states (logits of every prompt position
included, ~200 MB for this prefix) for its own generate(); transformers has no KV cache on disk.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .transcript import private_dir

# The states kept (newest used first): a few prompts x models; each is ~43 MB for the default model in float32
# (a 7B model's would be GBs: pass a smaller max_files there).
MAX_FILES = 8


class UnsafePrefixFolder(ValueError):
    """The prefix folder, a folder above it or a state in it can be written by another user: nothing is used."""


def _others_can_write(info: os.stat_result, *, sticky_ok: bool) -> bool:
    """Whether the group or others may write (create, rename, replace entries); sticky_ok: unless sticky."""
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return bool(writable) and not (sticky_ok and info.st_mode & stat.S_ISVTX)


def check_private(path: Path, what: str, *, sticky_ok: bool = False, owners: tuple[int, ...] = ()) -> None:
    """Raise UnsafePrefixFolder if path is owned by another user than this one (or owners) or others can write
    it. No-op where the OS has no POSIX owners (Windows)."""
    if not hasattr(os, "geteuid"):
        return
    info = path.stat()
    me = os.geteuid()
    fix = f"make it private (chmod go-w {path}) or keep the prefix states elsewhere"
    if info.st_uid not in (me, *owners):
        raise UnsafePrefixFolder(f"{what} {path} is owned by user {info.st_uid}, not by this user ({me}): {fix}")
    if _others_can_write(info, sticky_ok=sticky_ok):
        raise UnsafePrefixFolder(
            f"{what} {path} has mode {stat.S_IMODE(info.st_mode):o}: others can write a state this model would "
            f"load; {fix}"
        )


class PrefixStore:
    """A folder of prefix states, one file per (fingerprint, prefix ids), refused if others can write it."""

    def __init__(self, folder: str | os.PathLike, max_files: int = MAX_FILES) -> None:
        self.folder = Path(folder)
        self.max_files = max_files

    @staticmethod
    def key(fingerprint: str, ids: Sequence[int]) -> str:
        """The file name of a state: a hash of the fingerprint and the exact ids."""
        h = hashlib.sha256(fingerprint.encode())
        h.update(b"\0" + ",".join(map(str, ids)).encode())
        return h.hexdigest()[:32] + ".kv"

    def check_folder(self) -> bool:
        """Whether the folder exists; UnsafePrefixFolder if it, or a folder above it, is another user's or
        others can write it (a folder above may be root's, or sticky and writable by all, as /tmp is)."""
        try:
            real = self.folder.resolve(strict=True)
        except OSError:
            return False
        check_private(real, "the prefix folder")
        for parent in real.parents:
            check_private(parent, "the folder above the prefix folder,", sticky_ok=True, owners=(0,))
        return True

    def load(self, key: str) -> bytes | None:
        """The state filed under key, or None; a hit counts as a use (the least recently used go first).
        UnsafePrefixFolder if others can write the folder or the state (see check_folder)."""
        if not self.check_folder():
            return None
        path = self.folder / key
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # a link is no state of ours
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if hasattr(os, "geteuid") and (info.st_uid != os.geteuid() or _others_can_write(info, sticky_ok=False)):
                raise UnsafePrefixFolder(
                    f"the prefix state {path} is owned by user {info.st_uid} with mode "
                    f"{stat.S_IMODE(info.st_mode):o}: others can write it; remove it (rm {path})"
                )
            try:
                data = f.read()
                os.utime(path)
            except OSError:
                return None
        return data

    def save(self, key: str, data: bytes) -> None:
        """File a state (written whole, then renamed: a reader never sees half a file); keep max_files.

        A full disk or read-only cache only costs the next process its prefill: nothing is raised; a folder
        others can write raises UnsafePrefixFolder. A folder made here is private (0700)."""
        try:
            private_dir(self.folder)
        except OSError:
            return
        self.check_folder()
        try:
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
