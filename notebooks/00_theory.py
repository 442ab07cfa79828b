# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · Theory: Theorems 3 and 4, Lemma 12 and Assumption 6 on a problem where everything is known
#
# WMRL's guarantees are statements about a stochastic gradient method whose rewards come partly
# from a biased, noisy world model. This notebook checks each of them on a synthetic problem
# small enough that every quantity (the true rewards, the world model's bias, the optimal policy,
# the gradient variances) is known exactly, using the package's real method: the WMRL step object
# (`WMRLStep`: anchor routing, `OnlineDebiaser`, `InverseVarianceWeighter`, `fused_group_weights`)
# that every trainer calls, so this notebook is also its integration test.
#
# Each section follows the same rhythm: **the equation → the lines that implement it → a check**.
#
# | section | claim | figure |
# |---|---|---|
# | 4 | Thm 3: world-model rewards only leave a bias floor independent of steps and step size | `00_theory_thm3.png` |
# | 5 | Thm 4: Online Debiasing shrinks the bias like $1/(1+T/T_0)$ (and what it buys in training) | `00_theory_thm4_bias.png`, `00_theory_thm4_training.png` |
# | 6 | Thm 4: IVD's variance is $V_{WM}/(1+V_{WM}/V_E)$, below either stream | `00_theory_ivd.png` |
# | 7 | Lemma 12: an error $\epsilon$ in $\rho$ costs variance of second order only: $\epsilon^2/4$ to second order, more when $\rho$ is underestimated | `00_theory_lemma12.png` |
# | 8 | Assumption 6 failing: isotonic debiasing cannot remove an arm-dependent bias; $\eta^2$ sees it | `00_theory_a6.png` |
#
# Sections 1-3 set up the problem, the gradient estimator and the training loop; section 9 collects
# the numbers (the cell nbval checks) and says what they show, in sentences computed from them.
#
# `MODE="redraw"` (the default) redraws everything from `results/theory/` in seconds;
# `MODE="train"` reruns the simulations (about a minute at the `small` preset on 2 cores).

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": redraw from RESULTS_DIR; "train": rerun the simulations and write RESULTS_DIR
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (seconds) or "small" (about a minute)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
# This notebook's keys; None takes the value from the preset (wmrl/presets.py, documented there).
THEORY_K = None
THEORY_GAMMAS = None
THEORY_HORIZON = None
THEORY_GAMMA = None
THEORY_STEPS = None
THEORY_MC_REPS = None
THEORY_BIAS_PAIRS = None

# %%
from wmrl.experiments import notebook as nb

cfg = nb.check_params(
    globals(),
    notebook="00_theory",
    keys=["THEORY_K", "THEORY_GAMMAS", "THEORY_HORIZON", "THEORY_GAMMA", "THEORY_STEPS", "THEORY_MC_REPS",
          "THEORY_BIAS_PAIRS"],
    results_subdir="theory",
)
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} results={cfg.shown('theory')}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.optimize import curve_fit
from scipy.special import logsumexp, ndtri, softmax
from tqdm import tqdm  # text bars: no ipywidgets needed

from _theory import plateau, theory_findings  # beside this notebook
from wmrl.advantage import group_advantages
from wmrl.calibration import OnlineDebiaser
from wmrl.config import MethodConfig
from wmrl.denoise import InverseVarianceWeighter, fused_group_weights
from wmrl.experiments import plots
from wmrl.step import WMRLStep

SUB = "theory"
plots.use_style()


def save(df_or_dict, name, seed=None):
    """Write a result in train mode (with its provenance sidecar)."""
    return nb.save_results(df_or_dict, name, cfg, SUB, seed)


def load(name):
    return nb.load_results(name, cfg, SUB)


# %% [markdown]
# ## 1. The synthetic problem
#
# A softmax policy $\pi_\theta = \mathrm{softmax}(\theta)$ over $K$ arms ("solutions") with true
# rewards $r \in [0,1]^K$. Like the paper's training (entropy bonus, KL), the objective is
# regularised, which makes the optimum unique and interior:
#
# $$J_\tau(\pi) = \pi^\top r + \tau H(\pi), \qquad \pi^* = \mathrm{softmax}(r/\tau), \qquad
#   J_\tau^* = \tau \log \textstyle\sum_a e^{r_a/\tau}.$$
#
# A two-line computation gives the **suboptimality gap** in closed form,
# $J^*_\tau - J_\tau(\pi) = \tau\,\mathrm{KL}(\pi\,\|\,\pi^*)$.
#
# The **world model** scores arm $a$ as $\hat r = \phi(r_a) + \xi$, $\xi \sim \mathcal N(0, \sigma_{WM}^2)$,
# with $\phi$ non-decreasing (Assumption 6): here an optimistic, compressing $\phi(r) = 0.35 + 0.6\sqrt r$
# (a world model told to "default to pass" overrates bad code). Real execution is exact up to a small
# noise $\sigma_E$ (the percentile of a real run varies a little).

# %%
K = cfg["THEORY_K"]
R = np.linspace(0.1, 0.9, K)  # true rewards
TAU = 0.1  # entropy weight
G, N = 8, 8  # groups per step, trajectories per group (the paper's)
SIGMA_E, SIGMA_WM = 0.05, 0.03  # real-execution noise, world-model noise


def phi(r):
    """The world model's monotone distortion of the true score (Assumption 6)."""
    return 0.35 + 0.6 * np.sqrt(r)


def entropy(pi):
    return -(pi * np.log(pi)).sum()


def gap(pi, r=R):
    """J*_tau - J_tau(pi), the suboptimality gap of the regularised objective."""
    return TAU * logsumexp(r / TAU) - (pi @ r + TAU * entropy(pi))


pi_star = softmax(R / TAU)
pi_test = softmax(np.random.default_rng(0).normal(size=K))
kl = (pi_test * np.log(pi_test / pi_star)).sum()
assert abs(gap(pi_star)) < 1e-12 and np.isclose(gap(pi_test), TAU * kl)
print(f"pi* puts {pi_star[-1]:.2f} on the best arm; gap(pi) == tau*KL(pi||pi*) checked")

