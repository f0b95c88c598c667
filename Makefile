# One entry point for people and CI. The virtualenv is created and filled on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: crawl test lint typecheck unit bench testweb extras clean compile uncompile test-compiled test-lowest

$(STAMP): pyproject.toml testweb/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip 'setuptools>=77'  # make compile runs setup.py with the venv's setuptools
	$(BIN)/pip install -q -e '.[dev]' -e './testweb[plot]'
	touch $(STAMP)

crawl: $(STAMP)
	$(BIN)/trawl crawl $(ARGS)

testweb: $(STAMP)
	$(BIN)/trawl testweb $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src testweb tests benchmarks fuzz .ci/extras setup.py _build
	$(BIN)/ruff format --check src testweb tests benchmarks fuzz .ci/extras setup.py _build

typecheck: $(STAMP)
	$(BIN)/mypy

# The end-to-end tests mostly wait (politeness delays, kills, restarts): with two workers the suite kept half of two
# cores busy, so four, a test file each at a time (--dist loadfile: a file's tests keep their order and its module
# fixtures); JOBS=0 runs them in one process.
JOBS ?= 4
unit: $(STAMP)
	$(BIN)/pytest -q -n $(JOBS) --dist loadfile $(ARGS)

test: lint typecheck unit

# The wheel with each extra in a fresh virtualenv, each used once (.ci/extras; needs no .venv).
extras:
	$(PYTHON) .ci/extras $(ARGS)

bench: $(STAMP)
	$(BIN)/pip install -q -e './testweb[bench]'
	$(BIN)/trawl bench $(ARGS)

# Opt-in: the parser's hot modules compiled by mypyc from the same source (which ones and why: _build/backend.py;
# what it saves: benchmarks/RESULTS.md). The extension modules sit beside the .py files and shadow them: `make
# uncompile` before editing one of these. A wheel is built compiled the same way: `WEBTRAWL_COMPILE=1 pip wheel .`
# The build's log (mypy's errors, then every compiler command) is shown only when it fails.
compile: $(STAMP)
	WEBTRAWL_COMPILE=1 $(BIN)/python setup.py -q build_ext --inplace >build.log 2>&1 || { cat build.log; exit 1; }
	rm -rf build build.log

uncompile:
	find src -name '*.so' -delete
	rm -rf build build.log

# The tests of the compiled modules' stages, run against the compiled build (then the pure one is restored).
# One crawl of tests/node/test_crawl.py, not its drain and kill variants (the node's own mechanics, which `make test`
# covers): that file alone ran ~2 min on one worker, the wall time of this run and of test-lowest (CI's 30 min).
ONE_CRAWL := tests/node/test_crawl.py::test_crawl_fetches_every_reachable_page_once_politely
COMPILED_TESTS := tests/parse tests/formats tests/frontier tests/store tests/fuzz tests/test_pagepipe.py $(ONE_CRAWL)
test-compiled: compile
	$(MAKE) unit ARGS="$(COMPILED_TESTS) $(ARGS)"; status=$$?; $(MAKE) -s uncompile; exit $$status

# The suite against the lowest versions pyproject.toml admits for what it asks for directly (uv's lowest-direct
# resolution; what those pull in comes at its newest), in a virtualenv of its own made as $(VENV) is: a lower bound
# we declare is one the tests ran against. All but the node's end-to-end tests (one crawl of them) and the bench
# harness's (it runs the same crawler), for CI's time.
LOWEST := .venv-lowest
LOWEST_TESTS := $(filter-out tests/node/ tests/bench/ tests/__pycache__/ tests/fixtures/,$(wildcard tests/*/)) $(wildcard tests/test_*.py) \
	$(ONE_CRAWL)
test-lowest:
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/pip install -q --upgrade pip 'setuptools>=77' 'uv>=0.5'
	$(LOWEST)/bin/uv pip install -q --python $(LOWEST)/bin/python --resolution lowest-direct -e '.[dev]' -e './testweb[plot]'
	$(LOWEST)/bin/pytest -q -n $(JOBS) --dist loadfile -p no:cacheprovider $(LOWEST_TESTS) $(ARGS)

clean: uncompile
	rm -rf $(VENV) $(LOWEST) .pytest_cache .mypy_cache .ruff_cache
