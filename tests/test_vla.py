"""The VLA-analog experiment: fixed states, expert, SFT, world model, the arms through the WMRL step,
common random numbers, the world model's fidelity log, a run's identity, resume after SIGKILL, the CLI."""

from __future__ import annotations

import json
import os
import pickle
import platform
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("metaworld", reason="the vla extra is not installed")
pytestmark = pytest.mark.slow  # MuJoCo rollouts and training runs: seconds to a minute each
warnings.filterwarnings("ignore", module="gymnasium")

import metaworld
import torch

from wmrl import record
from wmrl.arms import get_arm
from wmrl.config import ConfigError
from wmrl.presets import PRESETS
from wmrl.step import WMRLStep
from wmrl.vla import crn, runner, train
from wmrl.vla.__main__ import main as cli
from wmrl.vla.config import VLA_ARMS, VLAConfig, vla_config
from wmrl.vla.envs import (
    ACT_DIM,
    N_TRAIN,
    TASKS,
    EnvPool,
    TaskEnv,
    expert_policy,
    initial_states,
    length,
    rollout_batch,
    train_states,
)
from wmrl.vla.evaluate import evaluate, summarise
from wmrl.vla.policy import GaussianPolicy, bc_train, collect_demos
from wmrl.vla.progress import frame_features, train_progress
from wmrl.vla.results import (
    history_table,
    load_results,
    pairs_table,
    result_path,
    runs_table,
    sft_cache_dir,
    vla_run_dir,
)
from wmrl.vla.runner import one_torch_thread, run_one

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread_for_this_module():
    """The VLA runs' own setting, for this module's tests only: set at import, it held for every test of the
    process (pytest imports every module before the first test), and the LLM trainer's resume test then
    compared a one-thread run with a two-thread one."""
    with one_torch_thread():
        yield


def _rand_vecs(tasks) -> np.ndarray:
    return np.array([pickle.loads(t.data)["rand_vec"] for t in tasks])


@pytest.fixture(scope="module")
def demos():
    return collect_demos(TASKS, range(2), per_state=1, noise=0.0, horizon=150, seed=0)


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Every VLA arm at the smoke preset, seed 0, in one results folder (one SFT stage shared)."""
    results = tmp_path_factory.mktemp("vla")
    return results, {arm: run_one(vla_config(arm, "smoke"), "smoke", results, progress_bar=False) for arm in VLA_ARMS}


def test_the_fixed_initial_states_are_deterministic_and_the_first_16_are_the_train_set():
    ours = _rand_vecs(initial_states("reach-v3"))
    fresh = _rand_vecs(metaworld.MT1("reach-v3", seed=0).train_tasks)
    assert ours.shape[0] == 50 and np.array_equal(ours, fresh)
    assert len(np.unique(ours, axis=0)) == 50
    assert list(train_states()) == list(range(N_TRAIN)) == list(range(16))


def test_the_lean_step_matches_metaworld_step_along_an_expert_rollout():
    for task in ("reach-v3", "push-v3"):
        lean, ref, expert = TaskEnv(task), TaskEnv(task), expert_policy(task)
        obs, ref_obs = lean.reset(3), ref.reset(3)
        for _ in range(60):
            action = expert.get_action(obs)
            obs, ok = lean.step(action)
            ref_obs, _, _, _, info = ref.env.step(action)
            assert np.allclose(obs, ref_obs) and ok == bool(info["success"])


def test_the_observation_is_meta_worlds_with_the_gripper_opening_summed_without_blas():
    """Every entry of the current observation is Meta-World's own; the gripper opening (entry 3), which
    Meta-World takes from a BLAS dot product, is the same length summed in index order, so it may differ
    from Meta-World's by a rounding and no more."""
    env, expert = TaskEnv("pick-place-v3"), expert_policy("pick-place-v3")
    obs = env.reset(2)
    for _ in range(40):
        ours = env.env._get_curr_obs_combined_no_goal()
        theirs = type(env.env)._get_curr_obs_combined_no_goal(env.env)
        assert np.array_equal(np.delete(ours, 3), np.delete(theirs, 3))
        assert ours[3] == pytest.approx(theirs[3], rel=4e-16, abs=0)
        obs, _ = env.step(expert.get_action(obs))


