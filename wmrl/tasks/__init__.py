"""Tasks: the small pool in MLE-Dojo's layout, real competitions imported in place, the size split.

``get_pool()`` returns the pool (preparing the small one on first use, :mod:`wmrl.tasks.recipe`);
``import_pool`` / ``python -m wmrl.tasks import`` point a pool at MLE-Dojo, MLE-bench or DSBench
competitions where they lie (:mod:`wmrl.tasks.layouts`); ``load_task(path)`` loads one task folder.

The package is the bottom layer of wmrl's data flow (tasks -> grading -> sandbox -> ...): it reads
and writes task data and never imports :mod:`wmrl.grading`. Inside it, modules depend downwards
only: metrics, split, ownership < infer < task < leaderboard, describe, sources, competition_code
(a competition's own grading code in a limited child process) < recipe, layouts < pool < prepare,
__main__ (the two command lines). It deletes or replaces only folders
it wrote itself (:mod:`wmrl.tasks.ownership`).
"""

from wmrl.tasks.infer import Refused
from wmrl.tasks.layouts import LAYOUTS, SourceError
from wmrl.tasks.metrics import METRICS, InvalidSubmissionError, Metric, get_metric, validate_submission
from wmrl.tasks.ownership import PoolFolderError
from wmrl.tasks.pool import TaskPool, get_pool, import_pool, is_small_pool_root, read_competitions
from wmrl.tasks.split import Split, split_by_size
from wmrl.tasks.task import Scoring, Task, TaskFolderError, data_root, default_root, load_task

__all__ = [
    "LAYOUTS",
    "METRICS",
    "InvalidSubmissionError",
    "Metric",
    "PoolFolderError",
    "Refused",
    "Scoring",
    "SourceError",
    "Split",
    "Task",
    "TaskFolderError",
    "TaskPool",
    "data_root",
    "default_root",
    "get_metric",
    "get_pool",
    "import_pool",
    "is_small_pool_root",
    "load_task",
    "read_competitions",
    "split_by_size",
    "validate_submission",
]
