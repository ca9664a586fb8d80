"""The real book's HTML (``built_book``, rendered once from the executed chapters in ``_build/executed/``):
every page is there and self-contained, no page shows a warning or stderr text, the build leaves
``git status`` as it found it, and headless Chromium, opening each page from ``file://`` with the network
cut, finds its charts drawn, its math rendered, no request leaving the machine and no error logged.
Negative controls show that the browser harness and the warning scan do see what they look for.
Marked ``slow``."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from browser import BROKEN_HEADER_JS, READER_JS, Browser, require_browser

from arithmech.report.build import execute, offline, plan

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

def test_reader_check_sees_raw_values_and_tables_that_do_not_fit(tmp_path):
    """Protects the reader check from passing vacuously (negative control): a prose table wider than the
    column, a True and a None cell, a dict printed by a cell, a tokenizer mark and heads named by bare ids
    ("0.0: …", "heads 2.0, 3.3", a "head" column of ids) are each reported, and a page of readable words
    reports nothing — a `False` in code font (a parameter's default), an interval "[0.25, 0.5]", "head 2.0, head
    3.3" and a folded code block, which scrolls only once a reader opens it, included."""
    row = "".join(f"<td style='white-space:nowrap'>{'long words ' * 6}</td>" for _ in range(8))
    body = ('<article class="bd-article" style="width:600px"><h1>T</h1>'
            f'<table><tr>{row}</tr></table>'
            '<table><tr><td>True</td><td>None</td><td>holds</td></tr></table>'
            '<details class="above-input"><summary>code</summary><pre style="white-space:pre">' + 'x' * 400 + '</pre></details>'
            '<div class="cell_output"><pre>{\'a\': 1}</pre></div>'
            '<div class="cell_output"><pre>tokens: Ġ3</pre></div>'
            '<div class="cell_output"><pre>0.0: 0.006 ± 0.003</pre></div>'
            '<div class="cell_output"><pre>best-ranked heads: 2.0, 3.3</pre></div>'
            '<div class="cell_output"><p>median depth 0.10 (layers [0, 0, 1, 2])</p></div>'
            '<table><thead><tr><th>head</th><th>effect</th></tr></thead><tbody><tr><td>0.3</td><td>-1%</td></tr>'
            '</tbody></table><table><thead><tr><th>n</th><th>circuit (top n)</th></tr></thead><tbody><tr><td>3</td>'
            '<td>MLP 0 0.0 MLP 2</td></tr></tbody></table></article>')
    bad, good = tmp_path / "bad.html", tmp_path / "good.html"
    bad.write_text(f"<html><body>{body}</body></html>")
    good.write_text('<html><body><article class="bd-article" style="width:600px"><h1>T</h1><table><tr><td>yes</td>'
                    '<td>inconclusive</td><td><code>False</code></td></tr></table>'
                    '<details class="above-input"><summary>code</summary><pre style="white-space:pre">' + 'x' * 400 +
                    '</pre></details><div class="cell_output"><pre>n = 3; Jaccard 0.25 [0.25, 0.5]; heads: head 2.0, '
                    'head 3.3; ρ (0.12, 0.34); 95% [1, 2]; <code>models=[\'embedded\']</code></pre></div><table><thead><tr><th>head</th><th>effect</th></tr></thead>'
                    '<tbody><tr><td>head 0.3</td><td>0.5</td></tr></tbody></table><table><thead><tr><th>n</th><th>'
                    'circuit (top n)</th></tr></thead><tbody><tr><td>1</td><td>MLP 0</td></tr><tr><td>2</td><td>MLP 0, '
                    'head 0.0</td></tr></tbody></table></article></body></html>')
    require_browser()
    with Browser() as b:
        b.open(bad, settle=2)
        r = b.driver.execute_script(READER_JS)
        b.open(good, settle=2)
        g = b.driver.execute_script(READER_JS)
    assert any(w.startswith("wider than the column: TABLE") for w in r["wide"]), r["wide"]
    assert {'cell "True"', 'cell "None"'} <= set(r["raw"]) and sum(x.startswith("output") for x in r["raw"]) == 2, r["raw"]
    assert sum(x.startswith('bare head id "') for x in r["raw"]) == 2 and "bare head id in column head: 0.3" in r["raw"], r["raw"]
    assert "bare head id in column circuit (top n): MLP 0 0.0 MLP 2" in r["raw"], r["raw"]
    assert sum(x.startswith("raw list ") for x in r["raw"]) == 1, r["raw"]
    assert g["wide"] == [] and g["raw"] == []


def test_reader_check_sees_a_live_explorer_that_does_not_load(tmp_path):
    """Protects the live explorer's reader check from passing vacuously (negative control): a page whose live
    explorer has its scripts is answered (no problem); the same page without them is reported."""
    import torch

    from arithmech.report.views import live_explorer
    good = live_explorer.write_page(tmp_path / "good", live_explorer.page_data(torch.zeros(6, 256), [(0, 0)]))
    bad = tmp_path / "bad" / "book" / "live.html"
    bad.parent.mkdir(parents=True)
    bad.write_text(good.read_text())
    require_browser()
    with Browser() as b:
        ok = b.live_problems(b.open(good, settle=20))
        broken = b.live_problems(b.open(bad, settle=5))
    assert ok == [] and len(broken) == 1 and broken[0].startswith("live explorer did not load"), (ok, broken)


def _pages() -> list[Path]:
    return plan.toc_files(REPO)


def test_every_toc_page_is_built(built_book):
    """Protects: every file of _toc.yml has its HTML page, and the build loads nothing from outside itself."""
    _, html = built_book
    for p in _pages():
        assert (html / p.with_suffix(".html")).exists(), p
    assert offline.external_references(html) == []


def test_chapter_pages_draw_all_charts_offline(built_book):
    """Protects: each chapter page, opened from file:// in Chromium with the network cut, draws as many charts
    as its notebook has altair outputs, renders its math, sends nothing off the machine and logs
    no console error; on the Explorer page the live explorer loads, takes a typed prompt and shows its
    top-5, its head map and an attention row, without a console error."""
    root, html = built_book
    failures = []
    require_browser()
    with Browser() as b:
        for p in _pages():
            expected = vega_outputs = 0
            if plan.is_notebook(REPO / p):
                nb = nbformat.read(execute.executed(root, p), as_version=4)
                outs = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
                expected = sum(offline.CHART_CLASS in "".join(d.get("text/html", "")) for d in outs)
                vega_outputs = sum(any(k.startswith("application/vnd.vegalite") for k in d) for d in outs)
            if vega_outputs != expected:       # an altair output without the offline HTML: setup() missing
                failures.append((str(p), f"{vega_outputs} altair outputs, {expected} with offline HTML"))
            r = b.open(html / p.with_suffix(".html"), settle=60)
            c = r.counts
            failures += [(str(p), x) for x in b.live_problems(r)]   # the Explorer's live explorer answers
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


CSS = REPO / "book" / "_static" / "arithmech.css"
WIDTHS = (1280, 800)                 # a laptop window and a narrow one (the sidebar folds away below ~960 px)


def _header_page(path: Path, css: str) -> Path:
    """A page like an executed chapter's output: a pandas-style table of 12 numeric columns whose headers are
    words of 5 to 13 letters, in a 600 px article, styled by ``css``."""
    heads = ["threshold", "heads past it", "answer rate", "knockout", "intact", "interval", "counterfactual",
             "template", "operation", "prompts", "distinct", "accuracy"]
    row = "".join(f"<td>{0.5 + i / 100:.2f}</td>" for i in range(len(heads)))
    table = ("<table class='dataframe'><thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead>"
             f"<tbody><tr>{row}</tr><tr>{row}</tr></tbody></table>")
    path.write_text(f"<html><head><style>{css}</style></head><body><article class='bd-article' style='width:600px'>"
                    f"<h1>T</h1><div class='cell_output'><div class='output text_html'>{table}</div></div>"
                    "</article></body></html>")
    return path


def test_header_check_sees_a_word_broken_across_lines(tmp_path):
    """Protects the header check from passing vacuously (negative control) and the book's stylesheet: a table whose
    headers may break anywhere (``overflow-wrap: anywhere``, the rule the stylesheet had) shows a header broken inside
    a word ("thresh|old") at 1280 and at 800 px, and the check reports it; the same table under
    ``book/_static/arithmech.css`` breaks no header inside a word at either width (its box scrolls instead)."""
    bad = _header_page(tmp_path / "bad.html", ".cell_output table th { overflow-wrap: anywhere; } th { width: 1px; }")
    good = _header_page(tmp_path / "good.html", CSS.read_text())
    require_browser()
    with Browser() as b:
        for width in WIDTHS:
            b.driver.set_window_size(width, 2000)
            b.open(bad, settle=2)
            found = b.driver.execute_script(BROKEN_HEADER_JS)
            assert any(f.startswith("threshold (at ") for f in found), (width, found)
            b.open(good, settle=2)
            assert b.driver.execute_script(BROKEN_HEADER_JS) == [], width


def test_no_table_header_breaks_inside_a_word(built_book):
    """Protects tables a person can read: on every page of the built book, at 1280 and at 800 px, no table header
    is broken across lines inside a word ("thresh old", "rat e"); headers wrap between words only."""
    _, html = built_book
    failures = []
    require_browser()
    with Browser() as b:
        for width in WIDTHS:
            b.driver.set_window_size(width, 2000)
            for p in _pages():
                b.open(html / p.with_suffix(".html"), settle=60)
                failures += [f"{p} at {width} px: {x}" for x in b.driver.execute_script(BROKEN_HEADER_JS)]
    assert failures == [], "\n".join(failures[:20])


def test_long_float_rule():
    """Protects the reader check from passing vacuously: a 16-digit repr is caught, formatted numbers are not."""
    assert _long_floats("p = 0.9944823980331421, n = 256") == ["0.9944823980331421"]
    assert _long_floats("12.5% of 4,111,104 (0.0031, 123456.0)") == []


def test_pages_read_as_a_book(built_book):
    """Protects what a reader sees at 1280 px, on every page: the title is the first thing in the article; no
    output shows libgomp's warning, a traceback, a tqdm bar or a float repr with more than 6 significant
    digits; no chart is wider than the text column; no output scrolls sideways; every visible table and code
    block, prose ones too, fits the column with no cell cut; no visible table cell is True/False/None/nan or a
    dict, and no output shows a dict repr or the tokenizer's Ġ. Saves a screenshot of every page under
    _build/screenshots/ (not committed) for a reviewer."""
    _, html = built_book
    shots = REPO / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    failures = []
    require_browser()
    with Browser() as b:
        for p in _pages():
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
            problems += [f"raw value: {x}" for x in r["raw"]]
            if problems:
                failures.append((str(p), problems))
    assert failures == []


# ------------------------------------------------------------------------------ warnings and stderr
WARNING = re.compile(r"\w*Warning\b|warnings\.warn")


def notebook_warnings(nb) -> list[str]:
    """Every stderr stream and every output text that shows a Python warning, in an executed notebook."""
    out = []
    for i, c in enumerate(nb.cells):
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            text = o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                out.append(f"cell {i}: stderr: {text.strip()[:160]}")
            elif WARNING.search(text):
                out.append(f"cell {i}: {text.strip()[:160]}")
    return out


class _Outputs(HTMLParser):
    """The text of every cell output of a built page (``div.cell_output``), and its stderr blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.texts, self.stderr = 0, [], 0

    def handle_starttag(self, tag, attrs):
        cls = (dict(attrs).get("class") or "").split()
        if self.depth or "cell_output" in cls:
            self.depth += tag not in ("br", "img", "hr", "input", "meta", "link", "col", "wbr")
            self.stderr += "stderr" in cls

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.texts.append(data)


def page_warnings(html: str) -> list[str]:
    """stderr blocks and warning text among a built page's cell outputs."""
    p = _Outputs()
    p.feed(html)
    text = "".join(p.texts)
    return ([f"{p.stderr} stderr output(s)"] if p.stderr else []) + \
        [f"…{text[max(0, m.start() - 80):m.end() + 40]}…" for m in WARNING.finditer(text)][:3]


def test_the_warning_scan_sees_warnings():
    """Protects the warning check below from passing vacuously (negative control): a stderr stream, a
    FutureWarning printed to stdout and a rendered stderr block are each found; a clean output is not."""
    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=[
        nbformat.v4.new_output("stream", name="stderr", text="something went to stderr\n"),
        nbformat.v4.new_output("stream", name="stdout", text="x.py:3: FutureWarning: `a` is deprecated\n"),
        nbformat.v4.new_output("stream", name="stdout", text="all fine\n")])])
    assert len(notebook_warnings(bad)) == 2
    page = ('<div class="cell_output docutils container"><div class="output stderr highlight-myst-ansi notranslate">'
            '<pre>/x.py:9: UserWarning: careful</pre></div></div><p>A UserWarning in prose is not an output.</p>')
    found = page_warnings(page)
    assert found[0] == "1 stderr output(s)" and len(found) == 2 and "careful" in found[1]
    assert page_warnings('<div class="cell_output"><pre>all fine</pre></div>') == []


