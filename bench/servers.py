"""Local servers for tests and benchmarks: a free port, a process run until it serves and always stopped, and
`transformers serve` on a model folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    """A free 127.0.0.1 port (the tiny race until the server binds it is acceptable here)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(command: list[str], env: dict, log_path: Path, ready: Callable[[], bool], timeout: float) -> Iterator[None]:
    """Run command (output to log_path) until ready() says it serves, bounded by timeout; always stop it."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if process.poll() is not None:
                tail = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
                raise RuntimeError(f"`{' '.join(command)}` exited with {process.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"`{' '.join(command)}` not ready after {timeout:.0f} s (log: {log_path})")
            time.sleep(0.5)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


@contextmanager
def transformers_serve(
    model_dir: Path, log_path: Path, *, device: str = "cpu", args: list[str] = (), timeout: float = 180.0
) -> Iterator[str]:
    """Run `transformers serve model_dir` (pinned to it) on a free 127.0.0.1 port; yield its /v1 URL; always
    stop it. Requests name the model as model_dir was given."""
    import openai

    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if device == "cpu":
        # One torch thread: next to the client process (and whatever else shares a small machine), two threads
        # spin-waiting for two cores run many times slower than one.
        env["OMP_NUM_THREADS"] = "1"
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--device", device, *args]
    base_url = f"http://127.0.0.1:{port}/v1"
    probe = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=5.0)

    def ready() -> bool:  # /v1/models answers once the pinned model is loaded
        try:
            probe.models.list()
            return True
        except openai.APIConnectionError:
            return False

    with running(command, env, log_path, ready, timeout):
        yield base_url
