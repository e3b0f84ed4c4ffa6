# Everything runs from a virtual environment this Makefile creates (.venv).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

## main job: galleries of generated and held-out levels, an episode GIF, the throughput table
demo: $(STAMP)
	$(BIN)/arenax render --source maze/dr --n 16 --out outputs/dr_gallery.png --episode-gif outputs/dr_episode.gif
	$(BIN)/arenax render --source all --out outputs/heldout_gallery.png
	$(BIN)/python benchmarks/env_throughput.py --batches 1 64 1024 4096

## the full test suite (2 workers, persistent compilation cache in .jax_cache)
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py

clean:
	rm -rf $(VENV) .jax_cache .pytest_cache outputs
