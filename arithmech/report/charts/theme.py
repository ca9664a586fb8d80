"""One altair theme for every chart of the book, and the helpers every chart builder shares.

:func:`theme` (fonts, sizes, the column's width :data:`COLUMN`, colours only from
:mod:`arithmech.report.charts.colours`), :func:`use_theme` to turn it on (every chapter does, through ``setup``),
:func:`fig_title` (titles with the paper's figure numbering, "Fig. 2 — ...", subtitles wrapped) and
:func:`integer_axis` (the axis of a count or an index). The builders take plain DataFrames (the results files)
and return ``alt.Chart`` objects; they compute nothing a test would need to check.
"""

from __future__ import annotations

import textwrap

import altair as alt

from arithmech.report.charts import colours
from arithmech.report.views.table_display import use_table_display

# Charts fit the text column of the book (about 700 px at a 1280 px window): plot areas at most
# COLUMN px wide, legends below the plot rather than beside it.
COLUMN = 460


def theme() -> dict:
    """The altair theme: fonts, sizes, the column's width, and colours from :mod:`arithmech.report.charts.colours` only
    (the default category range is its ``series`` palette: a legend without a role never draws red or green)."""
    ink = colours.ROLES["ink"]
    return {
        "config": {
            "view": {"stroke": None, "continuousWidth": COLUMN, "continuousHeight": 260},
            "font": "Helvetica, Arial, sans-serif",
            "title": {"fontSize": 14, "anchor": "start", "fontWeight": 600, "subtitleColor": ink["muted"]},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "grid": False, "domainColor": ink["axis"]},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "range": {"category": colours.series()},
            "mark": {"color": ink["mark"]},
            "header": {"labelFontSize": 12, "titleFontSize": 12},
        }
    }


def integer_axis(**kwargs) -> alt.Axis:
    """The axis of a count or an index (layer, k components knocked out, optimizer steps, tuned heads): ticks
    on whole numbers only, printed without decimals. A quantitative axis left to itself puts ticks at 0.5,
    1.5, ... when its range is short, which reads as if there were half a layer."""
    return alt.Axis(tickMinStep=1, format="d", **kwargs)


def use_theme() -> None:
    """Register and enable the arithmech theme (altair 5 and 6), and show pandas tables the book's way
    (:func:`arithmech.report.views.table_display.use_table_display`: no index, rounded numbers, "—" for missing)."""
    use_table_display()
    try:
        # altair >= 5.5 types a theme as returning its ThemeConfig TypedDict; ours returns the same shape as a plain
        # dict, which altair < 5.5 (the branch below, without ThemeConfig) needs
        alt.theme.register("arithmech", enable=True)(theme)  # type: ignore[arg-type]
    except AttributeError:  # altair < 5.5
        alt.themes.register("arithmech", theme)
        alt.themes.enable("arithmech")


SUBTITLE_CHARS = 90  # a subtitle line longer than this would widen a chart past the column


def fig_title(fig: str, text: str, subtitle: str | list[str] | None = None) -> alt.TitleParams:
    """``fig_title("Fig. 2", "Path patching ...")`` → a title with the paper's figure number; the subtitle (a line or
    a list of lines) is wrapped at :data:`SUBTITLE_CHARS` characters (Vega-Lite does not wrap titles)."""
    if not subtitle:
        return alt.TitleParams(f"{fig} — {text}")
    lines = [
        w
        for line in ([subtitle] if isinstance(subtitle, str) else subtitle)
        for w in (textwrap.wrap(line, SUBTITLE_CHARS) or [""])
    ]
    return alt.TitleParams(f"{fig} — {text}", subtitle=lines)
