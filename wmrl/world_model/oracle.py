r"""An oracle-derived world model of controlled fidelity: an analysis instrument, not a world model.

How good must a world model be for WMRL to pay? A real world model comes with one fidelity; this
instrument has a dial. It looks up the **real** outcome of the script (the execution memo, else
the sandbox: it executes what a real world model never would) and reports a noisy, distorted
reading of it, Assumption 6's model of a world model made literal:

.. math::

    \ell = \mathrm{clip}(r + \sigma\xi,\ 0,\ 1), \quad \xi \sim \mathcal N(0, 1), \qquad
    \hat r = \phi(\ell)

- :math:`r` is the ladder reward of the real run (:func:`wmrl.world_model.fidelity.real_reward`).
- :math:`\sigma` (``world_model.oracle_noise``) is the dial. It sets how well :math:`\hat r` ranks
  the scripts of a group, the within-group Spearman that GRPO's advantages are made of: 1 at
  :math:`\sigma = 0`, lower as :math:`\sigma` grows. Which Spearman a given :math:`\sigma` gives
  depends on the rewards of the groups (the ladder's gaps, its ties), so notebook 08 *measures*
  it on the anchor pairs and plots the measured value.
- :math:`\phi` (``world_model.oracle_distortion``) is strictly increasing, so it changes no
  ranking: the distortion is pure bias (what Online Debiasing must remove), the noise pure
  variance (what IVD weighs). ``optimistic`` is notebook 00's :math:`\phi(\ell) = 0.35 +
  0.6\sqrt\ell` (a world model told to DEFAULT TO PASS overrates bad code and compresses the
  top); ``identity`` leaves the reading as it is.
- The feedback the agent's next turn reads comes from the same noisy reading: the status of the
  ladder rung nearest to :math:`\ell` (the real status and error when that is the real rung; a
  representative one otherwise) and, on the ``ok`` rung, the score bucket of the percentile that
  :math:`\ell` stands for. At :math:`\sigma = 0` it is the real feedback; it degrades with the score.

Noise draws are seeded like the program-analysis model's sampling: :meth:`OracleWorldModel.reseed`
with the trainer's ``(seed, step)``, then one normal draw per prediction in call order.

**Accounting.** The instrument stands in for a world model, so a prediction is charged what a
world-model call costs (:data:`CHARGE_S`, the program-analysis model's measured CPU seconds per
script) and never what it really spent. What knowing the truth really cost is reported by
:meth:`OracleWorldModel.oracle_costs` (the scripts it had to execute, their CPU seconds, the wall
seconds of the lookups; a memo hit costs nothing real), which the trainer records apart from the
run's cost (:data:`wmrl.ledger.APART`). The memo is any object with ``get(task_name, code) -> dict | None``
and ``put(task_name, code, result)`` (:class:`wmrl.trainer.memo.ExecutionMemo`; a memo shared by
the runs of a campaign is intended: the same scripts recur across fidelity levels, arms and seeds).
"""

from __future__ import annotations

import typing
from collections.abc import Sequence

import numpy as np

from wmrl import record as clock
from wmrl.config import WorldModelConfig
from wmrl.reward import DEFAULT_LADDER
from wmrl.sandbox import ExecutionResult
from wmrl.vocabulary import RUNG, feedback_bucket
from wmrl.world_model.base import Prediction, feedback_text, gate
from wmrl.world_model.fidelity import real_reward

__all__ = ["CHARGE_S", "DISTORTIONS", "OracleWorldModel", "distort", "read_outcome"]

#: Charged CPU seconds per prediction: about what the program-analysis world model (``train_split``
#: profile) costs per script of the untrained agent's, so that an oracle run is charged as a cheap
#: world model would be, not as the execution it reads its truth from.
CHARGE_S = 0.0042
#: The monotone distortions phi of Assumption 6 (see the module docstring), as
#: ``world_model.oracle_distortion`` spells them.
DISTORTIONS: tuple[str, ...] = typing.get_args(typing.get_type_hints(WorldModelConfig)["oracle_distortion"])
#: A representative status and error type for a rung the real run is not on.
_RUNG_STATUS = {0: ("syntax_error", "SyntaxError"), 1: ("runtime_error", "RuntimeError"),
                2: ("invalid_submission", "InvalidSubmission"), 3: ("ok", None)}
_L = DEFAULT_LADDER
#: Midpoints between the ladder's rewards: a reading below the first is rung 0, and so on.
_RUNG_CUTS = np.array([(_L.malformed + _L.runtime_error) / 2, (_L.runtime_error + _L.no_valid_submission) / 2,
                       (_L.no_valid_submission + _L.valid_base) / 2])


def distort(latent, kind: str = "optimistic") -> np.ndarray:
    r"""Assumption 6's :math:`\phi`, strictly increasing on [0, 1]: ``optimistic`` or ``identity``."""
    latent = np.asarray(latent, dtype=float)
    if kind == "optimistic":
        return 0.35 + 0.6 * np.sqrt(latent)
    if kind == "identity":
        return latent.copy()
    raise ValueError(f"unknown distortion {kind!r}; choose one of {DISTORTIONS}")


