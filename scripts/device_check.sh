#!/usr/bin/env bash
# The GPU check: one call on a device machine, for a session that is lent one (15 minutes in all).
#   here:   make device-kit                 wheels for that machine's Python 3.12 and a tiny model, in .device/
#   there:  bash scripts/device_check.sh    (the device tool's run: carry [".device"], timeout_s 540)
# It reports, in $OUT/log.txt: the GPU, torch and the libraries; the `gpu`-marked tests (their skips say what
# each lacks); the LLM agent's wmrl arm at llm-smoke on CUDA (generation and TRL's update on the GPU, the
# in-process constrained-decoding world model, the sandbox, Online Debiasing, IVD), with the tiny random model
# on the fixture competitions imported as a pool; and the same arm as two processes under `accelerate launch`
# sharing the one GPU, the tiny model speaking Qwen3's chat template (TRL's bundled qwen3.jinja: SmolLM2's
# tokenizer has the same <|im_start|>/<|im_end|> tokens), with the Docker-less (local) sandbox: one run
# folder written once, a step routing the preset's groups over both processes. Sized to end within 8
# minutes (each stage has its own time limit), so it can be rerun inside a 15-minute lease. That machine can
# fetch no weights and vLLM's wheel is larger than a call can carry, so the paper's vLLM + Qwen path is not
# part of it; its tests skip, saying why.
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
import pathlib, re
pins = dict(re.findall(r'"(torch|transformers|accelerate|trl)==([^"]+)"', pathlib.Path("pyproject.toml").read_text()))
for name, module in (("torch", torch), ("transformers", transformers), ("accelerate", accelerate), ("trl", trl)):
    if module.__version__.split("+")[0] != pins[name]:
        print(f"NOTE: this machine's {name} is {module.__version__}, pyproject.toml pins {pins[name]}")
PY

step "the gpu-marked tests"
timeout 100 python3 -m pytest -o addopts="" -p no:cacheprovider -m gpu -rs -q tests/test_llm_trainer.py tests/test_world_model_llm.py \
    tests/test_sandbox_docker.py

step "the LLM agent's wmrl arm at llm-smoke, on CUDA, with the tiny model"
python3 -m wmrl.tasks import --layout dsbench tests/fixtures/competitions/DSBench/data_modeling --out /tmp/wmrl-pool \
    --train 1 --heldout 1 || exit 1
start=$(date +%s)
timeout 120 python3 -m wmrl.experiments run --agent llm --arm wmrl --preset llm-smoke --out /tmp/wmrl-run \
    --set paths.pool=/tmp/wmrl-pool --set "agent.model=$PWD/.device/tiny"
status=$?
echo "exit status $status after $(( $(date +%s) - start )) s"
report() {  # the run folder's headline: one summary, its steps, the world model's record
    python3 - "$1" <<'PY'
import json, pathlib, sys
import pandas as pd
out = pathlib.Path(sys.argv[1])
s = json.loads((out / "summary.json").read_text())
print("held-out Avg", s["heldout"]["avg"], "| wall", round(s["wall_s"], 1), "s | world model", s.get("world_model"))
print({k: round(v["actual_s"], 2) for k, v in s["compute"].items()})
steps = pd.read_parquet(out / "steps.parquet")
print("steps", list(steps.step), "| provenance:", {k: v for k, v in s["provenance"].items() if "process" in k})
PY
}
cp /tmp/wmrl-run/summary.json "$OUT/summary.json" 2>/dev/null && report /tmp/wmrl-run

# One process per GPU (accelerate places rank r on cuda:r, and NCCL refuses two ranks on one GPU): two
# processes where there are two GPUs, else one under the same launcher (tests run two on gloo, on CPU).
NPROC=$(python3 -c "import torch; print(min(2, torch.cuda.device_count()))")
step "$NPROC process(es) under accelerate launch, Qwen3's chat template, the local sandbox"
python3 - <<'PY' || exit 1
import pathlib, shutil
import trl
from transformers import AutoTokenizer
dest = pathlib.Path("/tmp/tiny-qwen")
shutil.rmtree(dest, ignore_errors=True)
shutil.copytree(".device/tiny", dest)
tokenizer = AutoTokenizer.from_pretrained(dest)
tokenizer.chat_template = (pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
tokenizer.save_pretrained(dest)
print("tiny model with Qwen3's template at", dest)
PY
start=$(date +%s)
timeout 180 python3 -m accelerate.commands.launch $([ "$NPROC" -gt 1 ] && echo --multi_gpu) --num_processes "$NPROC" --num_machines 1 \
    --mixed_precision no --dynamo_backend no -m wmrl.experiments run --agent llm --arm wmrl --preset llm-smoke \
    --out /tmp/wmrl-run2 --set paths.pool=/tmp/wmrl-pool --set agent.model=/tmp/tiny-qwen \
    --set sandbox.backend=local 2>&1 | tee /tmp/wmrl-run2.log
status2=${PIPESTATUS[0]}
echo "exit status $status2 after $(( $(date +%s) - start )) s"
cp /tmp/wmrl-run2/summary.json "$OUT/summary-2proc.json" 2>/dev/null && report /tmp/wmrl-run2
[ "$status" -eq 0 ] && exit "$status2"
exit "$status"
