# One venv, two entry points: `make run` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run test bench lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[spark,test,fast]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m pyzenoh demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/pip install -q ruff mypy
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# The documentation site (docs/, mkdocs.yml) into site/; strict: a broken link fails it.
docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
