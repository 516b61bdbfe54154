# `make demo`: a venv with cudalint, run on the bundled fixtures.  `make test`: the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean neovim catalogue

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

# tests/test_neovim.py drives a real editor: Debian's neovim, installed here when missing (as root,
# on CI's clean machine); with CUDALINT_REQUIRE_NVIM=1 a missing nvim fails that test instead of skipping it
neovim:
	@command -v nvim >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q neovim; } || \
		echo "make: neovim is missing and cannot be installed here; tests/test_neovim.py will fail"

test: $(VENV)/.test-installed neovim chromium
	CUDALINT_REQUIRE_NVIM=1 $(BIN)/python -m pytest -q

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/lsp_bench.py

# rules/catalogue-parsed.json: the catalogue's TOML parsed ahead of time (cudalint.core.catalogue_pack);
# tests/test_catalogue.py fails until it is made again after an edit of rules/catalogue/*.toml
catalogue: $(VENV)/.demo-installed
	$(BIN)/python -m cudalint.core.catalogue_pack

clean:
	rm -rf $(VENV) .pytest_cache .cudalint_cache

# The timeline test (tests/test_trace_html.py) opens the page in a real browser: Debian's chromium,
# installed here when missing and we may (root, apt-get); elsewhere that test is skipped.
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "chromium not installed: the timeline's browser test will be skipped"; }
