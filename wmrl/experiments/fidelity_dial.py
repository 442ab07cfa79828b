r"""The fidelity dial's names and claims (notebook 08), shared with RESULTS.md and the campaigns.

The oracle-derived world model (:mod:`wmrl.world_model.oracle`) is trained at several noise levels
:math:`\sigma`, each its own tag (:func:`oracle_tag`); the program-analysis world model at another
profile has its own (:func:`profile_tag`). Arms that cost too much to train at every level are
trained at the two ends of the dial only (:func:`level_arms`). The analysis (each level's measured
fidelity, the break-even fidelity and its interval) is notebook 08's own helper,
``notebooks/_fidelity_dial.py``.
"""

from __future__ import annotations

from wmrl.config import WorldModelConfig
from wmrl.experiments.claims import Claim

__all__ = ["DEFAULT_DISTORTION", "DEFAULT_PROFILE", "dial_claims", "level_arms", "oracle_tag", "profile_tag"]

DEFAULT_PROFILE = WorldModelConfig().profile
DEFAULT_DISTORTION = WorldModelConfig().oracle_distortion


def oracle_tag(noise: float, distortion: str = DEFAULT_DISTORTION) -> str:
    """The tag of one level's runs: ``oracle-0.2`` (``oracle-identity-0.2`` for another distortion)."""
    kind = "" if distortion == DEFAULT_DISTORTION else f"{distortion}-"
    return f"oracle-{kind}{float(noise):g}"


def profile_tag(profile: str) -> str | None:
    """The tag of the program-analysis world model's runs at ``profile``: None for the default profile
    (the default runs, shared with notebooks 01-05), ``wm-<profile>`` for another."""
    return None if profile == DEFAULT_PROFILE else f"wm-{profile}"


def level_arms(levels, arms, end_arms=()) -> dict[float, list[str]]:
    """The arms trained at each noise level: ``arms`` at every level, ``end_arms`` at the lowest and the
    highest noise only (both ends of the dial: the two levels the claims compare)."""
    levels = sorted(float(v) for v in levels)
    ends = {levels[0], levels[-1]} if levels else set()
    return {v: [*arms, *(a for a in end_arms if a not in arms and v in ends)] for v in levels}


def dial_claims(top: str, bottom: str, arms) -> list[Claim]:
    """The notebook's claims, for the most (``top``) and least (``bottom``) faithful level's tag."""
    arms = set(arms)
    out = []
    if "wm" in arms:
        out.append(Claim("D1", "a world model that ranks better trains a better policy: wm at the highest fidelity "
                         "beats wm at the lowest", "not tested in the paper", f"wm~{top}", f"wm~{bottom}"))
    if "wmrl" in arms:
        out.append(Claim("D2", "WMRL trains a better policy with a better world model (highest fidelity beats lowest)",
                         "not tested in the paper", f"wmrl~{top}", f"wmrl~{bottom}"))
    if {"wm", "wmrl"} <= arms:
        out.append(Claim("D3", "with a poor world model the corrections protect: WMRL beats the pure world model at "
                         "the lowest fidelity", "Table 3 / Thm 4 (bias shrinks, rho falls back)", f"wmrl~{bottom}",
                         f"wm~{bottom}"))
    if "wmrl" in arms:
        out += [
            Claim("D4", "with a faithful world model, WMRL beats the anchors alone (the world model adds information)",
                  "not tested in the paper", f"wmrl~{top}", "anchor_only"),
            Claim("D5", "with a poor world model, WMRL falls below GRPO", "not tested in the paper", f"wmrl~{bottom}",
                  "grpo", expect="<"),
            Claim("D6", "C1-C2's best case: with a faithful world model, WMRL beats GRPO",
                  "16.4 vs 15.2 (4B), 21.6 vs 18.8 (9B) with the paper's world model", f"wmrl~{top}", "grpo"),
        ]
    # Table 3's corrections where they should matter most: a poor world model, against the uncorrected mix
    if {"mix", "od"} <= arms:
        out.append(Claim("D7", "with a poor world model Online Debiasing protects: OD alone beats the uncorrected mix "
                         "at the lowest fidelity", "C22-OD at the paper's world model: 15.7 vs 13.5 (4B MLE)",
                         f"od~{bottom}", f"mix~{bottom}"))
    if {"mix", "wmrl"} <= arms:
        out.append(Claim("D8", "with a poor world model both corrections protect: WMRL beats the uncorrected mix at "
                         "the lowest fidelity", "C22-both at the paper's world model: 16.4 vs 13.5 (4B MLE)",
                         f"wmrl~{bottom}", f"mix~{bottom}"))
    return out
