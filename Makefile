# Two commands do everything on a fresh machine with Python 3.11:
#   make demo   - create .venv, install, generate the embedded sample, build it end to end
#   make test   - create or refresh .venv, run the whole test suite
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo
DEMO_PAPERS ?= 2000
DEMO_SEED ?= 7
# The sample has 15 languages; the paper fed train/IDT from the top 30 of 103. Ten of 15 keeps
# a few small languages out of train so the demo's ODT has papers to evaluate on.
DEMO_TOP_K ?= 10

.PHONY: demo demo-enrich test lint venv clean bench

venv: $(STAMP)

$(STAMP): setup.py
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11'"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,gcp]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/openmsd-build sample --out $(DEMO_DIR)/inputs --papers $(DEMO_PAPERS) --seed $(DEMO_SEED)
	$(BIN)/openmsd-build run --inputs $(DEMO_DIR)/inputs --out $(DEMO_DIR)/build --seed $(DEMO_SEED) --top-k $(DEMO_TOP_K)

# After `make demo`: English summaries against a local STUB server the command starts itself
# ("[stub]" placeholder answers, not a model), run twice: the second run is all cache hits.
demo-enrich: $(STAMP)
	$(BIN)/openmsd-build enrich --out $(DEMO_DIR)/build --demo-stub --n-tokens 64
	$(BIN)/openmsd-build enrich --out $(DEMO_DIR)/build --demo-stub --n-tokens 64
	$(BIN)/openmsd-build evaluate --out $(DEMO_DIR)/build --baseline bm25 --compare-enriched

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

lint: $(STAMP)
	$(BIN)/ruff check openmsd_build pipelines schemas tests bench

# Every stage next to its anchor (inputs generated once under bench/data/), one table,
# bench/results.json; see bench/README.md.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(DEMO_DIR) build *.egg-info
