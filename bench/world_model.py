"""How often the in-process LLM world model's replies fail the schema, free against constrained decoding.

``python -m bench.world_model [--n 16] [--mode holistic|decomposed] [--threads 1]`` scores the
first ``n`` scripts of notebook 05's fixed set (``sample_items(pool.train, 96, seed=0)``) with
SmolLM2-135M twice - decoding freely (the prompt and one repair round) and under each check's JSON
Schema (:mod:`.backends.constrained`) - and prints, per arm, the parse-failure rate (checks whose
reply stayed unusable after the repair round), the repairs asked, and wall and CPU seconds per
verdict. A benchmark, not a test: minutes on a CPU, and wall time depends on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import time

from wmrl.world_model.backends import TransformersBackend
from wmrl.world_model.llm import MODES, LLMWorldModel

__all__ = ["main", "parse_failure_bench"]


def parse_failure_bench(items, mode: str = "holistic", constrained: bool = True, max_new_tokens: int = 160,
                        seed: int = 0) -> dict:
    """Score ``items`` (``(task, code)`` pairs) once; the counts, rates and seconds per verdict."""
    wm = LLMWorldModel(TransformersBackend(constrained=constrained), mode=mode, max_new_tokens=max_new_tokens,
                       time_limit_s=60.0, seed=seed)
    wall, cpu = time.perf_counter(), time.process_time()
    predictions = wm.predict_many(items)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = wm.stats()
    verdicts = max(1, stats["requests"] - stats["repairs"])
    return {"mode": mode, "constrained": constrained, "scripts": len(items), "verdicts": verdicts,
            "parse_failures": stats["parse_failures"], "parse_failure_rate": stats["parse_failure_rate"],
            "repairs": stats["repairs"], "wall_s_per_verdict": round(wall / verdicts, 2),
            "cpu_s_per_verdict": round(cpu / verdicts, 2), "statuses": [p.status for p in predictions]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=16, help="scripts of the fixed set to score")
    parser.add_argument("--mode", choices=MODES, default="holistic")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    import torch

    from wmrl.tasks import get_pool
    from wmrl.world_model.fidelity import sample_items

    if args.threads:
        torch.set_num_threads(args.threads)
    items = sample_items(get_pool().train, 96, seed=0)[:args.n]
    for constrained in (False, True):
        print(json.dumps(parse_failure_bench(items, args.mode, constrained)), flush=True)


if __name__ == "__main__":
    main()
