# Two entry points: `make run` (the portal with demo data on http://127.0.0.1:8000/) and
# `make test` (the whole suite). Both create .venv on first use and reinstall only when
# pyproject.toml changed (stamp files inside .venv), so a second call starts at once.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

.PHONY: run test lint setup setup-test migrate demo-data demo-login clean-venv benchmark benchmark-10m benchmark-100-models \
	benchmark-search

run: setup migrate demo-data demo-login
	$(PY) manage.py runserver $(HOST):$(PORT)

test: setup-test
	$(PY) -m pytest $(PYTEST_ARGS)

# One style (pyproject.toml [tool.ruff]): the lint rules, and the formatter's layout; `$(BIN)/ruff format .` applies it.
lint: setup-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test

$(PY):
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or pass PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# The project alone (for `make run`); the test stamp implies it.
$(VENV)/.installed: pyproject.toml | $(PY)
	@if [ $(VENV)/.installed-test -nt pyproject.toml ]; then :; else $(PY) -m pip install -q -e . ; fi
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test]"
	@touch $@ $(VENV)/.installed

migrate: setup
	$(PY) manage.py migrate --noinput -v 0

# Demo data only into an empty database, so `make run` never touches real data.
demo-data: migrate
	@if $(PY) manage.py shell -v 0 -c "import sys; from runs.models import Benchmark; sys.exit(1 if Benchmark.objects.exists() else 0)"; then \
		$(PY) manage.py help demo >/dev/null 2>&1 || { echo "make run: the 'demo' management command is missing, cannot load demo data" >&2; exit 1; }; \
		echo "Loading demo data (python manage.py demo)..."; \
		$(PY) manage.py demo; \
	else echo "Database already holds data: demo data not loaded."; fi

demo-login: migrate
	@$(PY) manage.py demo_login --url http://$(HOST):$(PORT)/

clean-venv:
	rm -rf $(VENV)

# The speed and memory benchmark of docs/performance.md, in one command, on PostgreSQL and Redis:
# creates BENCH_DB if it is missing (never drops anything), migrates it, adds the demo data the
# survival and hierarchy APIs need when it holds no benchmark yet, then measures a 1M-verdict
# study (ingest in process and through `manage.py ingest` over the results folder, COPY, memory,
# notebook, pages, load) and writes BENCH_JSON. The study is
# removed afterwards (pass BENCH_ARGS="... --keep" to keep it for `benchmark --http-only`).
BENCH_SERVER ?= postgres://postgres@127.0.0.1:5432
BENCH_DB     ?= ifportal_bench
BENCH_CACHE  ?= redis://127.0.0.1:6379/5
BENCH_JSON   ?= benchmark.json
# The study is built on OctoBench's real instances where ../shared/data holds them (their checklists, and judge
# reasoning drawn from their own, largely Chinese, text: 68 models x 1,635 items x 3 repetitions x 3 judges =
# 1,000,620 verdicts), else generated (217 instances x 33 items, English reasoning, 16 models: 1,031,184).
BENCH_REAL   ?= $(wildcard ../shared/data/octobench/instances.jsonl)
BENCH_ARGS   ?= $(if $(BENCH_REAL),--real-instances $(BENCH_REAL) --models 68,--instances 217 --items 33 --models 16) \
	--repetitions 3 --judges 3
BENCH_ENV     = DATABASE_URL=$(BENCH_SERVER)/$(BENCH_DB) CACHE_URL=$(BENCH_CACHE) IFPORTAL_JOBS=inline

# The 10M-verdict study: 217 instances x 33 items x 100 models x 3 repetitions x 5 judges
# (10,741,500 verdicts; 100 models so the 100-model target is measured at 10M too, 5 judges so
# each model is judged as often as in the 1M study's 16 x 3 x 3 and rollups grow like verdicts). The
# folder is ingested in batches of whole models (about 1M verdicts each, one transaction each), so the
# first batch's rate (0 -> 1M) and the last one's (9.7M -> 10.7M) print side by side; at the end the same
# batch of ten new models goes into copies of the study at 1M and at 10M, two pairs in alternating order
# (identical work, so the machine's drift tilts neither; about 8 minutes and a second copy of the database
# on disk while it runs); COPY baselines on a 1M sample; no second load through the CLI (1M shows that).
# About 3 GB of files in $TMPDIR; hours on a shared 2-core machine. BENCH_10M_ARGS adds to it (e.g. --keep, then `benchmark --http-only`).
BENCH_10M_ARGS ?=
benchmark-10m: BENCH_ARGS = --instances 217 --items 33 --models 100 --repetitions 3 --judges 5 \
	--ingest-batch-verdicts 1000000 --ingest-pairs 2 --copy-rows 1000000 --skip-cli --trajectory-mb 50 $(BENCH_10M_ARGS)
benchmark-10m: BENCH_DB = ifportal_bench_10m
benchmark-10m: BENCH_JSON = benchmark-10m.json
benchmark-10m: benchmark

# More models, same speed: 100 models x 3 repetitions x 3 judges on 217 instances of
# 5 items (976,500 verdicts, 195,300 attempt rollups: what grows with the model count), about 1M verdicts.
benchmark-100-models: BENCH_ARGS = --instances 217 --items 5 --models 100 --repetitions 3 --judges 3
benchmark-100-models: BENCH_DB = ifportal_bench_100m
benchmark-100-models: BENCH_JSON = benchmark-100-models.json
benchmark-100-models: benchmark

# Transcript search at 1 GB: the 1M-verdict study with its search corpus grown by
# 1,000 MB of generated trajectories (ifportal.benchmarks.search_corpus: COPY, then the trigram index built, minutes
# rather than the half hour of a 1 GB import); the search selector timed on rare, medium and common
# text behind filters. Only what search needs: a 1 MB trajectory file, COPY baselines on a sample, no
# CLI load, no long trajectory. BENCH_SEARCH_ARGS adds to it (e.g. --skip-http, --keep).
BENCH_SEARCH_ARGS ?=
benchmark-search: BENCH_ARGS = --instances 217 --items 33 --models 16 --repetitions 3 --judges 3 \
	--trajectory-mb 1 --copy-rows 20000 --skip-cli --skip-long-trajectory --search-corpus-mb 1000 $(BENCH_SEARCH_ARGS)
benchmark-search: BENCH_DB = ifportal_bench_search
benchmark-search: BENCH_JSON = benchmark-search.json
benchmark-search: benchmark

benchmark: setup-test
	@psql "$(BENCH_SERVER)/postgres" -tAc "select 1 from pg_database where datname = '$(BENCH_DB)'" | grep -q 1 \
		|| psql "$(BENCH_SERVER)/postgres" -qc 'create database "$(BENCH_DB)"'
	$(BENCH_ENV) $(PY) manage.py migrate --noinput -v 0
	@if $(BENCH_ENV) $(PY) manage.py shell -v 0 -c "import sys; from runs.models import Benchmark; sys.exit(1 if Benchmark.objects.exists() else 0)"; \
		then $(BENCH_ENV) $(PY) manage.py demo; fi
	$(BENCH_ENV) $(PY) manage.py benchmark $(BENCH_ARGS) --json $(BENCH_JSON)
