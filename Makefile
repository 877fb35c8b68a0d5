# hloscope: `make run` and `make test` set everything up from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test check lint typecheck imports format bench bench-quick fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job on a bundled sample: the overview of a jitted MLP whose layers are
# nested jits.
run: $(STAMP)
	$(BIN)/hloscope inspect samples/nested_jits.py:mlp --args samples/nested_jits.py:example_args --print

test: $(STAMP)
	$(BIN)/python -m pytest

# Longer than `make test`: 2,000 fuzzed inputs per loader (new ones each run, more
# seeds from the corpus), the corpus sweep with every command loading each file
# itself, and 400 new pytrees of every leaf kind JAX accepts (keys, float0, scalars,
# ml_dtypes, shardings) checked against JAX's parameter map. FUZZ_EXAMPLES=N to
# change the counts (the leaf kinds take at most 400).
FUZZ_EXAMPLES ?= 2000
fuzz: $(STAMP)
	HLOSCOPE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HLOSCOPE_SWEEP_UNCACHED=1 \
		$(BIN)/python -m pytest tests/cli/test_fuzz.py tests/corpus/test_corpus_commands.py \
		tests/api/test_leaf_kinds.py -s

# Speed and memory against baselines measured in the same run (bench/run.py).
bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick

lint: $(STAMP)
	$(BIN)/ruff check src tests samples bench
	$(BIN)/ruff format --check src tests samples bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Which modules may import which: the contracts in pyproject.toml ([tool.importlinter]).
imports: $(STAMP)
	$(BIN)/lint-imports

check: lint typecheck imports test

format: $(STAMP)
	$(BIN)/ruff check --fix src tests samples bench
	$(BIN)/ruff format src tests samples bench

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
