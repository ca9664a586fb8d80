"""The chart library: one colour per meaning, one theme, and the book's figures, each from a results file.

:mod:`~arithmech.report.charts.colours` maps what a colour encodes to its colours (no chart writes a colour
literal); :mod:`~arithmech.report.charts.plots` is the altair theme (``use_theme``), the shared axis and title
helpers and the builders several chapters share (effect heatmaps, attention roles, MLP projections, fine-tuning
bars); the other modules each draw one figure: :mod:`~arithmech.report.charts.knockout_chart` (Fig. 3 with its
random band and floors), :mod:`~arithmech.report.charts.transfer_chart` (Fig. 4's top-5 tokens before and after
the knockout), :mod:`~arithmech.report.charts.faithfulness_chart` (recovery curves against their random bands),
:mod:`~arithmech.report.charts.attention_control` (each key head's role mass beside the non-key heads),
:mod:`~arithmech.report.charts.stability_views` (key-head stability over sample sizes and seeds) and
:mod:`~arithmech.report.charts.pipeline` (Fig. 1, the paper's pipeline as the book's chapters). A builder takes
frames (or, for Fig. 1, the chapter sources) and returns a chart; the verdicts it shows come from its files.
"""
