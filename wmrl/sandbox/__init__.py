"""Real execution of solution scripts: isolated, resource-limited, graded on the host.

See docs/CONTRACTS.md for the interface; ``local`` (namespaces), ``docker_backend`` and
``ray_executor`` for the backends; ``runtime/run_solution.py`` for the in-sandbox side. The
budget is CPU seconds of the solution's process tree, with a wall-clock backstop (``Limits``).
"""
from .local import Limits
from .result import LIMITS, STATUSES, ExecutionResult
from .runner import Sandbox, SandboxFacts, library_versions
from .view import SandboxError

__all__ = ["LIMITS", "STATUSES", "ExecutionResult", "Limits", "Sandbox", "SandboxError", "SandboxFacts",
           "library_versions"]
