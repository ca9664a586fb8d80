"""How a table reads in the book: no Python value on a page.

* :func:`verdict` and :func:`yes_no` — a rule's True/False/None as *holds* / *does not hold* / *inconclusive*
  (:func:`claim_verdict`: *not testable* where a claim's account says so), any other flag as yes / no / —;
  :func:`readable` words every such column of a frame (:func:`flag_columns`).
* :func:`use_table_display` — pandas frames shown as books show tables (:func:`table_html`): no index column,
  numbers rounded, "—" for a missing value, long tables folded into a ``<details>``; a Styler a chapter formats
  itself keeps its formats, its flag columns worded (:func:`styler_html`).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd

VERDICT = {True: "holds", False: "does not hold", None: "inconclusive"}
UNTESTABLE = "not testable"  # how a rule's account begins where its test is ruled out here, in every wing


MISSING = "—"


FOLD_ROWS = 12  # tables longer than this are folded


# Columns whose True/False/None is a rule's verdict (holds / does not hold / inconclusive); any other column of
# True/False/None is a yes/no question (yes / no / —).
VERDICT_COLUMNS = ("holds", "verdict")


def _missing(x: Any) -> bool:
    return x is None or x is pd.NA or x is pd.NaT or (isinstance(x, float) and x != x)


def verdict(holds: Any) -> str:
    """``True`` → "holds", ``False`` → "does not hold", ``None``/NaN → "inconclusive"."""
    if _missing(holds):
        return VERDICT[None]
    return VERDICT[bool(holds)]


def claim_verdict(holds: Any, here: Any) -> str:
    """A claim's verdict word: :func:`verdict` of ``holds``, or *not testable* where it is undecided because the
    test is ruled out here — its ``here`` (this run's account) begins "not testable" (a model
    that cannot learn the skill makes a fine-tuning claim untestable, which is not the same as an open verdict)."""
    return UNTESTABLE if _missing(holds) and str(here).startswith(UNTESTABLE) else verdict(holds)


def yes_no(x: Any) -> str:
    """``True`` → "yes", ``False`` → "no", ``None``/NaN → "—": a flag as a reader reads it."""
    return MISSING if _missing(x) else ("yes" if x else "no")


def _is_flag(col: pd.Series) -> bool:
    """Whether a column holds only True/False (numpy's too) and missing values, at least one of them a flag."""
    seen = [x for x in col if not _missing(x)]
    return bool(seen) and all(isinstance(x, (bool, np.bool_)) for x in seen)


def flag_columns(df: pd.DataFrame) -> dict[str, Any]:
    """Each True/False/None column of ``df`` with the function that words it: :func:`verdict` for the
    :data:`VERDICT_COLUMNS`, :func:`yes_no` for the rest."""
    return {c: verdict if c in VERDICT_COLUMNS else yes_no for c in df.columns if _is_flag(df[c])}


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its True/False/None columns as words (:func:`flag_columns`); the one helper every table a
    reader sees goes through (:func:`table_html`, :func:`styler_html`), so no page shows a Python value."""
    words = flag_columns(df)
    return df.assign(**{c: df[c].map(f) for c, f in words.items()}) if words else df


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and x != x) or x is pd.NA or x is pd.NaT:
        return MISSING
    if isinstance(x, (bool, np.bool_)):
        return yes_no(x)
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 1000):
        return f"{int(x):,}"
    if isinstance(x, float):
        return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}" if abs(x) < 0.001 else f"{x:.3f}".rstrip("0").rstrip(".")
    return str(x)


def table_html(df: pd.DataFrame) -> str:
    """HTML of ``df`` without its index (unless it is a named one), numbers rounded, "—" for missing;
    folded into ``<details>`` past :data:`FOLD_ROWS` rows."""
    d = df
    if d.index.name is not None or isinstance(d.index, pd.MultiIndex):
        d = d.reset_index()
    d = readable(d.astype(object).where(d.notna(), None))
    body = d.style.hide(axis="index").format(_fmt).set_table_attributes('class="dataframe arithmech-table"').to_html()
    if len(d) > FOLD_ROWS:
        return (
            f"<details><summary>table: {len(d)} rows × {d.shape[1]} columns (click to show)</summary>{body}</details>"
        )
    return body


def styler_html(styler) -> str:
    """HTML of a pandas ``Styler`` (a table a chapter formats itself) with its True/False/None columns as words
    (:func:`flag_columns`); the chapter's own formats of the other columns are kept, its object untouched."""
    words = flag_columns(styler.data)
    s = copy.deepcopy(styler)  # format() edits in place; the chapter's object stays as it was
    for c, f in words.items():
        s = s.format(f, subset=[c])
    return s.to_html()


def use_table_display() -> None:
    """Show every pandas DataFrame with :func:`table_html`, and every Styler with :func:`styler_html`, in this
    IPython session (no-op outside one)."""
    try:
        ip = get_ipython()  # type: ignore[name-defined]  # noqa: F821 (IPython's builtin: defined in a kernel only)
    except NameError:
        return
    from pandas.io.formats.style import Styler  # lazy: imports jinja2 (the book extra)

    html = ip.display_formatter.formatters["text/html"]
    html.for_type(pd.DataFrame, table_html)
    html.for_type(Styler, styler_html)