# %% [markdown]
# ## 2. The GRPO gradient, and a check that it is unbiased
#
# For a group of $n$ arms $a_i \sim \pi$ with rewards $y_i$, GRPO uses $A_i = y_i - \bar y$
# (`group_advantages`) and, for a softmax, $\nabla_\theta \log \pi(a) = e_a - \pi$. Because the
# baseline $\bar y$ contains $y_i$ itself, $E[\frac1n\sum_i A_i(e_{a_i}-\pi)] = \frac{n-1}{n}\nabla_\theta\,\pi^\top r$;
# we use $\frac{1}{n-1}$ instead of $\frac1n$ so the estimator is exactly unbiased and the only bias left
# in this notebook is the world model's. The entropy gradient $\nabla_\theta H = -\pi\odot(\log\pi + H)$
# is exact. One step is $\theta \leftarrow \theta + \gamma\,(\sum_k w_k g_k + \tau\nabla H)$ with
# per-group gradients $g_k$ and weights $w_k$ from `fused_group_weights` (uniform $1/G$ without anchors).

# %%
def group_grads(arms, rewards, pi):
    """Per-group policy gradients g_k = 1/(n-1) sum_i A_ki (e_{a_ki} - pi); arms, rewards are (groups, n)."""
    m, n = arms.shape
    adv = group_advantages(rewards)
    idx = (np.arange(m)[:, None] * len(pi) + arms).ravel()
    s = np.bincount(idx, weights=adv.ravel(), minlength=m * len(pi)).reshape(m, len(pi))
    return (s - adv.sum(1, keepdims=True) * pi) / (n - 1)


def entropy_grad(pi):
    logp = np.log(pi)
    return -pi * (logp - pi @ logp)


def sample_arms(rng, pi, shape):
    """Inverse-CDF sampling of arms (vectorised over any shape)."""
    return np.minimum(np.searchsorted(np.cumsum(pi), rng.random(shape)), len(pi) - 1)


rng = np.random.default_rng(1)
pi_chk = softmax(R / 0.3)
arms = sample_arms(rng, pi_chk, (20000, N))
est = group_grads(arms, R[arms], pi_chk).mean(0)
exact = pi_chk * (R - pi_chk @ R)
print("max |E[g] - grad J| =", np.abs(est - exact).max().round(5), " (|grad J|max =", np.abs(exact).max().round(3), ")")
assert np.abs(est - exact).max() < 0.1 * np.abs(exact).max()

# %% [markdown]
# ## 3. One training loop for every arm of the paper
#
# All runs below share one loop. Per step: sample $G\times n$ arms; real rewards $y = r_a + \sigma_E\zeta$;
# world-model scores $\hat r = s_a + \sigma_{WM}\xi$ with $s = \phi(r)$ (or a "hacked" $s$, section 8).
# The method is the package's `WMRLStep` (`wmrl/step.py`, Algorithm 1), exactly as the trainers use it:
#
# - `grpo`: every group really executed; `wm`: every group scored by the world model, uncorrected;
# - `mix`: one anchor group a step (`AnchorScheduler`, $\max(1, \mathrm{round}(0.1\cdot 8))$) with real
#   rewards, the rest raw world-model scores, uniform weights;
# - `od`: as `mix` but world-model scores pass through the isotonic map $\hat f$ fitted on the anchor
#   pairs (`OnlineDebiaser`, the paper's schedule, `MethodConfig`'s defaults: the identity until
#   `od_min_pairs` pairs, then a refit every `od_refit_every`; printed below);
# - `wmrl`: `od` plus IVD weights, $\rho$ from `InverseVarianceWeighter` ($\eta^2$ over the last 16
#   anchor groups, $\eta^2_{cal}$ recorded after 48 anchor groups). Warm-up must end a full window *after*
#   OD's first fit (at `od_min_pairs / n` anchor groups), otherwise $\eta^2_{cal}$ mixes in uncalibrated
#   residuals and $\rho$ is biased low.
#
# Every run records the gap, $\eta^2$, $\rho$, and the **bias of the rewards it trains on**:
# $B^2 = \sum_a \pi(a)\,(E_\xi[\hat f(s_a+\sigma_{WM}\xi)] - r_a - c)^2$ with $c$ the $\pi$-weighted mean
# offset (a constant offset does not move a policy gradient), $E_\xi$ by 41-point quadrature.

# %%
XI_NODES = ndtri((np.arange(41) + 0.5) / 41)  # quadrature nodes of N(0, 1)
ARMS = ("grpo", "wm", "mix", "od", "wmrl")
# The paper's OD schedule (MethodConfig's defaults); eta^2 over 16 anchor groups, eta^2_cal after 48
# (OD's first fit, plus a full window).
METHOD = MethodConfig(ivd_warmup_groups=48, ivd_window=16)
assert METHOD.ivd_warmup_groups >= np.ceil(METHOD.od_min_pairs / N) + METHOD.ivd_window
print(f"OD: identity until {METHOD.od_min_pairs} pairs ({METHOD.od_min_pairs / N:.0f} anchor groups of {N}), "
      f"then a refit every {METHOD.od_refit_every}; IVD window {METHOD.ivd_window}, warm-up {METHOD.ivd_warmup_groups} groups")


def reward_bias(calib, s, pi):
    """Per-arm bias E[f(s_a + noise)] - r_a, centred by its pi-weighted mean."""
    b = calib(s[:, None] + SIGMA_WM * XI_NODES[None, :]).mean(1) - R
    return b - pi @ b


