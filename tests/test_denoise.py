"""Inverse-Variance Denoising against its closed form and the paper's fused gradient."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wmrl.denoise import InverseVarianceWeighter, fused_group_weights


def test_rho_is_one_during_warmup_then_follows_the_closed_form():
    rng = np.random.default_rng(0)
    ivd = InverseVarianceWeighter(warmup_groups=3, window=4, rho_max=4.0)
    groups = [(rng.uniform(size=8), rng.uniform(size=8)) for _ in range(6)]
    for i, (p, t) in enumerate(groups):
        ivd.observe(p, t)
        if i < 2:
            assert ivd.rho == 1.0 and not ivd.warmed_up
    # eta2_cal: mean squared residual over the first 3 groups (window 4 holds all of them)
    eta2_cal = np.mean(np.concatenate([(p - t) ** 2 for p, t in groups[:3]]))
    eta2 = np.mean(np.concatenate([(p - t) ** 2 for p, t in groups[-4:]]))
    assert ivd.eta2_cal == pytest.approx(eta2_cal)
    assert ivd.eta2 == pytest.approx(eta2)
    assert ivd.rho == pytest.approx(np.clip(1 + eta2 / eta2_cal, 1, 4))


def test_rho_rises_when_the_world_models_residual_grows_and_is_capped():
    rng = np.random.default_rng(1)
    ivd = InverseVarianceWeighter(warmup_groups=4, window=4, rho_max=4.0)
    t = rng.uniform(size=(20, 8))
    for g in range(4):
        ivd.observe(t[g] + 0.05 * rng.normal(size=8), t[g])
    rho_calm = ivd.rho
    for g in range(4, 8):
        ivd.observe(t[g] + 0.07 * rng.normal(size=8), t[g])
    rho_noisier = ivd.rho
    for g in range(8, 12):
        ivd.observe(t[g] + 2.0 * rng.normal(size=8), t[g])
    assert 1.0 <= rho_calm < rho_noisier < 4.0
    assert ivd.rho == 4.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=2, max_size=30), st.floats(1.0, 8.0))
def test_rho_always_stays_in_one_to_rho_max(residual_scales, rho_max):
    ivd = InverseVarianceWeighter(warmup_groups=1, window=3, rho_max=rho_max)
    for s in residual_scales:
        ivd.observe(np.full(4, s), np.zeros(4))
        assert 1.0 <= ivd.rho <= rho_max


def test_a_perfect_world_model_at_warmup_does_not_divide_by_zero():
    ivd = InverseVarianceWeighter(warmup_groups=1, window=1, rho_max=4.0)
    ivd.observe(np.ones(4), np.ones(4))
    assert ivd.eta2_cal == 0.0 and ivd.rho == 1.0
    ivd.observe(np.ones(4) + 0.01, np.ones(4))
    assert ivd.rho == 4.0


@pytest.mark.parametrize("n_groups", [2, 8, 13])
@pytest.mark.parametrize("rho", [1.0, 1.7, 4.0])
def test_normalized_weights_reproduce_the_papers_fused_gradient(n_groups, rho):
    rng = np.random.default_rng(n_groups)
    is_anchor = np.zeros(n_groups, bool)
    is_anchor[rng.choice(n_groups, size=max(1, n_groups // 4), replace=False)] = True
    grads = rng.normal(size=(n_groups, 5))  # one gradient vector per group
    g_E, g_WM = grads[is_anchor].sum(0), grads[~is_anchor].sum(0)
    expected = (rho * g_E + g_WM) / (rho * is_anchor.sum() + (~is_anchor).sum())
    w = fused_group_weights(is_anchor, rho)
    np.testing.assert_allclose(w @ grads, expected, rtol=1e-12)
    assert w.sum() == pytest.approx(1.0)


def test_scale_only_variant_multiplies_anchor_rows_by_rho_over_all_groups():
    is_anchor = np.array([True, False, False, False])
    w = fused_group_weights(is_anchor, 3.0, variant="scale_only")
    np.testing.assert_allclose(w, [3 / 4, 1 / 4, 1 / 4, 1 / 4])
    assert w.sum() > 1.0  # rho raises the step size in this variant


def test_all_anchor_and_no_anchor_steps_reduce_to_plain_averages():
    np.testing.assert_allclose(fused_group_weights([True] * 4, 3.0), 0.25)
    np.testing.assert_allclose(fused_group_weights([False] * 4, 3.0), 0.25)


@pytest.mark.parametrize("args, match", [(([], 1.0), "non-empty"), (([True], 0.5), ">= 1"), (([True], np.nan), "finite")])
def test_bad_fusion_input_is_rejected(args, match):
    with pytest.raises(ValueError, match=match):
        fused_group_weights(*args)


def test_unknown_fusion_variant_names_the_choices():
    with pytest.raises(ValueError, match="normalized"):
        fused_group_weights([True, False], 2.0, variant="bogus")


def test_observe_rejects_mismatched_and_non_finite_scores():
    ivd = InverseVarianceWeighter(warmup_groups=1)
    with pytest.raises(ValueError, match="same shape"):
        ivd.observe([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="non-finite"):
        ivd.observe([0.1, np.nan], [0.1, 0.2])
    with pytest.raises(ValueError, match="at least one"):
        ivd.observe([], [])


def test_the_defaults_are_the_method_configurations_and_the_variants_its_literal():
    """One source: what a trainer's run uses (MethodConfig), not a second set of numbers here."""
    import typing

    from wmrl.config import MethodConfig
    from wmrl.denoise import FUSION_VARIANTS

    method = MethodConfig()
    ivd = InverseVarianceWeighter(warmup_groups=1)
    assert (ivd.window, ivd.rho_max) == (method.ivd_window, method.rho_max)
    assert FUSION_VARIANTS == typing.get_args(typing.get_type_hints(MethodConfig)["fusion"])
    assert np.allclose(fused_group_weights([True, False, False], 2.0), fused_group_weights([True, False, False], 2.0,
                                                                                           variant=method.fusion))
