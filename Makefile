# Two commands do everything on a fresh machine with Python >= 3.11:
#   make run    install into .venv, then run the main job (the workflow's quick preset);
#               make run CORES=1 uses one core (default: all of them)
#   make test   install into .venv (with test tools), then run every test
#   make docs   build the documentation site into site/ (opens from disk)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# cores the workflow of `make run` may use (a number, or all)
CORES ?= all

.PHONY: install run test lint docs clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# the package's bytecode, written once: every bbrl process (each workflow job) reads
	@# it instead of compiling the sources again, even where PYTHONDONTWRITEBYTECODE is set
	$(BIN)/python -m compileall -q src
	touch $@

# the example plugin package (examples/bbrl-rmax), which the tests run through the workflow
$(VENV)/.examples: $(VENV)/.installed examples/bbrl-rmax/pyproject.toml
	$(BIN)/python -m pip install --quiet -e examples/bbrl-rmax
	touch $@

install: $(VENV)/.installed

run: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores $(CORES) --config preset=quick

# The real-Slurm tests spend most of their time waiting on the cluster (submission, status
# checks, a time limit): they run beside the others, their output printed at the end.
# The others are spread over every core, a test file per worker (pytest-xdist): a file's
# module fixtures (a workflow run, a report) are built once. (Compiling every kernel
# first, `bbrl warmup --jobs 2`, made the whole run slower: 15 min 11 s against 14 min
# 21 s; the workers rarely compile the same kernel at the same time.)
test: install $(VENV)/.examples
	$(BIN)/ruff check src tests benchmarks examples docs
	@tmp=$${TMPDIR:-/tmp}/bbrl-slurm-tests-$$$$; mkdir -p $$tmp; \
	$(BIN)/python -m pytest -q -m slurm --basetemp=$$tmp/t -p no:cacheprovider \
	  > $$tmp/log 2>&1 & slurm=$$!; \
	$(BIN)/python -m pytest -q -m "not slurm" -n auto --dist loadfile --no-loadscope-reorder; rest=$$?; \
	wait $$slurm; s=$$?; \
	echo "== the real-Slurm tests (run beside the others) =="; cat $$tmp/log; \
	rm -rf $$tmp; test $$rest -eq 0 && test $$s -eq 0

# the documentation site (docs/, mkdocs.yml) into site/: a warning is an error; nothing is
# fetched from the network (the theme's fonts are the system's)
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check src tests benchmarks examples docs

clean:
	rm -rf $(VENV) results .snakemake site
