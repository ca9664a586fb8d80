"""Fixtures of the book tier: the real book's HTML, rendered once per session from the executed chapters."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class Built(tuple):
    """``(root, html_dir)``; ``.status_before``: ``git status --porcelain`` just before the build (``None`` when
    no build ran here or this is not a git work tree)."""
    status_before: str | None = None


def git_status(root: Path) -> str | None:
    """``git status --porcelain`` of ``root`` (untracked files included), or ``None`` outside a git work tree."""
    r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True,
                       text=True)
    return r.stdout if r.returncode == 0 else None


Built.git_status = staticmethod(git_status)       # for the tests (a second conftest module is not importable)


@pytest.fixture(scope="session")
def book_executed() -> bool:
    """Whether every chapter has its executed copy in ``_build/executed/`` (``make book`` ran, as ``.ci/run`` does
    before the tests): the real book's HTML can then be rendered without executing a chapter."""
    from arithmech.report.build.execute import executed
    from arithmech.report.build.plan import chapters
    return all(executed(REPO, p).exists() for p in chapters(REPO))


@pytest.fixture(scope="session")
def built_book(book_executed):
    """The real book, built by the book runner (``python -m arithmech book``) in the repository itself.

    A build writes only ignored paths (``_build/``, ``book/_generated/``, ``results/<model>/``), so it runs
    here, not in a copy. When every chapter has its executed copy in ``_build/executed/`` (``make book``
    ran, as ``.ci/run`` does before the tests), the HTML is rendered from those (``--skip-execute``);
    otherwise the chapters are executed first (about 8 minutes on 2 cores). ``ARITHMECH_BOOK_HTML=<dir>``
    points the tests at an already built ``_build/html`` of this repository instead.
    Returns ``(root, html_dir)`` (a :class:`Built`).
    """
    given = os.environ.get("ARITHMECH_BOOK_HTML")
    if given:
        return Built((REPO, Path(given)))
    from arithmech.report.build.book import build
    before = git_status(REPO)
    build(REPO, skip_execute=book_executed)
    out = Built((REPO, REPO / "_build" / "html"))
    out.status_before = before
    return out
