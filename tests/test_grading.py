"""Grading: MLE-Dojo's position score, the leaderboards, and grade() on good and garbage submissions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from wmrl.grading import grade, position_score
from wmrl.tasks import get_metric

# ---------------------------------------------------------------- position_score
BOARD = [0.6, 0.9, 0.7, 0.8]  # unsorted on purpose


@pytest.mark.parametrize("score, expected", [
    (0.95, 1.0),   # beats everyone: position 1 -> 4/4
    (0.85, 0.75),  # first at-least-as-good index is 2 -> 3/4
    (0.65, 0.25),  # position 4 -> 1/4
    (0.5, 0.0),    # beats nobody: position total+1 -> 0
])
def test_position_score_matches_hand_computed_values(score, expected):
    assert position_score(score, BOARD, higher_is_better=True) == pytest.approx(expected)


def test_position_score_ties_favour_the_submission():
    assert position_score(0.8, BOARD, True) == pytest.approx(0.75)
    assert position_score(0.6, BOARD, True) == pytest.approx(0.25)
    assert position_score(0.7, [0.7, 0.7, 0.7], True) == 1.0


def test_position_score_sorts_ascending_when_lower_is_better():
    errors = [3.0, 1.0, 2.0, 4.0]
    assert position_score(0.5, errors, False) == 1.0
    assert position_score(2.0, errors, False) == pytest.approx(0.75)
    assert position_score(5.0, errors, False) == 0.0


def test_position_score_rejects_an_empty_board_and_scores_nan_as_zero():
    with pytest.raises(ValueError, match="non-empty"):
        position_score(0.5, [], True)
    assert position_score(float("nan"), BOARD, True) == 0.0


def _independent_position_score(score, board, higher_is_better):
    """Entries sorted before the submission are exactly those strictly better than it."""
    strictly_better = sum((b > score) if higher_is_better else (b < score) for b in board)
    return 1 - strictly_better / len(board)


scores = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(scores, min_size=1, max_size=60), scores, st.booleans())
def test_position_score_agrees_with_an_independent_count(board, score, higher):
    assert position_score(score, board, higher) == pytest.approx(_independent_position_score(score, board, higher))


@settings(max_examples=200, deadline=None)
@given(st.lists(scores, min_size=1, max_size=60), scores, scores, st.booleans())
def test_position_score_is_monotone_in_the_score_and_within_0_and_1(board, a, b, higher):
    lo, hi = sorted((a, b))
    worse, better = (lo, hi) if higher else (hi, lo)
    assert 0.0 <= position_score(worse, board, higher) <= position_score(better, board, higher) <= 1.0
    best = max(board) if higher else min(board)
    assert position_score(best, board, higher) == 1.0


# ---------------------------------------------------------------- leaderboards
def test_each_board_has_at_least_100_entries_in_rank_score_form(pool):
    for task in pool:
        for board in ("public", "private"):
            df = pd.read_csv(task.private_dir / f"{board}_leaderboard.csv")
            assert list(df.columns) == ["rank", "score"] and len(df) >= 100, (task.name, board)
            assert list(df["rank"]) == list(range(1, len(df) + 1))


def test_each_tasks_leaderboard_order_agrees_with_its_metric_direction(pool):
    for task in pool:
        assert task.higher_is_better == get_metric(task.metric).higher_is_better
        for board in ("public", "private"):
            s = pd.read_csv(task.private_dir / f"{board}_leaderboard.csv")["score"].to_numpy()
            steps = np.diff(s)
            assert (steps <= 0).all() if task.higher_is_better else (steps >= 0).all(), (task.name, board)
            assert s[0] != s[-1], f"{task.name}: a flat board cannot rank anyone"


# ---------------------------------------------------------------- grade()
def _baseline_submission(task, path):
    """A plain scikit-learn solution, written as a solution script would: public files only."""
    train = pd.read_csv(task.public_dir / "train.csv")
    test = pd.read_csv(task.public_dir / "test.csv")
    y = train[task.target_column]
    if task.image_column:
        def load(df):
            return np.stack([np.asarray(Image.open(task.public_dir / p).convert("L").resize((8, 8)), float).ravel()
                             for p in df[task.image_column]]) / 255
        model, xa, xb = make_pipeline(StandardScaler()), load(train), load(test)
    elif task.text_column:
        model, xa, xb = make_pipeline(TfidfVectorizer(min_df=2)), train[task.text_column], test[task.text_column]
    else:
        xa = pd.get_dummies(train[task.feature_columns], dtype=float)
        xb = pd.get_dummies(test[task.feature_columns], dtype=float).reindex(columns=xa.columns, fill_value=0)
        xa, xb = xa.fillna(xa.median()), xb.fillna(xa.median())
        model = make_pipeline(StandardScaler())
    model.steps.append(("m", Ridge() if task.task_type == "regression" else LogisticRegression(max_iter=500)))
    model.fit(xa, y)
    if get_metric(task.metric).kind == "probability":
        pred = model.predict_proba(xb)[:, list(model.classes_).index(task.classes[-1])]
    else:
        pred = model.predict(xb)
    pd.DataFrame({task.id_column: test[task.id_column], task.target_column: pred}).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_each_task_grades_its_sample_submission_and_a_real_baseline(pool, tmp_path):
    for task in pool:
        sample = grade(task, task.public_dir / "sample_submission.csv")
        base = grade(task, _baseline_submission(task, tmp_path / f"{task.name}.csv"))
        assert sample.status == base.status == "ok", (task.name, sample.reason, base.reason)
        assert 0.0 <= sample.percentile <= 1.0 and 0.0 <= base.percentile <= 1.0
        assert base.percentile > sample.percentile, (task.name, base, sample)


def test_the_hidden_answers_themselves_top_both_boards(pool):
    for task in pool:
        g = grade(task, task.private_dir / "test_answer.csv")
        assert g.status == "ok" and g.percentile == 1.0, (task.name, g)


def test_percentile_is_the_mean_of_the_public_and_private_position_scores(pool):
    task = pool["wine_cultivar"]
    g = grade(task, task.public_dir / "sample_submission.csv")
    boards = [pd.read_csv(task.private_dir / f"{b}_leaderboard.csv")["score"] for b in ("public", "private")]
    assert g.percentile == pytest.approx(np.mean([position_score(g.raw_score, b, True) for b in boards]))


def _garbage(task, tmp_path):
    sample = pd.read_csv(task.public_dir / "sample_submission.csv")
    idc, y = task.id_column, task.target_column
    cases = {
        "unreadable": b"\x00\xff\xfe binary \x00 garbage",
        "empty": b"",
        "wrong columns": sample.rename(columns={y: "prediction"}),
        "wrong row count": sample.iloc[:-3],
        "NaN": sample.assign(**{y: np.nan}),
        "wrong ids": sample.assign(**{idc: sample[idc] + 10**6}),
        "wrong dtype": sample.assign(**{y: "not a number" if task.task_type == "regression" else 3.5}),
    }
    for name, content in cases.items():
        path = tmp_path / f"{task.name}-{name.replace(' ', '_')}.csv"
        path.write_bytes(content) if isinstance(content, bytes) else content.to_csv(path, index=False)
        yield name, path


def test_grade_never_crashes_on_garbage_and_says_why(pool, tmp_path):
    for task in (pool["ames_house_prices"], pool["texture_patches"], pool["breast_cancer_diagnosis"]):
        for name, path in _garbage(task, tmp_path):
            g = grade(task, path)
            if name == "wrong dtype" and task.metric == "roc_auc":
                continue  # 3.5 is a number, so only its range is wrong: covered below
            assert (g.status, g.percentile, g.raw_score) == ("invalid_submission", 0.0, None), (task.name, name, g)
            assert g.reason, (task.name, name)
    g = grade(pool["breast_cancer_diagnosis"], next(p for n, p in _garbage(pool["breast_cancer_diagnosis"], tmp_path)
                                                    if n == "wrong dtype"))
    assert g.status == "invalid_submission" and "[0, 1]" in g.reason


def test_grade_reports_a_missing_submission(pool, tmp_path):
    g = grade(pool["iris_species"], tmp_path / "nowhere.csv")
    assert (g.status, g.percentile) == ("no_submission", 0.0) and "nowhere.csv" in g.reason
    assert grade(pool["iris_species"], None).status == "no_submission"