def test_no_page_shows_a_warning_or_stderr(built_book):
    """Protects what a reader sees: no executed chapter has a stderr stream or an output showing a Python
    warning (``FutureWarning: ...``, ``warnings.warn``), and no built page shows one among its cell outputs
    (a deprecation printed by a library is a bug to fix at its source, not page content)."""
    root, html = built_book
    failures = []
    for p in _pages():
        if plan.is_notebook(REPO / p):
            failures += [f"{p.stem}.ipynb {w}" for w in notebook_warnings(nbformat.read(execute.executed(root, p), 4))]
        failures += [f"{p.with_suffix('.html')}: {w}" for w in page_warnings((html / p.with_suffix(".html")).read_text())]
    assert failures == [], "\n".join(failures[:20])


def test_the_build_leaves_git_status_clean(built_book):
    """Protects the sources-are-text rule: a book build writes only ignored paths (_build/, book/_generated/,
    results/<model>/), so ``git status --porcelain`` is what it was before the build (empty on a fresh
    clone, as in CI), and no executed notebook is left in book/."""
    root, _ = built_book
    now = built_book.git_status(root)
    if now is None:
        pytest.skip("not a git work tree")
    before = built_book.status_before
    assert now == (before if before is not None else ""), f"the build changed what git sees:\n{now}"
    assert not list((root / "book").glob("*.ipynb"))


