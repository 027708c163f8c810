#!/usr/bin/env bash
# Issue #63's GPU rows, in one device call: bertlens embed against sentence-transformers fp16, the sweep at 10k and
# 100k texts with --rows all and auto (wall time, stage split, rows read, pick), recommend end to end.
#
# Here first: .venv/bin/python bench/device_prepare.py   (writes .gpu/: the default model in fp16, the texts, wheels)
# Then the device tool: run(command="bash bench/device_rows.sh", carry=[".gpu"], timeout_s=590)
# Without a GPU (a check of the script): DEVICE=cpu TEXTS=1000 SCALE=5 PYTHON=.venv/bin/python bash bench/device_rows.sh
# Every step has its own time limit, so a slow one cannot take the later ones with it; $OUT/log.txt holds the output
# and $OUT/summary.json each sweep's figures (bench/device_summary.py).
set -u
OUT=${OUT:-/tmp/device-rows}
DEVICE=${DEVICE:-cuda}
TEXTS=${TEXTS:-}   # keep only this many texts of each file (a quick check); empty: all
SCALE=${SCALE:-1}   # every step's time limit times this (a CPU check needs more)
PYTHON=${PYTHON:-python3}   # the device image's python3 holds torch, transformers and sentence-transformers
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
if ! "$PYTHON" -c "import cyclopts, clevercsv, iterstrat" 2>/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD/src:$PWD/bench:${PYTHONPATH:-} HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
WORK=$(mktemp -d)
for name in cloze cloze10k sentences documents; do
  file=$(ls .gpu/$name.*.gz) && base=$(basename "$file" .gz)
  if [ -n "$TEXTS" ]; then gunzip -c "$file" | head -n $((TEXTS + 1)) > "$WORK/$base"; else gunzip -c "$file" > "$WORK/$base"; fi
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
"$PYTHON" -c "import torch, transformers, sentence_transformers as st; print('torch', torch.__version__, 'transformers', transformers.__version__, 'sentence-transformers', st.__version__)"
nproc

step() {  # step NAME SECONDS COMMAND...: one timed step, its wall time logged even when it fails or runs out
  local name=$1 limit=$(( $2 * SCALE )); shift 2
  local start=$(date +%s%N)
  timeout "$limit" "$@"; local code=$?
  echo "STEP $name exit $code wall $(( ($(date +%s%N) - start) / 1000000 )) ms"
}
sweep() {  # sweep NAME SECONDS DATA ROWS
  step "$1" "$2" "$PYTHON" -m bertlens sweep --data "$3" --text-col text --label-col label --model .gpu/model \
    --precision auto --device "$DEVICE" --rows "$4" --out "$WORK/$1" --cache-dir "$WORK/cache-$1"
}

step embed 100 "$PYTHON" bench/gpu_embed.py --model .gpu/model --device "$DEVICE" --rounds 2 \
  --texts "$WORK/sentences.txt" "$WORK/documents.txt"
sweep sweep-10k-all 60 "$WORK/cloze10k.csv" all
sweep sweep-10k-auto 60 "$WORK/cloze10k.csv" auto
sweep sweep-100k-auto 120 "$WORK/cloze.csv" auto
step recommend 90 "$PYTHON" -m bertlens recommend --data "$WORK/cloze10k.csv" --text-col text --label-col label \
  --model .gpu/model --budget-minutes 1.5 --out "$WORK/recommend"
sweep sweep-100k-all 150 "$WORK/cloze.csv" all
"$PYTHON" bench/device_summary.py "$WORK" > "$OUT/summary.json"
cat "$OUT/summary.json"