def test_a_length_accumulates_its_squares_in_index_order_each_multiply_add_rounded_once():
    from fractions import Fraction

    rng = np.random.default_rng(5)
    for v in rng.standard_normal((500, 3)) * rng.choice([1e-3, 1.0, 1e3], (500, 1)):
        total = 0.0
        for x in v:  # a fused multiply-add: the exact x * x + total, rounded to float64 once
            total = float(Fraction(float(x)) ** 2 + Fraction(total))
        assert length(v) == float(np.sqrt(total))
    assert length(np.array([3.0, 4.0])) == 5.0 and length(np.zeros(3)) == 0.0


def test_the_scripted_expert_succeeds_on_the_demo_states(demos):
    assert demos.success_rate == 1.0
    assert {t for t, _ in demos.episodes} == set(range(len(TASKS)))


def test_behaviour_cloning_reduces_the_bc_loss(demos):
    torch.manual_seed(0)
    losses = bc_train(GaussianPolicy(len(TASKS)), demos, epochs=5, lr=1e-3, batch=128, seed=0)
    assert losses[-1] < losses[0] - 0.5


def test_the_progress_estimator_rises_along_demos_and_is_frozen(demos):
    wm = train_progress(demos.episodes, len(TASKS), epochs=60, lr=1e-3, per_episode=16, seed=0)
    assert not any(p.requires_grad for p in wm.parameters()) and not wm.training
    for task, states in demos.episodes:
        ends = np.linspace(1, len(states) - 1, 5).astype(int)
        x = np.stack([frame_features(states, int(e)) for e in ends])
        p = wm(x, np.full(len(ends), task)).numpy()
        assert p[-1] > p[0] and np.mean(np.diff(p) > -0.05) >= 0.75, p


def test_training_never_updates_the_world_model(tmp_path):
    cfg = vla_config("wmrl", "smoke")
    run = train._Run(cfg, train.build_sft(cfg.sft, 0, tmp_path))
    trained = {id(p) for group in run.opt.param_groups for p in group["params"]}
    assert not any(p.requires_grad or id(p) in trained for p in run.wm.parameters())


def test_each_arm_runs_end_to_end_into_its_run_folder_with_its_whole_config(smoke_runs):
    results, runs = smoke_runs
    assert set(runs) == set(VLA_ARMS) and "untrained" not in runs
    for arm, res in runs.items():
        cfg = vla_config(arm, "smoke")
        folder = results / "vla" / "smoke" / arm / "seed0"
        assert result_path(results, "smoke", arm, 0) == folder / "result.json" and (folder / "result.json").exists()
        assert json.loads((folder / "result.json").read_text())["provenance"]["config"] == cfg.to_dict()
        m = res["metrics"]["all"]
        assert 0.0 <= m["all_at_k"] <= m["sr_id"] * 0.32 + m["sr_ood"] * 0.68 <= m["best_at_k"] <= 1.0
        assert len(res["history"]) == (0 if arm == "sft" else cfg.train.steps)
        assert (folder / "checkpoint.pt").exists() == get_arm(arm).train
    assert sorted(r["arm"] for r in load_results(results, "smoke")) == sorted(VLA_ARMS)
    assert [p.name for p in sft_cache_dir(results).iterdir()] == [train.sft_path(cfg.sft, 0, Path()).name]


def test_the_step_object_routes_weights_and_corrects_each_arm_as_the_arm_table_says(smoke_runs):
    _, runs = smoke_runs
    g = vla_config("wmrl", "smoke").train.groups_per_step
    for arm, res in runs.items():
        a, last = get_arm(arm), (res["history"] or [None])[-1]
        if not a.train:
            continue
        executed = last["n_executed_groups"]
        assert executed == {"grpo": g, "wm": 0, "anchor_only": 1}.get(arm, 1), arm
        assert last["n_groups"] == (1 if a.anchors_only else g), arm
        assert (last["rho"] > 1.0) == a.ivd, arm  # IVD warmed up inside two smoke steps, weights only with IVD
        assert (last["od_refits"] > 0) == a.od, arm  # Online Debiasing fitted inside the run, only with OD
        pairs = res["pairs"]
        assert bool(pairs) == a.mixes_streams, arm
        if pairs and not a.od:
            assert all(p["pred"] == p["calibrated"] for p in pairs), arm
        assert all(p["true"] in (0.0, 1.0) and 0.0 <= p["pred"] <= 1.0 for p in pairs), arm


