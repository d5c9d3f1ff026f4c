#!/usr/bin/env bash
# Wheels a GPU machine lent for a session may lack, for its Python, into build/device-wheels/ (carried with the
# device call, 64 MiB at most; scripts/device_run.sh installs them without dependencies).
#
#   scripts/device_wheels.sh 3.11            # what the recipe and the serving bench import beyond torch/peft
#   scripts/device_wheels.sh 3.11 pyarrow    # and more (pyarrow alone is ~40 MB: only if the machine lacks it)
set -euo pipefail
python=${1:?usage: scripts/device_wheels.sh PYTHON_VERSION [MORE ...]}
shift
out=build/device-wheels
rm -rf "$out" && mkdir -p "$out"
# The versions this repo is tested with (pyproject.toml's pins and what `make test` installs).
pins=$(.venv/bin/pip list --format=freeze 2>/dev/null)
want="transformers trl datasets huggingface_hub tokenizers safetensors dill multiprocess xxhash rapidfuzz
    jsonschema jsonschema-specifications referencing rpds-py openai jiter distro $*"
specs=()
for name in $want; do
    spec=$(grep -i -E "^${name//-/[-_]}==" <<<"$pins" || true)
    specs+=("${spec:-$name}")
done
.venv/bin/pip download -q --no-deps --only-binary=:all: --python-version "$python" \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$out" "${specs[@]}"
du -ch "$out"/*.whl | tail -n 1
