# The Transformer, part by part. `make book` builds the HTML book; `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ENV_STAMP := $(VENV)/.installed
# The HTML book is built here; `make book` prints the path of its index.html.
BOOK_DIR := _build/html
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
# One test worker more than the cores: the grading tests spend part of their time waiting on a sandboxed kernel, and
# a third worker on two cores fills that time (second runs of make test on two quiet cores: 463 and 465 s with two
# workers, 438 and 457 s with three, the processor busy 99 % of the time instead of about 90 %).
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
export PYTHONHASHSEED := 0
# Bytecode is written, even where the environment says not to (as some CI images do): every test process would
# otherwise compile again what it imports and pytest would rewrite every test module again (15 s of CPU in each of
# a run's dozen pytest processes instead of 8 cached). The grader's sandboxes set their own environment.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help env system bytecode book lint test test-fast nbval notebooks exercises exercise lab grade worker manual gradebook bench pretrained clean

help:
	@echo "make book    create $(VENV), build the HTML book, print where it is"
	@echo "make test    create $(VENV), run every check (lint, package, notebooks, exercises, grading, book)"
	@echo "make test-fast   the tests not marked slow (no book build, no grading runs, no nbval): the edit loop"
	@echo "make lint    ruff on the package, checks, layout, tests, benchmarks, tools and grader (configured in pyproject.toml)"
	@echo "make lab     open JupyterLab here: the chapters in notebooks/, the exercises in exercises/"
	@echo "make grade ASSIGNMENT=<id> SUBMISSIONS=<folder or zip> [JOBS=n | CLUSTER=tcp://host:port] [OPTIONS=...]"
	@echo "           grade a class, each in a sandbox, here or on a dask cluster's workers (make worker CLUSTER=...)"
	@echo "           (OPTIONS: --only NAME.., --resume, --export canvas|moodle FILE, --quiet; python -m grader --help)"
	@echo "make manual ASSIGNMENT=<id> STUDENT=<id> CELL=<cell> POINTS=<n|clear>   points given by hand"
	@echo "make gradebook   join every graded assignment in grading/ per student: grading/course.csv and course.html"
	@echo "make bench   time the package against PyTorch; writes _build/bench/results.json"
	@echo "make notebooks   re-execute the chapters and store their outputs (authors only)"
	@echo "make exercises   regenerate exercises/ from solutions/ with nbgrader (authors only)"
	@echo "make exercise A=<a13> NAME=<name> POINTS=<n> [TITLE=...] [DIFFICULTY=1-3] [BY_HAND=1] [ABOUT=...]"
	@echo "           a new exercise, each piece a stub that fails its test until written (authors only)"
	@echo "make pretrained  retrain the tiny model the chapters look inside (transformer/pretrained/, authors only)"

# Where PyTorch comes from. Empty (the default, and CI's): the package index pip is configured with. On Linux that
# index's torch is the CUDA build (gigabytes); a reader without a GPU can take PyTorch's own CPU build instead:
#   make book TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=

$(ENV_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install --quiet --index-url $(TORCH_INDEX) "torch==$$(sed -n 's/^torch==//p' constraints.txt)")
	$(PY) -m pip install --quiet -c constraints.txt -e ".[book,course,test,hf,lens]"
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

# Strict nbval: every chapter and solution notebook runs again and must print what it stored. Its kernels
# run on two threads and on AVX2 code (tests/nbval_kernels.py says why); each worker takes one notebook at a time.
NBVAL_OPTIONS := --nbval --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg
NBVAL := -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(NBVAL_OPTIONS) notebooks solutions

LINTED := transformer checks layout tests benchmarks tools grader conftest.py

lint: $(ENV_STAMP)
	$(VENV)/bin/ruff check $(LINTED)

# The project's bytecode, compiled once: with PYTHONDONTWRITEBYTECODE set (as in some CI images) or a
# read-only source (the grader's sandboxes), every process would otherwise compile every module it imports.
bytecode: $(ENV_STAMP)
	@$(PY) -m compileall -q $(LINTED)

# lint first: it takes a second, and a finding there should not wait minutes for the rest.
# One run for the tests and the notebooks: each worker takes a whole file at a time, the longest first
# (conftest.py), so that at the end of a run no worker is left alone with a long file.
test: lint bytecode $(ASSETS_STAMP) system
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 $(NBVAL_OPTIONS) \
		tests notebooks solutions

test-fast: bytecode
	$(PY) -m pytest -n $(PYTEST_WORKERS) -m "not slow" tests

nbval: bytecode
	$(PY) $(NBVAL)

notebooks: $(ENV_STAMP)
	$(PY) -m tools.execute_notebooks $(NOTEBOOKS) solutions/*/*.ipynb

exercises: $(ENV_STAMP)
	$(PY) -m tools.generate_exercises

# A new exercise at the end of an assignment: every piece written, each stub failing its test with a TODO that says
# what to write and where (CONTRIBUTING.md, "Adding an exercise"; python -m tools.new_exercise --help).
EXERCISE_USAGE := usage: make exercise A=<a13> NAME=<name> POINTS=<n> [TITLE=...] [DIFFICULTY=1-3] [BY_HAND=1] [ABOUT=...]
exercise: $(ENV_STAMP)
	@test -n "$(A)" -a -n "$(NAME)" -a -n "$(POINTS)" || { echo "$(EXERCISE_USAGE)"; exit 2; }
	$(PY) -m tools.new_exercise "$(A)" "$(NAME)" --points "$(POINTS)" $(if $(TITLE),--title "$(TITLE)") \
		$(if $(DIFFICULTY),--difficulty "$(DIFFICULTY)") $(if $(BY_HAND),--by-hand) $(if $(ABOUT),--about "$(ABOUT)")

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
	$(PY) -m grader "$(ASSIGNMENT)" "$(SUBMISSIONS)" $(if $(JOBS),--jobs "$(JOBS)") $(if $(CLUSTER),--cluster "$(CLUSTER)") $(OPTIONS)

# A worker of a dask cluster for `make grade ... CLUSTER=<address>`, on each machine that grades (book/instructors.md,
# "Past one machine"): this repository, its environment and bubblewrap; the worker imports the grader from here.
worker: $(ENV_STAMP) system
	@test -n "$(CLUSTER)" || { echo "usage: make worker CLUSTER=tcp://HOST:PORT [OPTIONS=--nthreads n ...]"; exit 2; }
	$(PY) -m distributed.cli.dask_worker "$(CLUSTER)" $(OPTIONS)

# Points given by hand (python -m grader.manual, in the project's environment): grades.csv, the page and the
# platform's file follow at once.
MANUAL_USAGE := usage: make manual ASSIGNMENT=<id> STUDENT=<id> CELL=<grade cell> POINTS=<number or clear>
manual: $(ENV_STAMP)
	@test -n "$(ASSIGNMENT)" -a -n "$(STUDENT)" -a -n "$(CELL)" -a -n "$(POINTS)" || { echo "$(MANUAL_USAGE)"; exit 2; }
	$(PY) -m grader.manual "$(ASSIGNMENT)" "$(STUDENT)" "$(CELL)" "$(POINTS)"

# The term at a glance, from every grading/<id>/ that holds a gradebook (see book/instructors.md).
gradebook: $(ENV_STAMP)
	$(PY) -m grader.course

clean:
	rm -rf _build grading
