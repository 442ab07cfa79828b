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


@pytest.mark.parametrize("field, value", [("anchor_selection", "active"), ("od_condition", "huge_capacity")])
def test_the_papers_step_refuses_what_goes_beyond_the_paper_and_names_the_class_that_does_it(field, value):
    with pytest.raises(ValueError, match=f"method.{field}='{value}' goes beyond the paper: build wmrl.beyond.BeyondStep"):
        WMRLStep("wmrl", MethodConfig(**{**METHOD.__dict__, field: value}), G, N)


def test_shares_that_round_to_the_same_group_count_route_identically():
    """0.05 and 0.1 of 8 groups are both one group (the minimum): their runs are the same run."""
    a = WMRLStep("wmrl", MethodConfig(anchor_fraction=0.05), G, N, seed=2)
    b = WMRLStep("wmrl", MethodConfig(anchor_fraction=0.1), G, N, seed=2)
    for _ in range(10):
        np.testing.assert_array_equal(a.route().executed, b.route().executed)
