"""The paper's published numbers, in one place, so every notebook prints the same ones beside ours.

Source: "Scaling Automatic Research Agents via World Models" (WMRL, arXiv 2608.12564), Table 1
(GPU-hours and held-out Avg, Qwen3.5-4B/9B, MLE-Dojo and DSBench), Table 2 (LIBERO-Long success,
MiniVLA-1B), Table 3 (the OD/IVD ablation) and Sec. 3.3 / App. D (anchor share: "about 10% of all
groups", and "8 groups per step, at least one executed", i.e. at least 12.5%). The numbers are
copied from the reviews in ``seeds/``, which quote them verbatim ("source-verified", claim ids
C1-C30 there); nothing here is a result of this repository. Notebooks never type one of these
numbers: they print them from here (:func:`versus`, :func:`ablation_versus`, :func:`speedup`).

Our arms map onto the paper's rows by :data:`ARM_TO_PAPER` (``untrained`` is the base model row,
``wm`` the "pure world model, no correction" block, ``mix`` Table 3's "neither" row).
"""

from __future__ import annotations

import pandas as pd

from wmrl.arms import ARMS

__all__ = [
    "ABLATION_ARMS",
    "ABLATION_COLUMNS",
    "ANCHOR_SHARE_APPENDIX",
    "ANCHOR_SHARE_TEXT",
    "ARM_TO_PAPER",
    "CATEGORY_REGRESSIONS",
    "PAPER_SCALE",
    "TABLE1",
    "TABLE2",
    "TABLE3",
    "ablation_versus",
    "beside",
    "gpu_hours",
    "speedup",
    "table3_with_grpo",
    "versus",
]

#: Table 1: GPU-hours (None where the paper gives none) and held-out Avg (leaderboard percentile).
TABLE1 = pd.DataFrame(
    [
        ("untrained", "4B", None, 7.3, 17.1),
        ("untrained", "9B", None, 9.6, 23.9),
        ("grpo", "4B", 883.0, 15.2, 25.7),
        ("grpo", "9B", 1174.0, 18.8, 31.2),
        ("wm", "4B", 269.0, 12.9, 23.1),
        ("wm", "9B", 330.0, 16.1, 28.0),
        ("wmrl", "4B", 286.0, 16.4, 28.8),
        ("wmrl", "9B", 349.0, 21.6, 32.8),
    ],
    columns=["arm", "model", "gpu_hours", "mle_dojo_avg", "dsbench_avg"],
)

#: Table 1's only two category cells where WMRL is below GRPO of its size (C7: the table's two red arrows).
CATEGORY_REGRESSIONS = pd.DataFrame(
    [("4B", "MLE-Dojo", "text", 16.1, 16.6), ("9B", "DSBench", "regression", 39.2, 40.4)],
    columns=["model", "benchmark", "category", "wmrl", "grpo"],
)

#: Table 2: LIBERO-Long success % of MiniVLA-1B (Overall = 0.32 in-domain + 0.68 OOD); C19 also
#: notes one regression, in-domain Best@8: WMRL 47.5 vs GRPO 48.8.
TABLE2 = pd.DataFrame(
    [("sft", 37.4, None), ("grpo", 38.3, 48.8), ("wm", 39.2, None), ("wmrl", 41.2, 47.5)],
    columns=["arm", "overall", "in_domain_best_at_8"],
)

#: Table 3 (all rows spend the same two signals at the same share; only the corrections differ).
TABLE3 = pd.DataFrame(
    [
        ("mix", False, False, 13.5, 25.3, 16.8, 29.5),
        ("ivd", False, True, 14.9, 26.2, 18.0, 31.2),
        ("od", True, False, 15.7, 28.1, 19.4, 31.7),
        ("wmrl", True, True, 16.4, 28.8, 21.6, 32.8),
    ],
    columns=["arm", "od", "ivd", "4B_mle", "4B_ds", "9B_mle", "9B_ds"],
)
ABLATION_COLUMNS = ("4B_mle", "4B_ds", "9B_mle", "9B_ds")

