# Everything runs from a virtual environment this Makefile creates (.venv).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-fast lint docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	# WarpDrive's own Tag games, the reference of tests/conformance/test_tag_warpdrive.py: its NumPy path
	# only (no CUDA, torch or numba), with the gym it imports its spaces from
	$(BIN)/pip install --quiet --no-deps rl-warp-drive==2.7.1 gym==0.26.2 gym_notices cloudpickle
	# gymnax, for tests/conformance/test_gymnax_adapter.py: it pins gymnasium<1.4 (unused by the adapter),
	# so without its dependencies, after the two its package import needs (installed last: a
	# later install would report gymnax's pin as a conflict)
	$(BIN)/pip install --quiet six seaborn
	$(BIN)/pip install --quiet --no-deps gymnax==1.0.1
	touch $(STAMP)

setup: $(STAMP)

DEMO_RUN := outputs/runs/maze-dr-demo

## main job: level galleries, env throughput tables (maze, Tag), a Tag GIF, then a short maze-dr training run
## (≈1 M steps, a few minutes on CPU) that ends with its held-out evaluation table and plots
demo: $(STAMP)
	$(BIN)/arenax render --source maze/dr --n 16 --out outputs/dr_gallery.png
	$(BIN)/arenax render --source all --out outputs/heldout_gallery.png
	$(BIN)/python benchmarks/env_throughput.py --batches 1 1024 4096
	$(BIN)/arenax render --source tag-continuous --out outputs/tag_continuous.gif
	$(BIN)/python benchmarks/tag_throughput.py --modes env --cases continuous-100x110 grid-partial-2000x1000
	# the periodic evaluation on mazes a 1 M-step student starts to solve (the classic suite stays at 0)
	$(BIN)/arenax train maze-dr --total-steps 983040 --chunk 10 --checkpoint-every 40 \
		--eval.every 40 --eval.suite FourRooms,Crossing,SmallCorridor,PerfectMaze \
		--out-dir outputs/runs --name maze-dr-demo --overwrite
	$(BIN)/arenax plot $(DEMO_RUN)
	# an episode of the trained student on a newly generated maze (its own policy, sampled actions)
	$(BIN)/arenax render $(DEMO_RUN) --out outputs/dr_episode.gif
	$(BIN)/arenax eval $(DEMO_RUN) --suite all --episodes 20 --gif-dir $(DEMO_RUN)/gifs

## lint, the import-layer contract (pyproject: [tool.importlinter]), the documentation site (strict:
## a broken link or API reference fails), then the full test suite: tests/unit, tests/conformance
## and tests/integration (2 workers, persistent compilation cache in .jax_cache)
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -n 2 --dist worksteal -q

## the inner loop: unit and conformance tests without the slow ones (no training run)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -q -m "not slow" tests/unit tests/conformance

## the documentation site (MkDocs Material + mkdocstrings) into site/; `mkdocs serve` to browse it
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

bench: $(STAMP)
	$(BIN)/python benchmarks/env_throughput.py
	$(BIN)/python benchmarks/train_throughput.py
	$(BIN)/python benchmarks/tag_throughput.py

clean:
	rm -rf $(VENV) .jax_cache .pytest_cache outputs
