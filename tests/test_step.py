"""The WMRL step (Algorithm 1's reward side) for every arm, against independent computations."""

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from wmrl.arms import ARMS, get_arm
from wmrl.config import MethodConfig
from wmrl.step import WMRLStep

G, N = 8, 4
# OD fits after 2 anchor groups (8 pairs), refits every group; IVD warm after 3 anchor groups.
METHOD = MethodConfig(anchor_fraction=0.25, od_min_pairs=8, od_refit_every=4, ivd_warmup_groups=3, ivd_window=4)
TRAINED = [a for a, spec in ARMS.items() if spec.train]


def world(rng, routing):
    """Real rewards on executed groups, a biased noisy world model (a monotone distortion) on predicted ones."""
    r = rng.uniform(0, 1, (routing.n_groups, N))
    r_hat = np.sqrt(r) + 0.1 * rng.standard_normal(r.shape)  # phi(r) = sqrt(r): optimistic, monotone
    real = np.where(routing.executed[:, None], r, np.nan)
    pred = np.where(routing.predicted[:, None], r_hat, np.nan)
    return real, pred


@pytest.mark.parametrize("arm", TRAINED)
def test_routing_follows_the_arm_table(arm):
    spec, step = get_arm(arm), WMRLStep(arm, METHOD, G, N, seed=0)
    routing = step.route()
    n_anchor = step.anchors.n_anchors(G)
    assert routing.n_groups == (n_anchor if spec.anchors_only else G)
    if spec.executes_every_group:
        assert routing.executed.all() and not routing.predicted.any()
    else:
        assert routing.predicted.all()
        assert routing.executed.sum() == (n_anchor if spec.anchors else 0)


@pytest.mark.parametrize("arm", TRAINED)
def test_each_arm_trains_on_real_rewards_where_executed_and_on_its_calibrated_predictions_elsewhere(arm):
    spec, rng = get_arm(arm), np.random.default_rng(1)
    step = WMRLStep(arm, METHOD, G, N, seed=0)
    independent_pairs = ([], [])
    for _ in range(6):
        routing = step.route()
        real, pred = world(rng, routing)
        before = step.debiaser.transform  # the map *before* this step's pairs
        expected_wm = before(np.nan_to_num(pred)) if spec.od else pred
        out = step(real, pred, routing.executed)
        ex = routing.executed
        np.testing.assert_array_equal(out.rewards[ex], real[ex])  # real rewards on executed groups
        if (~ex).any():
            np.testing.assert_allclose(out.rewards[~ex], expected_wm[~ex])  # calibrated scores on WM groups
        if spec.mixes_streams:  # the pairs are (raw prediction, real) of the anchor groups
            np.testing.assert_array_equal(out.pairs[0], pred[ex].ravel())
            np.testing.assert_array_equal(out.pairs[2], real[ex].ravel())
            np.testing.assert_allclose(out.pairs[1], expected_wm[ex].ravel())
            independent_pairs[0].extend(pred[ex].ravel())
            independent_pairs[1].extend(real[ex].ravel())
        else:
            assert out.pairs[0].size == 0
    if spec.od:  # the fitted map is scikit-learn's isotonic regression on exactly those pairs
        assert step.debiaser.n_refits >= 2
        iso = IsotonicRegression(out_of_bounds="clip").fit(*independent_pairs)
        x = np.linspace(-0.2, 1.2, 50)
        np.testing.assert_allclose(step.debiaser.transform(x), iso.predict(x))
    else:
        assert step.debiaser.n_refits == 0


@pytest.mark.parametrize("arm", ["mix", "od", "ivd", "wmrl"])
def test_the_eta2_audit_sees_calibrated_scores_and_rho_follows_its_formula(arm):
    spec, rng = get_arm(arm), np.random.default_rng(2)
    step = WMRLStep(arm, METHOD, G, N, seed=3)
    residuals, rhos = [], []
    for _ in range(8):
        routing = step.route()
        real, pred = world(rng, routing)
        cal = step.debiaser.transform(np.nan_to_num(pred)) if spec.od else pred
        residuals += [(cal[g] - real[g]) ** 2 for g in np.flatnonzero(routing.executed)]  # one entry per anchor group
        out = step(real, pred, routing.executed)
        window = np.concatenate(residuals[-METHOD.ivd_window:])
        assert out.log["eta2"] == pytest.approx(window.mean())
        warm = METHOD.ivd_warmup_groups  # eta^2_cal: the window's mean when the warm-up's last group arrived
        eta2_cal = np.concatenate(residuals[:warm][-METHOD.ivd_window:]).mean() if len(residuals) >= warm else None
        expected_rho = 1.0 if eta2_cal is None else float(np.clip(1 + window.mean() / eta2_cal, 1, METHOD.rho_max))
        assert step.ivd.rho == pytest.approx(expected_rho)
        assert out.log["rho"] == (pytest.approx(expected_rho) if spec.ivd else 1.0)
        rhos.append(out.log["rho"])
        # fused weights: rho/D on anchors, 1/D elsewhere, D = rho|G_E| + |G_WM| (the paper's equation)
        rho = out.log["rho"]
        d = rho * routing.executed.sum() + (~routing.executed).sum()
        np.testing.assert_allclose(out.weights, np.where(routing.executed, rho / d, 1 / d))
    if spec.ivd:
        assert max(rhos) > 1.0  # IVD warmed up inside the test and weighted the anchors up


