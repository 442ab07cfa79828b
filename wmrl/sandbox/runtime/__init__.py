"""The in-sandbox runtime: scripts the sandbox *runs* (``python -I <file>``), never imports.

``run_solution.py`` is the supervisor of one run (every backend, inside the namespaces or the
container); ``warm_server.py`` the preloaded server that forks it. They are stdlib-only and
trust nothing of ``wmrl``; they live inside the package so that an installed wheel carries
them (``wmrl.sandbox.local.RUNTIME``, ``wmrl.sandbox.warm.SERVER``).
"""
__all__: list[str] = []
