#!/usr/bin/env bash
# Wheels a GPU machine lent for a session may lack, for its Python, into build/device-wheels/ (carried with the
# device call, 64 MiB at most; scripts/device_run.sh installs them without dependencies).
#
#   scripts/device_wheels.sh 3.12            # what the recipe and the serving bench import beyond torch/peft
#   scripts/device_wheels.sh 3.12 pyarrow    # and more (pyarrow alone is ~40 MB: only if the machine lacks it)
set -euo pipefail
python=${1:?usage: scripts/device_wheels.sh PYTHON_VERSION [MORE ...]}
shift
out=build/device-wheels
rm -rf "$out" && mkdir -p "$out"
# The versions this repo is tested with (pyproject.toml's pins and what `make test` installs).
pins=$(.venv/bin/pip list --format=freeze 2>/dev/null)
# The H200 image (Python 3.12) has torch, peft, accelerate, pyarrow, pandas and an older transformers; these are
# what the recipe (TRL, datasets), the agent (rapidfuzz, jsonschema) and `transformers serve` (its serving extra,
# the openai client) add, at the versions this repo is tested with.
want="transformers trl datasets huggingface_hub tokenizers safetensors dill multiprocess xxhash fsspec rapidfuzz
    jsonschema jsonschema-specifications referencing rpds-py openai httpx2 sniffio jiter distro pydantic pydantic_core
    annotated-types typing-inspection typing-extensions fastapi starlette uvicorn opentelemetry-api importlib-metadata gguf httpcore2 truststore click hf-xet anyio idna h11 $*"
specs=()
for name in $want; do
    pattern=${name//[-_]/[-_]}
    spec=$(grep -i -E "^${pattern}==" <<<"$pins" || true)
    specs+=("${spec:-$name}")
done
.venv/bin/pip download -q --no-deps --only-binary=:all: --python-version "$python" --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux1_x86_64 \
    -d "$out" "${specs[@]}"
du -ch "$out"/*.whl | tail -n 1
