"""What a chapter calls on its page: its tables, charts and sentences, read from the results folder.

:mod:`~arithmech.report.views.pages` is what every page shares (the findings box, a chapter's last cell, the
claims' lines and verdict words, the book's table display); :mod:`~arithmech.report.views.counts` the counts
several pages quote (key heads, Explorer prompts) and :mod:`~arithmech.report.views.scope` the introduction's
scope box. Table 1: :mod:`~arithmech.report.views.tables` (the paper's fine-tuning tables and ours in their
shape), :mod:`~arithmech.report.views.table1` (what an arms run decided and cost),
:mod:`~arithmech.report.views.curves` (Table 1 over whole learning-rate curves) and
:mod:`~arithmech.report.views.tradeoff` (its trade-off and arms charts). One chapter each:
:mod:`~arithmech.report.views.fewshot` (the SmolLM2 appendix's zero- and few-shot runs side by side),
:mod:`~arithmech.report.views.circuit` (the Beyond step's sender → receiver → logits graph and the chapter's rule
on it), :mod:`~arithmech.report.views.beyond_views` (the Beyond chapter, one row or chart per model) and
:mod:`~arithmech.report.views.explorer_views` (the static prompt explorer, all its data in one chart). The prompt
explorer that runs a model: :mod:`~arithmech.report.views.widgets` (ipywidgets in Jupyter) and
:mod:`~arithmech.report.views.live_explorer` with its JavaScript in ``live/`` (the embedded model in the browser).
"""
