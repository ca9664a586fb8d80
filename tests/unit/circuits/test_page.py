"""The Beyond chapter's page (``arithmech/circuits/page.py``) on the shipped SmolLM2 run, read back (never
recomputed): every cell takes the Results and shows the model it was given."""
from __future__ import annotations

from pathlib import Path

import altair as alt
from pandas.io.formats.style import Styler

from arithmech.circuits import page
from arithmech.circuits.config import Beyond, Faithfulness
from arithmech.circuits.result import read_beyond, read_faithfulness
from arithmech.report.build.chapters import Beyond as BeyondChapter

SMOL = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"


def test_every_cell_takes_the_results():
    """Protects the page's one input: given beyond's and faithfulness's Results (read from the shipped files, as
    ``page.runs`` and ``page.faithfulness`` return them), each cell shows its kind of output (a sentence, a Styler,
    charts, Markdown) naming the model, with no folder passed to any cell."""
    P = BeyondChapter(models=["smollm2-135m"], results=str(SMOL.parent))
    runs = [read_beyond(SMOL, Beyond(model_name="smollm2-135m", results=str(SMOL.parent)))]
    faith = [read_faithfulness(SMOL, Faithfulness(model_name="smollm2-135m", results=str(SMOL.parent)))]
    assert page.header(runs, P).startswith("smollm2-135m: 30 layers;")
    assert page.receivers(runs).startswith("smollm2-135m: receivers (")
    for styler in (page.methods(runs), page.misses(runs), page.upstream(runs), page.verdicts(runs)):
        assert isinstance(styler, Styler) and "smollm2-135m" in styler.to_html()
    for charts in (page.scatters(runs), page.circuits(runs), page.faith_charts(faith)):
        assert len(charts) == 1 and isinstance(charts[0], alt.TopLevelMixin)
    assert "smollm2-135m" in page.faith_tables(faith)[0].data
    assert page.faith_claims(faith).data.startswith("* smollm2-135m: ")