def test_success_reaches_the_step_only_on_executed_groups_and_progress_only_on_predicted_ones(tmp_path, monkeypatch):
    calls = []

    class Recording(WMRLStep):
        def __call__(self, real, predicted, executed):
            out = super().__call__(real, predicted, executed)
            calls.append((self.arm.name, np.array(real), np.array(predicted), np.array(executed), out))
            return out

    monkeypatch.setattr(train, "WMRLStep", Recording)
    for arm in ("grpo", "wm", "wmrl", "anchor_only"):
        train.train(vla_config(arm, "smoke", overrides={"train.steps": 1}), tmp_path / arm, tmp_path / "sft",
                    progress_bar=False)
    for arm, real, predicted, executed, out in calls:
        a = get_arm(arm)
        assert np.isnan(real[~executed]).all() and set(np.unique(real[executed])) <= {0.0, 1.0}, arm
        assert np.isnan(predicted).all() == (not a.world_model), arm
        if a.world_model:
            assert np.isfinite(predicted).all() and ((predicted >= 0) & (predicted <= 1)).all(), arm
        assert np.allclose(out.rewards[executed], real[executed]), arm  # the executed groups train on success
        assert np.isclose(out.weights.sum(), 1.0), arm


def test_a_rollouts_noise_is_a_function_of_its_key_alone():
    keys = [(0, 3, 1), (2, 5, 0), (0, 3, 0)]
    batch = crn.action_noise(7, crn.EVAL, keys, 20, ACT_DIM)
    alone = crn.action_noise(7, crn.EVAL, [(2, 5, 0)], 20, ACT_DIM)
    assert batch.shape == (3, 20, ACT_DIM) and np.array_equal(batch[1], alone[0])
    assert not np.array_equal(batch[0], batch[2])  # another sample of the same (task, state)
    assert not np.array_equal(alone, crn.action_noise(8, crn.EVAL, [(2, 5, 0)], 20, ACT_DIM))  # another seed
    assert not np.array_equal(alone, crn.action_noise(7, crn.TRAIN_NOISE, [(2, 5, 0)], 20, ACT_DIM))  # another stream
    assert abs(crn.action_noise(0, crn.EVAL, [(0, 0, i) for i in range(50)], 100, ACT_DIM).std() - 1) < 0.02
    tasks, states = crn.train_draws(3, 4, 5, len(TASKS), N_TRAIN)
    first = crn.train_draws(3, 4, 2, len(TASKS), N_TRAIN)  # an arm that samples fewer groups gets the first ones
    assert np.array_equal(first[0], tasks[:2]) and np.array_equal(first[1], states[:2])
    assert ((0 <= states) & (states < N_TRAIN)).all() and set(tasks) <= set(range(len(TASKS)))


def test_a_rollout_ends_the_same_whatever_else_is_in_its_batch_and_however_long_the_others_last():
    policy = GaussianPolicy(len(TASKS))
    keys = [(t, s, 0) for t in range(len(TASKS)) for s in (0, 1, 2)]
    t, s = np.array(keys)[:, 0], np.array(keys)[:, 1]
    noise = crn.action_noise(0, crn.EVAL, keys, 25, ACT_DIM)
    together = rollout_batch(EnvPool(), policy.sampler(), t, s, 25, noise, max_envs=2)  # several waves
    for i in (0, 4, 8):
        alone = rollout_batch(EnvPool(), policy.sampler(), t[i:i + 1], s[i:i + 1], 25, noise[i:i + 1])
        assert np.array_equal(alone.obs[0], together.obs[i]) and alone.success[0] == together.success[i]
    with pytest.raises(ValueError, match="noise must be"):
        rollout_batch(EnvPool(), policy.sampler(), t, s, 25, noise[:, :10])


def test_the_evaluation_of_a_state_does_not_depend_on_how_many_states_are_evaluated(smoke_runs):
    cfg = vla_config("sft", "smoke")
    policy = GaussianPolicy(len(TASKS))
    policy.load_state_dict(train.build_sft(cfg.sft, 0, sft_cache_dir(smoke_runs[0]))["policy"])
    small = evaluate(policy, EnvPool(), 2, 2, 30, seed=0)
    large = evaluate(policy, EnvPool(), 3, 2, 30, seed=0)
    assert np.array_equal(small, large[:, :2])


