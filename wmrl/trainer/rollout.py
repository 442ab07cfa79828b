"""Multi-turn rollouts of groups, scored by the real sandbox, the world model, or both.

One step of WMRL samples groups of trajectories. Every trajectory runs up to ``max_turns`` turns;
turn ``t+1`` is conditioned on turn ``t``'s feedback. Who gives the feedback is what separates the
streams (Sec. 3.3):

- an **anchor** (executed) group is run in the real sandbox, and its feedback is real; the world
  model also scores each of its turns, giving the ``(r_hat, r)`` pairs that Online Debiasing and
  the IVD audit need;
- a **world-model** group is never executed: the world model's simulated execution is both its
  reward and its feedback.

All active trajectories of a step advance turn by turn together, so the policy samples one batch
per turn and the sandbox and the world model each get one batched call per turn.

An undecided routing (``executed=None``: active anchor selection, :mod:`wmrl.beyond`, goes beyond
the paper) passes ``choose``: turn 1 of every group is generated and predicted first, ``choose``
names the anchor groups from those predictions, and only then are the anchors' turn-1 scripts
executed, so the anchors still run in the sandbox from turn 1 and turn 2 reads real feedback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from wmrl import record as clock
from wmrl.agent import grammar
from wmrl.agent.feedback import feedback_of
from wmrl.agent.policy import FEEDBACK_DIM, AgentPolicy, encode_feedback
from wmrl.ledger import ComputeLedger, shared_share
from wmrl.reward import ladder_reward, trajectory_reward
from wmrl.sandbox import ExecutionResult

__all__ = ["WM_STAT", "Scorer", "Trajectory", "Turn", "charge_shared_server", "rollout", "row_uniforms",
           "world_model_step", "world_model_totals"]

#: Prefix of the world model's counts in a step's row (``wm_requests``, ``wm_defaulted_rate``, ...).
WM_STAT = "wm_"


@dataclass
class Turn:
    choices: np.ndarray  # (K,) option index per grammar slot
    prev_choices: np.ndarray  # one-hot of the previous turn's choices (zeros on turn 1)
    feedback_in: np.ndarray  # encoded feedback this turn was conditioned on
    code: str
    real: ExecutionResult | None = None
    pred: object | None = None  # wmrl.world_model.Prediction

    @property
    def real_reward(self) -> float | None:
        return None if self.real is None else ladder_reward(self.real.status, self.real.percentile)

    def feedback(self, source: str) -> tuple[str, str | None, str | None]:
        """``(status, error_type, score_bucket)`` from the real run (``"real"``) or the prediction."""
        return feedback_of(self.real if source == "real" else self.pred)


@dataclass
class Trajectory:
    task: object
    group: int
    anchor: bool
    turns: list[Turn] = field(default_factory=list)

    @property
    def real_reward(self) -> float | None:
        """Best real turn (the trajectory reward of Sec. 3.1); None if never executed."""
        rs = [t.real_reward for t in self.turns if t.real is not None]
        return trajectory_reward(rs) if rs else None

    @property
    def wm_reward(self) -> float | None:
        """Best predicted turn; None if the world model was not asked."""
        ps = [t.pred.score for t in self.turns if t.pred is not None]
        return trajectory_reward(ps) if ps else None

    @property
    def scored_turn(self) -> Turn | None:
        """The turn whose prediction is :attr:`wm_reward` (the first best); None if none was predicted."""
        predicted = [t for t in self.turns if t.pred is not None]
        return max(predicted, key=lambda t: t.pred.score) if predicted else None

    @property
    def percentile(self) -> float:
        """Leaderboard position score of the best real turn (0 without a valid submission)."""
        oks = [t.real.percentile for t in self.turns if t.real is not None and t.real.status == "ok"]
        return max(oks) if oks else 0.0


class Scorer:
    """Real execution (through the memo) and world-model prediction, billed to the ledger."""

    def __init__(self, sandbox, world_model, ledger: ComputeLedger, memo=None, workers: int = 2):
        self.sandbox, self.world_model, self.ledger, self.memo, self.workers = sandbox, world_model, ledger, memo, workers

    def execute(self, items: list[tuple[object, str]]) -> list[ExecutionResult]:
        """Run each script for real; charged the CPU seconds of each run (a memo hit: its recorded run's)."""
        out: list[ExecutionResult | None] = [None] * len(items)
        todo = []
        t0 = clock.wall()
        charged = 0.0
        for i, (task, code) in enumerate(items):
            hit = self.memo.get(task.name, code) if self.memo is not None else None
            if hit is not None:
                out[i] = ExecutionResult(**hit)
                charged += out[i].cpu_s
            else:
                todo.append(i)
        if todo:
            fresh = self.sandbox.run_many([items[i] for i in todo], max_workers=self.workers)
            for i, res in zip(todo, fresh):
                out[i] = res
                charged += res.cpu_s  # billed in CPU seconds of the solution's tree: load-independent
                if self.memo is not None:
                    self.memo.put(items[i][0].name, items[i][1], res)
        self.ledger.charge("execution", clock.wall() - t0, charged, count=len(items))
        return out

    def predict(self, items: list[tuple[object, str]]) -> list:
        """World-model predictions, billed to the ledger's ``world_model``.

        The charge is this process's CPU time (prompting, parsing; all of an engine on this CPU) plus
        the seconds the world model's engine worked elsewhere (its ``server_s``: a server's, a GPU's),
        so that a world model behind a server is not billed the client's idle waiting alone.
        A world model that must know the real outcome (the oracle-derived instrument of
        :mod:`wmrl.world_model.oracle`, which reports ``oracle_costs``) is charged a world-model
        call per prediction (its ``charge_s``); the executions it needed are recorded apart from
        the run's cost (the ledger's ``oracle``: scripts executed, their CPU and wall seconds), and
        their wall time is not the world model's.
        """
        if not items:
            return []
        truth_costs = getattr(self.world_model, "oracle_costs", None)
        if truth_costs is None:
            before = getattr(self.world_model, "server_s", None)
            t0, c0 = clock.wall(), clock.cpu()
            preds = self.world_model.predict_many(items)
            wall, cpu = clock.wall() - t0, clock.cpu() - c0
            after = getattr(self.world_model, "server_s", None)
            remote = after - before if before is not None and after is not None else 0.0
            if getattr(self.world_model, "server_shared", False):
                remote = 0.0  # a shared server is billed once per step, by whoever closes it (charge_shared_server)
            self.ledger.charge("world_model", wall, cpu + remote, count=len(items))
            return preds
        t0 = clock.wall()
        preds = self.world_model.predict_many(items)
        truth = truth_costs()
        self.ledger.charge("world_model", max(clock.wall() - t0 - truth["actual_s"], 0.0),
                           self.world_model.charge_s * len(items), count=len(items))
        self.ledger.charge("oracle", truth["actual_s"], truth["charged_s"], count=truth["count"])
        return preds


def world_model_step(world_model) -> dict:
    """The world model's counts of the step that is ending, as ``wm_*`` entries of the step's row (requests,
    parse failures, no replies, verdicts defaulted and their share); ``{}`` for one that counts nothing.

    Raises what its ``step_stats`` raises: :class:`~wmrl.world_model.llm.DefaultedVerdictsError` when
    more of the step's verdicts defaulted to pass than ``world_model.max_defaulted_share`` allows.
    """
    stats = getattr(world_model, "step_stats", None)
    return {WM_STAT + k: v for k, v in stats().items()} if callable(stats) else {}


def world_model_totals(steps: list[dict]) -> dict | None:
    """The world model's ``wm_*`` counts summed over a run's step rows, with the run's rates recomputed from the
    sums (rates are never summed); None when no step has any."""
    from wmrl.world_model.llm import COUNTS, stat_rates

    names = {k.removeprefix(WM_STAT) for row in steps for k in row if k.startswith(WM_STAT)
             and (k.removeprefix(WM_STAT) in COUNTS or k.startswith(WM_STAT + "backend_"))}
    if not names:
        return None
    counts = {k: int(sum(row.get(WM_STAT + k, 0) for row in steps)) for k in sorted(names)}
    return counts | stat_rates(counts)


def row_uniforms(key: tuple[int, ...], rows: list[tuple[int, int]], turn: int, slots: int) -> np.ndarray:
    """``(len(rows), slots)`` uniforms for the trajectories ``rows`` = ``[(group, member), ...]`` at ``turn``.

    Each trajectory's numbers come from its own stream, seeded by ``(*key, group, member, turn)``:
    they do not depend on which other trajectories are sampled with it, so the arms of a seed, which
    share ``key``, draw the same numbers for the same group and member (common random numbers: a
    difference between two arms is then a difference of their policies, not of their luck).
    """
    return np.stack([np.random.default_rng([*key, g, i, turn]).random(slots) for g, i in rows]) if rows else \
        np.zeros((0, slots))


def rollout(
    policy: AgentPolicy,
    tasks: list,
    executed: np.ndarray,
    predicted: np.ndarray,
    group_size: int,
    max_turns: int,
    scorer: Scorer,
    key: tuple[int, ...],
    temperature: float = 1.0,
    choose=None,
) -> list[list[Trajectory]]:
    """Roll out one group of ``group_size`` trajectories per task.

    ``executed[g]``: group ``g`` runs in the sandbox (its feedback is real); ``None``: decided after
    turn 1 by ``choose``, which maps the ``(groups, group_size)`` raw world-model scores of turn 1 to
    the executed mask (active selection; every group must then be predicted).
    ``predicted[g]``: the world model scores group ``g`` (its feedback is predicted unless executed).
    ``key``: the sampling key (e.g. ``(seed, step)``); see :func:`row_uniforms`.
    A trajectory ends at its first turn whose feedback says ``ok``, or after ``max_turns``.
    """
    K = len(grammar.SLOTS)
    if executed is None and (choose is None or not np.all(predicted)):
        raise ValueError("undecided anchors (executed=None) need `choose` and every group predicted on turn 1")
    groups = [[Trajectory(task, g, bool(executed is not None and executed[g])) for _ in range(group_size)]
              for g, task in enumerate(tasks)]
    flat = [tr for grp in groups for tr in grp]
    members = [i for grp in groups for i in range(len(grp))]
    active = list(range(len(flat)))
    feats = {id(t): torch.as_tensor(grammar.task_features(t), dtype=torch.float32) for t in tasks}
    masks = {id(t): torch.as_tensor(np.concatenate(grammar.option_mask(t)), dtype=torch.bool) for t in tasks}
    prev = {i: (np.zeros(policy.n_choices, np.float32), np.zeros(FEEDBACK_DIM, np.float32)) for i in active}
    for _turn in range(max_turns):
        if not active:
            break
        with scorer.ledger.time("generation", count=len(active)):
            tr = [flat[i] for i in active]
            choices = policy.sample(
                torch.stack([feats[id(t.task)] for t in tr]),
                torch.as_tensor(np.stack([prev[i][1] for i in active])),
                torch.as_tensor(np.stack([prev[i][0] for i in active])),
                torch.stack([masks[id(t.task)] for t in tr]),
                row_uniforms(key, [(t.group, members[i]) for t, i in zip(tr, active)], _turn, K), temperature,
            ).numpy()
            turns = []
            for row, i in enumerate(active):
                c = choices[row]
                named = {s.name: s.options[c[k]] for k, s in enumerate(grammar.SLOTS)}
                turns.append(Turn(c, prev[i][0], prev[i][1], grammar.render(flat[i].task, named)))
        pr = [j for j, i in enumerate(active) if predicted[flat[i].group]]
        for j, p in zip(pr, scorer.predict([(flat[active[j]].task, turns[j].code) for j in pr])):
            turns[j].pred = p
        if executed is None:  # active selection: the anchors, from turn 1's predictions, before any execution
            scores = np.full((len(groups), group_size), np.nan)
            for j, i in enumerate(active):
                scores[flat[i].group, members[i]] = turns[j].pred.score
            executed = np.asarray(choose(scores), dtype=bool)
            for tr in flat:
                tr.anchor = bool(executed[tr.group])
        ex = [j for j, i in enumerate(active) if flat[i].anchor]
        for j, res in zip(ex, scorer.execute([(flat[active[j]].task, turns[j].code) for j in ex])):
            turns[j].real = res
        still = []
        for j, i in enumerate(active):
            flat[i].turns.append(turns[j])
            fb = turns[j].feedback("real" if flat[i].anchor else "wm")
            if fb[0] != "ok":
                onehot = np.zeros(policy.n_choices, np.float32)
                onehot[policy.offsets[:-1] + turns[j].choices[:K]] = 1.0
                prev[i] = (onehot, encode_feedback(fb))
                still.append(i)
        active = still
    return groups


def charge_shared_server(ledger, world_model, spans_by_process=None, me: int = 0) -> None:
    """Bill the step's share of a shared world-model server (:func:`wmrl.ledger.shared_share`) before the step
    closes: nothing for a world model without one. ``spans_by_process``: every process's spans of the step,
    gathered by a trainer of several processes (None: this process's alone)."""
    if world_model is None or not getattr(world_model, "server_shared", False):
        return
    spans = [world_model.take_server_spans()] if spans_by_process is None else spans_by_process
    ledger.charge("world_model", 0.0, shared_share(spans, me), count=0)
