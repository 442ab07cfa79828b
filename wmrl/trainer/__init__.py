"""The trainers: thin drivers of a policy and an engine around the WMRL step (:mod:`wmrl.step`).

:mod:`.grammar` the grammar agent's run, one step of Algorithm 1 and its loss read top to bottom;
:mod:`.rollout` multi-turn rollouts scored by the sandbox and/or the world model; :mod:`.memo` the
execution memo; :mod:`.components` sandbox, world model and memo built from a run's config;
:mod:`wmrl.runs` holds the run-folder layout every trainer writes.
"""