def train(arm, gamma, steps, seed, s_late=None, late_from=0, record_every=10):
    """Run one arm; return (curve DataFrame, final per-arm bias of the world-model rewards).

    The world model scores phi(r), or `s_late` from step `late_from` on (a world model that goes wrong).
    The method is the package's own `WMRLStep` (routing, OD, the eta^2 audit, IVD weights).
    """
    rng = np.random.default_rng(seed)
    theta = np.zeros(K)
    step = WMRLStep(arm, METHOD, G, N, seed=seed)
    calibrate = step.debiaser.transform if step.arm.od else (lambda x: np.asarray(x, float))
    rows = []
    for t in range(steps + 1):
        pi = softmax(theta)
        s = phi(R) if s_late is None or t < late_from else s_late
        route = step.route()
        arms = sample_arms(rng, pi, (G, N))
        real = R[arms] + SIGMA_E * rng.standard_normal((G, N))
        wm = s[arms] + SIGMA_WM * rng.standard_normal((G, N))
        out = step(np.where(route.executed[:, None], real, np.nan), np.where(route.predicted[:, None], wm, np.nan),
                   route.executed)
        if t % record_every == 0:
            b = np.zeros(K) if arm == "grpo" else reward_bias(calibrate, s, pi)
            # eta^2 and rho of the audit, which runs in every arm with anchors (rho weights only wmrl's gradient)
            rows.append({"step": t, "gap": gap(pi), "eta2": step.ivd.eta2, "rho": step.ivd.rho,
                         "bias2": pi @ b**2, "pi_best": pi[-1], "pairs": step.debiaser.n_pairs})
        theta += gamma * (out.weights @ group_grads(arms, out.rewards, pi) + TAU * entropy_grad(pi))
    curve = pd.DataFrame(rows).assign(arm=arm, gamma=gamma, seed=seed)
    return curve, reward_bias(calibrate, s, softmax(theta))


# %% [markdown]
# ## 4. Theorem 3: world-model rewards only → a bias floor that no step size or horizon removes
#
# With world-model rewards only, $E[\text{step}] \propto \nabla_\theta\,(\pi^\top\phi(r) + \tau H(\pi))$:
# the method is an unbiased stochastic ascent of the **wrong** objective. Its fixed point is
# $\pi_\phi = \mathrm{softmax}(\phi(r)/\tau)$, so the gap converges to
#
# $$\underbrace{\tau\,\mathrm{KL}(\pi_\phi\,\|\,\pi^*)}_{\text{bias floor}} \;+\; O(\gamma V_{WM}),$$
#
# Theorem 3's two terms: a floor fixed by the bias alone (no $T$, no $\gamma$: a smaller step converges
# *more precisely to the wrong policy*), and a variance term that shrinks with $\gamma$. With real
# rewards the same loop has no floor: its gap keeps falling, two orders of magnitude below. (Even a monotone $\phi$ biases a
# regularised objective; without regularisation it would only slow learning down. Bias that reorders
# the arms is section 8.)
#
# Check: run both for each step size $\gamma$ over the same "horizon" $\sum_t\gamma = $ `THEORY_HORIZON`.

# %%
pi_phi = softmax(phi(R) / TAU)
FLOOR = gap(pi_phi)
print(f"predicted bias floor tau*KL(pi_phi||pi*) = {FLOOR:.4f}")

