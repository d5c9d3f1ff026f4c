"""Loading the agent's causal LM: the bundled SmolLM2 GGUF (converted once to safetensors) or any --model."""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import uuid
import warnings
import weakref
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

# The default model's GGUF is located by agent.bundled_model, which the format (agent.ppsf) shares.
from ..bundled_model import DEFAULT_NAME, ModelLoadError, default_gguf_path

DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class AdapterMismatchError(ModelLoadError):
    """The adapter's shapes or target modules do not fit the model it was applied to."""


def cache_dir() -> Path:
    """$PPSF_CACHE, else $XDG_CACHE_HOME/ppsf, else ~/.cache/ppsf."""
    if os.environ.get("PPSF_CACHE"):
        return Path(os.environ["PPSF_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "ppsf"


def _load_gguf(gguf_path: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Dequantize a GGUF into a plain float32 transformers model and its tokenizer (slow: ~15-30 s)."""
    # `from_pretrained(gguf_file=...)` does the same dequantization but requires `accelerate` (not a
    # dependency) and returns a model carrying a GGUF quantization_config that refuses save_pretrained.
    # Building the model from the GGUF's config and loading transformers' own dequantized tensors gives
    # bit-identical weights with neither problem.
    config = AutoConfig.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(gguf_path), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    # A tied lm_head (SmolLM2's) has no tensor of its own in the GGUF; anything else missing is an error.
    tied = _tied_output_names(model)
    if unexpected or set(missing) - tied:
        raise ModelLoadError(
            f"{gguf_path}: GGUF tensors do not match the model: missing {sorted(set(missing) - tied)}, "
            f"unexpected {sorted(unexpected)}"
        )
    if config.tie_word_embeddings and not tied:
        raise ModelLoadError(f"{gguf_path}: the config ties embeddings but lm_head is not tied after loading")
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    return model, tokenizer


def _tied_output_names(model: PreTrainedModel) -> set[str]:
    """Names of output-embedding parameters that share storage with the input embeddings."""
    inputs, outputs = model.get_input_embeddings(), model.get_output_embeddings()
    if inputs is None or outputs is None or outputs.weight is not inputs.weight:
        return set()
    return {n for n, p in model.named_parameters(remove_duplicate=False) if p is outputs.weight} - {
        n for n, p in model.named_parameters() if p is inputs.weight
    }


def convert_gguf(gguf_path: Path, out_dir: Path) -> Path:
    """Convert a GGUF to a safetensors model folder at out_dir, atomically (temp folder, then rename)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"Converting {gguf_path.name} to safetensors in {out_dir} (one-time, takes ~30 s; "
        "later runs load it in about a second)...",
        file=sys.stderr,
        flush=True,
    )
    # The temp folder sits next to out_dir so the final rename stays on one filesystem and is atomic:
    # an interrupted conversion leaves only a dot-folder, never a half-written out_dir.
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()  # not mkdtemp: its 0700 mode would survive the rename
    try:
        model, tokenizer = _load_gguf(gguf_path)
        model.save_pretrained(tmp)  # safetensors; the tied lm_head is stored once, as embed_tokens
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(out_dir)
        except OSError:
            if not (out_dir / "config.json").is_file():  # not a concurrent conversion that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"Converted {gguf_path.name} -> {out_dir}", file=sys.stderr, flush=True)
    return out_dir


def default_model_dir() -> Path:
    """The converted default model folder, converting the bundled GGUF on first use."""
    out_dir = cache_dir() / "models" / DEFAULT_NAME
    if (out_dir / "config.json").is_file():
        return out_dir
    return convert_gguf(default_gguf_path(), out_dir)


def resolve_device(device: str = "auto") -> torch.device:
    """auto -> cuda if available, else mps if available, else cpu."""
    if device not in DEVICES:
        raise ValueError(f"Unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(
            f"--device cuda was asked for but CUDA is not available (torch {torch.__version__}, "
            f"built with CUDA {torch.version.cuda}); use --device cpu or auto"
        )
    if device == "mps" and not mps:
        raise ModelLoadError("--device mps was asked for but MPS is not available; use --device cpu or auto")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """auto -> bfloat16 on CUDA, float32 on CPU/MPS."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in DTYPES:
        raise ValueError(f"Unknown dtype {dtype!r}; expected one of auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def default_adapter_dir() -> Path:
    """The repo's PPSF LoRA adapter for the default model: adapter/ of the Hub repo, which an installed package
    carries as agent/adapter (pyproject's package-dir); in a checkout, the repo root's adapter/."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "adapter"
    return installed if (installed / "adapter_config.json").is_file() else package.parent / "adapter"


def resolve_adapter(adapter: str | os.PathLike | None, model: str | None) -> Path | None:
    """The adapter folder to load, or None.

    "auto": the repo's adapter when the model is the default one and the adapter is there; None or "none": no
    adapter; anything else: that folder (it must hold adapter_config.json).
    """
    if adapter is None or (isinstance(adapter, str) and adapter.lower() == "none"):
        return None
    if isinstance(adapter, str) and adapter == "auto":
        found = default_adapter_dir()
        return found if model is None and (found / "adapter_config.json").is_file() else None
    path = Path(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise ModelLoadError(
            f"--adapter {str(adapter)!r}: no adapter_config.json there (expected a PEFT adapter folder)"
        )
    return path


TOOLS_FILE = "tools.json"  # the tool schemas a model was trained on, beside its adapter or weights


def recorded_tools(*folders: str | os.PathLike | None) -> dict[str, dict] | None:
    """{tool name: schema} from the first of folders holding a tools.json (an adapter's, an exported model's),
    or None when none does. A Hub id or None among folders is skipped (no such local folder)."""
    for folder in folders:
        if folder is None or not (path := Path(folder) / TOOLS_FILE).is_file():
            continue
        try:
            schemas = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ModelLoadError(f"{path}: not readable JSON ({e})") from e
        if not isinstance(schemas, list) or not all(
            isinstance(s, dict) and isinstance(s.get("function"), dict) and isinstance(s["function"].get("name"), str)
            for s in schemas
        ):
            raise ModelLoadError(f"{path}: expected a list of function schemas ({{'function': {{'name': ...}}}})")
        return {s["function"]["name"]: s for s in schemas}
    return None


SHOWN_FILE = "tools_shown.txt"  # beside tools.json: "routed" for a model trained shown only the routed tool


def record_folders(path: str | os.PathLike) -> tuple[Path, Path]:
    """Where the record (tools.json, tools_shown.txt) of the model at path may be: a model folder and its parent,
    or a weights file's folder and its parent (an export's OUT/gguf/NAME.gguf)."""
    path = Path(path)
    return (path, path.parent) if path.is_dir() else (path.parent, path.parent.parent)


def recorded_tools_shown(*folders: str | os.PathLike | None) -> str:
    """The tools block the model in the first of folders holding a tools.json was trained on: "routed" (the routed
    tool alone, training/decisions.py) when a tools_shown.txt there says so, else "all"."""
    for folder in folders:
        if folder is None or not (Path(folder) / TOOLS_FILE).is_file():
            continue
        path = Path(folder) / SHOWN_FILE
        if not path.is_file():
            return "all"
        shown = path.read_text(encoding="utf-8").strip()
        if shown not in ("all", "routed"):
            raise ModelLoadError(f"{path}: {shown[:40]!r}; expected all or routed")
        return shown
    return "all"


def merge_adapter(lm: PreTrainedModel, adapter_dir: Path) -> PreTrainedModel:
    """Apply a PEFT LoRA adapter to lm and merge it into the weights (decodes as fast as the base model)."""
    try:
        from peft import PeftModel
    except ImportError as e:
        raise ModelLoadError(
            f"Loading the adapter {adapter_dir} needs peft (pip install peft), or pass --adapter none"
        ) from e
    try:
        with warnings.catch_warnings():
            # peft (0.21) reads model.is_gradient_checkpointing, which transformers 5.24 deprecates with a
            # FutureWarning a user would see between the progress bars and the answer; the merge is unaffected.
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            merged = PeftModel.from_pretrained(lm, str(adapter_dir)).merge_and_unload()
    except (RuntimeError, ValueError, KeyError, OSError) as e:  # shape mismatch, wrong target modules, bad files
        raise AdapterMismatchError(
            f"The adapter {adapter_dir} does not fit the model {lm.config.name_or_path or type(lm).__name__}: "
            f"{str(e)[:500]}"
        ) from e
    return merged


def trained_with_base_prefix(adapter_dir: Path) -> bool:
    """Whether the adapter was trained with the prompt's fixed prefix read by the base model (train_lora
    --base-prefix, its training_info.json): then the base model must read that prefix at inference too."""
    info = adapter_dir / "training_info.json"
    try:
        return bool(json.loads(info.read_text(encoding="utf-8")).get("base_prefix")) if info.is_file() else False
    except (OSError, ValueError, AttributeError) as e:
        raise ModelLoadError(f"{info}: not a readable training record ({e})") from e


# model -> the plain base model that reads its prompt prefix (load_model, for a base-prefix adapter). A side table,
# not an attribute: a module set on a module becomes its submodule, and its weights would go into every save.
_PREFIX_READERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# The adapter load_model merged into each model it returned: what a model loaded by hand was trained on.
_MERGED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def merged_adapter(model: PreTrainedModel) -> Path | None:
    """The adapter folder load_model merged into model, or None (a plain model, or one not loaded by it)."""
    try:
        return _MERGED.get(model)
    except TypeError:  # not weak-referenceable (a test's stand-in): not load_model's
        return None


def prefix_reader(model: PreTrainedModel) -> PreTrainedModel | None:
    """The model that reads the fixed prompt prefix for model: the base model when load_model merged an adapter
    trained with a base-read prefix (trained_with_base_prefix), else None (model reads it itself)."""
    try:
        return _PREFIX_READERS.get(model)
    except TypeError:  # not weak-referenceable (None, a test's stand-in): nothing was registered for it
        return None


def load_model(
    model: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    adapter: str | os.PathLike | None = "auto",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load (model, tokenizer) in eval mode from a Hub id or local folder; None = bundled SmolLM2.

    adapter: "auto" (default) merges the repo's PPSF LoRA adapter (``adapter/``) into the default model when it
    is there; None or "none" loads the plain model; a folder merges that PEFT adapter into any model. An adapter
    trained with a base-read prefix also keeps the plain model, as prefix_reader(returned model).
    """
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    adapter_dir = resolve_adapter(adapter, model)
    if model is None:
        source: str | Path = default_model_dir()
    else:
        path = Path(model).expanduser()
        if path.is_file():
            raise ModelLoadError(f"--model {model!r} is a file; expected a model folder or a Hub model id")
        if path.is_dir() and not (path / "config.json").is_file():
            raise ModelLoadError(f"--model {model!r} is a folder without config.json: not a transformers model")
        source = path if path.is_dir() else model
    try:
        # With an adapter, merge in float32 and cast afterwards (merging into bf16 weights loses precision).
        lm = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32 if adapter_dir else torch_dtype)
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError, KeyError) as e:
        raise ModelLoadError(f"Could not load a causal LM and tokenizer from {str(source)!r}: {e}") from e
    base = None
    if adapter_dir is not None and trained_with_base_prefix(adapter_dir):
        # The merged weights and the plain ones, both: a second copy in memory (0.5 GB for the default model) buys
        # a decode as fast as the base model's, where an unmerged adapter switched off for the prefix would not.
        base = copy.deepcopy(lm).to(torch_device, torch_dtype).eval().requires_grad_(False)  # before the merge
    if adapter_dir is not None:
        try:
            lm = merge_adapter(lm, adapter_dir)
        except AdapterMismatchError as e:
            if adapter != "auto":
                raise
            # "auto" found the repo's adapter, but the default model is not the one it was trained for (a
            # replaced or test model): say so and serve the plain model rather than fail. peft injected LoRA
            # layers into lm before the load failed, so the model is read again.
            print(f"warning: not applying the PPSF adapter: {e}", file=sys.stderr)
            lm, base, adapter_dir = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype), None, None
        lm = lm.to(torch_dtype)
    lm.to(torch_device).eval().requires_grad_(False)
    if base is not None:
        _PREFIX_READERS[lm] = base
    if adapter_dir is not None:
        _MERGED[lm] = adapter_dir
    return lm, tokenizer
