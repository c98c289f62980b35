PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
LVENV := .venv-litellm
LBIN := $(LVENV)/bin
# Separate install stamps: `make demo` needs only the default install; `make test` adds [all,dev].
BASE_STAMP := $(VENV)/.installed-base
TEST_STAMP := $(VENV)/.installed-test
# litellm pins openai<3 and pydantic-ai-slim[openai] needs openai>=3.31: the litellm path gets its own venv.
LITELLM_STAMP := $(LVENV)/.installed
PYTEST := python -m pytest -q -p no:cacheprovider
# Wheels of the default install + pydantic-ai-slim[openai], so tests/test_install.py installs offline.
WHEELHOUSE := .wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.done

export LITELLM_LOCAL_MODEL_COST_MAP := True
# In CI the PostgreSQL tests must fail loudly when no server can be started, never skip.
ifdef CI
export AGENT_MEMORY_REQUIRE_PG ?= 1
endif

.PHONY: install install-test wheelhouse install-litellm demo lint test test-main test-litellm test-model bench reliability clean

$(BASE_STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e .
	rm -f $(TEST_STAMP)
	touch $@

$(TEST_STAMP): $(BASE_STAMP)
	$(BIN)/pip install -q -c constraints.txt -e '.[all,dev]'
	touch $@

$(LITELLM_STAMP): pyproject.toml constraints-litellm.txt
	$(PY) -m venv $(LVENV)
	$(LBIN)/pip install -q -c constraints-litellm.txt -e '.[litellm,dev]'
	touch $@

$(WHEELHOUSE_STAMP): pyproject.toml constraints.txt $(BASE_STAMP)
	$(BIN)/pip download -q -d $(WHEELHOUSE) -c constraints.txt '.[openai]'
	touch $@

install: $(BASE_STAMP)
install-test: $(TEST_STAMP)
install-litellm: $(LITELLM_STAMP)
wheelhouse: $(WHEELHOUSE_STAMP)

demo: $(BASE_STAMP)
	$(BIN)/python examples/automatic_recall.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check agent_memory tests benchmarks
	$(BIN)/ruff format --check agent_memory tests
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini  # the tests, not strict (see that file)

test-main: $(TEST_STAMP) $(WHEELHOUSE_STAMP)
	AGENT_MEMORY_WHEELHOUSE=$(WHEELHOUSE) $(BIN)/$(PYTEST)

# Files holding tests marked `litellm` (named, so that other files' optional imports need not exist there).
LITELLM_TESTS ?= tests/test_litellm_model.py tests/test_profiles.py tests/test_embeddings.py

test-litellm: $(LITELLM_STAMP)
	$(LBIN)/$(PYTEST) -m litellm $(LITELLM_TESTS)

test: lint test-main test-litellm

# A few real worker turns on a model server you run (docs/local-models.md); never part of `make test` or CI.
# make test-model AGENT_MEMORY_TEST_MODEL_URL=http://127.0.0.1:8080/v1 [AGENT_MEMORY_TEST_MODEL=name]
test-model: $(TEST_STAMP)
	@test -n "$(AGENT_MEMORY_TEST_MODEL_URL)" || { echo "set AGENT_MEMORY_TEST_MODEL_URL to an OpenAI-compatible server's /v1 URL"; exit 2; }
	AGENT_MEMORY_TEST_MODEL_URL=$(AGENT_MEMORY_TEST_MODEL_URL) $(BIN)/$(PYTEST) -m model tests/test_real_model.py

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/run_all.py

reliability: $(TEST_STAMP)
	$(BIN)/$(PYTEST) tests/test_reliability_*.py --reliability-report docs/reliability.md

clean:
	rm -rf $(VENV) $(LVENV) $(WHEELHOUSE) build *.egg-info
