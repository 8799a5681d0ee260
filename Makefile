# The two commands of the README: `make run` (set up, then run) and `make test` (every check).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: setup run test format lint typecheck pytest bench

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

run: setup
	$(PY) examples/quickstart.py

test: setup lint typecheck pytest

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/pyright

pytest: setup
	PYTHONASYNCIODEBUG=1 $(PY) -m pytest

bench: setup
	$(PY) bench/invoke_overhead.py
