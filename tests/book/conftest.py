"""Fixtures of the book tier: the real book's HTML, built once per session."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The real book's HTML, built once per session by the book runner (``python -m arithmech book``).

    Built from a temporary copy of ``_config.yml``, ``_toc.yml`` and ``book/`` with
    ``--skip-execute``: it renders the chapter notebooks as they are (executed by the runner
    before commit, or by ``.ci/run`` before the tests), and never rewrites the repository's
    files. ``ARITHMECH_BOOK_HTML=<dir>`` points the tests at an already built ``_build/html``
    instead. Returns ``(root, html_dir)``.
    """
    given = os.environ.get("ARITHMECH_BOOK_HTML")
    if given:
        return REPO, Path(given)
    from arithmech.report.book import build
    root = tmp_path_factory.mktemp("book")
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO / f, root / f)
    shutil.copytree(REPO / "book", root / "book", ignore=shutil.ignore_patterns("vendor", ".ipynb_checkpoints"))
    build(root, skip_execute=True)
    return root, root / "_build" / "html"