def test_every_arm_of_a_seed_trains_on_the_same_groups_and_identical_rollouts_at_step_one(smoke_runs):
    _, runs = smoke_runs
    firsts = {arm: res["history"][0] for arm, res in runs.items() if res["history"] and arm != "anchor_only"}
    assert len(firsts) >= 6
    for key in ("train_success", "progress", "env_steps", "progress_auc"):
        values = {json.dumps(h[key]) for h in firsts.values()}  # JSON: NaN equals NaN
        assert len(values) == 1, (key, {a: h[key] for a, h in firsts.items()})


def test_the_fidelity_log_matches_a_by_hand_count_of_correctly_ranked_pairs():
    success = np.array([[1, 0, 1, 0], [1, 1, 1, 1], [0, 1, 0, 0]], float)
    progress = np.array([[0.9, 0.1, 0.2, 0.3], [0.5, 0.5, 0.5, 0.5], [0.4, 0.4, 0.1, 0.6]])
    f = train.fidelity(success, progress)
    # group 0: successes 0.9, 0.2 vs failures 0.1, 0.3: 3 of 4 pairs ranked right; group 2: 0.4 vs 0.4 (tie, 1/2),
    # 0.1, 0.6: 1.5 of 3; group 1 has no failure
    assert f["groups_mixed"] == 2 and np.isclose(f["progress_auc_within"], (3 / 4 + 1.5 / 3) / 2)
    pos, neg = progress[success == 1], progress[success == 0]
    by_hand = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    assert np.isclose(f["progress_auc"], by_hand)
    assert np.isclose(f["progress_if_success"], pos.mean()) and np.isclose(f["progress_if_failure"], neg.mean())
    assert np.isnan(train.fidelity(np.ones((1, 3)), np.ones((1, 3)))["progress_auc"])


def test_a_result_written_under_another_noise_scheme_is_retrained_not_reused(smoke_runs, tmp_path, monkeypatch):
    results = tmp_path / "results"
    shutil.copytree(smoke_runs[0], results)
    path = result_path(results, "smoke", "grpo", 0)
    old = json.loads(path.read_text())
    del old["noise"]
    path.write_text(json.dumps(old))
    assert runner.stored_result(vla_config("grpo", "smoke"), "smoke", results)[1] == [
        f"noise (one shared generator -> {crn.SCHEME})"]

    class Retrained(Exception):
        pass

    def retrain(*args, **kwargs):
        raise Retrained

    monkeypatch.setattr(runner, "train", retrain)
    with pytest.raises(Retrained):
        run_one(vla_config("grpo", "smoke"), "smoke", results, progress_bar=False)


def test_a_changed_config_field_retrains_and_the_same_config_reuses(smoke_runs, tmp_path, monkeypatch):
    results = tmp_path / "results"
    shutil.copytree(smoke_runs[0], results)
    cfg = vla_config("grpo", "smoke")
    before = json.loads(result_path(results, "smoke", "grpo", 0).read_text())

    def no_training(*args, **kwargs):
        raise AssertionError("a stored result of the same config was retrained")

    monkeypatch.setattr(runner, "train", no_training)
    assert run_one(cfg, "smoke", results, progress_bar=False) == before
    monkeypatch.undo()

    def no_sft(*args, **kwargs):
        raise AssertionError("the SFT stage was rebuilt although its section did not change")

    trained = []

    def counting_train(cfg, *args, **kwargs):
        trained.append(cfg)
        return train.train(cfg, *args, **kwargs)

    monkeypatch.setattr(train, "collect_demos", no_sft)
    monkeypatch.setattr(runner, "train", counting_train)
    changed = cfg.with_overrides({"train.lr": 1e-3})
    after = run_one(changed, "smoke", results, progress_bar=False)
    assert trained == [changed] and after["provenance"]["config"]["train"]["lr"] == 1e-3
    saved = torch.load(vla_run_dir(results, "smoke", "grpo", 0) / "checkpoint.pt", weights_only=False)
    assert saved["config"] == changed.to_dict()
    assert json.loads(result_path(results, "smoke", "grpo", 0).read_text())["provenance"]["config"] == changed.to_dict()
    monkeypatch.undo()

    new_sft = cfg.with_overrides({"sft.bc_epochs": 2})
    run_one(new_sft, "smoke", results, progress_bar=False)  # another SFT section: another cache entry
    assert len(list(sft_cache_dir(results).iterdir())) == 2


