#!/usr/bin/env bash
# How the shipped adapter was trained: one call on a lent GPU machine (no network there), driven by
# training/gpu_payload.sh, which prepares .dev/ here (wheels, the default GGUF in two halves that
# travel in two calls, the data build compressed). Usage on the GPU machine, from the repo root:
#   bash training/gpu_session.sh stash     # call 1: keep the first GGUF half in /tmp/stash
#   bash training/gpu_session.sh train     # call 2: install, reassemble, train the runs in parallel
# Runs are given as NAME:ARGS in $CAD_RUNS (default below); results go to $OUT (or ./out).
set -euo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
case "${1:-train}" in
stash)
    mkdir -p /tmp/stash && cp .dev/gguf.part1 /tmp/stash/ && ls -la /tmp/stash
    nvidia-smi --query-gpu=name,memory.total --format=csv || true
    python3 -c "import sys, torch; print(sys.version, torch.__version__, torch.cuda.is_available())"
    exit 0 ;;
esac
PY=${PY:-python3}; DEVICE=${CAD_DEVICE:-cuda}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false CAD_CACHE_DIR=/tmp/cad-cache
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ${CAD_WHEEL_DIR:-.dev/whl}/*.whl
export PYTHONPATH=/tmp/site:$PWD
GGUF=/tmp/SmolLM2-135M-Instruct.Q4_1.gguf
cat /tmp/stash/gguf.part1 .dev/gguf.part2 > "$GGUF"
echo "$(cat .dev/gguf.sha256)  $GGUF" | sha256sum -c -
mkdir -p /tmp/data
for f in .dev/data/*.xz; do xz -dc "$f" > "/tmp/data/$(basename "${f%.xz}")"; done
$PY -c "from engine.backends.model import load_model; m = load_model('$GGUF', '$DEVICE', adapter='none'); print(m.device, m.dtype)"
if [ -f .dev/tokcheck.sha ]; then   # the same targets as where the data was built, or stop here
    got=$($PY -m training.tokcheck "$GGUF" /tmp/data/val.jsonl | tail -n 1)
    [ "$got" = "$(cat .dev/tokcheck.sha)" ] || { echo "tokenizer fingerprint differs: $got"; exit 3; }
    echo "tokenizer fingerprint OK"
fi
COMMON="--data /tmp/data --base $GGUF --device $DEVICE --checkpoint-minutes 2"
RUNS=${CAD_RUNS:-"lora16:--rank 16 --alpha 32 --lr 5e-4 lora32:--rank 32 --alpha 64 --lr 4e-4 full:--full-finetune --lr 5e-5"}
pids=()
IFS=' ' read -r -a words <<< "$RUNS"
name=""; args=""
launch() { [ -n "$name" ] && { $PY -m training.cli fit $COMMON --out /tmp/runs/$name $args $CAD_FIT_ARGS \
    > "$OUT/$name.log" 2>&1 & pids+=($!); }; return 0; }
for w in "${words[@]}"; do
    if [[ "$w" == *:* ]]; then launch; name=${w%%:*}; args=${w#*:}; else args="$args $w"; fi
done
launch
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
nvidia-smi --query-gpu=memory.used --format=csv || true
# a full fine-tuning run (a whole model, too big to bring back or commit) becomes a LoRA adapter: the
# truncated SVD of each projection's change (cad-train extract), its energy report beside the logs
RANK=${CAD_EXTRACT_RANK:-64}
for d in /tmp/runs/*; do
    [ -f "$d/adapter/config.json" ] || continue
    $PY -m training.cli extract --tuned "$d/adapter" --out "$d/lora$RANK" --rank "$RANK" \
        > "$OUT/$(basename "$d").extract.json" 2> "$OUT/$(basename "$d").extract.log" || status=1
done
# bring back every adapter and metrics file in <=15 MB pieces (the tool returns 8 files of 16 MB)
cd /tmp/runs && rm -rf */checkpoint* && for d in *; do [ -f "$d/adapter/adapter_config.json" ] || rm -rf "$d/adapter"; done
cd /tmp && tar cf - runs | split -b 15M - "$OUT/runs.tar.part-"
ls -la "$OUT"
exit $status