# the project's own history on a page: an issue number ("issue #40", "(#41)") or a calendar date ("2026-11-28")
HISTORY = re.compile(r"\bissues? #?\d+|\(#\d+\)|\b20\d\d-[01]\d-[0-3]\d\b", re.I)
DATED = {"book/claims_rules.md"}   # the rules' changelog: each version's date and commit, the evidence for "rules first"


class _Text(HTMLParser):
    """A built page's visible text: everything but scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.skip, self.texts = 0, []

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if not self.skip:
            self.texts.append(data)


def history_marks(html: str, dates: bool = True) -> list[str]:
    """Issue numbers (and, unless ``dates`` is False, calendar dates) in a page's visible text, with context."""
    p = _Text()
    p.feed(html)
    text = " ".join(" ".join(p.texts).split())
    return [text[max(0, m.start() - 40): m.end() + 20] for m in HISTORY.finditer(text)
            if dates or not m.group(0)[0].isdigit()]


def test_history_marks_rule():
    """Protects the history check from passing vacuously (negative control): issue numbers and dates in visible text
    are found, in scripts they are not, and a page's numbers (heads, rates, counts) are not taken for history."""
    seen = history_marks("<p>the rules (issue #40) changed on 2026-11-28; see (#41)</p><script>x='issue #3'</script>")
    assert len(seen) == 3
    assert history_marks("<p>head 13.11, lr 3e-03, 149 runs, 0.05 of 2,046 prompts, MLP 17, 95% CI</p>") == []
    assert len(history_marks("<p>v2 2026-11-28 `b62da52`</p>", dates=False)) == 0


def test_no_issue_numbers_or_project_dates_in_pages(built_book):
    """Protects the reader from the project's own history: no built page names an issue number, and none but the
    rules page (whose changelog dates each rule version against its results) shows a calendar date."""
    _, html = built_book
    found = {str(p): history_marks((html / p.with_suffix(".html")).read_text(), dates=str(p) not in DATED)
             for p in _pages()}
    assert {p: m[:3] for p, m in found.items() if m} == {}
