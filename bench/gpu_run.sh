#!/usr/bin/env bash
# Issue 25.8: attnlab's training step and generation against Hugging Face (and nanoGPT) on a lent GPU, in one
# device-tool call. Each stage has its own time limit so that one failure or stall leaves the others' numbers;
# logs and JSON go to $OUT. The device machine has its own torch and transformers (no registry there): attnlab
# runs from the checkout (PYTHONPATH), nano-gpt travels as a wheel in .whl/ (pip download --no-deps nano-gpt).
#
#   run: bash bench/gpu_run.sh        (carry .whl)
set -uo pipefail
OUT=${OUT:-/tmp/attnlab-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="$PWD:/tmp/site"
else
  export PYTHONPATH="$PWD"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__,
'cuda', torch.version.cuda)" | tee -a "$OUT/gpu.txt"
stage() {  # stage NAME SECONDS COMMAND...: run one stage with its own limit, log to $OUT/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s)"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; echo "== $name exit $?"
  grep -v "^\[transformers\]" "$OUT/$name.log" | tail -n 14
}
TRAIN="python3 -m attnlab.benchmarks.train --device cuda --bf16 --probe-size 8192 --no-memory"
GEN="python3 -m attnlab.benchmarks.generate --device cuda --models gpt2 --batches 1,8 --reps 3 --new-tokens 256"
# 1. GPT-2 small as nanoGPT trains it, bf16 autocast: every contestant eager, plus attnlab compiled
stage train_eager 150 $TRAIN --cases gpt2-small --compile-ours inductor --out "$OUT/eager"
# 2. generation, GPT-2-small shape, 32-token prompt + 256 greedy tokens, batch 1 and 8
stage generate_bf16 100 $GEN --dtype bfloat16
stage generate_fp32 80 $GEN --dtype float32
# 3. every contestant compiled (nanoGPT's own setting)
stage train_compiled 150 $TRAIN --cases gpt2-small --compile inductor --out "$OUT/compiled"
ls -R "$OUT"
