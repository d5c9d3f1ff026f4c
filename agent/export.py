"""`python -m agent.export OUT`: the tuned model as a standalone model folder, and as GGUF for llama.cpp.

OUT gets the merged model (the PPSF adapter folded into the weights: safetensors, config.json,
generation_config.json), this repo's tokenizer files and templates byte for
byte, and a model card generated from the adapter's. `pipeline("text-generation", model=OUT)`,
`transformers serve` and vLLM load it as is. OUT/gguf/ gets the same weights as GGUF, made with llama.cpp's
own converter (`convert_hf_to_gguf.py`, which also writes the PPSF template into `tokenizer.chat_template`),
and quantized with llama.cpp's own `llama_model_quantize`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from .ppsf import STOP_STRINGS

REPO = Path(__file__).resolve().parents[1]
# The Hub files of this repo that make a model folder speak PPSF (tokenizer, its config with the embedded
# template, the template itself and the named templates).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
NAMED_TEMPLATES = "additional_chat_templates"
# llama.cpp's converter: vendored by the llama-cpp-python sdist (vendor/llama.cpp), extracted by `make export`.
DEFAULT_CONVERTER = REPO / "build" / "llama.cpp" / "convert_hf_to_gguf.py"
# What convert_hf_to_gguf.py writes itself, and what llama_model_quantize makes from its f16 output.
CONVERTER_TYPES = ("f32", "f16", "bf16", "q8_0")
QUANTIZED_TYPES = {"q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9}  # llama.cpp's LLAMA_FTYPE_MOSTLY_* values
GGUF_TYPES = CONVERTER_TYPES + tuple(QUANTIZED_TYPES)
DEFAULT_EXPORT = "ppsf-smollm2-135m"  # the default model's export: folder and GGUF file names
EXPORT_VERSION = 4  # bump when what export() writes changes: a cached default export is then made again
INFO_FILE = "export_info.json"


class ExportError(RuntimeError):
    """The export cannot be made; the message says what is missing."""


def save_model_folder(out: Path, model, *, base_name: str) -> None:
    """Write the merged weights, a generation config with PPSF's stops, this repo's tokenizer files, the card."""
    out.mkdir(parents=True, exist_ok=True)
    # Not generation_config.stop_strings: transformers 5.24's generate() then refuses to run without a tokenizer
    # argument, which pipeline() and `transformers serve` do not pass; the card gives the stops instead.
    model.generation_config.do_sample = False  # the agent decodes greedily; samplers are the caller's choice
    for key in ("temperature", "top_p", "top_k"):  # unused when not sampling; transformers warns otherwise
        setattr(model.generation_config, key, None)
    model.save_pretrained(out)
    copy_repo_files(out)
    (out / "README.md").write_text(model_card(base_name), encoding="utf-8")


def plain_bytes(path: Path) -> bytes:
    """The bytes of a regular file of its own: ExportError naming path if it is a symbolic link or has other hard
    links (either makes it any file of the machine, a token file say, which upload.py --model would then send)."""
    if path.is_symlink():
        raise ExportError(f"{path} is a symbolic link (to {os.readlink(path)}): replace it with the file itself")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # not a link swapped in since
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ExportError(f"{path} is not a regular file")
        if info.st_nlink > 1:
            raise ExportError(
                f"{path} has {info.st_nlink} hard links: it is also another file of this machine; "
                "replace it with a copy of its own"
            )
        return handle.read()


def copy_repo_files(out: Path, repo: Path = REPO) -> None:
    """Copy repo's tokenizer files and named templates into out, each a plain file (see plain_bytes)."""
    names = list(TOKENIZER_FILES)
    templates = repo / NAMED_TEMPLATES
    if templates.is_symlink():
        raise ExportError(f"{templates} is a symbolic link (to {os.readlink(templates)}): make it a folder")
    if templates.is_dir():
        names += [f"{NAMED_TEMPLATES}/{p.name}" for p in sorted(templates.iterdir()) if not p.name.startswith(".")]
    contents = {name: plain_bytes(repo / name) for name in names}  # all checked before anything is written
    for name, data in contents.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).unlink(missing_ok=True)  # a link left in out is replaced, never written through
        (out / name).write_bytes(data)