def read_outcome(latent: float, real: ExecutionResult) -> tuple[str, str | None, int | None, str | None]:
    """``(status, error_type, error_line, quality_bucket)`` of the rung nearest to a noisy reading."""
    rung = int(np.searchsorted(_RUNG_CUTS, latent, side="right"))
    if rung == 3:
        percentile = float(np.clip((latent - _L.valid_base) / _L.valid_scale, 0.0, 1.0))
        return "ok", None, None, feedback_bucket(percentile)
    if RUNG[real.status] == rung:
        return real.status, real.error_type, real.error_line, None
    status, error_type = _RUNG_STATUS[rung]
    return status, error_type, None, None


class OracleWorldModel:
    """The real outcome through noise and a monotone distortion (module docstring); labelled oracle-derived.

    Args:
        sandbox: runs what the memo does not hold (``run_many(items, max_workers)``).
        noise: :math:`\\sigma`, the SD of the noise on the real ladder reward (>= 0).
        distortion: :math:`\\phi`, one of :data:`DISTORTIONS`.
        seed: seeds the noise until the first :meth:`reseed`.
        memo: an execution memo (``get`` / ``put``) consulted before the sandbox; None: always execute.
        workers: executions in parallel.
        charge_s: the charged CPU seconds of one prediction (a world-model call's, :data:`CHARGE_S`).
    """

    def __init__(self, sandbox, noise: float, distortion: str = WorldModelConfig().oracle_distortion, seed: int = 0,
                 memo=None, workers: int = 1, charge_s: float = CHARGE_S):
        if noise < 0:
            raise ValueError(f"the oracle's noise is an SD and must be >= 0, got {noise}")
        distort(0.0, distortion)  # an unknown distortion fails here, not at the first prediction
        self.sandbox, self.noise, self.distortion, self.memo = sandbox, float(noise), distortion, memo
        self.workers, self.charge_s = workers, float(charge_s)
        self._rng = np.random.default_rng(seed)
        self._costs = {"actual_s": 0.0, "charged_s": 0.0, "count": 0}

    def reseed(self, key) -> None:
        """Restart the noise stream at ``key`` (the trainer passes ``[seed, step]``: resumable)."""
        self._rng = np.random.default_rng(key)

    def truth(self, items: Sequence[tuple[object, str]]) -> list[ExecutionResult]:
        """The real outcome of each script: the memo, the deterministic gate (code that does not
        compile is a syntax error without a run), else the sandbox; every lookup and execution is added to :meth:`oracle_costs`."""
        out: list[ExecutionResult | None] = [None] * len(items)
        todo = []
        for i, (task, code) in enumerate(items):
            hit = self.memo.get(task.name, code) if self.memo is not None else None
            gated = gate(code) if hit is None else None
            if hit is not None:
                out[i] = ExecutionResult(**hit)
            elif gated is not None and gated.status == "syntax_error":  # the sandbox would say so too, after a run
                out[i] = ExecutionResult("syntax_error", gated.error_type, gated.error_line,
                                         reason="oracle: does not compile (gated, not executed)")
            else:
                todo.append(i)
        t0 = clock.wall()
        if todo:
            fresh = self.sandbox.run_many([items[i] for i in todo], max_workers=self.workers)
            for i, res in zip(todo, fresh):
                out[i] = res
                if self.memo is not None:
                    self.memo.put(items[i][0].name, items[i][1], res)
        self._costs["actual_s"] += clock.wall() - t0
        self._costs["charged_s"] += sum(out[i].cpu_s for i in todo)
        self._costs["count"] += len(todo)
        return out

    def predict_many(self, items: Sequence[tuple[object, str]]) -> list[Prediction]:
        """One oracle-derived prediction per ``(task, code)``: one noise draw each, in order."""
        items = list(items)
        if not items:
            return []
        real = self.truth(items)
        r = np.array([real_reward(res) for res in real])
        latent = np.clip(r + self.noise * self._rng.standard_normal(len(items)), 0.0, 1.0)
        scores = distort(latent, self.distortion)
        preds = []
        for res, lat, score in zip(real, latent, scores):
            status, error_type, error_line, bucket = read_outcome(float(lat), res)
            preds.append(Prediction(status, error_type, error_line, bucket, float(score), [],
                                    feedback_text(status, error_type, error_line, bucket, "oracle-derived prediction")))
        return preds

    def predict(self, task, code: str) -> Prediction:
        return self.predict_many([(task, code)])[0]

    def oracle_costs(self) -> dict:
        """What knowing the truth cost since the last call, then reset: ``count`` (scripts the sandbox ran
        for it), ``charged_s`` (their CPU seconds) and ``actual_s`` (their wall seconds)."""
        out, self._costs = self._costs, {"actual_s": 0.0, "charged_s": 0.0, "count": 0}
        return out
