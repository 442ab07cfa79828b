#!/usr/bin/env bash
# The GPU check: one call on a device machine, for a session that is lent one (15 minutes in all).
#   here:   make device-kit                 wheels for that machine's Python 3.12 and a tiny model, in .device/
#   there:  bash scripts/device_check.sh    (the device tool's run: carry [".device"], timeout_s 540)
# It reports, in $OUT/log.txt: the GPU, torch and the libraries; the `gpu`-marked tests (their skips say what
# each lacks); and the LLM agent's wmrl arm at llm-smoke on CUDA (generation and TRL's update on the GPU, the
# in-process constrained-decoding world model, the sandbox, Online Debiasing, IVD), with the tiny random model
# on the fixture competitions imported as a pool. That machine can fetch no weights and vLLM's wheel is larger
# than a call can carry, so the paper's vLLM + Qwen path is not part of it; its tests skip, saying why.
set -uo pipefail
OUT=${OUT:-/tmp/wmrl-device-check}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
[ -d .device/wheels ] && [ -d .device/tiny ] || { echo "no .device/ kit here: run 'make device-kit' first and carry .device"; exit 2; }

step "the carried wheels, installed beside the machine's own torch and transformers"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .device/wheels/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 WMRL_DATA=/tmp/wmrl-data

step "the GPU and the libraries"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 - <<'PY'
import torch, transformers, trl, outlines, accelerate
print("torch", torch.__version__, "| CUDA", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
print("transformers", transformers.__version__, "| trl", trl.__version__, "| accelerate", accelerate.__version__,
      "| outlines", outlines.__version__ if hasattr(outlines, "__version__") else "?")
PY

step "the gpu-marked tests"
python3 -m pytest -o addopts="" -p no:cacheprovider -m gpu -rs -q tests/test_llm_trainer.py tests/test_world_model_llm.py \
    tests/test_sandbox_docker.py

step "the LLM agent's wmrl arm at llm-smoke, on CUDA, with the tiny model"
python3 -m wmrl.tasks import --layout dsbench tests/fixtures/competitions/DSBench/data_modeling --out /tmp/wmrl-pool \
    --train 1 --heldout 1 || exit 1
start=$(date +%s)
python3 -m wmrl.experiments run --agent llm --arm wmrl --preset llm-smoke --out /tmp/wmrl-run \
    --set paths.pool=/tmp/wmrl-pool --set "agent.model=$PWD/.device/tiny"
status=$?
echo "exit status $status after $(( $(date +%s) - start )) s"
cp /tmp/wmrl-run/summary.json "$OUT/summary.json" 2>/dev/null && python3 - <<'PY'
import json
s = json.load(open("/tmp/wmrl-run/summary.json"))
print("held-out Avg", s["heldout"]["avg"], "| wall", round(s["wall_s"], 1), "s")
print({k: round(v["actual_s"], 2) for k, v in s["compute"].items()})
PY
exit $status
