#!/usr/bin/env bash
# A GPU session (the device's 10-minute limit per command; 15 minutes of device time in all):
#
#   scripts/device_run.sh OUT recipe   # the recipe on CUDA: train from the base model, dev + frozen test sets
#   scripts/device_run.sh OUT serve    # the export (the recipe's adapter if OUT has it) and bench/serve_bench.py
#   scripts/device_run.sh OUT session  # one call: serve (the default adapter), then the recipe as committed and
#                                      # at full size (whole conversations, all layers) side by side, dev sets only
#
# Wheels the GPU machine lacks go in build/device-wheels/ (carried with the call; `pip download` them here for
# its Python version) and are installed first, without dependencies. The big files (data, checkpoints, merged
# weights) stay in /tmp; OUT gets what comes back: the adapter, eval predictions and summaries, logs, tables.
set -euo pipefail
out=${1:?usage: scripts/device_run.sh OUT recipe|serve}
what=${2:?usage: scripts/device_run.sh OUT recipe|serve}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
python=$(command -v python3 || command -v python)
python() { "$python" "$@"; }
python -V && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# The wheels go into a folder of their own, ahead of the image's packages (its site-packages may be read-only).
if compgen -G "build/device-wheels/*.whl" >/dev/null; then
    python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        build/device-wheels/*.whl
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}  # the repo: training/ scripts import agent
fi
mkdir -p "$out"
case $what in
session)
    # each step under its own limit, so that one that runs long leaves the others their time
    SERVE_LIMIT=${SERVE_LIMIT:-180} RECIPE_LIMIT=${RECIPE_LIMIT:-300}
    python -m agent.export /tmp/model --adapter adapter --dtype bfloat16 --gguf none >"$out/export.log" 2>&1
    timeout "$SERVE_LIMIT" "$python" bench/serve_bench.py /tmp/model --device cuda --concurrency 1,8,32 \
        --conversations 32 --json "$out/serve.json" --log "$out/server-logs" 2>&1 | tee "$out/serve.md" || true
    for variant in decision full; do
        sets=()
        [[ $variant == full ]] && sets=(--set data.conversations=1200 --set data.examples=0 --set train.layers=30)
        timeout "$RECIPE_LIMIT" "$python" training/recipe.py training/recipes/default.yaml --device cuda \
            --out "/tmp/run-$variant" "${sets[@]}" >"$out/recipe-$variant.log" 2>&1 &
    done
    wait || true
    for variant in decision full; do
        mkdir -p "$out/run-$variant"
        cp -r "/tmp/run-$variant/adapter" "/tmp/run-$variant/eval" "/tmp/run-$variant/recipe.json" \
            "$out/run-$variant/" 2>/dev/null || true
        rm -f "$out/run-$variant/adapter/"*.safetensors.tmp
        tail -n 25 "$out/recipe-$variant.log"
    done
    ;;
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