if cfg.train:
    runs = [(arm, g, seed) for g in cfg["THEORY_GAMMAS"] for arm in ("grpo", "wm") for seed in cfg.seeds]
    curves = []
    for arm, g, seed in tqdm(runs, desc="Theorem 3"):
        steps = int(cfg["THEORY_HORIZON"] / g)
        curves.append(train(arm, g, steps, seed, record_every=max(1, steps // 200))[0])
    save(pd.concat(curves, ignore_index=True), "thm3_curves")
thm3 = load("thm3_curves")

# %%
thm3_final = plateau(thm3)  # mean gap over the last quarter of each run
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
gammas = sorted(thm3.gamma.unique(), reverse=True)
shades = plt.cm.viridis(np.linspace(0, 0.85, len(gammas)))
for g, c in zip(gammas, shades):
    for arm, ls in (("wm", "-"), ("grpo", ":")):
        d = thm3[(thm3.arm == arm) & (thm3.gamma == g)].assign(step1=lambda d: d.step + 1)
        plots.mean_band(ax1, d, "step1", "gap", color=c, ls=ls, label=f"{arm}, γ={g:g} (geometric mean)", log=True)
ax1.axhline(FLOOR, color="tab:red", lw=1, alpha=0.6)
ax1.text(1.1, FLOOR * 0.72, "predicted floor τ·KL(π_φ‖π*)", color="tab:red")
ax1.set(xscale="log", yscale="log", xlabel="step + 1 (log scale)", ylabel="suboptimality gap J* - J (log scale)",
        title="Gap vs steps (solid: world model only, dotted: real rewards)")
handles, _ = ax1.get_legend_handles_labels()
ax1.legend(handles=handles + [plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=plots.CI_LOG_LABEL)],
           fontsize=7, ncol=2)
summ = thm3_final.groupby(["arm", "gamma"]).final_gap.agg(["mean", "std"]).reset_index()
for arm, lab in (("wm", "world model only"), ("grpo", "real rewards (GRPO)")):
    d = summ[summ.arm == arm]
    ax2.errorbar(d.gamma, d["mean"], yerr=d["std"].fillna(0), marker="o", capsize=3, color=plots.ARM_COLORS[arm],
                 label=f"{lab} (mean ± SD over seeds)")
ax2.axhline(FLOOR, color="tab:red", lw=1, ls="--", alpha=0.6, label="predicted bias floor")
ax2.set(xscale="log", yscale="log", xlabel="step size γ", ylabel="final gap (last 25% of steps)",
        title="Theorem 3: the floor does not move with γ")
ax2.set_xticks(gammas, [f"{g:g}" for g in gammas])
ax2.minorticks_off()
ax2.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "00_theory_thm3", cfg, "Theorem 3: with world-model rewards only the gap plateaus at the "
               "bias floor tau*KL(pi_phi||pi*) for every step size; real rewards have no floor.",
               sources=[cfg.results_dir / SUB / "thm3_curves.parquet"])
plt.show()

# %%
wm_final = summ[summ.arm == "wm"]["mean"]
print(f"world-model-only plateau / predicted floor: {(wm_final / FLOOR).round(3).tolist()}")
assert np.allclose(wm_final, FLOOR, rtol=0.25), "the world-model-only plateau should sit at the predicted floor"

# %% [markdown]
# ## 5. Theorem 4, bias: Online Debiasing shrinks the bias like $1/(1+T/T_0)$
#
# Under Assumption 6, $E[r\mid\hat r]$ is non-decreasing in $\hat r$, and isotonic regression on $T$ anchor
# pairs estimates it (`OnlineDebiaser.refit`):
#
# $$\hat f_T = \arg\min_{f\uparrow}\sum_{j\le T}(r_j - f(\hat r_j))^2 \;\longrightarrow\; f^*(x) = E[r\mid \hat r = x]
#   = \frac{\sum_a \pi_a\, \mathcal N(x;\phi(r_a),\sigma_{WM}^2)\, r_a}{\sum_a \pi_a\,\mathcal N(x;\phi(r_a),\sigma_{WM}^2)} .$$
#
# Each of the $K$ score levels is effectively a mean of $\sim T/K$ noisy pairs, so the calibration error
# $\varepsilon_T^2 = E_{\hat r}[(\hat f_T(\hat r) - f^*(\hat r))^2]$ should contract like
# $A/(1+T/T_0)$: Theorem 4's $1/(1+T/T_0)$. (Isotonic regression's known rate for a continuous score is
# $T^{-2/3}$, slower than $1/T$; the fit below shows which regime the measured curve is in.)
#
# A caveat the theorem hides: the limit $f^*$ is $E[r\mid\hat r]$, **not** $\phi^{-1}$. Where the noise makes two
# arms' scores overlap, $f^*$ regresses towards their mean, so the per-arm reward bias
# $B^2 = \sum_a\pi_a(E_\xi[f(\phi(r_a)+\sigma_{WM}\xi)] - r_a - c)^2$ does not go to zero but to the bias of $f^*$,
# which we compute exactly. We measure both under a uniform policy after each refit (refitting every
# 8 pairs here, to see the early part of the curve).

# %%
UNIFORM = np.full(K, 1 / K)
X_NODES = (phi(R)[:, None] + SIGMA_WM * XI_NODES[None, :]).ravel()  # quadrature of r_hat under UNIFORM


def oracle_map(x, prior=UNIFORM):
    """f*(x) = E[r | r_hat = x]: the best any calibrator of r_hat alone can do."""
    x = np.asarray(x, float)
    return softmax(np.log(prior) - 0.5 * ((x[..., None] - phi(R)) / SIGMA_WM) ** 2, axis=-1) @ R


def od_contraction(seed, max_pairs, batch=8):
    rng = np.random.default_rng(seed)
    od = OnlineDebiaser(min_pairs=batch, refit_every=batch)
    record_at = {0} | set(batch * np.unique(np.geomspace(1, max_pairs // batch, 40).astype(int)))  # log-spaced
    rows = []
    while True:
        if od.n_pairs in record_at:
            rows.append({"pairs": od.n_pairs, "calib_err2": np.mean((od.transform(X_NODES) - oracle_map(X_NODES)) ** 2),
                         "bias2": UNIFORM @ reward_bias(od.transform, phi(R), UNIFORM) ** 2})
        if od.n_pairs >= max_pairs:
            return pd.DataFrame(rows).assign(seed=seed)
        arms = rng.integers(0, K, batch)
        od.push_many(phi(R[arms]) + SIGMA_WM * rng.standard_normal(batch), R[arms] + SIGMA_E * rng.standard_normal(batch))


if cfg.train:
    save(pd.concat([od_contraction(s, cfg["THEORY_BIAS_PAIRS"]) for s in tqdm(cfg.seeds, desc="OD contraction")],
                   ignore_index=True), "thm4_bias")
thm4_bias = load("thm4_bias")

# %%
mb = thm4_bias.groupby("pairs")[["calib_err2", "bias2"]].mean()
eps0 = mb.calib_err2.iloc[0]  # the identity map (T = 0)
T_fit = mb.index[mb.index > 0].to_numpy(dtype=float)
y_fit = mb.calib_err2.loc[T_fit].to_numpy()
(A, T0), _ = curve_fit(lambda T, A, T0: A / (1 + T / T0), T_fit, y_fit, p0=(y_fit[0], 10.0), sigma=y_fit,
                       bounds=([0, 1e-3], [np.inf, 1e6]))
tail = T_fit >= 64
alpha, log_c = np.polyfit(np.log(T_fit[tail]), np.log(y_fit[tail]), 1)  # power-law tail c * T^alpha
ORACLE_BIAS2 = UNIFORM @ reward_bias(oracle_map, phi(R), UNIFORM) ** 2
raw_bias2 = mb.bias2.iloc[0]

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
TT = np.geomspace(T_fit.min(), T_fit.max(), 200)
for seed, d in thm4_bias[thm4_bias.pairs > 0].groupby("seed"):
    ax1.plot(d.pairs, d.calib_err2, color="tab:blue", alpha=0.25, lw=0.8)
    ax2.plot(d.pairs, d.bias2, color="tab:blue", alpha=0.25, lw=0.8)
ax1.plot(T_fit, mb.calib_err2.loc[T_fit], "o", color="tab:blue", ms=4, label="measured (mean over seeds)")
ax1.plot(TT, A / (1 + TT / T0), "k--", label=f"fit $A/(1+T/T_0)$, $T_0$={T0:.0f}")
ax1.plot(TT, np.exp(log_c) * TT**alpha, "k:", label=f"fit $cT^{{{alpha:.2f}}}$ (T ≥ 64)")
ax1.axhline(eps0, color="tab:red", lw=1, label="identity map (uncalibrated)")
ax1.set(xscale="log", yscale="log", xlabel="anchor pairs T", ylabel="$E[(\\hat f_T(\\hat r) - f^*(\\hat r))^2]$",
        title="Calibration error: 1/(1+T/T0) vs a power law")
ax1.legend(fontsize=8)
ax2.plot(T_fit, mb.bias2.loc[T_fit], "o", color="tab:blue", ms=4, label="measured $B_T^2$ (mean over seeds)")
ax2.axhline(raw_bias2, color="tab:red", lw=1, label="uncalibrated world model")
ax2.axhline(ORACLE_BIAS2, color="k", ls="--", lw=1, label="limit: bias of $f^*=E[r\\mid\\hat r]$ (exact)")
ax2.set(xscale="log", yscale="log", xlabel="anchor pairs T", ylabel="squared per-arm reward bias $B^2$",
        title="Reward bias falls to the regression-to-the-mean floor")
ax2.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "00_theory_thm4_bias", cfg, "Online Debiasing vs anchor pairs T: calibration error with the fitted "
               "1/(1+T/T0) contraction, and the per-arm reward bias with its exact limit.",
               sources=[cfg.results_dir / SUB / "thm4_bias.parquet"])
plt.show()
print(f"eps0^2={eps0:.2e}; fit A={A:.2e}, T0={T0:.0f} pairs; tail exponent {alpha:.2f}; reward bias^2: raw {raw_bias2:.2e} -> limit {ORACLE_BIAS2:.2e}")

# %% [markdown]
# **What we see.** The calibration error does contract, but at large $T$ it follows a power law with exponent
# close to isotonic regression's $-2/3$ rather than $1/(1+T/T_0)$ (which fits only the middle decade): Theorem 4's
# rate is optimistic for a continuous score. And the *reward* bias that matters for the gradient stops
# improving after about a hundred pairs, at the exact regression-to-the-mean limit of $E[r\mid\hat r]$:
# with world-model noise comparable to the spacing of true scores, more anchors cannot buy more.
#
# ### Training with the five arms
#
# What the contraction buys in training: `wm` stays at its floor, `mix` (anchors, no correction) only
# dilutes the bias by the share of anchors, `od` and `wmrl` fall towards `grpo` once OD's first fit
# arrives (after `od_min_pairs` pairs, one anchor group of `N` a step), leaving the small residual bias of the
# noise overlap. Lines: mean over seeds; bands: 95% CI over seeds.

# %%
if cfg.train:
    runs = [(arm, seed) for arm in ARMS for seed in cfg.seeds]
    out = [train(arm, cfg["THEORY_GAMMA"], cfg["THEORY_STEPS"], seed) for arm, seed in tqdm(runs, desc="Theorem 4")]
    save(pd.concat([c for c, _ in out], ignore_index=True), "thm4_curves")
    save(pd.DataFrame([{"arm": a, "seed": sd, "true_r": R[i], "arm_index": i, "bias": b[i]}
                       for (a, sd), (_, b) in zip(runs, out) for i in range(K)]), "thm4_arm_bias")
thm4 = load("thm4_curves")
thm4_bias_arm = load("thm4_arm_bias")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for arm in ARMS:  # positive quantities on log axes: geometric mean and the interval of the log
    d = thm4[thm4.arm == arm]
    plots.mean_band(ax1, d, "step", "gap", color=plots.ARM_COLORS[arm], label=f"{arm} (geometric mean)", log=True)
    if arm != "grpo":
        plots.mean_band(ax2, d, "step", "bias2", color=plots.ARM_COLORS[arm], label=f"{arm} (geometric mean)", log=True)
ax1.axhline(FLOOR, color="tab:red", lw=1, ls="--", alpha=0.6, label="Theorem 3's bias floor")
ax1.set(yscale="log", xlabel="step", ylabel="suboptimality gap J* - J (log scale)", title=f"Gap, γ={cfg['THEORY_GAMMA']:g}")
ax2.set(yscale="log", xlabel="step", ylabel="squared reward bias $B^2$ under π (log scale)",
        title="Bias of the rewards trained on")
for ax in (ax1, ax2):
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=plots.CI_LOG_LABEL)],
              fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "00_theory_thm4_training", cfg, "Gap and reward bias during training for grpo / wm / mix / od / "
               "wmrl on the synthetic problem (mean and 95% CI over seeds).", sources=[cfg.results_dir / SUB / "thm4_curves.parquet"])
