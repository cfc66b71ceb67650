#!/usr/bin/env bash
# Prepare .dev/ (git-ignored) for training/gpu_session.sh: wheels for the GPU machine's Python, the
# default GGUF split in two halves (each call carries at most 64 MiB), and the data build compressed.
# Usage: bash training/gpu_payload.sh data/cad-train
set -euo pipefail
DATA=${1:?data directory (cad-train data --out ...)}
PY=${PY:-.venv/bin/python}
mkdir -p .dev/whl .dev/data
grep -qx "/.dev/" .git/info/exclude 2>/dev/null || echo "/.dev/" >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .dev/whl \
    transformers==5.23.0 peft==0.21.2 gguf==0.19.0 platformdirs==4.14.9
GGUF=$($PY -c "from engine.backends.model import default_gguf_path; print(default_gguf_path())")
split -b 60M -d "$GGUF" .dev/gguf.part && mv .dev/gguf.part00 .dev/gguf.part1 && mv .dev/gguf.part01 .dev/gguf.part2
sha256sum "$GGUF" | cut -d' ' -f1 > .dev/gguf.sha256
for s in train val; do xz -T2 -6 -c "$DATA/$s.jsonl" > ".dev/data/$s.jsonl.xz"; done
du -sh .dev/*
