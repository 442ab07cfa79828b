"""The arms of the experiments, defined once: who scores each group and which corrections apply.

Every trainer (grammar agent, LLM agent, VLA), every report and every notebook reads this table;
none re-derives an arm from its name. An arm is a set of switches on Algorithm 1 (see
:mod:`wmrl.step`):

=============  ============  ==============  ===========  ======  ======
arm            trains        world model     anchors      OD      IVD
=============  ============  ==============  ===========  ======  ======
untrained      no            --              --           --      --
sft            no            --              --           --      --
grpo           yes           no              every group  --      --
wm             yes           every group     none         no      no
mix            yes           every group     ~10%         no      no
od             yes           every group     ~10%         yes     no
ivd            yes           every group     ~10%         no      yes
wmrl           yes           every group     ~10%         yes     yes
anchor_only    yes           no              ~10% only    --      --
=============  ============  ==============  ===========  ======  ======

``mix``/``od``/``ivd``/``wmrl`` are Table 3's rows ("neither", "OD only", "IVD only", "both");
``anchor_only`` is the reviews' missing baseline: the anchor groups of ``wmrl`` alone, no world
model, the same execution budget. ``untrained`` is the starting policy; ``sft`` the supervised
warm start (the VLA's and the LLM agent's starting point), evaluated without post-training.

Every arm runs the paper's step (:class:`wmrl.step.WMRLStep`). What goes beyond the paper
(:class:`wmrl.beyond.BeyondStep`) acts on the arms that :attr:`Arm.beyond_paper` names: active
anchors on the arms with both streams (``mix``, ``od``, ``ivd``, ``wmrl``; refused elsewhere),
conditional OD on the arms with OD (``od``, ``wmrl``; elsewhere its strata only label the pairs),
regions on every arm that trains.

Adding an arm is one entry here plus, if it needs new behaviour, one switch read by
:class:`wmrl.step.WMRLStep`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARMS", "Arm", "arm_names", "get_arm"]


@dataclass(frozen=True)
class Arm:
    """What an arm does with each group of a step."""

    name: str
    train: bool  # False: evaluated as it starts (untrained, sft)
    world_model: bool  # world-model groups exist (every group is scored by the world model)
    anchors: bool  # some groups are really executed (all of them when world_model is False)
    od: bool = False  # Online Debiasing: isotonic calibration of world-model scores (Sec. 3.4)
    ivd: bool = False  # Inverse-Variance Denoising: rho-weighted fusion of the streams (Sec. 3.5)
    anchors_only: bool = False  # sample only the anchor groups (the execution budget of wmrl, no WM)
    paper_row: str = "(not in the paper)"  # the paper's label for this row
    summary: str = ""  # one line for tables: who scores a group, what corrects it

    @property
    def executes_every_group(self) -> bool:
        """grpo and anchor_only: every *sampled* group runs in the sandbox."""
        return self.train and not self.world_model

    @property
    def mixes_streams(self) -> bool:
        """Both an executed and a world-model stream in one step (the arms of Table 3)."""
        return self.world_model and self.anchors

    @property
    def beyond_paper(self) -> tuple[str, ...]:
        """The features of :mod:`wmrl.beyond` that act on this arm (module docstring)."""
        acts = {"active_anchors": self.train and self.mixes_streams, "conditional_od": self.train and self.od,
                "regions": self.train}
        return tuple(name for name, on in acts.items() if on)


ARMS: dict[str, Arm] = {a.name: a for a in (
    Arm("untrained", False, False, False, paper_row="base model (untrained)", summary="no training"),
    Arm("sft", False, False, False, paper_row="SFT", summary="supervised warm start, no RL"),
    Arm("grpo", True, False, True, paper_row="GRPO (real execution)", summary="sandbox scores every group"),
    Arm("wm", True, True, False, paper_row="pure world model (no correction)",
        summary="world model scores every group, no correction"),
    Arm("mix", True, True, True, paper_row="neither (uncorrected mix)",
        summary="world model + ~10% executed anchors, no correction"),
    Arm("od", True, True, True, od=True, paper_row="OD only", summary="anchors + Online Debiasing"),
    Arm("ivd", True, True, True, ivd=True, paper_row="IVD only", summary="anchors + Inverse-Variance Denoising"),
    Arm("wmrl", True, True, True, od=True, ivd=True, paper_row="WMRL (OD + IVD)",
        summary="anchors + Online Debiasing + Inverse-Variance Denoising"),
    Arm("anchor_only", True, False, True, anchors_only=True,
        summary="only the ~10% anchor groups, executed; no world model"),
)}


def arm_names() -> tuple[str, ...]:
    """Every arm's name, in the table's order."""
    return tuple(ARMS)


def get_arm(arm: str | Arm) -> Arm:
    """The :class:`Arm` called ``arm``; an unknown name lists the known ones."""
    if isinstance(arm, Arm):
        return arm
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose one of {', '.join(ARMS)}")
    return ARMS[arm]
