# The Transformer, part by part. `make book` builds the HTML book; `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ENV_STAMP := $(VENV)/.installed
# The HTML book is built here; `make book` prints the path of its index.html.
BOOK_DIR := _build/html
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
PYTEST_WORKERS ?= 2
export PYTHONHASHSEED := 0

.PHONY: help env system book lint test test-fast nbval notebooks exercises lab grade bench pretrained clean

help:
	@echo "make book    create $(VENV), build the HTML book, print where it is"
	@echo "make test    create $(VENV), run every check (lint, package, notebooks, exercises, grading, book)"
	@echo "make lint    ruff on the package, tests, benchmarks, tools and grader (configured in pyproject.toml)"
	@echo "make lab     open JupyterLab here: the chapters in notebooks/, the exercises in exercises/"
	@echo "make grade ASSIGNMENT=<id> SUBMISSIONS=<folder> [JOBS=n]   grade a folder of <student>.ipynb, each in a sandbox"
	@echo "make bench   time the package against PyTorch; writes _build/bench/results.json"
	@echo "make notebooks   re-execute the chapters and store their outputs (authors only)"
	@echo "make exercises   regenerate exercises/ from solutions/ with nbgrader (authors only)"
	@echo "make pretrained  retrain the tiny model the chapters look inside (transformer/pretrained/, authors only)"

$(ENV_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[book,course,test,hf]"
	@touch $@

# MathJax, RequireJS and the widget manager, served by the book itself (pinned in package-lock.json).
ASSETS_STAMP := node_modules/.installed
$(ASSETS_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	@touch $@

# Debian's packages: Chromium for the browser test, bubblewrap for the grader's sandbox. Installed when
# missing and we may (root, as in CI); otherwise a warning says what to install.
SYSTEM_PACKAGES := chromium:chromium bwrap:bubblewrap
system:
	@missing=""; for pair in $(SYSTEM_PACKAGES); do command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; } || \
		echo "warning: missing$$missing; install with: apt-get install$$missing"

env: $(ENV_STAMP) $(ASSETS_STAMP)

book: $(ENV_STAMP) $(ASSETS_STAMP)
	rm -rf $(BOOK_DIR)
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going
	@echo ""
	@echo "The book is at: $(abspath $(BOOK_DIR))/index.html"

# Strict nbval twice: float sums differ in their last bits between one and two threads, and between
# processors with AVX2 and with AVX-512, and the stored outputs must depend on neither. The first pass
# runs one thread and keeps PyTorch and its libraries on their AVX2 code, as on a machine without
# AVX-512; the second runs two threads on whatever the machine has, over the chapters only (the
# solutions print no computed number, only whether their checks passed). In `make test` the two
# passes run side by side, one kernel each (two workers with two threads each would ask four
# threads of two cores), and the two threads sleep rather than spin while they wait for work
# (OMP_WAIT_POLICY: spinning takes the other pass's core, 158 s against 121 s for the second pass);
# each prints its log when both are done, and either failing fails the target.
NBVAL_OPTS := --nbval --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg
NBVAL_ARGS := $(NBVAL_OPTS) notebooks solutions
NBVAL := -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(NBVAL_ARGS)
NBVAL_LOGS := _build/nbval
AVX2_ONLY := ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2

LINTED := transformer tests benchmarks tools grader conftest.py

lint: $(ENV_STAMP)
	$(VENV)/bin/ruff check $(LINTED)

# lint first: it takes a second, and a finding there should not wait ten minutes for the rest.
test: lint $(ASSETS_STAMP) system
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25 tests
	@mkdir -p $(NBVAL_LOGS)
	@echo "strict nbval: chapters and solutions with 1 thread on AVX2 code, chapters with 2 threads, side by side (logs in $(NBVAL_LOGS)/) ..."
	@OMP_NUM_THREADS=1 $(AVX2_ONLY) $(PY) -m pytest -n 1 $(NBVAL_ARGS) > $(NBVAL_LOGS)/threads-1.log 2>&1 & one=$$!; \
	OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -n 1 $(NBVAL_OPTS) notebooks > $(NBVAL_LOGS)/threads-2.log 2>&1; two=$$?; \
	wait $$one; one=$$?; \
	for n in 1 2; do echo "--- nbval, $$n thread(s)"; tail -n 40 $(NBVAL_LOGS)/threads-$$n.log; done; \
	[ $$one -eq 0 ] && [ $$two -eq 0 ]

test-fast: $(ENV_STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) -m "not slow" tests

nbval: $(ENV_STAMP)
	$(PY) $(NBVAL)

notebooks: $(ENV_STAMP)
	$(PY) -m tools.execute_notebooks $(NOTEBOOKS) solutions/*/*.ipynb

exercises: $(ENV_STAMP)
	$(PY) -m tools.generate_exercises

lab: $(ENV_STAMP)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir=$(CURDIR)

bench: $(ENV_STAMP) $(ASSETS_STAMP)
	$(PY) -m benchmarks.bench

# One thread and one seed: the same weights every time (about a minute of CPU).
pretrained: $(ENV_STAMP)
	$(PY) -m tools.train_tiny_lm

# Each submission runs in its own bubblewrap sandbox (see book/instructors.md).
grade: $(ENV_STAMP) $(ASSETS_STAMP) system
	@test -n "$(ASSIGNMENT)" || { echo "usage: make grade ASSIGNMENT=<id> SUBMISSIONS=<folder>"; exit 2; }
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=<id> SUBMISSIONS=<folder>"; exit 2; }
	$(PY) -m grader "$(ASSIGNMENT)" "$(SUBMISSIONS)" $(if $(JOBS),--jobs "$(JOBS)")

clean:
	rm -rf _build grading
