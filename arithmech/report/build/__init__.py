"""Making the book: from the chapter sources in ``book/`` to the static HTML in ``_build/html``.

:mod:`~arithmech.report.build.book` is the runner (``python -m arithmech book``) and ``setup()``, every chapter's
first call; it runs the build's phases in order: :mod:`~arithmech.report.build.execute` (each chapter executed with
papermill into its executed copy, atomically), :mod:`~arithmech.report.build.generate` (the includes the pages pull
in: the findings box, the parameters table, the rules page) and :mod:`~arithmech.report.build.render` (the render
tree and jupyter-book), then checks that no page reaches the network; :mod:`~arithmech.report.build.plan` decides
which chapters run with which parameters (``_toc.yml``, ``book/book.yml``, ``--set``) and checks them all before any
runs; :mod:`~arithmech.report.build.chapters` holds each chapter's config, the rules its parameters follow;
:mod:`~arithmech.report.build.offline` makes the pages work from ``file://`` (local vega and MathJax, the chart
renderer, the check for external references); :mod:`~arithmech.report.build.bibstyle` is the Sphinx extension for
author–year bibliography labels that ``_config.yml`` names.
"""
