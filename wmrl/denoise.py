r"""Inverse-Variance Denoising (IVD): fusing the anchor and world-model gradients (Sec. 3.5).

Background. A step has anchor groups :math:`G_E` (really executed) and world-model groups
:math:`G_{WM}`. Their gradients are both unbiased after Online Debiasing but the world-model
stream is noisier by the world model's residual variance. Weighting each stream by its inverse
variance gives

.. math::  g = \frac{\rho\, g_E + g_{WM}}{\rho\,|G_E| + |G_{WM}|}, \qquad
           \rho = 1 + \frac{\eta^2}{\eta^2_{cal}}, \quad \rho \in [1, \rho_{max}],

where :math:`g_E, g_{WM}` are *sums* of per-group gradients, :math:`\eta^2` is the mean squared
residual between calibrated world-model scores and real scores on recent anchor groups and
:math:`\eta^2_{cal}` is that residual recorded once at the end of warm-up (about 0.96 in the
paper). If the world model degrades, :math:`\eta^2` grows, :math:`\rho` rises and training leans
back towards plain GRPO on the anchors. Theorem 4 gives the fused variance
:math:`V_{WM} / (1 + V_{WM}/V_E)`; Lemma 12 shows an error in :math:`\rho` costs only second-order
variance, which is why a crude running estimate of :math:`\eta^2` is good enough.

Choices (documented because the paper leaves them open):

- The window counts anchor *groups*; residuals are pooled per pair within it. A group whose real
  scores are all equal still measures the world model's error (its residuals count) even though
  its own gradient is zero.
- Warm-up is ``warmup_groups`` anchor groups; :math:`\rho = 1` until it ends. Choose it so that
  warm-up ends after Online Debiasing's first fit, so that :math:`\eta^2_{cal}` measures the
  *calibrated* world model, as the paper's definition requires.
- A perfect world model at warm-up (:math:`\eta^2_{cal} = 0`) would divide by zero; the
  denominator is floored at ``eta2_floor``, so any later residual sends :math:`\rho` to its cap.
"""

from __future__ import annotations

import typing
from collections import deque

import numpy as np

from wmrl._checks import as_float_array, require_finite, require_same_length
from wmrl.config import MethodConfig

__all__ = ["FUSION_VARIANTS", "InverseVarianceWeighter", "fused_group_weights"]

_METHOD = MethodConfig()
#: the fusion rules, as :attr:`MethodConfig.fusion <wmrl.config.MethodConfig>` spells them
FUSION_VARIANTS: tuple[str, ...] = typing.get_args(typing.get_type_hints(MethodConfig)["fusion"])


class InverseVarianceWeighter:
    """Running estimate of :math:`\\eta^2` and the anchor weight :math:`\\rho`.

    Args:
        warmup_groups: anchor groups observed before :math:`\\eta^2_{cal}` is recorded. No default:
            it depends on Online Debiasing's schedule, and :func:`wmrl.step.ivd_warmup_groups` computes a
            run's from its configuration.
        window, rho_max: anchor groups in the running :math:`\\eta^2` estimate, upper clip of
            :math:`\\rho`; :class:`~wmrl.config.MethodConfig`'s ``ivd_window`` and ``rho_max`` by default.
        eta2_floor: floor of :math:`\\eta^2_{cal}` in the ratio.
    """

    def __init__(self, warmup_groups: int, window: int = _METHOD.ivd_window, rho_max: float = _METHOD.rho_max,
                 eta2_floor: float = 1e-8):
        if warmup_groups < 1 or window < 1:
            raise ValueError(f"warmup_groups and window must be >= 1, got {warmup_groups}, {window}")
        if rho_max < 1.0:
            raise ValueError(f"rho_max must be >= 1, got {rho_max}")
        self.warmup_groups = int(warmup_groups)
        self.window = int(window)
        self.rho_max = float(rho_max)
        self.eta2_floor = float(eta2_floor)
        self._groups: deque[np.ndarray] = deque(maxlen=self.window)
        self.n_groups = 0
        self.eta2_cal: float | None = None

    def observe(self, calibrated_wm_scores, true_scores) -> None:
        """Record one anchor group's calibrated world-model scores and real scores."""
        p = as_float_array(calibrated_wm_scores, "calibrated_wm_scores", ndim=1)
        t = as_float_array(true_scores, "true_scores", ndim=1)
        require_same_length(p, t, "calibrated_wm_scores", "true_scores")
        if p.size == 0:
            raise ValueError("an anchor group needs at least one scored trajectory")
        require_finite(p, "calibrated_wm_scores")
        require_finite(t, "true_scores")
        self._groups.append((p - t) ** 2)
        self.n_groups += 1
        if self.eta2_cal is None and self.n_groups >= self.warmup_groups:
            self.eta2_cal = self.eta2

    @property
    def warmed_up(self) -> bool:
        return self.eta2_cal is not None

    @property
    def eta2(self) -> float:
        """Mean squared residual over the pairs of the last ``window`` anchor groups (NaN if none)."""
        if not self._groups:
            return float("nan")
        return float(np.concatenate(self._groups).mean())

    @property
    def rho(self) -> float:
        """:math:`\\rho = \\mathrm{clip}(1 + \\eta^2/\\eta^2_{cal}, 1, \\rho_{max})`; 1 during warm-up."""
        if self.eta2_cal is None:
            return 1.0
        return float(np.clip(1.0 + self.eta2 / max(self.eta2_cal, self.eta2_floor), 1.0, self.rho_max))

    def state_dict(self) -> dict:
        return {"groups": [g.tolist() for g in self._groups], "n_groups": self.n_groups, "eta2_cal": self.eta2_cal}

    def load_state_dict(self, state: dict) -> None:
        self._groups = deque((np.asarray(g) for g in state["groups"]), maxlen=self.window)
        self.n_groups, self.eta2_cal = state["n_groups"], state["eta2_cal"]


def fused_group_weights(is_anchor, rho: float, variant: str = _METHOD.fusion) -> np.ndarray:
    """Per-group weights :math:`w_k` such that :math:`g = \\sum_k w_k g_k` is the fused gradient.

    ``normalized`` (the paper's equation): anchor groups get :math:`\\rho/D`, world-model groups
    :math:`1/D`, with :math:`D = \\rho|G_E| + |G_{WM}|`; the weights sum to 1 so :math:`\\rho`
    only shifts trust between streams and never changes the step size.

    ``scale_only`` (the authors' released code): anchor advantages are multiplied by
    :math:`\\rho` and the loss is still averaged over all :math:`|G|` groups, i.e. weights
    :math:`\\rho/|G|` and :math:`1/|G|`; the weights sum to more than 1 when :math:`\\rho > 1`,
    so :math:`\\rho` also raises the effective learning rate.
    """
    a = np.asarray(is_anchor, dtype=bool)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"is_anchor must be a non-empty 1-d boolean array, got shape {a.shape}")
    if not np.isfinite(rho) or rho < 1.0:
        raise ValueError(f"rho must be a finite number >= 1, got {rho}")
    raw = np.where(a, rho, 1.0)
    if variant == "normalized":
        return raw / raw.sum()  # D = rho*|G_E| + |G_WM|
    if variant == "scale_only":
        return raw / a.size
    raise ValueError(f"unknown fusion variant {variant!r}; choose one of {FUSION_VARIANTS}")
