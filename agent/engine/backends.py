"""One backend object: the model the agent runs on, whichever engine runs it (torch here, llama.cpp here, or an
OpenAI-compatible server), with what the agent reads of it: its generator, tokenizer, context length, prefix store
and the tool schemas the model was trained on.

`build_backend(BackendOptions(...))` makes one from the options that `python -m agent`, `python app.py`,
`python -m agent.eval` and the benches share (agent.run_options declares them as flags); `Agent(backend, tools)`
and `pharmacist_agent(backend)` read everything from it. A Backend is frozen: what it carries is given when it is
made, never set afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from ..bundled_model import DEFAULT_NAME
from .generation import CachedGenerator, Generator
from .prefix_store import PrefixStore
from .threads import choose_threads

BackendKind = Literal["local", "llamacpp", "openai"]
KINDS: tuple[str, ...] = get_args(BackendKind)
CUSTOM = "custom"  # a Backend around a generator its caller made (a test's scripted one, a bench's recorder)
TOOLS_SHOWN = ("all", "routed")  # the tools block a model was trained on (Backend.tools_shown)
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # as agent.engine.openai_backend's (not imported: openai is optional)


class BackendOptionError(ValueError):
    """Options that do not go together (one of another backend's); the message names the command-line flags."""


@dataclass(frozen=True)
class BackendOptions:
    """What to run the agent on. The fields are the shared flags of agent.run_options.add_backend_options, with
    their defaults; model, adapter, gguf, base_url or threads set for a backend that does not take it raises
    BackendOptionError (the CLI's messages); device, dtype, timeout and prefix_store are read only by the
    backends they name."""

    backend: BackendKind = "local"
    # local: a Hub id or model folder (None: the bundled model); openai: the served model (None: the only one served)
    model: str | None = None
    adapter: str | os.PathLike = "auto"  # local: a PEFT adapter folder, "none", or "auto" (resolve_adapter)
    gguf: str | os.PathLike | None = None  # llamacpp: a PPSF-tuned GGUF (None: the default model's export)
    base_url: str | None = None  # openai: the server's API root (None: DEFAULT_BASE_URL)
    device: str = "auto"  # local: auto, cpu, cuda, mps
    dtype: str = "auto"  # local: auto (bfloat16 on CUDA, float32 elsewhere), float32, bfloat16, float16
    threads: int | None = None  # local and llamacpp: CPU threads (None: the usable cores that are not busy)
    timeout: float = 60.0  # openai: seconds one generation step may take, the whole stream included
    prefix_store: bool = True  # local and llamacpp: keep the prompt prefix's KV state on disk (default_prefix_store)

    def __post_init__(self) -> None:
        if self.backend not in KINDS:
            raise BackendOptionError(f"unknown backend {self.backend!r}; expected one of {', '.join(KINDS)}")
        # In the order the CLI has always checked them: the first wrong option is the one named.
        if self.base_url is not None and self.backend != "openai":
            raise BackendOptionError("--base-url needs --backend openai")
        if self.adapter != "auto" and self.backend != "local":
            raise BackendOptionError("--adapter needs --backend local")
        if self.model is not None and self.backend == "llamacpp":
            raise BackendOptionError("--model is for the local and openai backends; --backend llamacpp takes --gguf")
        if self.gguf is not None and self.backend != "llamacpp":
            raise BackendOptionError("--gguf needs --backend llamacpp")
        if self.threads is not None and self.backend == "openai":
            raise BackendOptionError("--threads is for the local and llamacpp backends")


@dataclass(frozen=True, eq=False)
class Backend:
    """A model the agent runs on, made once and shared by every agent on it (one generator, one KV cache).

    kind: "local", "llamacpp", "openai", or CUSTOM for a generator made by the caller; generator: what the agent
    generates with, its prefix store given when it was made; tokenizer: what prompts are rendered, counted and
    parsed with; name: the model, as a person would name it; tool_schemas: {name: schema} the model was trained on
    (agent.engine.models.recorded_tools), None when nothing records them; tuned: whether the model is PPSF-tuned
    (it writes the format itself: no worked example); adapter: the adapter folder merged into a local model;
    tools_shown: the tools block the model was trained on, "all" the tools or "routed" (the routed tool alone,
    agent.engine.models.recorded_tools_shown)."""

    kind: str
    generator: Generator
    tokenizer: Any
    name: str = ""
    tool_schemas: dict[str, dict] | None = None
    tuned: bool = False
    adapter: Path | None = None
    tools_shown: str = "all"

    def __post_init__(self) -> None:
        if self.kind not in (*KINDS, CUSTOM):
            raise ValueError(f"unknown backend kind {self.kind!r}; expected one of {', '.join((*KINDS, CUSTOM))}")
        if self.tools_shown not in TOOLS_SHOWN:
            raise ValueError(f"unknown tools_shown {self.tools_shown!r}; expected one of {', '.join(TOOLS_SHOWN)}")

    @property
    def context_length(self) -> int | None:
        """Prompt and answer tokens the model attends to; None: unknown."""
        return getattr(self.generator, "context_length", None)

    @property
    def prefix_store(self) -> PrefixStore | None:
        """Where the generator keeps prefix states on disk; None: in memory only (or no prefix cache at all)."""
        return getattr(self.generator, "prefix_store", None)

    @classmethod
    def local(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        prefix_store: PrefixStore | None = None,
        name: str = "",
        tool_schemas: dict[str, dict] | None = None,
        tuned: bool = False,
        adapter: Path | None = None,
        tools_shown: str = "all",
    ) -> Backend:
        """A model already loaded here (agent.engine.models.load_model's pair), run by a CachedGenerator, which
        reads a base-read prefix with the plain model when load_model kept one (models.prefix_reader)."""
        generator = CachedGenerator(model, tokenizer, prefix_store=prefix_store)
        return cls("local", generator, tokenizer, name, tool_schemas, tuned, adapter, tools_shown)


def default_prefix_store() -> PrefixStore:
    """The prefix states' folder: $PPSF_PREFIXES, else the PPSF cache's prefixes/."""
    from .models import cache_dir

    return PrefixStore(os.environ.get("PPSF_PREFIXES") or cache_dir() / "prefixes")


def build_backend(options: BackendOptions) -> Backend:
    """The backend options name, loaded: the local model (its adapter merged), the GGUF on llama.cpp, or the
    server, checked. Raises one of backend_errors(options.backend), each with a message of one line."""
    store = default_prefix_store() if options.prefix_store and options.backend != "openai" else None
    if options.backend == "openai":
        return _openai(options)
    if options.backend == "llamacpp":
        return _llamacpp(options, store)
    return _local(options, store)


def backend_errors(kind: str) -> tuple[type[Exception], ...]:
    """What build_backend, or a run on the backend, raises for a reason the user can act on (a model that is not
    there, a server that does not answer): callers print it as one line rather than a traceback."""
    from ..ppsf import PPSFRepoError
    from .models import ModelLoadError

    errors: tuple[type[Exception], ...] = (ModelLoadError, PPSFRepoError, ValueError)
    if kind == "llamacpp":
        from ..export import ExportError

        errors += (ImportError, FileNotFoundError, ExportError)
    if kind == "openai":
        from .openai_backend import ServingError

        errors += (ServingError,)
    return errors


def _local(options: BackendOptions, store: PrefixStore | None) -> Backend:
    import torch

    from . import models  # looked up at call time: tests replace load_model and resolve_adapter

    torch.set_num_threads(choose_threads(options.threads))
    adapter_dir = models.resolve_adapter(options.adapter, options.model)
    model, tokenizer = models.load_model(options.model, device=options.device, dtype=options.dtype, adapter=adapter_dir)
    return Backend.local(
        model,
        tokenizer,
        prefix_store=store,
        name=options.model or f"{DEFAULT_NAME} (bundled)",
        tool_schemas=models.recorded_tools(adapter_dir, options.model),
        tuned=adapter_dir is not None,  # the PPSF adapter, or any adapter the user chose to merge
        adapter=adapter_dir,
        tools_shown=models.recorded_tools_shown(adapter_dir, options.model),
    )


def _llamacpp(options: BackendOptions, store: PrefixStore | None) -> Backend:
    from ..export import default_gguf
    from ..ppsf import load_tokenizer
    from .llamacpp_backend import LlamaCppGenerator, load_llama
    from .models import record_folders, recorded_tools, recorded_tools_shown

    gguf = Path(options.gguf or default_gguf())
    schemas, shown = recorded_tools(*record_folders(gguf)), recorded_tools_shown(*record_folders(gguf))
    llama = load_llama(gguf, threads=options.threads)
    # The GGUF's vocabulary is this repo's tokenizer's (LlamaCppGenerator refuses another).
    tokenizer = load_tokenizer()
    generator = LlamaCppGenerator(llama, tokenizer, prefix_store=store)
    # A GGUF for this agent is the tuned model (agent.export).
    return Backend("llamacpp", generator, tokenizer, str(gguf), schemas, tuned=True, tools_shown=shown)


def _openai(options: BackendOptions) -> Backend:
    from ..ppsf import load_tokenizer
    from . import models
    from .openai_backend import OpenAIGenerator

    # The prompt is rendered and the reply parsed here, with this repo's tokenizer and templates.
    tokenizer = load_tokenizer()
    base_url = options.base_url or DEFAULT_BASE_URL
    generator = OpenAIGenerator(options.model, tokenizer, base_url=base_url, timeout=options.timeout)
    generator.check()
    # A server names its model by the path it loaded (llama.cpp's server, vLLM, transformers serve): where that is
    # a local folder or file holding a tools.json (agent.export writes one beside the weights), the model is this
    # repo's tuned model and its record says how it was trained. Anything else is unknown: not taken for the tuned
    # model (a worked example is shown), and the pharmacy shows the repo adapter's tool schemas.
    served = Path(generator.model)
    folders = models.record_folders(served)
    schemas = models.recorded_tools(*folders) if served.exists() else None
    if schemas is None:
        return Backend("openai", generator, tokenizer, generator.model)
    shown = models.recorded_tools_shown(*folders)
    return Backend("openai", generator, tokenizer, generator.model, schemas, tuned=True, tools_shown=shown)
