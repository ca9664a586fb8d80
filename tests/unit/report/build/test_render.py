"""The render tree without tool caches, rendered with this checkout's Sphinx extension
(arithmech.report.build.render)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arithmech.report.build import render


@pytest.mark.parametrize("rel,skipped", [("_static/arithmech.css", False), ("references.bib", False),
                                         (".pytest_cache/README.md", True), ("_static/.ipynb_checkpoints/a.css", True),
                                         ("__pycache__/x.pyc", True), ("_static/node_modules/m/a.js", True),
                                         (".venv/lib/x.py", True), ("_generated/findings.md", True)])
def test_render_tree_leaves_out_tool_caches(rel, skipped):
    """Protects the HTML from tool caches (.pytest_cache once reached _build/html): a file of book/ under a
    dot-folder, __pycache__ or node_modules is not copied into the render tree; static files and the
    bibliography are."""
    assert render._skip(Path(rel)) is skipped


def test_renderer_imports_this_arithmech(monkeypatch):
    """Protects the bibliography style: jupyter-book runs with this package first on PYTHONPATH (the
    extension arithmech.report.build.bibstyle that _config.yml names is this checkout's), the caller's path kept."""
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    path = render._renderer_env()["PYTHONPATH"].split(os.pathsep)
    assert path == [str(Path(render.__file__).resolve().parents[3]), "/elsewhere"]
