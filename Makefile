# One task file for people and CI alike. `make help` lists the targets.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: help install run test test-fast lint fmt bench soak clean

SOAK_MINUTES ?= 30
# Test processes: most of the suite's time is spent waiting on subprocesses, servers and
# fsync, not on the CPU, so more workers than cores pays. Serially: PYTEST_ARGS=-n0.
TEST_WORKERS ?= 4

help:           ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(STAMP): pyproject.toml tests/node_clients/package.json
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@# The Node clients the gateway tests run, where npm is present (else those skip).
	if command -v npm >/dev/null; then npm ci --prefix tests/node_clients --no-audit --no-fund; fi
	touch $(STAMP)

install: $(STAMP) ## create .venv and install hermes with its dev tools

run: install    ## install, then start hermes (interactive chat)
	$(VENV)/bin/hermes

test: install   ## the whole suite on SQLite and a throwaway PostgreSQL, in parallel (serially: PYTEST_ARGS=-n0)
	PG_FSYNC=off bash scripts/with-postgres $(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

test-fast: install ## the suite without the tests marked slow (the short soak, long process and fault tests)
	PG_FSYNC=off bash scripts/with-postgres $(PY) -m pytest -n $(TEST_WORKERS) -m "not slow" $(PYTEST_ARGS)

lint: install   ## ruff lint, format check and mypy (config in pyproject.toml)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

fmt: install    ## format the code
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

bench: install  ## run every benchmark and print the tables
	bash scripts/with-postgres $(PY) -m benchmarks $(BENCH_ARGS)

soak: install   ## fault-injection soak on SQLite, then PostgreSQL (SOAK_MINUTES=30, SOAK_ARGS=)
	@status=0; \
	$(PY) -m benchmarks.soak --backend sqlite --minutes $(SOAK_MINUTES) $(SOAK_ARGS) || status=1; \
	bash scripts/with-postgres $(PY) -m benchmarks.soak --backend postgres \
		--minutes $(SOAK_MINUTES) $(SOAK_ARGS) || status=1; \
	exit $$status

clean:          ## remove the virtual environment
	rm -rf $(VENV)
