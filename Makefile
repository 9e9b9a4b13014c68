# Entry points: `make repro` runs the pipeline, `make test` runs every test,
# `make perf` runs the measurements under perf/. Each bootstraps .venv first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install repro test test-fast perf check estimate clean-reports

install: $(STAMP)

# Re-install whenever the dependency list changes.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,dev]'
	touch $(STAMP)

repro: $(STAMP)
	dvc repro

check: $(STAMP)
	pressurebench check

estimate: $(STAMP)
	pressurebench estimate

test: $(STAMP)
	pytest

test-fast: $(STAMP)
	pytest -m 'not slow'

perf: $(STAMP)
	$(PY) perf/run_all.py