def test_a_run_trains_on_one_torch_thread_and_gives_the_callers_count_back(monkeypatch, tmp_path):
    from wmrl.vla import runner

    seen = []
    monkeypatch.setattr(runner, "_run_one", lambda *args: seen.append(torch.get_num_threads()) or {})
    torch.set_num_threads(2)  # undone by the module's fixture
    run_one(vla_config("wmrl", "smoke", 0), "smoke", tmp_path)
    assert seen == [1] and torch.get_num_threads() == 2


def test_active_anchor_selection_and_conditional_calibration_are_refused_by_the_vla_by_name():
    with pytest.raises(ConfigError, match="not supported by the VLA trainer"):
        vla_config("wmrl", "smoke", overrides={"method.anchor_selection": "active"})
    with pytest.raises(ConfigError, match="od_condition='huge_capacity' conditions on a feature of a solution script"):
        vla_config("wmrl", "smoke", overrides={"method.od_condition": "huge_capacity"})


def test_every_preset_builds_a_vla_config_for_every_arm_and_untrained_is_refused_by_name():
    for name, p in PRESETS.items():
        if p.vla is None:
            continue
        for arm in VLA_ARMS:
            cfg = vla_config(arm, name)
            assert VLAConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert vla_config("sft", "smoke").train.steps == 0  # evaluated as it starts
    with pytest.raises(ConfigError, match="'untrained' does not apply to the VLA.*sft"):
        vla_config("untrained", "smoke")


@pytest.mark.parametrize("overrides, message", [
    ({"groups": 3}, "needs its section"),
    ({"train.group": 3}, "did you mean 'group_size'"),
    ({"trian.steps": 3}, "did you mean 'train'"),
    ({"method.fusion": "both"}, r"choose one of \['normalized', 'scale_only'\]"),
    ({"train.steps": "ten"}, "must be an integer"),
    ({"eval.states": 60}, "must be <= 50"),
    ({"sft.demo_states": 17}, "must be <= 16"),
    ({"train.clip": 1.5}, r"must be in \(0, 1\)"),
])
def test_a_wrong_field_or_value_is_named_with_what_to_pass(overrides, message):
    with pytest.raises(ConfigError, match=message):
        vla_config("wmrl", "smoke", overrides=overrides)


def test_the_cli_takes_set_overrides_and_refuses_bad_ones_with_the_reason(capsys, tmp_path):
    with pytest.raises(SystemExit):
        cli(["run", "--arm", "wmrl", "--preset", "smoke", "--results", str(tmp_path), "--set", "od_min_pairs=3"])
    assert "did you mean method.od_min_pairs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["run", "--arm", "untrained", "--preset", "smoke", "--results", str(tmp_path)])
    assert "does not apply to the VLA" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["run-all", "--preset", "smoke", "--results", str(tmp_path), "--set", "train.steps=3"])
    assert "need a tag" in capsys.readouterr().err
    cli(["run", "--arm", "sft", "--preset", "smoke", "--results", str(tmp_path), "--set", "eval.states=17",
         "--tag", "short"])
    (res,) = load_results(tmp_path, "smoke", tag="short")
    assert res["provenance"]["config"]["eval"]["states"] == 17 and len(res["success"][0]) == 17
    assert load_results(tmp_path, "smoke") == []  # a tagged variant is never mistaken for the default run


def test_the_notebook_tables_hold_every_run_step_and_pair_as_the_result_files_do(smoke_runs):
    results, runs = smoke_runs
    found = load_results(results, "smoke")
    table, hist, pairs = runs_table(found), history_table(found), pairs_table(found)
    for arm, res in runs.items():
        row = table[(table.arm == arm) & (table.seed == 0)].iloc[0]
        assert row.overall == res["metrics"]["all"]["overall"] and row.k == res["metrics"]["k"]
        assert row["sr_ood_push-v3"] == res["metrics"]["push-v3"]["sr_ood"]
        assert row.env_steps == sum(h["env_steps"] for h in res["history"])
        assert (hist.arm == arm).sum() == len(res["history"]) and (pairs.arm == arm).sum() == len(res["pairs"])
    assert list(pairs.columns) == ["arm", "seed", "step", "pred", "calibrated", "true"]


