# The two commands of the README's quick start. PYTHON must be Python 3.11 or newer.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Ports of `make sandbox`: make sandbox PORT=9000 LEARNER_PORT=9001 (0: any free port).
PORT         ?= 8000
LEARNER_PORT ?= 8001
# Port of `make docs`, the documentation site.
DOCS_PORT    ?= 8002

.PHONY: sandbox check test docs lint bench clean

# Each step says what it does before it starts, and pip shows what it collects, downloads and installs: the first
# install takes a minute or two, and none of it should look like a hang.
$(BIN)/python:
	@echo "creating the virtual environment $(VENV) with $(PYTHON) (it installs pip into it, silently: 5 to 20 s) ..."
	$(PYTHON) -m venv $(VENV)
	@echo "upgrading pip in $(VENV) (a recent pip shows a progress bar while it installs) ..."
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@echo "installing budgetlab with all its extras (oracle, learner, command) into $(VENV) (a minute or two the first time) ..."
	$(BIN)/python -m pip install --progress-bar on -e '.[all]'
	touch $@

$(VENV)/.dev-installed: $(BIN)/python pyproject.toml
	@echo "installing budgetlab with its dev extra into $(VENV) (a few minutes the first time) ..."
	$(BIN)/python -m pip install --progress-bar on -e '.[all,dev]'
	touch $(VENV)/.installed $@

## Install, start oracle + learner on the embedded SQLite ledger, run the demo comparison (Ctrl-C stops).
sandbox: $(VENV)/.installed
	$(BIN)/budgetlab sandbox --oracle-port $(PORT) --learner-port $(LEARNER_PORT)

## The loop while working (at most 90 s on 2 cores): lint, type-check, and every test that starts no process and no
## server (the engine, the contracts, the algorithms, the claims' arithmetic, the CLI's parsing). The others carry the
## `process` mark (tests/process_guard.py), and a test that starts one unmarked fails here, saying so.
check: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/mypy
	BUDGETLAB_CHECK=1 $(BIN)/python -m pytest -n 2 --dist loadgroup -q -m "not process"

## Install the dev extra, lint, type-check (mypy, strict on every package; its cache .mypy_cache makes a run after a small
## change take seconds), run the whole test suite (the docs site's strict build and the import contracts too).
test: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	@echo "type-checking with mypy (a minute the first time, then seconds: .mypy_cache) ..."
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

## Build the documentation site from docs/ and serve it on http://127.0.0.1:$(DOCS_PORT) (rebuilt as files change).
docs: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/oracle_bench.py
	$(BIN)/python benchmarks/learner_bench.py
	$(BIN)/python benchmarks/first_contact.py

clean:
	rm -rf $(VENV) .pytest_cache budgetlab-ledger.db* sandbox-report site
