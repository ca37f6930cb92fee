# Two commands for a newcomer: `make demo` runs the product, `make test` passes the tests.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test acceptance hosts install lint unit bench screenshots clean

demo: install
	$(BIN)/python manage.py demo

test: install lint
	$(BIN)/python -m pytest --ignore=tests/acceptance

# T1-T12 of RELIABILITY.md on gunicorn + PostgreSQL + Redis + a worker (docs/reliability.md).
acceptance: install
	.ci/acceptance

# Several hosts on this machine (network namespaces; needs root and about 10 minutes):
# a database host, two application hosts, nginx in front, and the fault scenarios of
# docs/deploy.md ("Several hosts, run"). Stops everything it started, even on Ctrl-C.
hosts: install
	$(BIN)/python bench/hosts/run.py $(HOSTS_ARGS)

install: $(STAMP)

# torch first, pinned to the CPU build: pyserini's unpinned torch would pull several GB of CUDA.
# Each step says what it does and pip shows what it downloads: the whole install takes a few
# minutes and should never sit silent.
$(STAMP): pyproject.toml
	@echo "==> [1/4] Creating the virtual environment in $(VENV)/"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/4] Upgrading pip"
	$(BIN)/pip install --quiet --upgrade pip
	@echo "==> [3/4] Installing torch (CPU build; the largest download)"
	$(BIN)/pip install --progress-bar on torch==2.13.0
	@echo "==> [4/4] Installing sasc and its dependencies (pyproject.toml)"
	$(BIN)/pip install --progress-bar on -e ".[dev]"
	touch $(STAMP)
	@echo "==> Installed: $(VENV)/ is ready"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: install
	$(BIN)/python -m pytest -m "not integration and not lucene"

bench: install
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/index_build.py

# docs/screenshots/: every role's pages at 1280x720 and 390x844, from a throwaway demo.
screenshots: install
	$(BIN)/python manage.py screenshots

clean:
	rm -rf $(VENV) var