def test_results_in_the_old_layout_are_refused_with_how_to_regenerate_them(tmp_path):
    (tmp_path / "vla" / "small").mkdir(parents=True)
    (tmp_path / "vla" / "small" / "wmrl_seed0.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="python -m wmrl.vla run-all --preset small"):
        load_results(tmp_path, "small")


def _inodes_seen(path: Path, k: int, proc: subprocess.Popen, timeout: float = 300.0) -> None:
    """Wait until ``path`` has been (atomically) replaced ``k`` times, i.e. ``k`` checkpoints were written."""
    seen, t0 = set(), time.monotonic()
    while len(seen) < k:
        assert proc.poll() is None, f"the run ended before its checkpoint {k}: {proc.stderr.read()[-2000:]}"
        assert time.monotonic() - t0 < timeout, f"no checkpoint {k} after {timeout} s"
        try:
            st = path.stat()
            seen.add((st.st_ino, st.st_mtime_ns))  # inode numbers alone may be reused
        except FileNotFoundError:
            pass
        time.sleep(0.01)


def _untimed(result: dict) -> str:
    """A result without wall-clock fields (timings, date); JSON text compares NaN equal to NaN."""
    keep = {k: v for k, v in result.items() if k not in ("timing", "provenance", "sft")}
    keep["history"] = [{k: v for k, v in h.items() if not k.startswith("t_")} for h in result["history"]]
    return json.dumps(keep, sort_keys=True)


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("checkpoints_before_kill", [1, 3], ids=["mid-training", "during-evaluation"])
def test_a_run_killed_with_sigkill_resumes_to_the_result_of_an_uninterrupted_run(
        smoke_runs, tmp_path, checkpoints_before_kill):
    overrides = {"train.steps": 3}
    cfg = vla_config("wmrl", "smoke", overrides=overrides)
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    for d in (killed, whole):  # the seed's SFT stage, built once by the smoke runs
        shutil.copytree(sft_cache_dir(smoke_runs[0]), sft_cache_dir(d))
    cmd = [sys.executable, "-W", "ignore", "-m", "wmrl.vla", "run", "--arm", "wmrl", "--preset", "smoke",
           "--results", str(killed), "--set", "train.steps=3"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _inodes_seen(vla_run_dir(killed, "smoke", "wmrl", 0) / "checkpoint.pt", checkpoints_before_kill, proc)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not result_path(killed, "smoke", "wmrl", 0).exists()  # killed before it finished

    resumed = run_one(cfg, "smoke", killed, progress_bar=False)
    reference = run_one(cfg, "smoke", whole, progress_bar=False)
    assert _untimed(resumed) == _untimed(reference)
    a, b = (torch.load(vla_run_dir(d, "smoke", "wmrl", 0) / "checkpoint.pt", weights_only=False)["policy"]
            for d in (killed, whole))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_recorded_run_replays_to_the_bit_timings_included(tmp_path, monkeypatch):
    """Under an execution record a run and its seed's SFT stage keep their clock readings; replayed in a
    results folder holding neither the run nor the SFT cache, the run comes out identical, every timing
    included (a second measurement would not repeat them), and the SFT stage is rebuilt from its record."""
    cfg = vla_config("wmrl", "smoke", overrides={"train.steps": 2})
    made = tmp_path / "executions" / "core.jsonl.gz"
    made.parent.mkdir()
    monkeypatch.setenv(record.ENV, f"record:{made}")
    recorded = run_one(cfg, "smoke", tmp_path / "recorded", progress_bar=False)
    record.export(made)
    monkeypatch.setenv(record.ENV, f"replay:{made.parent}")
    assert not sft_cache_dir(tmp_path / "replayed").exists()
    replayed = run_one(cfg, "smoke", tmp_path / "replayed", progress_bar=False)
    assert replayed["timing"]["train_s"] > 0 and replayed["sft"]["build_s"] > 0
    def unstamped(result):  # JSON text: NaN (a step without both outcomes) compares equal to NaN
        return json.dumps({k: v for k, v in result.items() if k != "provenance"}, sort_keys=True)
    assert unstamped(replayed) == unstamped(recorded)
    monkeypatch.setattr(record, "_ACTIVE", None)  # the record opened again: the run's readings from the start
    with pytest.raises(record.ReplayDiverged, match="run:vla/smoke/wmrl/seed0"):
        run_one(vla_config("wmrl", "smoke", overrides={"train.steps": 3}), "smoke", tmp_path / "longer",
                progress_bar=False)


def _avx2_and_fma() -> bool:
    """Whether glibc gives MuJoCo the libm it gave the recording CPU: its AVX2-and-FMA implementations."""
    if platform.machine() != "x86_64" or not Path("/proc/cpuinfo").is_file():
        return False
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    return {"avx2", "fma"} <= set(flags)


@pytest.mark.skipif(not _avx2_and_fma(), reason="the committed VLA runs replay to the bit on x86-64 CPUs with AVX2 and "
                    "FMA only: glibc's sin, cos, exp, pow and atan2, which MuJoCo calls, round otherwise elsewhere "
                    "(docs/reproducibility.md)")
def test_a_committed_vla_run_replays_from_the_committed_record_to_the_bit_on_this_cpu(tmp_path, monkeypatch):
    """The committed wmrl seed-0 run of notebook 06, retrained from the core campaign's committed record on
    whichever CPU runs the tests: its result comes back to the bit, every episode and timing included
    (its networks' arithmetic does not depend on the CPU: wmrl.vla.exact)."""
    from wmrl.reproduce import compare_outputs

    committed = REPO / "results" / "vla" / "small" / "wmrl" / "seed0"
    cfg = vla_config("wmrl", "small", 0)
    assert json.loads((committed / "result.json").read_text())["provenance"]["config"] == cfg.to_dict()
    monkeypatch.setenv(record.ENV, f"replay:{REPO / 'results' / 'executions' / 'core.jsonl.gz'}")
    monkeypatch.setattr(record, "_ACTIVE", None)
    run_one(cfg, "small", tmp_path, progress_bar=False)
    found = compare_outputs(committed, vla_run_dir(tmp_path, "small", "wmrl", 0))
    assert found == {"same": ["result.json"], "rounding": [], "differ": [], "missing": []}, found


def test_a_run_computes_the_same_bits_under_other_cpu_kernels(smoke_runs, tmp_path):
    """What lets a VLA run replay on another CPU: trained from nothing in a process whose libraries all take
    other code paths than this CPU's (torch's unvectorised kernels, MKL's compatible path, OpenBLAS's generic
    x86-64 kernels, NumPy's baseline loops), a run's SFT stage, policy, episodes and every logged number are the
    same bits as this process's. With torch's own arithmetic instead of wmrl.vla.exact the policy's last bits
    differ; with Meta-World's BLAS gripper opening instead of wmrl.vla.envs.length the episodes differ from the
    first training step."""
    kernels = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OPENBLAS_CORETYPE": "Prescott",
               "NPY_DISABLE_CPU_FEATURES": "X86_V3"}
    env = {**os.environ, "PYTHONPATH": str(REPO), **kernels}
    subprocess.run([sys.executable, "-W", "ignore", "-m", "wmrl.vla", "run", "--arm", "wmrl", "--preset", "smoke",
                    "--results", str(tmp_path)], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    other = json.loads(result_path(tmp_path, "smoke", "wmrl", 0).read_text())
    here = smoke_runs[1]["wmrl"]
    assert _untimed(other) == _untimed(here)
    assert other["sft"]["bc_losses"] == here["sft"]["bc_losses"]
    a, b = (torch.load(vla_run_dir(d, "smoke", "wmrl", 0) / "checkpoint.pt", weights_only=False)["policy"]
            for d in (tmp_path, smoke_runs[0]))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_overall_weights_in_domain_and_ood_like_the_paper_and_best_all_bracket_the_rate():
    rng = np.random.default_rng(0)
    success = (rng.random((len(TASKS), 50, 8)) < rng.random((len(TASKS), 50, 1))).astype(float)
    m = summarise(success)
    assert m["k"] == 8
    assert np.isclose(m["all"]["overall"], 0.32 * m["all"]["sr_id"] + 0.68 * m["all"]["sr_ood"])
    assert np.isclose(m["all"]["overall"], success.mean())  # 16/50 = 0.32: the plain mean over states
    assert m["all"]["all_at_k"] <= m["all"]["overall"] <= m["all"]["best_at_k"]
    assert np.isclose(m["push-v3"]["best_at_k"], success[1].max(-1).mean())
def test_reading_results_back_imports_neither_the_simulator_nor_torch():
    code = ("import sys, wmrl.vla.results, wmrl.vla.config; "
            "print(sorted(m for m in ('mujoco', 'metaworld', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
