"""The step beyond the paper (wmrl.beyond.BeyondStep): with its features off it is the paper's step; with them on,
active anchors and conditional OD do what they say."""

import numpy as np
import pytest

from wmrl.arms import ARMS
from wmrl.beyond import BeyondStep, make_step
from wmrl.config import MethodConfig
from wmrl.presets import run_config
from wmrl.step import WMRLStep

G, N = 8, 4
METHOD = MethodConfig(anchor_fraction=0.25, od_min_pairs=8, od_refit_every=4, ivd_warmup_groups=3, ivd_window=4)
TRAINED = [a for a, spec in ARMS.items() if spec.train]


def _world(rng, routing):
    r = rng.uniform(0, 1, (routing.n_groups, N))
    r_hat = np.sqrt(r) + 0.1 * rng.standard_normal(r.shape)
    return np.where(routing.executed[:, None], r, np.nan), np.where(routing.predicted[:, None], r_hat, np.nan)


def _same_output(a, b):
    np.testing.assert_array_equal(a.rewards, b.rewards)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.advantages, b.advantages)
    for x, y in zip(a.pairs, b.pairs):
        np.testing.assert_array_equal(x, y)
    assert list(a.log) == list(b.log)
    np.testing.assert_array_equal(list(a.log.values()), list(b.log.values()))
    assert len(a.pair_columns) == len(b.pair_columns) == 3  # no strata: no region column


@pytest.mark.parametrize("fusion, std", [("normalized", False), ("scale_only", True)])
@pytest.mark.parametrize("arm", TRAINED)
def test_with_every_feature_off_the_beyond_step_is_the_papers_step_step_for_step(arm, fusion, std):
    method = MethodConfig(**{**METHOD.__dict__, "fusion": fusion})
    paper, beyond = WMRLStep(arm, method, G, N, seed=4, std_normalize=std), \
        BeyondStep(arm, method, G, N, seed=4, std_normalize=std)
    rng = np.random.default_rng(9)
    for _ in range(8):
        ra, rb = paper.route(), beyond.route()
        assert ra.n_groups == rb.n_groups and ra.choose is rb.choose is None
        np.testing.assert_array_equal(ra.executed, rb.executed)
        real, pred = _world(rng, ra)
        beyond.read_rollout([])  # no region: reads nothing
        _same_output(paper(real, pred, ra.executed), beyond(real, pred, rb.executed))
    assert paper.state_dict().keys() == beyond.state_dict().keys()
    np.testing.assert_equal(paper.state_dict(), beyond.state_dict())


def test_make_step_builds_the_papers_step_unless_the_run_asks_for_more():
    assert type(make_step(run_config("wmrl", "smoke"))) is WMRLStep
    for overrides in ({"method.anchor_selection": "active"}, {"method.od_condition": "huge_capacity"},
                      {"world_model.exploit": "huge_capacity"}):
        step = make_step(run_config("wmrl", "smoke", overrides=overrides))
        assert type(step) is BeyondStep and step.region == ("none" if "method.anchor_selection" in overrides
                                                            else "huge_capacity"), overrides


def test_the_arms_say_which_features_beyond_the_paper_act_on_them():
    assert ARMS["wmrl"].beyond_paper == ("active_anchors", "conditional_od", "regions")
    assert ARMS["mix"].beyond_paper == ("active_anchors", "regions")
    assert ARMS["grpo"].beyond_paper == ARMS["anchor_only"].beyond_paper == ARMS["wm"].beyond_paper == ("regions",)
    assert ARMS["untrained"].beyond_paper == ()


ACTIVE = MethodConfig(**{**METHOD.__dict__, "anchor_selection": "active"})


@pytest.mark.parametrize("arm", ["mix", "od", "ivd", "wmrl"])
def test_active_routing_is_undecided_until_turn_1_and_then_executes_the_random_rules_budget(arm):
    step, random_step = BeyondStep(arm, ACTIVE, G, N, seed=0), WMRLStep(arm, METHOD, G, N, seed=0)
    routing = step.route()
    assert not routing.decided and routing.executed is None and routing.predicted.all() and routing.n_groups == G
    assert random_step.route().decided
    executed = step.choose_anchors(np.random.default_rng(0).uniform(size=(G, N)))
    assert executed.dtype == bool and executed.sum() == random_step.anchors.n_anchors(G)


