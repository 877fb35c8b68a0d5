# hloscope: `make run` and `make test` set everything up from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test corpus forms docs smoke-jax check lint typecheck imports format bench bench-quick fuzz clean device-check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The tests compile for TPUs and GPUs without them (--for): the `tpu` and `cuda12` extras
# (libtpu, JAX's CUDA plugin and ptxas), pinned to the JAX and jaxlib installed in .venv,
# with a stamp of their own so that `make run` stays as light as it was. About 1.5 GB.
TEST_STAMP := $(VENV)/.test-extras-stamp

$(TEST_STAMP): $(STAMP)
	@v=$$($(BIN)/python -c "import importlib.metadata as m; print(m.version('jaxlib'))"); \
	j=$$($(BIN)/python -c "import importlib.metadata as m; print(m.version('jax'))"); \
	$(BIN)/python -m pip install --quiet "jax[tpu]==$$j" "jax-cuda12-plugin==$$v" \
		"jax-cuda12-pjrt==$$v" "nvidia-cuda-nvcc-cu12>=12.1"
	touch $(TEST_STAMP)

# The main job on a bundled sample: the overview of a jitted MLP whose layers are
# nested jits.
run: $(STAMP)
	$(BIN)/hloscope inspect samples/nested_jits.py:mlp --args samples/nested_jits.py:example_args --print

# The suite reads every 4th file of ../shared/corpus (a fixed sample); `make corpus`
# reads every file (about 10 minutes on 2 cores).
test: $(TEST_STAMP)
	$(BIN)/python -m pytest

corpus: $(STAMP)
	HLOSCOPE_CORPUS_SAMPLE=1 $(BIN)/python -m pytest tests/corpus

# Every optimized HLO module of ../shared/corpus read converted and in XLA's own form
# (HLOSCOPE_HLO_FORM=xla): inspect, placement and fusions must give the same JSON
# (tests/forms_support.py writes the representation-only differences one way); it
# prints how many agree. The suite reads a seeded sample of 4.
forms: $(STAMP)
	HLOSCOPE_FORMS_SAMPLE=all $(BIN)/python -m pytest tests/corpus/test_forms_corpus.py -s

# The documentation site (mkdocs.yml, docs/) into site/, strict: a broken link, a page
# missing from the nav or a docstring mkdocstrings cannot read fails it. Its tools are
# the `docs` extra, installed into .venv with their own stamp, so that `make test` does
# not install them. mkdocstrings reads the API's docstrings from src/ (mkdocs.yml).
DOCS_STAMP := $(VENV)/.docs-installed-stamp

$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The smoke tier on the older JAX releases hloscope supports (the full suite runs on
# the newest, in .venv): for each release, its own environment (.venv-jax-0.8.3, ...,
# made with uv from PyPI), JAX installed first and hloscope after it, which must keep
# that JAX; then the samples through every command (the goldens, byte for byte where
# the output does not depend on the release, tests/cli/version_dependent.txt says how
# the rest are checked), the private-API checks, the compile recorder, and the corpus
# sweep on every 8th file (skipped, saying so, without ../shared/corpus).
# SMOKE_JAX="0.9.2" to run one release. About 45 s a release on 2 cores, and uv's installs.
SMOKE_JAX ?= 0.8.3 0.9.2
UV := .venv-uv/bin/uv
SMOKE_TESTS := tests/house tests/analyses/test_jax_releases.py \
	tests/analyses/test_xla_buffers.py tests/cli/test_every_command.py \
	tests/cli/test_cli_compiles.py tests/cli/test_startup.py \
	tests/cli/test_golden.py::test_sample_output_is_unchanged \
	tests/cli/test_golden.py::test_the_version_dependent_cases_are_cases \
	tests/corpus/test_corpus.py::test_corpus_sweep

$(UV):
	$(PYTHON) -m venv .venv-uv
	.venv-uv/bin/python -m pip install --quiet uv

.venv-jax-%/.installed-stamp: pyproject.toml | $(UV)
	rm -rf .venv-jax-$*
	$(UV) venv --quiet --python $(PYTHON) .venv-jax-$*
	$(UV) pip install --quiet --python .venv-jax-$*/bin/python "jax==$*" "jaxlib==$*"
	$(UV) pip install --quiet --python .venv-jax-$*/bin/python -e '.[dev]'
	.venv-jax-$*/bin/python -c "import importlib.metadata as m, sys; \
		found = (m.version('jax'), m.version('jaxlib')); \
		sys.exit(None if found == ('$*', '$*') else f'installing hloscope replaced JAX $* with {found}')"
	touch $@

smoke-jax: $(foreach v,$(SMOKE_JAX),.venv-jax-$(v)/.installed-stamp)
	@set -e; for v in $(SMOKE_JAX); do \
		echo "== smoke tier on JAX $$v"; \
		HLOSCOPE_CORPUS_SAMPLE=8 .venv-jax-$$v/bin/python -m pytest -p no:cacheprovider \
			$(SMOKE_TESTS); \
	done

# Longer than `make test`: 2,000 fuzzed inputs per loader (new ones each run, more
# seeds from the corpus), the corpus sweep with every command loading each file
# itself, 400 new pytrees of every leaf kind JAX accepts (keys, float0, scalars,
# ml_dtypes, shardings) checked against JAX's parameter map, and every HLO and MLIR
# file of the corpus compiled through the command line and the Python API, watched
# from outside (containment: about an hour on 2 cores). FUZZ_EXAMPLES=N to change the
# counts (the leaf kinds take at most 400).
FUZZ_EXAMPLES ?= 2000
fuzz: $(STAMP)
	HLOSCOPE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HLOSCOPE_SWEEP_UNCACHED=1 \
		HLOSCOPE_CONTAINMENT_SAMPLE=all \
		$(BIN)/python -m pytest tests/cli/test_fuzz.py tests/corpus/test_corpus_commands.py \
		tests/api/test_leaf_kinds.py tests/corpus/test_containment_corpus.py -s

# Speed and memory against baselines measured in the same run (bench/run.py), and
# against the hloscope of git revision AGAINST (checked out under bench/cache/trees,
# run on the same packages, interleaved with this tree's runs; AGAINST= to skip it).
AGAINST ?= 059e836
bench: $(STAMP)
	$(BIN)/python bench/run.py --against "$(AGAINST)"

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick --against "$(AGAINST)"

# On a machine with a GPU: the samples compiled for the GPU and for its deviceless
# spec (--for gpu:h100 on an H100) side by side, and `hloscope profile` against JAX's
# own profiler trace; the figures go to bench/cache/device_check.md (bench/device_check.py
# says how). Without a GPU it says so in one line and exits 0; `$(BIN)/python
# bench/device_check.py --dry-run` runs the same steps on the CPU.
device-check: $(STAMP)
	$(BIN)/python bench/device_check.py

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
	rm -rf $(VENV) .venv-jax-* .venv-uv build dist site src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
