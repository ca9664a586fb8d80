"""The real book's HTML (``built_book``, rendered once from the committed notebooks): every page is
there and self-contained, and headless Chromium, opening each page from ``file://`` with the network
cut, finds its charts drawn, its math rendered, no request leaving the machine and no error logged.
A negative control shows that the browser harness does see requests. Marked ``slow``."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from browser import READER_JS, Browser, require_browser

from arithmech.report import book, offline

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_browser_check_sees_network_requests(tmp_path):
    """Protects the browser harness from passing vacuously (negative control): a page that loads a remote
    script and image is reported (so an empty request list in the other tests means something)."""
    page = tmp_path / "remote.html"
    page.write_text('<html><body><script src="https://cdn.example.invalid/x.js"></script>'
                    '<img src="http://example.invalid/a.png"></body></html>')
    require_browser()
    with Browser() as b:
        r = b.open(page, settle=5)
    assert any("cdn.example.invalid" in u for u in r.requests)
    assert any("example.invalid/a.png" in u for u in r.requests)



def test_browser_check_sees_errors_and_undrawn_charts(tmp_path):
    """Protects the browser harness from passing vacuously (negative control): a console error, a failed
    console.assert and an uncaught exception are each reported, and an empty chart container counts as
    not drawn (so empty error lists and full chart counts in the other tests mean something)."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><script>console.error("boom-console"); console.assert(false, "boom-assert");'
                    '</script><script>throw new Error("boom-exception")</script>'
                    '<div class="arithmech-chart"></div></body></html>')
    require_browser()
    with Browser() as b:
        r = b.open(page, settle=3)
    for word in ("boom-console", "boom-assert", "boom-exception"):
        assert sum(word in e for e in r.errors) == 1, (word, r.errors)
    assert r.requests == [] and r.counts["charts"] == 1 and r.counts["drawn"] == 0

def _chapters() -> list[Path]:
    return book.toc_files(REPO)


def test_every_toc_page_is_built(built_book):
    """Protects: every file of _toc.yml has its HTML page, and the build loads nothing from outside itself."""
    _, html = built_book
    for p in _chapters():
        assert (html / p.with_suffix(".html")).exists(), p
    assert offline.external_references(html) == []


def test_chapter_pages_draw_all_charts_offline(built_book):
    """Protects: each chapter page, opened from file:// in Chromium with the network cut, draws as many charts
    as its notebook has altair outputs, renders its math, sends nothing off the machine and logs
    no console error."""
    root, html = built_book
    failures = []
    require_browser()
    with Browser() as b:
        for p in _chapters():
            expected = vega_outputs = 0
            if p.suffix == ".ipynb":
                nb = nbformat.read(root / p, as_version=4)
                outs = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
                expected = sum(offline.CHART_CLASS in "".join(d.get("text/html", "")) for d in outs)
                vega_outputs = sum(any(k.startswith("application/vnd.vegalite") for k in d) for d in outs)
            if vega_outputs != expected:       # an altair output without the offline HTML: setup() missing
                failures.append((str(p), f"{vega_outputs} altair outputs, {expected} with offline HTML"))
            r = b.open(html / p.with_suffix(".html"), settle=60)
            c = r.counts
            if r.requests or r.errors or c["charts"] != expected or c["drawn"] != expected \
                    or (c["math"] and not c["mathjax"]):
                failures.append((str(p), c, r.requests[:3], r.errors[:3]))
    assert failures == []


# A Python float repr with more than 6 significant digits (0.9944823980331421, 4111104.000 is not one
# but 4111104.0001 is); a tqdm bar ("37%|███▋ |"); a traceback; the libgomp warning.
LONG_FLOAT = re.compile(r"(?<![\w.])(?:0\.0*|[1-9]\d*\.)\d*")
TQDM = re.compile(r"\d+%\|")


def _long_floats(text: str) -> list[str]:
    return [m for m in LONG_FLOAT.findall(text) if len(m.replace(".", "").lstrip("0").rstrip("0")) > 6]


def test_long_float_rule():
    """Protects the reader check from passing vacuously: a 16-digit repr is caught, formatted numbers are not."""
    assert _long_floats("p = 0.9944823980331421, n = 256") == ["0.9944823980331421"]
    assert _long_floats("12.5% of 4,111,104 (0.0031, 123456.0)") == []


def test_pages_read_as_a_book(built_book):
    """Protects what a reader sees at 1280 px, on every page: the title is the first thing in the article; no
    output shows libgomp's warning, a traceback, a tqdm bar or a float repr with more than 6 significant
    digits; no chart is wider than the text column; no output scrolls sideways. Saves a screenshot of every
    page under _build/screenshots/ (not committed) for a reviewer."""
    _, html = built_book
    shots = REPO / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    failures = []
    require_browser()
    with Browser() as b:
        for p in _chapters():
            b.open(html / p.with_suffix(".html"), settle=60, screenshot=shots / f"{p.stem}.png")
            r = b.driver.execute_script(READER_JS)
            text = r["outputs"]
            problems = [f"first visible thing is <{r['first_tag']}> {r['first_text']!r}, not the title"
                        for _ in [0] if r["first_tag"] != "H1"]
            problems += [f"output contains {w!r}" for w in ("libgomp", "Traceback") if w in text]
            problems += ["output shows a tqdm bar"] * bool(TQDM.search(text))
            problems += [f"float repr {f}" for f in _long_floats(text)[:3]]
            problems += [f"chart {w:.0f} px wide > column {r['column']:.0f} px" for w in r["chart_widths"]
                         if w > r["column"] + 1]
            problems += r["wide"]
            if problems:
                failures.append((str(p), problems))
    assert failures == []
