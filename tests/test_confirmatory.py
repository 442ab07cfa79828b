"""Notebook 12's confirmatory test: its seeds are not the ones the lift was seen at, its claims point the
exploration's way, and its sentences are the paired differences, computed here by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from notebooks import _regime as regime
from wmrl.experiments import notebook as nb
from wmrl.presets import notebook_params


def test_the_small_presets_confirmatory_seeds_are_none_of_the_seeds_its_notebooks_looked_at():
    params = notebook_params("small")
    assert params["CONFIRM_SEEDS"] and not set(params["CONFIRM_SEEDS"]) & set(params["SEEDS"])


def test_seeds_none_takes_the_seeds_key_the_notebook_names_and_explicit_seeds_win(tmp_path):
    ns = {"MODE": "train", "PRESET": "small", "SEEDS": None, "RESULTS_DIR": str(tmp_path), "FIGURES_DIR": str(tmp_path)}
    assert nb.check_params(ns, notebook="t", seeds_key="CONFIRM_SEEDS").seeds == [3, 4, 5]
    assert nb.check_params(ns, notebook="t").seeds == [0, 1, 2]
    assert nb.check_params({**ns, "SEEDS": [7]}, notebook="t", seeds_key="CONFIRM_SEEDS").seeds == [7]
    with pytest.raises(nb.ParameterError, match="has no NO_SUCH_SEEDS"):
        nb.check_params(ns, notebook="t", seeds_key="NO_SUCH_SEEDS")


def test_the_claims_test_the_std_normalised_run_above_the_run_as_trained_for_each_arm():
    std = regime.std_variant("small")
    assert std.overrides == {"train.std_normalize": True}
    assert std == regime.variants("small", [8, 32], 4).std  # notebook 11's variant, the same runs' folder
    table = {c.id: c for c in regime.std_confirmation(std, [3, 4, 5])}
    assert set(table) == {"CF-wmrl", "CF-mix"}
    assert (table["CF-wmrl"].a, table["CF-wmrl"].b, table["CF-wmrl"].expect) == ("wmrl~std", "wmrl", ">")
    assert "seeds 3, 4, 5" in table["CF-mix"].statement


def _runs(seeds, lift: dict) -> pd.DataFrame:
    """wmrl and mix as trained at 0.5 + 0.01 * seed, and std-normalised that plus lift[arm] * (1 + seed / 10)."""
    rows = []
    for seed in seeds:
        for arm, up in lift.items():
            rows.append({"arm": arm, "seed": seed, "avg": 0.5 + 0.01 * seed, "dir": f"{arm}/seed{seed}"})
            rows.append({"arm": f"{arm}~std", "seed": seed, "avg": 0.5 + 0.01 * seed + up * (1 + seed / 10),
                         "dir": f"{arm}~std/seed{seed}"})
    return pd.DataFrame(rows)


def test_the_sentences_give_the_paired_lift_at_both_sets_of_seeds():
    std = regime.std_variant("small")
    explored, new = _runs([0, 1, 2], {"wmrl": 0.1, "mix": 0.2}), _runs([3, 4, 5], {"wmrl": 0.02, "mix": 0.0})
    said = regime.confirmation_findings(explored, new, std, ["wmrl", "mix"])
    # wmrl: lifts 10, 11, 12 points at seeds 0-2 (mean 11, t_{0.975,2} * 1/sqrt(3) = 2.48) and 2.6, 2.8, 3.0 at 3-5
    assert said[0] == ("wmrl~std - wmrl: 11.0 [8.5, 13.5] points at seeds 0, 1, 2 (seen in notebook 11), "
                       "2.8 [2.3, 3.3] points at seeds 3, 4, 5 (tested here).")
    assert said[1].startswith("mix~std - mix: 22.0 [17.0, 27.0] points at seeds 0, 1, 2") and "0.0 [0.0, 0.0]" in said[1]
    assert not any("not a confirmatory test" in s for s in said)


def test_shared_seeds_are_called_not_confirmatory_and_an_arm_missing_on_one_side_is_left_out():
    std = regime.std_variant("small")
    explored, new = _runs([0, 1, 2], {"wmrl": 0.1}), _runs([0], {"wmrl": 0.1, "mix": 0.1})
    said = regime.confirmation_findings(explored, new, std, ["wmrl", "mix"])
    assert said[0].startswith("The new seeds share seed(s) 0 with the seeds where the lift was seen")
    assert len(said) == 2 and said[1].startswith("wmrl~std - wmrl") and "(n=1)" in said[1]