plt.show()

# %% [markdown]
# ## 6. Theorem 4, variance: IVD reaches $V_{WM}/(1+V_{WM}/V_E)$
#
# After debiasing, the anchor stream $\hat g_E$ (mean of $|G_E|$ group gradients, per-group variance $v_E$)
# and the world-model stream $\hat g_{WM}$ (mean of $|G_{WM}|$ groups, $v_{WM} = v_E + v_\xi$) are two
# independent unbiased estimators with variances $V_E = v_E/|G_E|$, $V_{WM} = v_{WM}/|G_{WM}|$.
# For $\lambda\hat g_E + (1-\lambda)\hat g_{WM}$ the variance $\lambda^2V_E + (1-\lambda)^2V_{WM}$ is minimal at
# $\lambda^* = V_{WM}/(V_E+V_{WM})$, where it equals
#
# $$V^* = \frac{1}{1/V_E + 1/V_{WM}} = \frac{V_{WM}}{1 + V_{WM}/V_E} \;<\; \min(V_E, V_{WM}).$$
#
# The paper's fused gradient $g = (\rho\sum_{E} g_k + \sum_{WM} g_k)/(\rho|G_E| + |G_{WM}|)$ is this
# estimator with $\lambda = \rho|G_E|/(\rho|G_E|+|G_{WM}|)$, so the optimal weight is the per-group variance
# ratio $\rho^* = v_{WM}/v_E$. The world model's noise adds (derivation: the noise terms are independent of
# the arms and $E\|e_a-\pi\|^2 = 1-\|\pi\|^2$) $v_\xi = \sigma^2(1-\|\pi\|^2)/(n-1)$ per group.
#
# Check: freeze a policy, draw `THEORY_MC_REPS` steps of 2 anchor + 6 world-model groups, choose
# $\sigma$ so that $\rho^*=3$ (then both streams weigh the same, $\lambda^* = 1/2$), and measure every
# variance (trace of the covariance) with the real `fused_group_weights`.

# %%
N_E, N_WM = 2, 6


