"""Parity tests of ``arithmech/methods/ablation/tables.py``."""
from __future__ import annotations

import pandas as pd
import pytest

from arithmech.methods.ablation.tables import sanity_readable, sanity_table


def test_sanity_table_reads_the_floor_from_the_rows():
    """Protects the sanity table's numbers: the run's floor is the higher of the majority (0.6) and the conditioned
    floor (0.4), with its interval; a task passing its control says so (numbers typed here, the floor computed)."""
    base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
            "mean_source": "template 256"}
    vals = {"nothing-out": (1.0, 0.98, 1.0), "all-heads-out": (0.8, 0.55, 0.85), "all-mlps-out": (0.5, 0.4, 0.6),
            "x_c": (0.3, 0.25, 0.36), "majority-floor": (0.6, 0.54, 0.66), "conditioned-floor": (0.4, 0.34, 0.46)}
    at = sanity_table(pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": lo, "ci_high": hi}
                                    for o, (a, lo, hi) in vals.items()])).iloc[0]
    assert at["floor"] == 0.6 and at["control"] == "passes"            # the majority floor, the higher here
    assert at["floor ci"] == (0.54, 0.66) and at["all heads out ci"] == (0.55, 0.85)


def test_a_knockout_file_without_a_sanity_row_is_refused_naming_the_re_run():
    """Protects the end of the backward-compatibility branch: a knockout.csv made before the conditioned
    floor was measured (no ``conditioned-floor`` row; every shipped and fresh file has one) is one error naming the
    re-run, not a table whose floor silently falls back to the majority floor and shows the conditioned one as NaN."""
    base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
            "mean_source": "template 256"}
    vals = {"nothing-out": 1.0, "all-heads-out": 0.8, "all-mlps-out": 0.5, "x_c": 0.3, "majority-floor": 0.6}
    ko = pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": a - 0.05, "ci_high": a + 0.05}
                       for o, a in vals.items()])
    with pytest.raises(ValueError, match="no conditioned-floor row of task t at end .*re-run python -m arithmech "
                                         "identify --overwrite"):
        sanity_table(ko)


def test_the_floor_is_the_higher_of_the_two_and_the_readable_table_decides_nothing():
    """Protects the floor (the higher of the majority floor, 0.6, and the conditioned floor, 0.8 here), the control
    said in words, and the readable table's lack of a verdict column: the claim ablation-removes-information decides
    against the floor over distinct problems, and the table's own "yes: reaches the floor" (an older rule, against
    the run's floor) once stood beside the claim's "inconclusive" on the same prompts."""
    base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
            "mean_source": "template 256"}
    vals = {"nothing-out": (1.0, 0.98, 1.0), "all-heads-out": (0.8, 0.75, 0.85), "all-mlps-out": (0.5, 0.4, 0.6),
            "x_c": (0.3, 0.25, 0.36), "majority-floor": (0.6, 0.54, 0.66), "conditioned-floor": (0.8, 0.75, 0.85)}
    ko = pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": lo, "ci_high": hi} for o, (a, lo, hi) in vals.items()])
    row = sanity_table(ko).iloc[0]
    assert row["floor"] == 0.8 and row["conditioned floor"] == 0.8 and row["majority floor"] == 0.6
    failed = sanity_table(ko, {"failed": {"t": "conditioned floor 80% >= 50%"}}).iloc[0]
    assert failed["control"] == "fails: conditioned floor 80% >= 50%"
    shown = sanity_readable(pd.DataFrame([row, failed]))
    assert shown["control"].tolist() == ["passes", "fails: conditioned floor 80% >= 50%"]
    assert shown["run's floor (95% CI)"].tolist() == ["80% [75%, 85%]"] * 2
    assert not [c for c in shown.columns if "removes" in c or "reaches" in c]
    assert not shown.map(lambda v: isinstance(v, bool) or v is None).any().any()   # words, never True/False/None


def _rows(heads, floor=(0.2, 0.15, 0.25), clusters=None):
    base = {"task": "t", "positions": "end", "kind": "sanity", "seed": -1, "k": 0, "n": 256, "correct": 0,
            "mean_source": "pool"}
    vals = {"nothing-out": (1.0, 0.98, 1.0), "all-heads-out": heads, "all-mlps-out": (0.5, 0.4, 0.6),
            "x_c": (0.0, 0.0, 0.02), "majority-floor": floor, "conditioned-floor": (0.0, 0.0, 0.01)}
    d = pd.DataFrame([{**base, "order": o, "accuracy": a, "ci_low": lo, "ci_high": hi} for o, (a, lo, hi) in vals.items()])
    return d if clusters is None else d.assign(n_clusters=clusters)


def test_the_sanity_table_shows_the_uniform_guess():
    """Protects the uniform guess beside the sanity rows (the lower side of the claim's two-sided rule): given, it is
    shown as a percentage; a frame alone has none and says so."""
    shown = sanity_readable(pd.DataFrame([sanity_table(_rows((0.01, 0.0, 0.03)), chance=0.1).iloc[0]]))
    assert shown["uniform guess"].tolist() == ["10.0%"]
    assert sanity_readable(pd.DataFrame([sanity_table(_rows((0.01, 0.0, 0.03))).iloc[0]]))["uniform guess"].iloc[0] \
        == "not given"


def test_the_sanity_table_reads_the_floor_and_the_ablation_over_problem_clusters():
    """Protects the floor read as an interval over the problem clusters: 128 prompts from 25 problems, the majority
    floor 26 % (33 of 128) has the Wilson interval of 6.4 of 25, [12 %, 46 %] (an independent computation:
    scipy-free, Wilson's formula here); every head out at 30 % over prompts gets the interval of 25 clusters too."""
    import math
    def wilson(p, n, z=1.959964):
        c, h = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return c - h, c + h
    row = sanity_table(_rows((0.3, 0.23, 0.39), floor=(33 / 128, 0.19, 0.34), clusters=25), chance=0.1).iloc[0]
    assert row["floor ci"] == pytest.approx(wilson(33 / 128, 25)) and row["intervals"] == "Wilson over 25 problem clusters"
    assert row["all heads out ci"] == pytest.approx(wilson(0.3, 25))


def test_the_readable_sanity_table_names_its_intervals_under_it():
    """Protects the identify page's width (the book's page check found the table scrolling sideways once it carried
    an ``intervals`` column): the readable table has no such column, its percentages are whole, and
    :func:`sanity_intervals` names what the intervals are over — problem clusters where the file counts them."""
    from arithmech.methods.ablation.tables import sanity_intervals
    t = sanity_table(_rows((0.12, 0.08, 0.16), clusters=25), chance=0.1)
    shown = sanity_readable(t)
    assert "intervals" not in shown.columns and shown["nothing out (95% CI)"].str.fullmatch(r"\d+% \[\d+%, \d+%\]").all()
    assert "problem clusters" in sanity_intervals(t) and sanity_intervals(sanity_table(_rows((0.12, 0.08, 0.16)))) \
        == "Wilson over prompts"


def test_the_line_under_the_sanity_table_is_one_sentence_for_every_page():
    """Protects the two pages that print the sanity table (the embedded model's Identify and SmolLM2's) from
    drifting apart again: :func:`sanity_note` names the intervals, the means' source and that the claim decides."""
    from arithmech.methods.ablation.tables import DECIDED_BY, sanity_note
    t = sanity_table(_rows((0.12, 0.08, 0.16), clusters=25), chance=0.1)
    assert sanity_note(t) == f"95% intervals: Wilson over 25 problem clusters. Means: {t.mean_source[0]}. {DECIDED_BY}"
