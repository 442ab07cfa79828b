"""The trainers: thin drivers of a policy and an engine around the WMRL step (:mod:`wmrl.step`).

:mod:`.grammar` the grammar agent's run (train, evaluate, write); :mod:`.grpo` its policy update;
:mod:`.rollout` multi-turn rollouts scored by the sandbox and/or the world model; :mod:`.memo` the
execution memo; :mod:`.components` sandbox, world model and memo built from a run's config;
:mod:`.runs` the run-folder layout every trainer writes.
"""
