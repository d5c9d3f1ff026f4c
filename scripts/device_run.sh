#!/usr/bin/env bash
# A GPU session in two calls (each fits the device's 10-minute limit per command):
#
#   scripts/device_run.sh OUT recipe   # the recipe on CUDA: train from the base model, dev + frozen test sets
#   scripts/device_run.sh OUT serve    # the export (the recipe's adapter if OUT has it) and bench/serve_bench.py
#
# Wheels the GPU machine lacks go in build/device-wheels/ (carried with the call; `pip download` them here for
# its Python version) and are installed first, without dependencies. The big files (data, checkpoints, merged
# weights) stay in /tmp; OUT gets what comes back: the adapter, eval predictions and summaries, logs, tables.
set -euo pipefail
out=${1:?usage: scripts/device_run.sh OUT recipe|serve}
what=${2:?usage: scripts/device_run.sh OUT recipe|serve}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
python -V && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
if compgen -G "build/device-wheels/*.whl" >/dev/null; then
    python -m pip install -q --no-deps build/device-wheels/*.whl
fi
mkdir -p "$out"
case $what in
recipe)
    # the current default's figures on the same sets are committed (docs/training.md): no --compare
    # the whole log comes back in OUT even when the call is cut short; the reply shows its end
    python training/recipe.py training/recipes/default.yaml --device cuda --test --out /tmp/run 2>&1 \
        | tee "$out/recipe.log" | tail -n 60
    mkdir -p "$out/run"
    cp -r /tmp/run/adapter /tmp/run/eval /tmp/run/recipe.json /tmp/run/data.jsonl.source.json "$out/run/"
    ;;
serve)
    adapter=adapter
    [[ -f $out/run/adapter/adapter_model.safetensors ]] && adapter=$out/run/adapter
    python -m agent.export /tmp/model --adapter "$adapter" --dtype bfloat16 --gguf none >"$out/export.log" 2>&1
    python bench/serve_bench.py /tmp/model --device cuda --concurrency 1,8,32 --conversations 64 --local \
        --json "$out/serve.json" --log "$out/server.log" | tee "$out/serve.md"
    ;;
*)
    echo "unknown step: $what (recipe or serve)" >&2
    exit 2
    ;;
esac