def stream_draws(reps, seed, rho_target=3.0):
    """Per-group gradients of `reps` frozen-policy steps: (reps, N_E) anchor and (reps, N_WM) WM groups."""
    rng = np.random.default_rng(seed)
    pi = softmax(R / 0.25)
    arms = sample_arms(rng, pi, (reps * (N_E + N_WM), N))
    real = R[arms] + SIGMA_E * rng.standard_normal(arms.shape)
    gk_real = group_grads(arms, real, pi)
    v_e = gk_real.var(0).sum()  # per-group variance of the anchor stream
    sigma = np.sqrt((rho_target - 1) * v_e * (N - 1) / (1 - pi @ pi))  # so that v_wm / v_e = rho_target
    wm = R[arms] + sigma * rng.standard_normal(arms.shape)  # debiased world model: unbiased, noisier
    gk_wm = group_grads(arms, wm, pi).reshape(reps, N_E + N_WM, K)
    return gk_real.reshape(reps, N_E + N_WM, K)[:, :N_E], gk_wm[:, N_E:], sigma, wm, real


def fused(g_e, g_wm, rho):
    """The paper's fused gradient through the real fused_group_weights."""
    is_anchor = np.r_[np.ones(g_e.shape[1], bool), np.zeros(g_wm.shape[1], bool)]
    w = fused_group_weights(is_anchor, rho)
    return np.einsum("k,rkd->rd", w, np.concatenate([g_e, g_wm], axis=1))


def tvar(x):
    """Trace of the covariance of the rows of x."""
    return x.var(0).sum()


if cfg.train:
    rows, l12_rows = [], []
    for seed in tqdm(cfg.seeds, desc="IVD variance"):
        g_e, g_wm, sigma, wm, real = stream_draws(cfg["THEORY_MC_REPS"], seed)
        V_E, V_WM = tvar(g_e.mean(1)), tvar(g_wm.mean(1))
        rho_star = (V_WM * N_WM) / (V_E * N_E)
        # the paper's rho on this world model. The window is this simulation's own, twice the trainer's
        # method.ivd_window: the simulated stream is stationary, so a longer window only steadies eta^2
        weighter = InverseVarianceWeighter(warmup_groups=8, window=16)
        for k in range(40):
            weighter.observe(wm[k], real[k])
        row = {"seed": seed, "sigma_wm": sigma, "V_E": V_E, "V_WM": V_WM, "rho_star": rho_star,
               "formula": V_WM / (1 + V_WM / V_E), "rho_paper": weighter.rho}
        for name, rho in (("fused_rho_star", rho_star), ("fused_rho_paper", weighter.rho), ("fused_rho_1", 1.0)):
            row[name] = tvar(fused(g_e, g_wm, rho))
        rows.append(row)
        eps = np.round(np.arange(-0.6, 1.55, 0.1), 2)  # Lemma 12 (next section), on the same draws
        for n_e in (2, 1):
            ge = g_e[:, :n_e]
            rs = tvar(g_wm.mean(1)) * N_WM / (tvar(ge.mean(1)) * n_e)
            base = tvar(fused(ge, g_wm, rs))
            p = rs * n_e / (rs * n_e + N_WM)
            for e in eps:
                l12_rows.append({"seed": seed, "lemma12_n_anchor": n_e, "eps": e, "p": p,
                                 "ratio": tvar(fused(ge, g_wm, rs * (1 + e))) / base})
    save(pd.DataFrame(rows), "ivd_variance")
    save(pd.DataFrame(l12_rows), "lemma12")
ivd = load("ivd_variance")

# %%
ivd_mean = ivd.mean(numeric_only=True)
bars = {"anchor stream\n$V_E$": ivd_mean.V_E, "world-model\nstream $V_{WM}$": ivd_mean.V_WM,
        "fused, ρ=1\n(plain mean)": ivd_mean.fused_rho_1, f"fused, paper ρ\n(ρ≈{ivd_mean.rho_paper:.1f})": ivd_mean.fused_rho_paper,
        f"fused, ρ*={ivd_mean.rho_star:.1f}": ivd_mean.fused_rho_star}
fig, ax = plt.subplots(figsize=(8, 4))
ax.bar(range(len(bars)), list(bars.values()), color=["k", "tab:red", "tab:orange", "tab:olive", "tab:green"], alpha=0.8)
ax.axhline(ivd_mean.formula, color="tab:green", ls="--", label="formula $V_{WM}/(1+V_{WM}/V_E)$")
ax.set_xticks(range(len(bars)), list(bars.keys()), fontsize=8)
ax.set(xlabel="gradient estimator (mean over seeds)", ylabel="gradient variance (trace of the covariance)",
       title="Theorem 4: inverse-variance fusion beats either stream")
ax.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "00_theory_ivd", cfg, "Measured variance of the anchor stream, the world-model stream and the fused "
               "gradient at several rho, with Theorem 4's formula.", sources=[cfg.results_dir / SUB / "ivd_variance.parquet"])
plt.show()
assert np.isclose(ivd_mean.fused_rho_star, ivd_mean.formula, rtol=0.1)
assert ivd_mean.fused_rho_star < min(ivd_mean.V_E, ivd_mean.V_WM)