@pytest.mark.parametrize("arm", ["grpo", "wm", "anchor_only"])
def test_single_stream_arms_weight_every_group_alike_and_keep_no_pairs(arm):
    step = WMRLStep(arm, METHOD, G, N, seed=0)
    routing = step.route()
    real, pred = world(np.random.default_rng(0), routing)
    out = step(real, pred, routing.executed)
    np.testing.assert_allclose(out.weights, 1.0 / routing.n_groups)
    assert out.pairs[0].size == 0 and np.isnan(out.log["eta2"])
    np.testing.assert_allclose(out.advantages.sum(axis=1), 0.0, atol=1e-12)  # A = R - group mean


def test_the_authors_scale_only_fusion_lets_rho_raise_the_step_size():
    method = MethodConfig(**{**METHOD.__dict__, "fusion": "scale_only"})
    step, rng = WMRLStep("wmrl", method, G, N, seed=0), np.random.default_rng(4)
    for _ in range(5):
        routing = step.route()
        out = step(*world(rng, routing), routing.executed)
    rho = out.log["rho"]
    assert rho > 1.0
    np.testing.assert_allclose(out.weights, np.where(routing.executed, rho, 1.0) / G)
    assert out.weights.sum() > 1.0


def test_a_restored_step_continues_exactly_like_the_original():
    a, b = WMRLStep("wmrl", METHOD, G, N, seed=5), WMRLStep("wmrl", METHOD, G, N, seed=5)
    rng = np.random.default_rng(6)
    for _ in range(4):
        routing = a.route()
        a(*world(rng, routing), routing.executed)
    b.load_state_dict(a.state_dict())
    for _ in range(3):
        ra, rb = a.route(), b.route()
        np.testing.assert_array_equal(ra.executed, rb.executed)
        real, pred = world(rng, ra)
        oa, ob = a(real, pred, ra.executed), b(real, pred, rb.executed)
        np.testing.assert_array_equal(oa.weights, ob.weights)
        np.testing.assert_array_equal(oa.rewards, ob.rewards)


def test_bad_input_is_refused_with_the_shapes_or_the_reason():
    step = WMRLStep("grpo", METHOD, G, N)
    with pytest.raises(ValueError, match="must be"):
        step(np.zeros((G, N)), np.zeros((G, N + 1)), np.ones(G, bool))
    with pytest.raises(ValueError, match="no world model"):
        step(np.zeros((G, N)), np.zeros((G, N)), np.zeros(G, bool))
    with pytest.raises(ValueError, match="no real reward"):
        WMRLStep("wmrl", METHOD, G, N)(np.full((G, N), np.nan), np.zeros((G, N)), np.ones(G, bool))
    with pytest.raises(ValueError, match="does not train"):
        WMRLStep("untrained", METHOD, G, N).route()
    with pytest.raises(ValueError, match="unknown arm"):
        WMRLStep("bogus", METHOD, G, N)


ACTIVE = MethodConfig(**{**METHOD.__dict__, "anchor_selection": "active"})


@pytest.mark.parametrize("arm", ["mix", "od", "ivd", "wmrl"])
def test_active_routing_is_undecided_until_turn_1_and_then_executes_the_random_rules_budget(arm):
    step, random_step = WMRLStep(arm, ACTIVE, G, N, seed=0), WMRLStep(arm, METHOD, G, N, seed=0)
    routing = step.route()
    assert not routing.decided and routing.executed is None and routing.predicted.all() and routing.n_groups == G
    assert random_step.route().decided
    executed = step.choose_anchors(np.random.default_rng(0).uniform(size=(G, N)))
    assert executed.dtype == bool and executed.sum() == random_step.anchors.n_anchors(G)


def test_active_selection_chooses_the_groups_whose_predicted_scores_the_world_model_got_most_wrong():
    step, rng = WMRLStep("wmrl", ACTIVE, G, N, seed=0), np.random.default_rng(3)
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
    step = WMRLStep("wmrl", ACTIVE, G, N, seed=1)
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
    a, b = WMRLStep("wmrl", ACTIVE, G, N, seed=7), WMRLStep("wmrl", ACTIVE, G, N, seed=7)
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
        WMRLStep(arm, ACTIVE, G, N)
    with pytest.raises(ConfigError, match=f"arm {arm!r}"):
        run_config(arm, "smoke", overrides={"method.anchor_selection": "active"})


def test_choose_anchors_is_refused_under_random_selection_and_for_a_wrong_shape():
    with pytest.raises(ValueError, match="decided by route"):
        WMRLStep("wmrl", METHOD, G, N).choose_anchors(np.zeros((G, N)))
    with pytest.raises(ValueError, match="groups_per_step=8"):
        WMRLStep("wmrl", ACTIVE, G, N).choose_anchors(np.zeros((G - 1, N)))


def test_shares_that_round_to_the_same_group_count_route_identically():
    """0.05 and 0.1 of 8 groups are both one group (the minimum): their runs are the same run."""
    a = WMRLStep("wmrl", MethodConfig(anchor_fraction=0.05), G, N, seed=2)
    b = WMRLStep("wmrl", MethodConfig(anchor_fraction=0.1), G, N, seed=2)
    for _ in range(10):
        np.testing.assert_array_equal(a.route().executed, b.route().executed)