#: Our arm name -> the paper's row label (from the arm table).
ARM_TO_PAPER = {name: arm.paper_row for name, arm in ARMS.items()}

#: Table 3's rows in the paper's order.
ABLATION_ARMS = ("mix", "ivd", "od", "wmrl")

ANCHOR_SHARE_TEXT = 0.10  # Sec. 3.3, footnote 2: "about 10% of all groups"
ANCHOR_SHARE_APPENDIX = 1 / 8  # App. D: 8 groups per step, at least one executed

#: The paper's training shape (Sec. 4.1 / App. D), what the cost model projects to.
PAPER_SCALE = {"groups_per_step": 8, "group_size": 8, "max_turns": 4, "timeout_s": 1200.0,
               "anchor_fraction": ANCHOR_SHARE_TEXT}

_BENCH = {"mle_dojo_avg": "MLE-Dojo", "dsbench_avg": "DSBench"}


def gpu_hours(model: str) -> dict[str, float]:
    """``{"grpo": ..., "wmrl": ..., "wm": ...}`` GPU-hours of Table 1 for ``"4B"`` or ``"9B"``."""
    rows = TABLE1[(TABLE1.model == model) & TABLE1.gpu_hours.notna()]
    if rows.empty:
        raise ValueError(f"Table 1 has models 4B and 9B, not {model!r}")
    return dict(zip(rows.arm, rows.gpu_hours.astype(float)))


def speedup(model: str, arm: str = "wmrl") -> float:
    """GRPO's GPU-hours over ``arm``'s (Table 1): 883/286 = 3.1x at 4B, 1174/349 = 3.4x at 9B for WMRL."""
    h = gpu_hours(model)
    return h["grpo"] / h[arm]


def versus(a: str, b: str, col: str = "mle_dojo_avg") -> str:
    """Table 1's ``a`` against ``b`` at both sizes, e.g. ``"16.4 vs 15.2 (4B), 21.6 vs 18.8 (9B) MLE-Dojo"``."""
    t = TABLE1.set_index(["arm", "model"])[col]
    parts = [f"{t[(a, m)]:.1f} vs {t[(b, m)]:.1f} ({m})" for m in ("4B", "9B")]
    return ", ".join(parts) + f" {_BENCH.get(col, col)}"


def table3_with_grpo() -> pd.DataFrame:
    """Table 3's columns with GRPO's Table 1 values as a fifth row (the reference of C22/C23)."""
    t1 = TABLE1[TABLE1.arm == "grpo"].set_index("model")
    grpo = {"arm": "grpo", "od": None, "ivd": None,
            "4B_mle": t1.loc["4B", "mle_dojo_avg"], "4B_ds": t1.loc["4B", "dsbench_avg"],
            "9B_mle": t1.loc["9B", "mle_dojo_avg"], "9B_ds": t1.loc["9B", "dsbench_avg"]}
    return pd.concat([TABLE3, pd.DataFrame([grpo])], ignore_index=True)


def ablation_versus(a: str, b: str) -> str:
    """``a - b`` in each of Table 3's four columns (GRPO from Table 1), e.g. ``"+0.7 / +0.7 / +2.2 / +1.1"``."""
    t = table3_with_grpo().set_index("arm")
    diffs = " / ".join(f"{t.loc[a, c] - t.loc[b, c]:+.1f}" for c in ABLATION_COLUMNS)
    return f"{t.loc[a, '4B_mle']:.1f} vs {t.loc[b, '4B_mle']:.1f} (4B MLE); {diffs} (4B MLE / DS, 9B MLE / DS)"


def beside(ours: pd.DataFrame, table: pd.DataFrame, cols, models=("4B", "9B")) -> pd.DataFrame:
    """``ours`` (indexed by arm) with the paper's ``cols`` of ``table`` (per model, if it has one) on the right."""
    out = ours.copy()
    p = table.set_index("arm")
    for model in models if "model" in p else [None]:
        part = p if model is None else p[p.model == model]
        for c in cols:
            out[f"paper {model} {c}" if model else f"paper {c}"] = [part.loc[a, c] if a in part.index else None
                                                                    for a in out.index]
    return out