# %% [markdown]
# The paper's $\rho = 1+\eta^2/\eta^2_{cal}$ is a heuristic for $\rho^*$: for a world model that has not drifted
# $\eta^2\approx\eta^2_{cal}$ and $\rho\approx 2$, whatever the true variance ratio. The next section shows
# why that is good enough.
#
# ## 7. Lemma 12: an error in $\rho$ costs second-order variance
#
# Write $a = \rho^*|G_E|$, $b=|G_{WM}|$, $p = a/(a+b) = \lambda^*$ (the anchor stream's optimal share) and
# use $\rho = \rho^*(1+\epsilon)$. With $v_{WM}=\rho^* v_E$ the fused variance is
# $\frac{v_E}{|G_E|}\,\frac{x^2+ab}{(x+b)^2}$ with $x = \rho|G_E| = a(1+\epsilon)$, so relative to the optimum
#
# $$\frac{\mathrm{Var}(\rho^*(1+\epsilon))}{\mathrm{Var}(\rho^*)} = \frac{1+2p\epsilon+p\epsilon^2}{(1+p\epsilon)^2}
#   = 1 + \frac{p(1-p)\,\epsilon^2}{(1+p\epsilon)^2} \;=\; 1 + p(1-p)\,\epsilon^2 + O(\epsilon^3)
#   \;\le\; 1 + \frac{\epsilon^2}{4} + O(\epsilon^3).$$
#
# No first-order term (the optimum is a minimum), and $p(1-p)\le 1/4$ with equality when both streams
# weigh the same ($p=1/2$, our 2 + 6 groups with $\rho^*=3$); with fewer anchors (1 + 6 here) $p<1/2$
# and the cost is smaller. But $\epsilon^2/4$ is the *second-order* term only, not a bound on the
# exact inflation: the denominator $(1+p\epsilon)^2$ is below 1 when $\rho$ is underestimated
# ($\epsilon<0$), so an underestimate costs more than $\epsilon^2/4$ and an overestimate less (the
# measured values are printed below the figure). Check: the ratio measured on the same draws
# (common random numbers) against the exact expression.

# %%
l12 = load("lemma12")
fig, ax = plt.subplots(figsize=(6.5, 4))
ee = np.linspace(l12.eps.min(), l12.eps.max(), 200)
for (n_e, d), c in zip(l12.groupby("lemma12_n_anchor"), ("tab:purple", "tab:green")):
    m = d.groupby("eps")[["ratio", "p"]].mean()
    p = m.p.mean()
    ax.plot(m.index, m.ratio - 1, "o", color=c, ms=4, label=f"measured, {n_e} anchor + {N_WM} WM groups (p={p:.2f})")
    ax.plot(ee, p * (1 - p) * ee**2 / (1 + p * ee) ** 2, "-", color=c, lw=1, label=f"exact $p(1-p)ε^2/(1+pε)^2$, p={p:.2f}")
ax.plot(ee, ee**2 / 4, "k:", label="second-order approximation $ε^2/4$ (at p = 1/2)")
ax.set(xlabel="relative error ε in ρ", ylabel="variance inflation Var(ρ*(1+ε))/Var(ρ*) − 1",
       title="Lemma 12: second-order sensitivity to ρ", ylim=(0, None))
ax.legend(fontsize=7)
fig.tight_layout()
nb.save_figure(fig, "00_theory_lemma12", cfg, "Variance inflation from using rho*(1+eps) instead of rho*: measured vs "
               "the exact p(1-p)eps^2/(1+p eps)^2 and the eps^2/4 bound.", sources=[cfg.results_dir / SUB / "lemma12.parquet"])
plt.show()
m2 = l12[l12.lemma12_n_anchor == 2].groupby("eps")[["ratio", "p"]].mean()
pred = 1 + m2.p * (1 - m2.p) * m2.index**2 / (1 + m2.p * m2.index) ** 2
print("max |measured - exact| of the ratio:", float(np.abs(m2.ratio - pred).max().round(4)))
assert np.abs(m2.ratio - pred).max() < 0.02
for e in (-0.5, 0.5):
    print(f"eps = {e:+.1f}: measured inflation {np.interp(e, m2.index, m2.ratio) - 1:.4f}, second-order eps^2/4 = {e**2 / 4:.4f}")

# %% [markdown]
# ## 8. When Assumption 6 fails: an arm-dependent bias
#
# Reward hacking: a quarter of the way into training, the world model starts to fall for one poor arm
# ($r = 0.28$, code that *looks* excellent but fails) and scores it 1.0, above every honest arm. This bias
# depends on the arm, not on its true reward: there is no monotone $\phi$ with $\hat r = \phi(r)+\xi$. An isotonic
# map of $\hat r$ can only pool this arm's pairs with the best arm's (they share the top of the score range):
# it lowers both, but can never separate them, so a large per-arm bias survives calibration. What *does*
# see it is the $\eta^2$ audit: the calibrated residual on anchors jumps, $\rho = 1+\eta^2/\eta^2_{cal}$ rises
# to its cap and IVD shifts trust back to the real executions.

# %%
HACK = 2
s_hack = phi(R).copy()
s_hack[HACK] = 1.0
HACK_FROM = cfg["THEORY_STEPS"] // 4

if cfg.train:
    runs = [(arm, seed) for arm in ("wm", "od", "wmrl") for seed in cfg.seeds]
    out = [train(arm, cfg["THEORY_GAMMA"], cfg["THEORY_STEPS"], seed, s_late=s_hack, late_from=HACK_FROM)
           for arm, seed in tqdm(runs, desc="Assumption 6")]
    save(pd.concat([c for c, _ in out], ignore_index=True).assign(hack_from=HACK_FROM), "a6_curves")
    save(pd.DataFrame([{"arm": a, "seed": sd, "true_r": R[i], "arm_index": i, "bias": b[i]}
                       for (a, sd), (_, b) in zip(runs, out) for i in range(K)]), "a6_arm_bias")
a6 = load("a6_curves")
a6_bias = load("a6_arm_bias")

# %%
hack_from = a6.hack_from.iloc[0]
fig, axes = plt.subplots(2, 2, figsize=(12, 8))
ax = axes[0, 0]
for df, dx, c, lab in ((thm4_bias_arm, -0.2, "tab:gray", "Assumption 6 holds"), (a6_bias, 0.2, "tab:purple", f"fails (hacked arm at {R[HACK]:.2f})")):
    ax.bar(np.arange(K) + dx, df[df.arm == "od"].groupby("arm_index").bias.mean(), width=0.4, color=c, label=lab)
