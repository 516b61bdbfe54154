# `make demo`: a venv with cudalint, run on the bundled fixtures.  `make test`: the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

# llama-cpp-python builds from source (about 10 minutes on 2 cores) the first time on a machine;
# pip's wheel cache serves every later install, so the cache must stay on.
$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

demo: $(VENV)/.demo-installed
	@echo "cudalint fixtures/   (findings are the point of the demo)"
	@$(BIN)/cudalint fixtures/ || [ $$? -eq 1 ]

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf $(VENV) .pytest_cache .cudalint_cache
