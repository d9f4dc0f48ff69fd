# Every target creates .venv when it is missing, so a fresh clone needs only `make run` / `make test`.
# `make run` installs the runtime only; `test`, `lint` and `bench` add the dev tools and the
# server extra.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test lint bench prereqs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --disable-pip-version-check -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@ $(RUN_STAMP)

# SERVE_ARGS: more options for serve (`make run SERVE_ARGS="--port 9000"`). A signal
# that stops the server stops make too, which dies of it (a shell shows 130 or 143):
# serve then exits 0 after its one line, so make adds no "*** Error 130" line of its own.
run: export CONVODEX_STOPPED_STATUS = 0
run: $(RUN_STAMP)
	$(BIN)/convodex serve $(SERVE_ARGS)

prereqs:
	@scripts/test-prereqs

test: prereqs $(DEV_STAMP)
	$(BIN)/pytest -q

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(DEV_STAMP)
	$(BIN)/python bench/bench_local.py
	$(BIN)/python bench/bench_serve.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
