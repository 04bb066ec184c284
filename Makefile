# Two commands do everything on a fresh machine with Python >= 3.11:
#   make run    install into .venv, then run the main job (the workflow's quick preset)
#   make test   install into .venv (with test tools), then run every test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# the example plugin package (examples/bbrl-rmax), which the tests run through the workflow
$(VENV)/.examples: $(VENV)/.installed examples/bbrl-rmax/pyproject.toml
	$(BIN)/python -m pip install --quiet -e examples/bbrl-rmax
	touch $@

install: $(VENV)/.installed

run: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --cores all --config preset=quick

test: install $(VENV)/.examples
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks examples

clean:
	rm -rf $(VENV) results .snakemake
