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


def _openai_ready(base_url: str) -> Callable[[], bool]:
    """True once the server at base_url lists its models (it answers only when the model is loaded)."""
    import openai

    probe = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=5.0)

    def ready() -> bool:
        try:
            probe.models.list()
            return True
        except (openai.APIConnectionError, openai.APIStatusError):
            return False

    return ready


# vLLM's CPU build in its own environment (`make vllm`: it pins a transformers older than the project's).
VLLM_PYTHON = Path(os.environ.get("PPSF_VLLM_PYTHON", Path(__file__).resolve().parent.parent / ".venv-vllm/bin/python"))
# The PPSF ToolParser plugin, loaded by vLLM from its path (agent/ppsf/vllm_tool_parser.py).
VLLM_TOOL_PARSER = Path(__file__).resolve().parent.parent / "agent" / "ppsf" / "vllm_tool_parser.py"


def vllm_command(model_dir: Path, port: int, *, python: Path = VLLM_PYTHON, max_num_seqs: int = 8) -> list[str]:
    """`vllm serve model_dir` on 127.0.0.1:port, float32, with PPSF tool parsing (the ppsf plugin). The model is
    served under its path: the agent's openai backend reads the export's tools.json beside it (routing)."""
    return [
        str(python), "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", str(model_dir),
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--max-model-len", "8192", "--max-num-seqs", str(max_num_seqs),
        "--enforce-eager",  # no torch.compile: minutes of compiling on 2 cores for a 135M model
        "--enable-prefix-caching",
        "--enable-auto-tool-choice", "--tool-call-parser", "ppsf", "--tool-parser-plugin", str(VLLM_TOOL_PARSER),
    ]  # fmt: skip


@contextmanager
def vllm_serve(
    model_dir: Path, log_path: Path, *, python: Path = VLLM_PYTHON, max_num_seqs: int = 8, timeout: float = 600.0
) -> Iterator[str]:
    """Run vLLM's CPU build on model_dir on a free 127.0.0.1 port; yield its /v1 URL; always stop it."""
    if not Path(python).is_file():
        raise FileNotFoundError(f"no vLLM environment at {python}: run `make vllm` (or set PPSF_VLLM_PYTHON)")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB of KV cache: ~45k float32 tokens of this model
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env["VLLM_MAX_STOP_STRINGS"] = "8"  # PPSF has 6 stop strings (agent.ppsf.STOP_STRINGS); vLLM takes 4 unless told
    base_url = f"http://127.0.0.1:{port}/v1"
    command = vllm_command(model_dir, port, python=python, max_num_seqs=max_num_seqs)
    with running(command, env, log_path, _openai_ready(base_url), timeout):
        yield base_url


@contextmanager
def llama_cpp_serve(gguf: Path, log_path: Path, *, threads: int = 2, timeout: float = 180.0) -> Iterator[str]:
    """Run `llama_cpp.server` on gguf on a free 127.0.0.1 port as `ppsf` (n_ctx 8192); yield its /v1 URL."""
    port = free_port()
    # One model, one sequence: concurrent requests wait their turn; by default a new request would instead cut the
    # running stream short (interrupt_requests), which no conversation survives.
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port",
               str(port), "--n_ctx", "8192", "--n_threads", str(threads),
               "--interrupt_requests", "False"]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    with running(command, {**os.environ, "HF_HUB_OFFLINE": "1"}, log_path, _openai_ready(base_url), timeout):
        yield base_url
