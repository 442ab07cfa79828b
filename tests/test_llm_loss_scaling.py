"""How TRL 1.16 scales the GRPO loss's three terms, computed by its own loss code on a tiny model.

With N rows, n_i model tokens in row i (``env_mask`` 1), T = sum n_i, advantages A_i, on policy
(ratio 1) and without KL, TRL's loss value is

- ``dr_grpo``: -sum_i A_i n_i / (N L_max) - c H  (L_max = ``max_completion_length``)
- ``dapo``:    -sum_i A_i n_i / T         - c H
- ``grpo``:    -mean_i A_i                 - c H  (each row's tokens averaged: rows reweighted by 1/n_i)

where H is the mean entropy of the model tokens: the entropy bonus is the same for every loss
type and never divided by the policy term's normaliser. So under ``dr_grpo`` the bonus weighs
``c N L_max / T = c L_max / mean(n_i)`` against a per-token policy term, and under ``dapo`` it
weighs ``c``: the ratio the paper's entropy 0.002 (and KL 0.04, which both add per token to the
policy term) are quoted at. Both keep each row's tokens summed, so a row's weight is its
advantage alone (what IVD's ``G w_g`` scaling relies on); ``grpo`` does not.
"""

from __future__ import annotations

import numpy as np
import pytest

trl = pytest.importorskip("trl", reason="the LLM agent needs TRL: pip install -e '.[llm]'")

PROMPT = [1, 2, 3]
COMPLETIONS = [[5, 6, 7, 8, 9, 2], [5, 6, 2], [7, 7, 7, 7, 7, 7, 7, 2], [9, 2]]
ENV_MASK = [[1, 1, 0, 0, 1, 1], [1, 1, 1], [1, 1, 1, 1, 0, 0, 0, 1], [1, 1]]  # feedback tokens 0
REWARDS = [0.9, 0.1, 0.6, 0.2]  # one group of four: A_i = r_i - mean
L_MAX = 64


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, smollm2_folder):
    from wmrl.models import tiny_llama

    return tiny_llama(tmp_path_factory.mktemp("tiny"), smollm2_folder)


def _loss(folder, tmp_path, loss_type: str, entropy_coef: float, max_completion_length: int = L_MAX) -> float:
    """TRL's loss of one generation batch (one micro-batch, no accumulation) under ``loss_type``."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    n = len(COMPLETIONS)
    prompts = [[{"role": "user", "content": "task"}]]

    def rollout_func(batch, trainer):
        return {"prompt_ids": [PROMPT] * len(batch), "completion_ids": COMPLETIONS, "logprobs": None,
                "env_mask": ENV_MASK, "row": list(range(len(batch)))}

    def reward(prompts, completions, row, **kwargs):
        return [REWARDS[r] for r in row]

    args = GRPOConfig(output_dir=str(tmp_path / loss_type), use_cpu=True, report_to=[], num_generations=n,
                      per_device_train_batch_size=n, max_steps=1, scale_rewards="none", beta=0.0,
                      loss_type=loss_type, entropy_coef=entropy_coef, max_completion_length=max_completion_length,
                      gradient_checkpointing=False, logging_steps=1)
    trainer = GRPOTrainer(model=str(folder), reward_funcs=[reward], args=args,
                          train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]), rollout_func=rollout_func)
    trainer.model.train()
    inputs = trainer._generate_and_score_completions([{"prompt": prompts[0]} for _ in range(n)])  # distinct dicts
    trainer.current_gradient_accumulation_steps = 1
    with torch.no_grad():
        return float(trainer._compute_loss(trainer.model, inputs))


def _mean_entropy(folder) -> float:
    """The mean entropy of the model tokens, computed here from the model's logits (temperature 1)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder))
    total, count = 0.0, 0
    with torch.no_grad():
        for ids, mask in zip(COMPLETIONS, ENV_MASK):
            seq = torch.tensor([PROMPT + ids])
            logits = model(seq).logits[0, len(PROMPT) - 1:-1]
            logp = torch.log_softmax(logits.float(), dim=-1)
            ent = -(logp.exp() * logp).sum(-1)
            total += float((ent * torch.tensor(mask)).sum())
            count += sum(mask)
    return total / count


def _policy_terms() -> dict[str, float]:
    r = np.array(REWARDS)
    adv = r - r.mean()
    tokens = np.array([sum(m) for m in ENV_MASK], float)
    n = len(r)
    return {"dr_grpo": -(adv * tokens).sum() / (n * L_MAX), "dapo": -(adv * tokens).sum() / tokens.sum(),
            "grpo": -adv.mean()}


