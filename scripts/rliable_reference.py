"""Record rliable's own aggregates on fixed score matrices, for tests/test_aggregates.py to check ours against.

rliable does not install beside the project's pins (its ``arch`` needs pandas < 3), so it runs in a
virtual environment of its own; the standard library is all this script needs besides rliable:

    python3 -m venv /tmp/rliable && /tmp/rliable/bin/pip install rliable==1.2.0 arch==7.2.0 pandas==2.2.3
    /tmp/rliable/bin/python scripts/rliable_reference.py tests/data/rliable_reference.json

The matrices are drawn from a seeded generator and stored in the output, so the test reads its
inputs from the same file. Intervals are rliable's percentile intervals at 20,000 resamples: the
test compares them with a tolerance (another resampler), the point estimates exactly.
"""

import datetime
import json
import platform
import sys
from importlib.metadata import version

import numpy as np
from rliable import library as rly
from rliable import metrics

REPS = 20_000


def main(out: str) -> None:
    rng = np.random.default_rng(20261206)
    runs, tasks = 12, 7
    x = np.clip(rng.normal(0.45, 0.2, (runs, tasks)) + rng.normal(0, 0.1, tasks), 0, 1).round(4)
    y = np.clip(x + rng.normal(0.04, 0.12, (runs, tasks)), 0, 1).round(4)
    y[:, 2] = x[:, 2]  # a task where the arms tie: probability of improvement 0.5 there
    taus = np.linspace(0, 1, 11)
    iqm = lambda s: np.array([metrics.aggregate_iqm(s)])
    point, ci = rly.get_interval_estimates({"x": x, "y": y}, iqm, reps=REPS,
                                           random_state=np.random.RandomState(0))
    poi_point, poi_ci = rly.get_interval_estimates({"y,x": (y, x)}, metrics.probability_of_improvement,
                                                   reps=REPS, random_state=np.random.RandomState(0))
    prof, prof_ci = rly.create_performance_profile({"x": x}, taus, reps=REPS)
    record = {
        "provenance": {"command": " ".join(["python", *sys.argv]), "date": datetime.date.today().isoformat(),
                       "python": platform.python_version(),
                       "versions": {p: version(p) for p in ("rliable", "arch", "numpy", "scipy", "pandas")}},
        "x": x.tolist(), "y": y.tolist(), "taus": taus.tolist(), "reps": REPS,
        "iqm": {"x": float(point["x"][0]), "y": float(point["y"][0]),
                "x_ci": ci["x"][:, 0].tolist(), "y_ci": ci["y"][:, 0].tolist()},
        "poi_y_over_x": {"point": float(poi_point["y,x"]), "ci": np.ravel(poi_ci["y,x"]).tolist()},
        "profile_x": {"point": prof["x"].tolist(), "ci": np.asarray(prof_ci["x"]).tolist()},
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
