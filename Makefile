# Every target creates .venv when it is missing, so a fresh clone needs only `make run` / `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/convodex serve

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/bench_local.py
	$(BIN)/python bench/bench_serve.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