@pytest.mark.slow
def test_trls_policy_term_is_the_sequence_sum_over_each_loss_types_normaliser(tiny_model, tmp_path):
    expected = _policy_terms()
    for loss_type, value in expected.items():
        assert _loss(tiny_model, tmp_path, loss_type, 0.0) == pytest.approx(value, rel=1e-4, abs=1e-7), loss_type
    # dr_grpo's constant is max_completion_length: twice the budget, half the policy term
    assert _loss(tiny_model, tmp_path, "dr_grpo", 0.0, 2 * L_MAX) == pytest.approx(expected["dr_grpo"] / 2, rel=1e-4)


@pytest.mark.slow
def test_trls_entropy_bonus_is_the_mean_token_entropy_whatever_the_policy_normaliser(tiny_model, tmp_path):
    c = 0.002
    h = _mean_entropy(tiny_model)
    policy = _policy_terms()
    for loss_type in ("dr_grpo", "dapo"):
        bonus = _loss(tiny_model, tmp_path, loss_type, c) - policy[loss_type]
        assert bonus == pytest.approx(-c * h, rel=1e-3), loss_type
    # relative to the per-token policy term, dr_grpo's bonus weighs c * L_max / mean tokens per row; dapo's c
    tokens = np.array([sum(m) for m in ENV_MASK], float)
    assert policy["dapo"] / policy["dr_grpo"] == pytest.approx(len(tokens) * L_MAX / tokens.sum())


def test_the_paper_preset_uses_one_per_token_normalisation_for_policy_kl_and_entropy(tmp_path):
    """llm-paper: TRL's dapo (tokens of the step), so the paper's KL 0.04 and entropy 0.002 weigh as quoted;
    under dr_grpo its entropy would weigh 0.002 x 20,608 / (tokens per row), several times more."""
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    args = trainer_args(cfg, tmp_path, cfg.train.groups_per_step)
    assert args.loss_type == "dapo" and (args.beta, args.entropy_coef) == (0.04, 0.002)
    assert args.scale_rewards == "none"  # rows keep their weights: IVD's G w_g passes through


def _trl_importance_weights(mode: str, cap: float, per_token_log_gap: np.ndarray) -> np.ndarray:
    """TRL 1.16's vLLM importance-sampling weights of one row's tokens (GRPOTrainer's own rule, by hand):
    sequence modes take exp of the row's summed log-gap, token modes each token's; truncate cuts at the cap,
    mask zeroes what lies outside [0, cap]."""
    ratio = np.exp(per_token_log_gap.sum(keepdims=True) if mode.startswith("sequence") else per_token_log_gap)
    ratio = np.minimum(ratio, cap) if mode.endswith("truncate") else np.where(ratio > cap, 0.0, ratio)
    return np.broadcast_to(ratio, per_token_log_gap.shape)


def test_with_vllm_a_long_multi_turn_row_keeps_its_gradient_under_the_importance_sampling_trl_is_given(tmp_path):
    """A multi-turn row of the paper's length carries thousands of model tokens; a small per-token gap between the
    sampler's and the policy's log-probs sums, over the row, to a sequence ratio far outside TRL's [0, 3], so its
    default (sequence_mask) would zero most rows. The configured mode weighs each token within (0, cap]."""
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    args = trainer_args(cfg, tmp_path, cfg.train.groups_per_step)
    mode, cap = args.vllm_importance_sampling_mode, args.vllm_importance_sampling_clip_max
    assert (mode, cap) == (cfg.llm.importance_sampling, cfg.llm.importance_sampling_cap) == ("token_truncate", 3.0)
    rng = np.random.default_rng(0)
    rows = [rng.normal(0.0, 0.05, 4 * 4096) for _ in range(64)]  # 4 turns of 4,096 model tokens each
    zeroed = {m: np.mean([not _trl_importance_weights(m, cap, r).any() for r in rows])
              for m in ("sequence_mask", mode)}
    assert zeroed["sequence_mask"] > 0.5 and zeroed[mode] == 0.0
    kept = np.concatenate([_trl_importance_weights(mode, cap, r) for r in rows])
    assert (kept > 0).all() and kept.max() <= cap


def test_trls_importance_sampling_metrics_join_the_steps_row():
    from wmrl.trainer.llm.grpo import RunLog, WMRLCallback

    log = RunLog()
    log.steps.append({"step": 1})
    callback = WMRLCallback(None, log, None, evaluate_after=lambda done: True)
    callback.on_log(None, None, None, logs={"loss": 0.5, "sampling/importance_sampling_ratio/min": 0.2,
                                            "sampling/importance_sampling_ratio/mean": 0.98,
                                            "sampling/importance_sampling_ratio/max": 3.0,
                                            "sampling/sampling_logp_difference/mean": 0.01,
                                            "sampling/sampling_logp_difference/max": 0.7})
    assert log.steps[-1] == {"step": 1, "loss": 0.5, "is_ratio_min": 0.2, "is_ratio_mean": 0.98, "is_ratio_max": 3.0,
                             "sampler_logp_gap_mean": 0.01, "sampler_logp_gap_max": 0.7}
