"""What a chapter calls on its page: its tables, charts and sentences, read from the results folder.

:mod:`~arithmech.report.views.pages` is what every page shares (a chapter's last cell, the claims' lines, the
answer-token sentence), :mod:`~arithmech.report.views.table_display` how a table reads (verdict words, the book's
table display) and :mod:`~arithmech.report.views.findings` the introduction's findings box and the rules page;
:mod:`~arithmech.report.views.counts` the counts several pages quote (key heads, Explorer prompts) and
:mod:`~arithmech.report.views.scope` the introduction's scope box. Table 1: :mod:`~arithmech.report.views.tables`
(the paper's fine-tuning tables and ours in their shape), :mod:`~arithmech.table1.views` (what an arms run
decided and cost), :mod:`~arithmech.table1.curve_views` (Table 1 over whole learning-rate curves) and
:mod:`~arithmech.table1.charts` (its trade-off, arms and curve charts). Per chapter, ``<chapter>_page`` (one call
per cell; the Identify chapter's knockout sections in :mod:`~arithmech.identify.knockout_page`; the Beyond chapter's
page, tables and circuit graph in :mod:`arithmech.circuits`; the
SmolLM2 appendix's ``Page`` joined from :mod:`~arithmech.report.views.real_llm_base`, ``real_llm_identify_page``,
``real_llm_analyze_page`` and ``real_llm_table1_page``), and for one chapter each:
:mod:`~arithmech.report.views.fewshot` (the SmolLM2 appendix's zero- and few-shot runs side by side) and
:mod:`~arithmech.report.views.explorer_views` (the static prompt explorer, all its data in one chart). The prompt
explorer that runs a model: :mod:`~arithmech.report.views.widgets` (ipywidgets in Jupyter) and
:mod:`~arithmech.report.views.live_explorer` with its JavaScript in ``live/`` (the embedded model in the browser).
"""
