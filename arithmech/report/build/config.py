"""The book command's config (``python -m arithmech book``): which chapters run, their parameters, whether the
HTML is built."""

from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import Config, option


@dataclass(frozen=True)
class Book(Config):
    """Execute every chapter with papermill (atomically) and build the HTML book."""

    only: str | None = option(None, "execute only this chapter (file stem, e.g. identify)")
    set: tuple[str, ...] | None = option(
        None,
        "KEY=VALUE: a parameter for every chapter that has it (model_name=...) or "
        "for one (identify.n_samples=32); repeat the flag for several",
        repeat=True,
    )
    skip_execute: bool = option(False, "render the executed copies that exist; execute nothing")
    html: bool = option(True, "run jupyter-book after executing")
    root: str = option(".", "the book's root (holds _config.yml, _toc.yml)")
    config: str | None = option(None, "parameter file relative to the root (default: book/book.yml)")
