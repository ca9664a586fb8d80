"""The chart library: one colour per meaning, one theme, and the book's figures, each from a results file.

:mod:`~arithmech.report.charts.colours` maps what a colour encodes to its colours (no chart writes a colour
literal); :mod:`~arithmech.report.charts.theme` is the altair theme (``use_theme``) and the shared axis and title
helpers; the builders several chapters share draw one quantity each: :mod:`~arithmech.report.charts.effect_chart`
(the path-patching effect heatmaps, Fig. 2 / 15), :mod:`~arithmech.report.charts.attention_chart` (attention by
token role and the heat strips, Fig. 5 / 7), :mod:`~arithmech.report.charts.mlp_chart` (the MLPs' projections on W_U
and their top numbers, Fig. 6 / 17) and :mod:`~arithmech.report.charts.accuracy_chart` (accuracy per template, per
fine-tuning setting and per tuned heads, Fig. 8 / 10, Tables 1, 2 and 5); the other modules each draw one figure:
:mod:`~arithmech.identify.charts` (Fig. 3 with its random band and floors),
:mod:`~arithmech.identify.transfer_chart` (Fig. 4's top-5 tokens before and after the knockout),
:mod:`~arithmech.circuits.charts` (faithfulness: recovery curves against their random bands),
:mod:`~arithmech.report.charts.attention_control` (each key head's role mass beside the non-key heads),
:mod:`~arithmech.identify.stability_charts` (key-head stability over sample sizes and seeds) and
:mod:`~arithmech.report.charts.pipeline` (Fig. 1, the paper's pipeline as the book's chapters). A builder takes
frames (or, for Fig. 1, the chapter sources) and returns a chart; the verdicts it shows come from its files.
"""