ax.axhline(0, color="k", lw=0.8)
ax.set_xticks(np.arange(K), [f"{r:.2f}" for r in R], fontsize=8)
ax.set(xlabel="arm's true reward", ylabel="E[f̂(r̂)] − r (centred)", title="Per-arm reward bias after Online Debiasing (od, end)")
ax.legend(fontsize=8)
for ax, col, title in ((axes[0, 1], "eta2", "The η² audit sees it"), (axes[1, 0], "rho", "…and ρ = 1 + η²/η²_cal reacts (wmrl)")):
    arms_shown = ("od", "wmrl") if col == "eta2" else ("wmrl",)
    for arm in arms_shown:
        ls = "-" if arm == "od" else "--"
        for df, c, lab in ((a6, "tab:purple", "fails"), (thm4, "tab:gray", "holds")):
            log = col == "eta2"
            plots.mean_band(ax, df[df.arm == arm], "step", col, color=c, ls=ls, log=log, bounds=None if log else (1, np.inf),
                            label=f"{arm}, Assumption 6 {lab} ({'geometric ' if log else ''}mean)")
    ax.axvline(hack_from, color="k", lw=0.8, ls=":", label="the hack starts")
    ax.set(xlabel="step", ylabel={"eta2": "η² (calibrated residual on anchors, log scale)",
                                  "rho": "ρ (anchor weight, ratio)"}[col], title=title)
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [plt.matplotlib.patches.Patch(
        color="0.5", alpha=0.15, label=plots.CI_LOG_LABEL if col == "eta2" else plots.CI_LABEL)], fontsize=8)
axes[0, 1].set_yscale("log")
ax = axes[1, 1]
for arm in ("wm", "od", "wmrl"):
    plots.mean_band(ax, a6[a6.arm == arm], "step", "gap", color=plots.ARM_COLORS[arm], label=f"{arm} (geometric mean)",
                    log=True)
plots.mean_band(ax, thm4[thm4.arm == "grpo"], "step", "gap", color="k", label="grpo, real rewards (geometric mean)",
                log=True)
ax.axvline(hack_from, color="k", lw=0.8, ls=":", label="the hack starts")
ax.set(yscale="log", xlabel="step", ylabel="suboptimality gap J* - J (log scale)", title="Gap when Assumption 6 fails")
handles, _ = ax.get_legend_handles_labels()
ax.legend(handles=handles + [plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=plots.CI_LOG_LABEL)], fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "00_theory_a6", cfg, "Assumption 6 failing (an arm-dependent, reward-hacking bias from the dotted line on): the "
               "bias survives isotonic calibration, eta^2 and rho rise, the gap with them.",
               sources=[cfg.results_dir / SUB / f for f in ("a6_curves.parquet", "a6_arm_bias.parquet", "thm4_curves.parquet")])
plt.show()

# %% [markdown]
# ## 9. Summary
#
# The numbers behind every claim (means over seeds, rounded; this cell's output is checked by nbval).

# %% tags=["nbval-check-output"]
def final(df, arm):
    return plateau(df[df.arm == arm]).final_gap.mean()


def late(df, arm, col):
    d = df[df.arm == arm]
    return d[d.step >= 0.75 * d.step.max()][col].mean()


def l12_at(eps):
    p = m2.p.mean()
    return f"{np.interp(eps, m2.index, m2.ratio) - 1:.4f} / {p * (1 - p) * eps**2 / (1 + p * eps) ** 2:.4f} / {eps**2 / 4:.4f}"


summary = pd.DataFrame([
    ("Thm 3", "bias floor tau*KL(pi_phi||pi*) (predicted)", FLOOR),
    ("Thm 3", "wm-only plateau, smallest / largest step size", f"{wm_final.iloc[0]:.4f} / {wm_final.iloc[-1]:.4f}"),
    ("Thm 3", "grpo plateau, smallest / largest step size",
     "{:.4f} / {:.4f}".format(*summ[summ.arm == "grpo"]["mean"].iloc[[0, -1]])),
    ("Thm 4", "OD calibration error: fitted T0 of A/(1+T/T0); tail exponent", f"{T0:.0f} pairs; T^{alpha:.2f}"),
    ("Thm 4", "OD: reward bias^2 raw -> last T -> exact limit",
     f"{raw_bias2:.2e} -> {mb.bias2.iloc[-1]:.2e} -> {ORACLE_BIAS2:.2e}"),
    ("Thm 4", "final gap grpo / wm / mix / od / wmrl", " / ".join(f"{final(thm4, a):.4f}" for a in ARMS)),
    ("Thm 4", "V_E, V_WM (measured)", f"{ivd_mean.V_E:.3e}, {ivd_mean.V_WM:.3e}"),
    ("Thm 4", "fused variance at rho*: measured / formula", f"{ivd_mean.fused_rho_star:.3e} / {ivd_mean.formula:.3e}"),
    ("Lemma 12", "inflation at eps=-0.5: measured / exact / eps^2/4", l12_at(-0.5)),
    ("Lemma 12", "inflation at eps=+0.5: measured / exact / eps^2/4", l12_at(0.5)),
    ("A6 fails", "bias of the hacked arm after OD", a6_bias[(a6_bias.arm == "od") & (a6_bias.arm_index == HACK)].bias.mean()),
    ("A6 fails", "eta^2 late in training, holds -> fails (od)", f"{late(thm4, 'od', 'eta2'):.2e} -> {late(a6, 'od', 'eta2'):.2e}"),
    ("A6 fails", "rho late in training, holds -> fails (wmrl)", f"{late(thm4, 'wmrl', 'rho'):.2f} -> {late(a6, 'wmrl', 'rho'):.2f}"),
    ("A6 fails", "final gap wm / od / wmrl", " / ".join(f"{final(a6, a):.4f}" for a in ("wm", "od", "wmrl"))),
], columns=["claim", "quantity", "value"])
summary["value"] = [f"{v:.4g}" if isinstance(v, float) else v for v in summary.value]
print(summary.to_string(index=False, justify="left"))

# %% [markdown]
# ## What we see
#
# Computed from the results of sections 4-8 (`_theory.theory_findings`), so the text cannot drift
# from the numbers.

# %% tags=["nbval-check-output"]
SENTENCES = theory_findings(cfg.results_dir / SUB)
nb.save_findings(SENTENCES, cfg, "Theorems 3-4, Lemma 12, Assumption 6 on a synthetic problem")  # for FINDINGS.md
print("\n".join(SENTENCES))

# %%
nb.provenance_table(cfg, SUB)
