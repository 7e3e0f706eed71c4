# Two commands on a fresh machine: `make run` and `make test`. Both set everything up themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)  ## the main job on embedded defaults; keeps serving until Ctrl-C
	$(BIN)/finops run

test: $(STAMP)  ## every test, against a real PostgreSQL (DATABASE_URL, else embedded)
	$(BIN)/pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .local .pytest_cache .mypy_cache .ruff_cache
