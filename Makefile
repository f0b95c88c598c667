# One entry point for people and CI. The virtualenv is created and filled on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: crawl test lint typecheck unit bench testweb extras clean

$(STAMP): pyproject.toml testweb/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' -e './testweb[plot]'
	touch $(STAMP)

crawl: $(STAMP)
	$(BIN)/trawl crawl $(ARGS)

testweb: $(STAMP)
	$(BIN)/trawl testweb $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src testweb tests benchmarks fuzz .ci/extras
	$(BIN)/ruff format --check src testweb tests benchmarks fuzz .ci/extras

typecheck: $(STAMP)
	$(BIN)/mypy

# The end-to-end tests mostly wait (politeness delays, kills, restarts): two workers, a test file each at a time
# (--dist loadfile: a file's tests keep their order and its module fixtures); JOBS=0 runs them in one process.
JOBS ?= 2
unit: $(STAMP)
	$(BIN)/pytest -q -n $(JOBS) --dist loadfile $(ARGS)

test: lint typecheck unit

# The wheel with each extra in a fresh virtualenv, each used once (.ci/extras; needs no .venv).
extras:
	$(PYTHON) .ci/extras $(ARGS)

bench: $(STAMP)
	$(BIN)/pip install -q -e './testweb[bench]'
	$(BIN)/trawl bench $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
