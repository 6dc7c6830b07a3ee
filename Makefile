# One venv, two entry points: `make run` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run test test-fast bench lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[spark,test,fast]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m pyzenoh demo

# Two workers (pytest-xdist, loadgroup): every Spark test goes to one worker as one unit,
# handed out first (one JVM start and warm-up instead of two), every other test is a unit
# of its own for whichever worker is free. The slowest tests are listed at the end.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=20

# The inner loop: everything but the slow, interop and Spark tests (about 1 864 tests,
# 1 min on 2 cores; four workers, since most of them wait on sockets and processes).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 4 --dist worksteal -m "not slow and not interop and not spark"

bench: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/pip install -q ruff mypy
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

# The documentation site (docs/, mkdocs.yml) into site/; strict: a broken link fails it.
docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
