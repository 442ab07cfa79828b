"""The GPU check script (scripts/device_check.sh) as text: it cannot run here (no GPU), so what it promises is
checked by reading: the stages it runs, and a time limit on each that keeps it inside 8 minutes (its syntax and
its refusal without a kit: tests/test_device_kit.py)."""
import re
from pathlib import Path

import trl

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "device_check.sh"


def test_it_runs_a_process_per_gpu_up_to_two_with_a_qwen_template_and_the_local_sandbox():
    text = SCRIPT.read_text()
    launch = re.search(r"accelerate\.commands\.launch (.*?)2>&1", text.replace("\\\n", " "), re.DOTALL).group(1)
    assert '--num_processes "$NPROC"' in launch and "--multi_gpu" in launch and "sandbox.backend=local" in launch
    assert 'print(min(2, torch.cuda.device_count()))' in text  # never more ranks than GPUs
    assert "agent.model=/tmp/tiny-qwen" in launch
    assert '"chat_templates" / "qwen3.jinja"' in text
    assert (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").is_file()  # the template it reads


def test_every_long_stage_has_a_time_limit_and_together_they_stay_inside_eight_minutes():
    text = SCRIPT.read_text()
    limits = [int(s) for s in re.findall(r"^timeout (\d+) ", text, re.MULTILINE)]
    assert len(limits) == 3 and sum(limits) + 60 <= 480, limits  # 60 s: installing the wheels, the imports
