"""The GPU check script (scripts/device_check.sh) as text: it cannot run here (no GPU), so what it promises is
checked by reading: the stages it runs, and a time limit on each that keeps it inside 8 minutes on one GPU (its
syntax and its refusal without a kit: tests/test_device_kit.py)."""
import re
from pathlib import Path

import trl
import yaml

from wmrl.trainer.llm.grpo import STATE_FILE

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "device_check.sh"
PAPER = Path(__file__).resolve().parent.parent / "wmrl" / "trainer" / "llm" / "accelerate" / "paper_8gpu.yaml"


def test_the_fsdp_stage_trains_one_process_in_bf16_with_sharded_checkpoints_as_the_paper_recipe_does():
    text = SCRIPT.read_text()
    launch = yaml.safe_load(re.search(r"cat > /tmp/fsdp1.yaml <<'YAML'\n(.*?)\nYAML\n", text, re.DOTALL).group(1))
    paper = yaml.safe_load(PAPER.read_text())
    assert launch["distributed_type"] == paper["distributed_type"] == "FSDP" and launch["num_processes"] == 1
    assert launch["mixed_precision"] == paper["mixed_precision"] == "bf16"
    assert launch["fsdp_config"] == paper["fsdp_config"]  # the recipe's FSDP2 settings, sharded state dicts included
    assert paper["fsdp_config"]["fsdp_state_dict_type"] == "SHARDED_STATE_DICT"
    run = re.search(r"FSDP_RUN=\((.*?)\)\n", text, re.DOTALL).group(1)
    for setting in ("llm.gradient_checkpointing=true", "train.checkpoint_every=1", "agent.model=/tmp/tiny-qwen",
                    "sandbox.backend=local"):
        assert setting in run
    assert '"chat_templates" / "qwen3.jinja"' in text
    assert (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").is_file()  # the template it reads


def test_it_kills_the_run_at_its_first_complete_checkpoint_and_resumes_it_with_the_same_command():
    text = SCRIPT.read_text()
    assert f"/tmp/wmrl-fsdp/trl/checkpoint-1/{STATE_FILE}" in text  # complete: the trainer writes its state last
    assert 'setsid "${FSDP_RUN[@]}"' in text and 'kill -9 -- "-$first"' in text
    assert 'timeout 180 "${FSDP_RUN[@]}"' in text
    assert '"device_check.json"' in text and "provenance()" in text and 'gpu_peak_gib=s.get("gpu_peak_gib")' in text


def test_every_long_stage_has_a_time_limit_and_on_one_gpu_they_stay_inside_eight_minutes():
    text = SCRIPT.read_text()
    one_gpu = text[: text.index('if [ "$NGPU" -ge 2 ]')]
    limits = [int(s) for s in re.findall(r"^timeout (\d+) ", one_gpu, re.MULTILINE)]
    polls = int(re.search(r"for _ in \$\(seq (\d+)\); do", one_gpu).group(1))
    assert len(limits) == 2 and sum(limits) + polls * 0.5 + 60 <= 480, (limits, polls)  # 60 s: wheels, imports
    assert re.search(r"timeout (\d+) python3 -m accelerate.commands.launch --multi_gpu --num_processes 2",
                     text[text.index('if [ "$NGPU" -ge 2 ]'):])
