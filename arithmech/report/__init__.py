"""The book: what turns a results folder into the pages a reader sees, in three rooms.

* :mod:`arithmech.report.build` — making the book: the chapter runner (``python -m arithmech book``), the plan
  of which chapters run with which parameters, each chapter's config, the offline HTML and the bibliography
  style. It knows how a book is built, not what a page shows.
* :mod:`arithmech.report.charts` — the chart library: one colour per meaning, one altair theme, and the
  figure builders (Fig. 1, Fig. 3 with its controls, Fig. 4, Fig. 5's control, the faithfulness and stability
  charts), each drawing what a results file holds.
* :mod:`arithmech.report.views` — what a chapter calls on its page: its tables, charts and sentences read from
  ``results/<model>/`` and the claims table (findings, counts, Table 1, the Beyond chapter's circuit, the
  Explorer views), and the prompt explorer (ipywidgets in Jupyter, the live explorer in the browser).

A build module may call a view (the introduction's findings box) or a chart (Fig. 1); a view draws with the
charts; a chart calls no build module and one view only: :func:`arithmech.report.charts.theme.use_theme` turns on
the book's table display too (:func:`arithmech.report.views.table_display.use_table_display`).
"""
