"""Making the book: from the chapter sources in ``book/`` to the static HTML in ``_build/html``.

:mod:`~arithmech.report.build.book` is the runner (``python -m arithmech book``: execute each chapter with
papermill, write the generated includes, render with jupyter-book, check that no page reaches the network) and
``setup()``, every chapter's first call; :mod:`~arithmech.report.build.plan` decides which chapters run with which
parameters (``_toc.yml``, ``book/book.yml``, ``--set``) and checks them all before any runs;
:mod:`~arithmech.report.build.chapters` holds each chapter's config, the rules its parameters follow;
:mod:`~arithmech.report.build.offline` makes the pages work from ``file://`` (local vega and MathJax, the chart
renderer, the check for external references); :mod:`~arithmech.report.build.bibstyle` is the Sphinx extension
for author–year bibliography labels that ``_config.yml`` names.
"""
