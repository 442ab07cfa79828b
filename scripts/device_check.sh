#!/usr/bin/env bash
# The GPU check: one call on a device machine, for a session that is lent one (15 minutes in all).
#   here:   make device-kit                 wheels for that machine's Python 3.12 and a tiny model, in .device/
#   there:  bash scripts/device_check.sh    (the device tool's run: carry [".device"], timeout_s 540)
# What one lent GPU (torch, transformers 5.17, accelerate 1.15, no network) can show, within 8 minutes:
#   1. the GPU, torch and the libraries against pyproject.toml's pins;
#   2. the `gpu`-marked tests (their skips say what each lacks);
#   3. TRL's GRPO training of the LLM agent's wmrl arm (llm-smoke settings; the tiny random model with
#      Qwen3's chat template; the DSBench fixture competitions as the pool; the local sandbox) under FSDP2
#      on CUDA in bf16 with gradient checkpointing, one process, sharded checkpoints every step: killed once
#      its first checkpoint is complete, then resumed by the same command to its end and its evaluation;
#   4. with two GPUs or more, the same arm as two processes.
# $OUT/device_check.json keeps each stage's outcome and seconds, the run's per-phase seconds and each
# process's peak CUDA memory, with the provenance; $OUT/log.txt everything printed.
# What a lent machine cannot show, and what would: vLLM generation and a vLLM world-model server (vLLM's
# wheel is larger than a call carries: a GPU machine with the `gpu` extra), Qwen3-4B's memory and speed
# (weights cannot be fetched: a machine with the weights), FSDP across GPUs and NCCL (one GPU: a node with
# several), Docker GPU sandboxes (no Docker engine there: a host with the NVIDIA container toolkit).
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

STAGES=/tmp/wmrl-stages.jsonl; : > "$STAGES"
stage() { printf '{"stage": "%s", "status": %s, "seconds": %s}\n' "$1" "$2" "$3" >> "$STAGES"; }

step "wmrl at llm-smoke under FSDP2 on CUDA, bf16, gradient checkpointing: killed after its first checkpoint, resumed"
python3 -m wmrl.tasks import --layout dsbench tests/fixtures/competitions/DSBench/data_modeling --out /tmp/wmrl-pool \
    --train 1 --heldout 1 || exit 1
python3 - <<'PY' || exit 1
import pathlib, shutil
import trl
from transformers import AutoTokenizer
dest = pathlib.Path("/tmp/tiny-qwen")  # the tiny model speaking Qwen3's chat template (TRL's bundled qwen3.jinja:
shutil.rmtree(dest, ignore_errors=True)  # SmolLM2's tokenizer has the same <|im_start|>/<|im_end|> tokens)
shutil.copytree(".device/tiny", dest)
tokenizer = AutoTokenizer.from_pretrained(dest)
tokenizer.chat_template = (pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
tokenizer.save_pretrained(dest)
print("tiny model with Qwen3's template at", dest)
PY
cat > /tmp/fsdp1.yaml <<'YAML'
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_version: 2
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  fsdp_activation_checkpointing: false
mixed_precision: bf16
num_machines: 1
num_processes: 1
gpu_ids: "0"
machine_rank: 0
main_training_function: main
rdzv_backend: static
same_network: true
use_cpu: false
YAML
FSDP_RUN=(python3 -m accelerate.commands.launch --config_file /tmp/fsdp1.yaml -m wmrl.experiments run --agent llm
          --arm wmrl --preset llm-smoke --out /tmp/wmrl-fsdp --set paths.pool=/tmp/wmrl-pool
          --set agent.model=/tmp/tiny-qwen --set sandbox.backend=local --set llm.gradient_checkpointing=true
          --set train.steps=3 --set train.checkpoint_every=1 --set eval.every=3)
start=$(date +%s)
setsid "${FSDP_RUN[@]}" > /tmp/wmrl-fsdp-1.log 2>&1 &
first=$!
for _ in $(seq 240); do  # at most 120 s for the first checkpoint (wmrl's state is written last)
    [ -f /tmp/wmrl-fsdp/trl/checkpoint-1/wmrl_state.pt ] && break
    kill -0 "$first" 2>/dev/null || break
    sleep 0.5
done
if [ -f /tmp/wmrl-fsdp/trl/checkpoint-1/wmrl_state.pt ]; then
    kill -9 -- "-$first" 2>/dev/null; wait "$first" 2>/dev/null
    ls /tmp/wmrl-fsdp/trl/checkpoint-1
    stage fsdp-until-first-checkpoint true $(( $(date +%s) - start ))
else
    tail -40 /tmp/wmrl-fsdp-1.log
    stage fsdp-until-first-checkpoint false $(( $(date +%s) - start ))
fi
start=$(date +%s)
timeout 180 "${FSDP_RUN[@]}" 2>&1 | tee /tmp/wmrl-fsdp-2.log | tail -25
status=${PIPESTATUS[0]}
echo "exit status $status after $(( $(date +%s) - start )) s"
stage fsdp-resumed-to-its-end "$([ "$status" -eq 0 ] && echo true || echo false)" $(( $(date +%s) - start ))
python3 - "$OUT" <<'PY'
import json, pathlib, sys
import torch
from wmrl.provenance import provenance
out, run = pathlib.Path(sys.argv[1]), pathlib.Path("/tmp/wmrl-fsdp")
stages = [json.loads(line) for line in pathlib.Path("/tmp/wmrl-stages.jsonl").read_text().splitlines()]
found = {"what": "scripts/device_check.sh: wmrl at llm-smoke on CUDA under FSDP2 (one process, bf16, gradient "
                 "checkpointing, sharded checkpoints), killed after its first checkpoint and resumed",
         "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "stages": stages,
         "provenance": provenance()}
if (run / "summary.json").is_file():
    s = json.loads((run / "summary.json").read_text())
    found.update(heldout_avg=s["heldout"]["avg"], wall_s=s["wall_s"], gpu_peak_gib=s.get("gpu_peak_gib"),
                 phase_s={k: v["actual_s"] for k, v in s["compute"].items()},
                 checkpoints=sorted(p.name for p in (run / "trl").glob("checkpoint-*")))
(out / "device_check.json").write_text(json.dumps(found, indent=2) + "\n")
print(json.dumps({k: v for k, v in found.items() if k != "provenance"}, indent=1))
PY

NGPU=$(python3 -c "import torch; print(torch.cuda.device_count())")
status2=0
if [ "$NGPU" -ge 2 ]; then  # one process per GPU: NCCL refuses two ranks on one GPU
    step "two processes under accelerate launch on two GPUs"
    start=$(date +%s)
    timeout 180 python3 -m accelerate.commands.launch --multi_gpu --num_processes 2 --num_machines 1 \
        --mixed_precision no --dynamo_backend no -m wmrl.experiments run --agent llm --arm wmrl --preset llm-smoke \
        --out /tmp/wmrl-run2 --set paths.pool=/tmp/wmrl-pool --set agent.model=/tmp/tiny-qwen \
        --set sandbox.backend=local 2>&1 | tail -25
    status2=${PIPESTATUS[0]}
    echo "exit status $status2 after $(( $(date +%s) - start )) s"
    cp /tmp/wmrl-run2/summary.json "$OUT/summary-2proc.json" 2>/dev/null
fi
[ "$status" -eq 0 ] && exit "$status2"
exit "$status"
