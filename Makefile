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

run: $(RUN_STAMP)
	$(BIN)/convodex serve

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
