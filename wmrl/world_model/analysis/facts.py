"""What the program analysis knows: the abstract values names hold, the findings, the facts.

The interpreter (:mod:`.interpreter`) binds each name of the script to one of these abstract
values instead of a real object: a :class:`Frame` (a pandas table whose columns are known from the
task's public inventory), a :class:`Data` (a feature matrix: sparse or not, may it still hold
strings or NaN, may it be negative), an :class:`Instance` (an estimator with its constructor's
literal arguments). Each suspicious line becomes a :class:`Finding` with a failure probability;
:class:`Facts` collects the findings and what the compute and quality estimates need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Data", "Facts", "Finding", "Frame", "Instance", "data_of"]


@dataclass(frozen=True)
class Finding:
    """One check's suspicion about one line: the failure probability and the exception it would raise."""

    check: str
    p_fail: float
    error_type: str
    line: int
    reason: str


@dataclass
class Data:
    """What the analysis knows about a feature matrix (or frame) held by a name."""

    sparse: bool = False
    strings: float = 0.0  # probability that non-numeric columns are still in it
    nan: float = 0.0  # probability that missing values are still in it
    nonneg: bool = True


@dataclass
class Frame:
    """A pandas table: its columns (None: unknown), the file it came from, and its data's state."""

    columns: set | None
    origin: str = ""  # the file it was read from
    data: Data = field(default_factory=Data)


@dataclass(eq=False)
class Instance:
    """An estimator (or pipeline) built by the script, and how many times it is fitted."""

    cls: object
    kwargs: dict
    line: int
    steps: tuple = ()  # class names of a pipeline's steps
    fits: int = 0


@dataclass
class Facts:
    """Everything the checks and the priors need, besides the findings."""

    findings: list[Finding] = field(default_factory=list)
    models: list[Instance] = field(default_factory=list)
    cv_folds: int = 0
    subsample: float = 1.0
    image_size: tuple | None = None
    vector_size: float | None = None
    svd: int | None = None
    wrote_submission: bool = False
    pred_kind: str | None = None  # "predict" | "predict_proba"


def data_of(value) -> Data | None:
    """The feature-matrix state of a frame or a matrix; None for anything else."""
    return value.data if isinstance(value, Frame) else value if isinstance(value, Data) else None