def model_card(base_name: str) -> str:
    """The merged model's card: the adapter card's body under the metadata of a full model."""
    from huggingface_hub import ModelCard, ModelCardData

    from .engine.models import default_adapter_dir, recorded_tools_shown

    body = ModelCard(plain_bytes(default_adapter_dir() / "README.md").decode("utf-8")).text.lstrip()
    body = body.replace("# PPSF LoRA adapter for", "# PPSF agent model (merged LoRA) based on", 1)
    data = ModelCardData(
        base_model=base_name,
        base_model_relation="finetune",
        language=["tr", "en"],
        library_name="transformers",
        license="apache-2.0",
        pipeline_tag="text-generation",
        tags=["ppsf", "pharmacy", "tool-calling", "gguf"],
    )
    front = f"---\n{data.to_yaml()}\n---\n\n"
    note = (
        "This folder is the PPSF adapter merged into the weights it was trained on (the bundled Q4_1 GGUF of "
        f"{base_name}, dequantized to float32), made by `python -m agent.export`. PPSF has no end-of-turn token: "
        f"stop on the strings {list(STOP_STRINGS)} (`generate(..., stop_strings=..., tokenizer=...)`, a server's "
        "`stop`), or use this repo's agent, which also stops right after a tool call. `gguf/` holds the same "
        "weights for llama.cpp, the PPSF template in `tokenizer.chat_template`; `tools.json` the tool schemas it was "
        "trained on (send those as the request's tools).\n\n"
    )
    if recorded_tools_shown(default_adapter_dir()) == "routed":
        note += (
            "It was trained shown only the tool a router picks (`tools_shown.txt`: routed; this repo's "
            "`agent.pharmacy.router`), with the reply started by the router's choice: it has never chosen among all "
            "the tools. Run it through the agent (`--backend openai` for a server), or give a plain pipeline the "
            "agent's prompt, `pharmacist_agent(...).prompt(messages)`, which ends with that start.\n\n"
        )
    return front + note + body


def find_converter(path: Path | None) -> Path:
    """llama.cpp's convert_hf_to_gguf.py, beside its `conversion` and `gguf-py` folders."""
    converter = path or Path(os.environ.get("PPSF_GGUF_CONVERTER", DEFAULT_CONVERTER))
    if not converter.is_file() or not (converter.parent / "conversion").is_dir():
        raise ExportError(
            f"llama.cpp's converter was not found at {converter} (with conversion/ and gguf-py/ beside it); "
            "`make export` extracts it from the llama-cpp-python sdist, or pass --converter "
            "/path/to/llama.cpp/convert_hf_to_gguf.py"
        )
    return converter


