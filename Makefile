# Entry points, each bootstrapping .venv first. Every target is described by the comment above
# its rule: docs/repository.md shows them (docs/_hooks/reference.py writes the table).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install repro test test-fast docs perf coverage judge-coverage capitulation-coverage validation-coverage check estimate lab plots

# Creates .venv and installs the package with every extra (again when pyproject.toml changes).
install: $(STAMP)

# Re-install whenever the dependency list changes.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,dev,lab,docs,inspect,release,clouds]'
	touch $(STAMP)

# Runs the pipeline (dvc.yaml) on params/pipeline.yaml (a study's own file after `pressurebench
# use`). `check --offline` first: it writes the defaults of params keys dvc.yaml reads that the
# params file leaves out (DVC reads them from the file itself), so an older params file still
# runs. Last, it says why a run of the committed study wrote other numbers than git holds, if
# it did (the embedded model's floating point follows the CPU).
repro: $(STAMP)
	pressurebench check --offline
	dvc repro
	$(PY) -m pressurebench.commands.committed_run

# Validates the params and benchmark files, every used model's key, and sends one free
# model-list request to each API endpoint (`pressurebench check`).
check: $(STAMP)
	pressurebench check

# Calls, tokens, cost and expected time per stage before anything is spent
# (`pressurebench estimate`).
estimate: $(STAMP)
	pressurebench estimate

# The tests run in one worker process per CPU core (pytest-xdist; PYTEST_XDIST_AUTO_NUM_WORKERS
# sets another count, `-n 0` on a plain `pytest` none); a worker that runs out of tests takes half
# of another's queue, so the long ones do not pile up at the end.
PARALLEL := -n auto --dist worksteal

# Runs every test, the slow ones too, in one worker per CPU core.
test: $(STAMP)
	pytest $(PARALLEL)

# Runs the tests without the slow ones, in one worker per CPU core.
test-fast: $(STAMP)
	pytest $(PARALLEL) -m 'not slow'

# Builds the documentation site into site/. The references and the repository's tables are
# written from the code as the site builds (docs/_hooks/reference.py); --strict turns a broken link or a page left out of the nav into
# an error.
docs: $(STAMP)
	mkdocs build --strict

# Runs the performance measurements under perf/ (dated figures in perf/README.md).
perf: $(STAMP)
	$(PY) perf/run_all.py

# The coverage sweeps live in the package (src/pressurebench/stats/sweeps), which reads the
# summaries they write into src/pressurebench/stats/coverage; each runs as
# `python -m pressurebench.stats.sweeps <sweep>`, in worker processes of one BLAS thread each.
SWEEPS := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pressurebench.stats.sweeps

# The coverage of every interval type over a grid of designs in an easy world, then in the
# stress grid's worlds. Each finished cell is kept in .sweep-cache/ (by the code that measured
# it), so an interrupted run resumes where it stopped.
coverage: $(STAMP)
	$(SWEEPS) grid --benchmarks 1000 --jobs 2 --sensitivity --cache .sweep-cache \
		--out docs/interval_coverage.md \
		--coverage-json src/pressurebench/stats/coverage/interval_coverage.json
	$(SWEEPS) stress --benchmarks 1000 --jobs 2 --cache .sweep-cache \
		--out docs/stress_coverage.md \
		--coverage-json src/pressurebench/stats/coverage/stress_coverage.json

# The coverage and width of judge-corrected pass rates over label budgets, judge qualities and
# designs (about 15 CPU-minutes; `--judge` and `--base` run parts of it, e.g. in parallel), after
# the design sweep that measures the corrected intervals' rules (two worker processes of one BLAS
# thread each).
judge-coverage: $(STAMP)
	$(SWEEPS) judge --jobs 2 --out docs/judge_coverage.md

# The coverage of capitulation bands, curve differences and the fidelity sensitivity difference
# over designs, and the rules measured from it (about 3 minutes on 2 otherwise idle CPUs).
capitulation-coverage: $(STAMP)
	$(SWEEPS) capitulation --benchmarks 2000 --jobs 2 --out docs/capitulation_coverage.md \
		--coverage-json src/pressurebench/stats/coverage/capitulation_coverage.json

# The coverage of the validation studies' contrasts (the judge's part of a gap, its share, a
# probe's excess over a floor, pairwise changes between arms) and of Kendall's tau-b between
# arms, and the rules measured from it.
validation-coverage: $(STAMP)
	$(SWEEPS) validation --benchmarks 2000 --jobs 2 --out docs/validation_coverage.md

# Jupyter refuses to start as root (a container, a lab server) unless told it may.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# JupyterLab on the stage notebooks. Run by hand, a notebook shows the last `dvc repro`'s
# outputs; set write_outputs = True in its parameters cell to run its stage from there.
lab: $(STAMP)
	jupyter lab $(LAB_ROOT) --notebook-dir=$(CURDIR) notebooks/

# The DVC plots of dvc.yaml drawn offline into dvc_plots/offline.html (`dvc plots show` loads
# Vega from a CDN).
plots: $(STAMP)
	$(PY) -m pressurebench.reports.dvc_plots --out dvc_plots/offline.html
