# Two commands for a newcomer: `make demo` runs the product, `make test` passes the tests.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test acceptance install lint unit bench clean

demo: install
	$(BIN)/python manage.py demo

test: install lint
	$(BIN)/python -m pytest --ignore=tests/acceptance

# T1-T12 of RELIABILITY.md on gunicorn + PostgreSQL + Redis + a worker (docs/reliability.md).
acceptance: install
	.ci/acceptance

install: $(STAMP)

# torch first, pinned to the CPU build: pyserini's unpinned torch would pull several GB of CUDA.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: install
	$(BIN)/python -m pytest -m "not integration and not lucene"

bench: install
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/index_build.py

clean:
	rm -rf $(VENV) var
