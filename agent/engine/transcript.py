"""Transcripts: one JSON line per message or event, private to the user, written as the run goes.

Conversations about health are personal data: a transcript file is created 0600 and a folder the agent
creates for it 0700, and the CLI writes one file per run or chat (`new_transcript_path`), so one file
never mixes several people's questions.
"""

from __future__ import annotations

import datetime
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

FILE_MODE = 0o600
DIR_MODE = 0o700
_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def json_line(record: Any) -> bytes:
    """record as one JSONL line (UTF-8, newline included) that every JSONL reader reads as one line: the line
    breaks JSON leaves raw but str.splitlines() (and so many readers) breaks at (U+0085, U+2028, U+2029) are
    escaped, and a lone surrogate (undecodable input) is written as its JSON escape ("\\udcff")."""
    line = json.dumps(record, ensure_ascii=False).translate(_LINE_BREAKS)
    # A lone surrogate cannot be UTF-8: it can only occur inside a JSON string here, where "\udcff" is its valid
    # JSON spelling.
    return (line + "\n").encode("utf-8", "backslashreplace")


def private_dir(path: Path) -> Path:
    """Create path (and missing parents) readable by the user alone; an existing folder is left as it is."""
    missing = []
    for folder in [path, *path.parents]:
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(folder, DIR_MODE)  # mkdir's mode is filtered by the umask
    return path


def new_transcript_path(folder: Path) -> Path:
    """A fresh file name in folder (made private): the time of the run and a random suffix."""
    private_dir(folder)
    os.chmod(folder, DIR_MODE)  # the transcripts folder is ours: tighten one an older version made 0755
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H%M%S")
    return folder / f"{stamp}-{uuid.uuid4().hex[:8]}.jsonl"


class Transcript:
    """Appends one JSON line per message or event, flushed at once, so a killed run leaves valid lines."""

    def __init__(self, path: str | Path | None, run_id: str) -> None:
        self.path = Path(path) if path is not None else None
        self.run_id = run_id
        if self.path is not None:
            private_dir(self.path.parent)

    def write(self, kind: str, **data: Any) -> None:
        if self.path is None:
            return
        data_bytes = json_line({"run": self.run_id, "time": round(time.time(), 3), "type": kind, **data})
        with os.fdopen(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE), "ab") as f:
            f.write(data_bytes)
