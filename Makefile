PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test bench reliability clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/automatic_recall.py

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

reliability: $(STAMP)
	$(BIN)/python -m pytest -q tests/test_reliability_*.py --reliability-report docs/reliability.md

clean:
	rm -rf $(VENV) build *.egg-info
