"""The small agent's policy (wmrl/agent/policy.py): log-probs, masks, its starting point, feedback encoding."""

import numpy as np
import pytest
import torch

from wmrl.agent.policy import FEEDBACK_DIM, AgentPolicy, encode_feedback


def _batch(policy, b, task_dim=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(b, task_dim, generator=g)
    fb = torch.as_tensor(np.stack([encode_feedback(None)] * b))
    prev = torch.zeros(b, policy.n_choices)
    mask = torch.ones(b, policy.n_choices, dtype=torch.bool)
    return feats, fb, prev, mask


def _uniforms(rows, slots, seed):
    return np.random.default_rng(seed).random((rows, slots))


def test_untrained_policy_samples_its_documented_prior_whatever_the_context():
    priors = [np.array([0.7, 0.2, 0.1]), np.array([0.5, 0.5])]
    pol = AgentPolicy([3, 2], task_dim=5, priors=priors)
    feats, fb, prev, mask = _batch(pol, 4000)
    picks = pol.sample(feats, fb, prev, mask, _uniforms(len(feats), 2, 1)).numpy()
    freq = np.bincount(picks[:, 0], minlength=3) / len(picks)
    np.testing.assert_allclose(freq, priors[0], atol=0.03)


def test_evaluate_gives_the_log_prob_of_the_sampled_decisions():
    pol = AgentPolicy([3, 4, 2], task_dim=5)
    torch.nn.init.normal_(pol.heads[1].weight)  # make slot 1 depend on slot 0's decision
    feats, fb, prev, mask = _batch(pol, 16)
    choices = pol.sample(feats, fb, prev, mask, _uniforms(len(feats), 3, 2))
    logp, tables = pol.evaluate(feats, fb, prev, mask, choices)
    manual = sum(tables[k].gather(1, choices[:, k : k + 1]).squeeze(1) for k in range(3))
    torch.testing.assert_close(logp, manual)
    assert torch.all(logp < 0)


def test_masked_options_are_never_sampled():
    pol = AgentPolicy([3, 2], task_dim=5)
    feats, fb, prev, mask = _batch(pol, 500)
    mask[:, 1] = False  # slot 0, option 1 closed
    picks = pol.sample(feats, fb, prev, mask, _uniforms(len(feats), 2, 3))
    assert not (picks[:, 0] == 1).any()
    mask[:, 2] = False  # slot 0: only option 0 left; a uniform at the very top still lands on it
    u = _uniforms(len(feats), 2, 4)
    u[:, 0] = np.nextafter(1.0, 0.0)
    assert (pol.sample(feats, fb, prev, mask, u)[:, 0] == 0).all()


def test_a_rows_decisions_depend_on_its_own_numbers_only_and_agreeing_policies_agree():
    pol = AgentPolicy([3, 4, 2], task_dim=5)
    torch.nn.init.normal_(pol.heads[1].weight)
    feats, fb, prev, mask = _batch(pol, 12)
    u = _uniforms(12, 3, 5)
    whole = pol.sample(feats, fb, prev, mask, u)
    alone = torch.cat([pol.sample(feats[i:i + 1], fb[i:i + 1], prev[i:i + 1], mask[i:i + 1], u[i:i + 1])
                       for i in range(12)])
    assert torch.equal(whole, alone)  # a row does not depend on the batch around it
    other = AgentPolicy([3, 4, 2], task_dim=5)
    other.load_state_dict(pol.state_dict())
    with torch.no_grad():
        other.heads[2].bias += torch.tensor([0.0, 3.0])  # the policies differ on the last slot only
    again = other.sample(feats, fb, prev, mask, u)
    assert torch.equal(again[:, :2], whole[:, :2])  # common random numbers: the same earlier decisions
    assert (again[:, 2] >= whole[:, 2]).all()  # more mass on option 1 only moves draws towards it


def test_a_policy_gradient_step_raises_the_probability_of_a_rewarded_choice():
    pol = AgentPolicy([3], task_dim=5)
    opt = torch.optim.Adam(pol.parameters(), lr=0.1)
    feats, fb, prev, mask = _batch(pol, 8)
    choices = torch.full((8, 1), 2)
    before = pol.evaluate(feats, fb, prev, mask, choices)[0].mean()
    for _ in range(5):
        loss = -pol.evaluate(feats, fb, prev, mask, choices)[0].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert pol.evaluate(feats, fb, prev, mask, choices)[0].mean() > before


def test_feedback_encoding_is_one_hot_in_each_part():
    v = encode_feedback(("runtime_error", "KeyError", None))
    assert v.shape == (FEEDBACK_DIM,) and v.sum() == 3
    assert not np.array_equal(v, encode_feedback(("runtime_error", "TypeError", None)))
    assert np.array_equal(encode_feedback(("runtime_error", "WeirdError", None)), encode_feedback(("runtime_error", "OSError", None)))


def test_a_bad_prior_is_refused():
    with pytest.raises(ValueError, match="prior of slot 0"):
        AgentPolicy([3], task_dim=2, priors=[np.array([1.0, 0.0, 0.0])])
