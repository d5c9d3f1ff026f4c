#!/usr/bin/env bash
# One GPU session, one call: the recipe on CUDA (dev + frozen test sets), its export, and serving measured.
#
#   scripts/device_run.sh OUT [recipe|serve|all]      # default: all
#
# Wheels the GPU machine lacks go in build/device-wheels/ (carried with the call; pip download them here for
# its Python version) and are installed first, without dependencies. OUT/ gets the run folder (runs/default
# layout), the export and bench/serve_bench.py's tables; everything is also printed.
set -euo pipefail
out=${1:?usage: scripts/device_run.sh OUT [recipe|serve|all]}
what=${2:-all}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
python -V && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
if compgen -G "build/device-wheels/*.whl" >/dev/null; then
    python -m pip install -q --no-deps build/device-wheels/*.whl
fi
python -m pip install -q --no-deps -e .
mkdir -p "$out"
if [[ $what == recipe || $what == all ]]; then
    python training/recipe.py training/recipes/default.yaml --device cuda --test --out "$out/run" \
        --compare adapter/ 2>&1 | tail -n 40
fi
if [[ $what == serve || $what == all ]]; then
    adapter=adapter
    [[ -f $out/run/adapter/adapter_model.safetensors ]] && adapter=$out/run/adapter
    python -m agent.export "$out/model" --adapter "$adapter" --gguf none >/dev/null
    python bench/serve_bench.py "$out/model" --device cuda --concurrency 1,8,32 --conversations 64 --local \
        --json "$out/serve.json" | tee "$out/serve.md"
fi