def test_active_selection_chooses_the_groups_whose_predicted_scores_the_world_model_got_most_wrong():
    step, rng = BeyondStep("wmrl", ACTIVE, G, N, seed=0), np.random.default_rng(3)
    for _ in range(4):  # the world model is right at a predicted 0.2 and wrong at a predicted 0.8
        step.route()
        pred = rng.choice([0.2, 0.8], size=(G, N))
        executed = step.choose_anchors(pred)
        real = np.where(pred == 0.2, 0.2, rng.choice([0.1, 1.0], size=(G, N)))
        step(np.where(executed[:, None], real, np.nan), pred, executed)
    pred = np.full((G, N), 0.2)
    pred[[2, 6]] = 0.8  # two groups at the unreliable score
    pred[5] = 0.5  # one group at a score no anchor has seen: it counts as average, between the two
    pred[1, :2] = 0.8  # one group half unreliable
    step.route()
    priority = step.active_anchors.reliability.group_priority(pred)
    assert priority[2] == priority[6] > priority[1] > priority[0] and priority[5] > priority[0]
    assert np.flatnonzero(step.choose_anchors(pred)).tolist() == [2, 6]  # 2 of 8 at an anchor share of 0.25
    chosen = np.isin(np.arange(G), [2, 6])
    out = step(np.where(chosen[:, None], np.full((G, N), 0.2), np.nan), pred, chosen)
    assert out.log["anchor_priority"] > out.log["mean_priority"]


def test_the_active_rules_priority_is_the_reliability_map_of_the_etas_out_of_sample_residuals():
    step = BeyondStep("wmrl", ACTIVE, G, N, seed=1)
    rng = np.random.default_rng(5)
    for _ in range(6):
        step.route()
        pred = rng.uniform(size=(G, N)).round(1)
        executed = step.choose_anchors(pred)
        before = step.debiaser.transform(pred[executed])  # the calibrated scores the audit sees
        real = np.where(executed[:, None], rng.uniform(size=(G, N)), np.nan)
        seen = (len(step.active_anchors.reliability.residual2), step.active_anchors.reliability.predicted[:])
        step(real, pred, executed)
        np.testing.assert_allclose(step.active_anchors.reliability.residual2[seen[0]:], ((before - real[executed]) ** 2).ravel())
        np.testing.assert_array_equal(step.active_anchors.reliability.predicted[seen[0]:], pred[executed].ravel())


def test_an_active_step_restored_from_its_state_chooses_what_the_original_chooses():
    a, b = BeyondStep("wmrl", ACTIVE, G, N, seed=7), BeyondStep("wmrl", ACTIVE, G, N, seed=7)
    rng = np.random.default_rng(8)
    for _ in range(3):
        a.route()
        pred = rng.choice([0.1, 0.2, 0.875], size=(G, N))
        ex = a.choose_anchors(pred)
        a(np.where(ex[:, None], rng.uniform(size=(G, N)), np.nan), pred, ex)
    b.load_state_dict(a.state_dict())
    for _ in range(3):
        pred = rng.choice([0.1, 0.2, 0.875], size=(G, N))
        a.route(), b.route()
        ea, eb = a.choose_anchors(pred), b.choose_anchors(pred)
        np.testing.assert_array_equal(ea, eb)
        real = np.where(ea[:, None], rng.uniform(size=(G, N)), np.nan)
        np.testing.assert_array_equal(a(real, pred, ea).weights, b(real, pred, eb).weights)


@pytest.mark.parametrize("arm", ["grpo", "wm", "anchor_only"])
def test_active_selection_is_refused_for_an_arm_that_has_no_anchors_to_choose(arm):
    from wmrl.config import ConfigError
    from wmrl.presets import run_config

    with pytest.raises(ValueError, match="anchor_selection='active'"):
        BeyondStep(arm, ACTIVE, G, N)
    with pytest.raises(ConfigError, match=f"arm {arm!r}"):
        run_config(arm, "smoke", overrides={"method.anchor_selection": "active"})


def test_choose_anchors_is_refused_under_random_selection_and_for_a_wrong_shape():
    with pytest.raises(ValueError, match="decided by route"):
        BeyondStep("wmrl", METHOD, G, N).choose_anchors(np.zeros((G, N)))
    with pytest.raises(ValueError, match="groups_per_step=8"):
        BeyondStep("wmrl", ACTIVE, G, N).choose_anchors(np.zeros((G - 1, N)))