def convert_gguf(folder: Path, outfile: Path, outtype: str, converter: Path) -> Path:
    """Run llama.cpp's converter on a model folder (outtype: f32, f16, bf16 or q8_0)."""
    if outtype not in CONVERTER_TYPES:
        raise ValueError(f"the converter writes {', '.join(CONVERTER_TYPES)}, not {outtype!r}")
    outfile.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(converter), str(folder), "--outtype", outtype, "--outfile", str(outfile)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not outfile.is_file():
        raise ExportError(f"convert_hf_to_gguf.py failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return outfile


def quantize_gguf(source: Path, outfile: Path, qtype: str, threads: int = 0) -> Path:
    """Quantize a GGUF with llama.cpp's llama_model_quantize (through llama-cpp-python's bindings)."""
    try:
        import llama_cpp
    except ImportError as e:
        raise ExportError(f"quantizing to {qtype} needs llama-cpp-python (see README: Engines)") from e
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANTIZED_TYPES[qtype]
    params.nthread = threads
    failed = llama_cpp.llama_model_quantize(str(source).encode(), str(outfile).encode(), params)
    if failed or not outfile.is_file():
        raise ExportError(f"llama_model_quantize {source} -> {qtype} failed ({failed})")
    return outfile


def export(
    out: Path,
    *,
    model: str | None = None,
    adapter: str = "auto",
    dtype: str = "float32",
    gguf: tuple[str, ...] = ("q8_0", "q4_1"),
    converter: Path | None = None,
    name: str = "",
) -> dict[str, Path]:
    """Write the merged model folder to out and its GGUFs to out/gguf; return {"folder"|type: path}."""
    from .engine.models import (
        DEFAULT_NAME,
        SHOWN_FILE,
        TOOLS_FILE,
        load_model,
        resolve_adapter,
        trained_with_base_prefix,
    )

    unknown = [t for t in gguf if t not in GGUF_TYPES]
    if unknown:
        raise ValueError(f"unknown GGUF type(s) {unknown}; choose from {', '.join(GGUF_TYPES)}")
    adapter_dir = resolve_adapter(adapter, model)
    if adapter_dir is not None and trained_with_base_prefix(adapter_dir):
        # One merged model reads its whole prompt with the adapter on: such an adapter then calls no tool (docs).
        raise ExportError(
            f"the adapter {adapter_dir} was trained with its prompt prefix read by the base model (--base-prefix); "
            "a merged export cannot read it so: serve it with the local backend (python -m agent --adapter ...)"
        )
    script = find_converter(converter) if gguf else None
    lm, _ = load_model(model, device="cpu", dtype=dtype, adapter=adapter)  # the adapter merged in float32
    save_model_folder(out, lm, base_name=model or f"HuggingFaceTB/{DEFAULT_NAME}")
    (out / INFO_FILE).write_text(json.dumps(export_info(model, adapter, dtype), indent=2) + "\n", encoding="utf-8")
    if adapter_dir is not None and (adapter_dir / TOOLS_FILE).is_file():  # the tool schemas it was trained on
        (out / TOOLS_FILE).write_bytes(plain_bytes(adapter_dir / TOOLS_FILE))
        if (adapter_dir / SHOWN_FILE).is_file():  # and how it was shown them
            (out / SHOWN_FILE).write_bytes(plain_bytes(adapter_dir / SHOWN_FILE))
    written: dict[str, Path] = {"folder": out}
    name = name or DEFAULT_EXPORT
    if script is None:
        return written
    folder_gguf = out / "gguf"
    source: Path | None = None  # the f16 this call wrote, which the quantized types are made from
    # The converter's types first, so that an f16 asked for is also the quantized types' source.
    for outtype in sorted(gguf, key=lambda t: t not in CONVERTER_TYPES):
        target = folder_gguf / f"{name}-{outtype}.gguf"
        if outtype in CONVERTER_TYPES:
            written[outtype] = convert_gguf(out, target, outtype, script)
            continue
        # From f16 made now (not from q8_0: quantizing a quantized model loses more; never an older file).
        source = source or written.get("f16") or convert_gguf(out, folder_gguf / f".{name}-f16.tmp", "f16", script)
        written[outtype] = quantize_gguf(source, target, outtype)
    if source is not None and source != written.get("f16"):
        source.unlink()
    return written


def export_info(model: str | None, adapter: str, dtype: str) -> dict:
    """What an export was made from: the model, the adapter's weights (sha256), dtype and EXPORT_VERSION."""
    from .engine.models import resolve_adapter

    adapter_dir = resolve_adapter(adapter, model)
    weights = adapter_dir / "adapter_model.safetensors" if adapter_dir else None
    digest = hashlib.sha256(weights.read_bytes()).hexdigest() if weights and weights.is_file() else None
    return {"export_version": EXPORT_VERSION, "model": model, "adapter_sha256": digest, "dtype": dtype}


def default_export_dir() -> Path:
    """Where the default model's export lives: the cache's models folder (see agent.engine.models.cache_dir)."""
    from .engine.models import cache_dir

    return cache_dir() / "models" / DEFAULT_EXPORT


def default_gguf(outtype: str = "q8_0") -> Path:
    """The default tuned model as GGUF, exported on first use (about 20 s; needs llama.cpp's converter)."""
    path = default_export_dir() / "gguf" / f"{DEFAULT_EXPORT}-{outtype}.gguf"
    info = default_export_dir() / INFO_FILE
    # Made again when the adapter or this module's output changed since (an upgrade, a retrained adapter).
    if path.is_file() and info.is_file() and json.loads(info.read_text()) == export_info(None, "auto", "float32"):
        return path
    print(f"Exporting the default model to {path.parent} (one-time, ~20 s)...", file=sys.stderr, flush=True)
    folder = default_export_dir()
    # A fresh folder beside the final one, renamed into place: an interrupted export leaves no half-written model.
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        export(tmp, gguf=(outtype,))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m agent.export", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="the folder to write (created; files in it are replaced)")
    p.add_argument("--model", help="base model folder or Hub id (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--adapter", default="auto", help="PEFT adapter folder, or auto (the repo's adapter/)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument(
        "--gguf",
        default="q8_0,q4_1",
        help=f"comma-separated GGUF types to write to OUT/gguf ({', '.join(GGUF_TYPES)}), or none",
    )
    p.add_argument("--converter", type=Path, help=f"llama.cpp's convert_hf_to_gguf.py (default: {DEFAULT_CONVERTER})")
    args = p.parse_args(argv)
    types = () if args.gguf.strip().lower() == "none" else tuple(t.strip() for t in args.gguf.split(",") if t.strip())
    from .engine.models import ModelLoadError

    try:
        written = export(
            args.out, model=args.model, adapter=args.adapter, dtype=args.dtype, gguf=types, converter=args.converter
        )
    except (ExportError, ModelLoadError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for kind, path in written.items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
