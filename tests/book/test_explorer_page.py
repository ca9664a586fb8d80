"""The explorer page works in the static book: headless Chromium opens it from ``file://`` with the network cut
and drives it like a reader: picking another prompt in the dropdown changes the top-5 view, moving the
threshold slider changes the key heads, and clicking a head in the effects map shows its attention alone.

The page comes from ``ARITHMECH_BOOK_HTML`` (an already built book), from the repository's book when ``make book``
executed its chapters (as in CI), or else from a one-page book built here: the chapter executed by the book runner
on both models (small sizes; the embedded model's identify files written first by a small identify run, SmolLM2's
copied from the shipped results) in a temporary root. Marked ``slow``."""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from browser import Browser, require_browser

from arithmech.report.build import book
from arithmech.report.charts import colours

REPO = Path(__file__).resolve().parents[2]
SHIPPED = Path("results") / "smollm2-135m"          # the book's SmolLM2 results, committed (see .gitignore)
MODELS_ON_PAGE = 2                                  # the embedded model and SmolLM2

pytestmark = pytest.mark.slow

# Every text a chart of the page draws, per chart container, and the state of its controls.
STATE_JS = """
const el = document.querySelectorAll('.arithmech-chart')[arguments[0]];
const texts = Array.from(el.querySelectorAll('svg text')).map(t => t.textContent);
const sel = el.querySelector('.vega-bindings select');
const rng = el.querySelector('.vega-bindings input[type=range]');
const outlined = Array.from(el.querySelectorAll('svg path')).filter(p => p.getAttribute('stroke') === '%s').length;
return {texts: texts, options: sel ? Array.from(sel.options).map(o => o.text) : [], select: sel ? sel.value : null,
        range: rng ? [rng.min, rng.max, rng.value] : null, outlined: outlined};
""" % colours.colour("ink", "outline")  # noqa: UP031 (JavaScript: braces)  the key heads' outline, from the colour table
TOP5 = re.compile(r"^.+  \d+\.\d%$")             # a top-5 bar's label: token, two spaces, probability
# The attention strip's rows (labels "head 13.11"), each with whether it lies inside the chart's box (the
# container clips: a row below the svg's height is not seen), and the header's step lines.
ROWS_JS = """
const el = document.querySelectorAll('.arithmech-chart')[arguments[0]];
const box = el.getBoundingClientRect();
const texts = Array.from(el.querySelectorAll('svg text'));
return {rows: texts.filter(t => /^head \\d+\\.\\d+$/.test(t.textContent))
                   .map(t => [t.textContent, t.getBoundingClientRect().bottom <= box.bottom + 1]),
        header: texts.map(t => t.textContent).filter(t => /^(threshold|knocked out|intact)/.test(t))};
"""


@pytest.fixture(scope="module")
def explorer_html(request, book_executed, tmp_path_factory) -> Path:
    """``explorer.html``: from ``ARITHMECH_BOOK_HTML``; else the repository's own book when every chapter has its
    executed copy (``make book`` ran, as ``.ci/run`` does before the tests: the page readers get, rendered once by
    the session's ``built_book``); else a one-page book executed and rendered here."""
    given = os.environ.get("ARITHMECH_BOOK_HTML")
    if given:
        return Path(given) / "book" / "explorer.html"
    if book_executed:
        _, html = request.getfixturevalue("built_book")
        return Path(html) / "book" / "explorer.html"
    root = tmp_path_factory.mktemp("explorer-book")
    shutil.copy2(REPO / "_config.yml", root / "_config.yml")
    shutil.copytree(REPO / "book" / "_static", root / "book" / "_static", ignore=shutil.ignore_patterns("vendor"))
    for f in ("explorer.md", "references.bib", "book.yml"):
        shutil.copy2(REPO / "book" / f, root / "book" / f)
    (root / "book" / "intro.md").write_text("# Explorer only\n\nOne page of the book, built by its test.\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/explorer\n")
    from arithmech.core.models import load_model
    from arithmech.identify import pipeline, run
    net, tok, _ = load_model("embedded")               # identify's files, small and quick (the chapter reads them)
    res = pipeline.identify(net, tok, "all", n_samples=16, seed=0, knockout=False, transfer=False, prob=False)
    run.write_results(res, root / "results" / "embedded", model_name="embedded")
    shutil.copytree(REPO / SHIPPED, root / SHIPPED)     # SmolLM2's identify files: shipped with the repository
    book.build(root, only="explorer", sets=["explorer.models=[embedded, smollm2-135m]", "explorer.n_prompts=48",
                                            "explorer.n_reference=32"])
    return root / "_build" / "html" / "book" / "explorer.html"


def _top5(state: dict) -> list[str]:
    return [t for t in state["texts"] if TOP5.match(t)]


def _header(state: dict) -> str:
    return next(t for t in state["texts"] if t.startswith("prompt “"))


def test_explorer_page_draws_offline_and_its_controls_change_the_views(explorer_html):
    """Protects the explorer as a reader meets it, for every model's view on the page (the embedded model
    and SmolLM2): the explorer draws from file:// with no request and no console error; choosing another
    prompt redraws the header and the top-5 bars (a prompt with another answer token gets other bars); the
    slider changes the threshold line and the outlined key heads; clicking a head in the effects map leaves
    exactly that head in the attention view, and a double-click brings the key heads back."""
    from selenium.webdriver.common.by import By
    require_browser()
    assert explorer_html.exists(), explorer_html
    with Browser() as b:
        r = b.open(explorer_html, settle=60)
        assert r.requests == [] and r.errors == [], (r.requests[:3], r.errors[:3])
        assert r.counts["charts"] == r.counts["drawn"] >= 1
        d = b.driver
        charts = d.find_elements(By.CSS_SELECTOR, ".arithmech-chart")
        views = [i for i, c in enumerate(charts) if c.find_elements(By.CSS_SELECTOR, ".vega-bindings select")]
        assert len(views) == MODELS_ON_PAGE, views
        for k in views:
            drive(d, charts[k], k)
        severe = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []                                                 # nothing logged while driving it


def test_the_page_says_where_identify_ranked_on_solved_examples(explorer_html):
    """Protects the reader from a silent mismatch: SmolLM2's heads were ranked on prompts with K solved examples
    (its run.json), while the explorer's prompts have none; its sentence says so once, and the embedded model's
    (ranked zero-shot) says nothing of it."""
    import html
    import json
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", explorer_html.read_text())))
    shots = json.loads((REPO / SHIPPED / "run.json").read_text())["steps"]["identify"]["parameters"]["shots"]
    assert shots > 0 and text.count("solved examples before each; the explorer") == 1     # Sphinx curls quotes
    assert f"Identify ranked these heads on prompts with {shots} solved examples" in text


def drive(d, chart, k: int) -> None:
    """Drive one model's explorer view (chart container ``k``) as a reader would; assert what changes."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    state = lambda: d.execute_script(STATE_JS, k)
    s0 = state()
    assert len(s0["options"]) >= 40 and len(_top5(s0)) == 10           # 5 intact + 5 knocked out
    answer = lambda s: _header(s).split("answer token “")[1].split("”")[0]

    # (a) another prompt: the header names it; one with another answer token has other top-5 bars
    select = Select(chart.find_element(By.CSS_SELECTOR, ".vega-bindings select"))
    for i in range(1, len(s0["options"])):
        select.select_by_index(i)
        s1 = state()
        shown = s0["options"][i].split(": ", 1)[1].rstrip("…")
        assert _header(s1).startswith(f"prompt “{shown}"), (_header(s1), shown)
        if answer(s1) != answer(s0):
            break
    assert answer(s1) != answer(s0) and _top5(s1) != _top5(s0)

    # the slider: loosest threshold → another threshold line, more outlined key heads
    lo, hi, v = s1["range"]
    line = lambda s: next(t for t in s["texts"] if t.startswith("threshold "))
    d.execute_script("const r = document.querySelectorAll('.arithmech-chart')[arguments[0]]"
                     ".querySelector('.vega-bindings input[type=range]'); r.value = r.max;"
                     "r.dispatchEvent(new Event('input', {bubbles: true}));", k)
    s2 = state()
    assert s2["range"][2] == hi != v and line(s2) != line(s1) and s2["outlined"] > s1["outlined"]
    seen = d.execute_script(ROWS_JS, k)              # every row of the heads past the loosest threshold is seen
    assert len(seen["rows"]) >= 2 and all(inside for _, inside in seen["rows"]), seen["rows"]
    assert seen["header"] and not any(t.endswith("…") for t in seen["header"]), seen["header"]

    # (b) click a head in the effects map: only its row stays in the attention view
    cells = [p for p in chart.find_elements(By.CSS_SELECTOR, "svg path[aria-label]")
             if "attention: shown" in (p.get_attribute("aria-label") or "")]
    target = next(c for c in cells if "rank: 2;" in c.get_attribute("aria-label"))
    name = re.search(r"name: ([\d.]+)", target.get_attribute("aria-label")).group(1)
    rows = lambda s: {t[5:] for t in s["texts"] if re.fullmatch(r"head \d+\.\d+", t)}   # the strip's row labels
    before = rows(s2)
    assert len(before) >= 2                                             # several key heads at the loosest step
    ActionChains(d).move_to_element(target).click().perform()
    s3 = state()
    assert rows(s3) == {name}, (name, rows(s3))
    ActionChains(d).move_to_element(target).double_click().perform()
    assert rows(state()) == before


def _views_page(tmp_path: Path) -> tuple[Path, int]:
    """A page with one explorer chart drawn from hand-built tables (no model): 16 heads, thresholds −10% to −1%,
    one head past −5% and 15 past −1% (attention stored as precompute stores it, ``max_heads`` 4); the vega bundle
    inline, the book's stylesheet, the book's chart HTML. Returns the page and the heads past the loosest step."""
    import altair as alt
    import pandas as pd
    import vl_convert as vlc

    from arithmech.core.stats import wilson_interval
    from arithmech.methods import explorer
    from arithmech.report.build import offline
    from arithmech.report.charts import theme
    from arithmech.report.views import explorer_views
    theme.use_theme()
    eff = pd.DataFrame([("all", l, str(h), -0.12 if (l, h) == (0, 0) else -0.04 + 0.002 * (4 * l + h))
                        for l in range(4) for h in range(4)], columns=["task", "layer", "head", "effect"])
    thresholds = [-0.1, -0.05, -0.02, -0.01]
    heads = explorer.head_steps(eff.assign(effect_hi=eff.effect + 0.001), thresholds)
    sets = [list(heads.name[heads.key_at <= s]) for s in range(len(thresholds))]
    steps = pd.DataFrame([(s, None if s < 0 else thresholds[s], [] if s < 0 else sets[s], 0 if s < 0 else len(sets[s]),
                           2, 3, 3, *wilson_interval(2, 3)) for s in range(-1, len(thresholds))],
                         columns=["step", "threshold", "heads", "n_heads", "correct", "n", "problems", "ci_low", "ci_high"])
    stored = explorer.attention_heads(heads, len(thresholds), 4)
    data = {"prompts": pd.DataFrame({"id": [0, 1], "prompt": ["1 + 2 =", "3 - 1 ="], "op": ["addition"] * 2,
                                     "template": ["t"] * 2, "answer": ["3", "2"], "answer_token": ["last-digit"] * 2}),
            "tokens": pd.DataFrame([(f"{i}:{p}", i, p, f"t{p}", "other") for i in range(2) for p in range(4)],
                                   columns=["key", "id", "pos", "token", "role"]),
            "top": pd.DataFrame([(i, s, ["3", "4"], [0.9, 0.1], True, 1) for i in range(2) for s in steps.step],
                                columns=["id", "step", "tokens", "probs", "correct", "answer_rank"]),
            "attention": pd.DataFrame([(i, f"{l}.{h}", int(heads.key_at[heads.name == f"{l}.{h}"].iloc[0]),
                                        [0.1, 0.2, 0.3, 0.4]) for i in range(2) for l, h in stored],
                                      columns=["id", "name", "key_at", "scores"]),
            "mlp": pd.DataFrame([(i, ["3"] * 4, [0.5] * 4) for i in range(2)], columns=["id", "tokens", "cosines"]),
            "steps": steps}
    spec = explorer_views.explorer_chart(data, heads, "hand-built").to_dict()
    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    bundle = "(function () {\n" + vlc.javascript_bundle(vl_version=vl) + "\n})();\n"
    css = (REPO / "book" / "_static" / "arithmech.css").read_text()
    page = tmp_path / "explorer_views.html"
    page.write_text(f"<html><head><style>{css} body {{ width: 700px; }}</style><script>{bundle}</script></head>"
                    f"<body>{offline.chart_html(spec)}</body></html>")
    return page, len(sets[-1])


def test_every_row_past_the_threshold_is_seen(tmp_path):
    """Protects the attention view and the header as a reader sees them, without building a book: at
    the slider's first step one row, and after moving it to the loosest threshold every one of the 15 heads past
    it has its row inside the chart (vega used to keep the first layout's height and the container cut every row
    after the first); no header line is cut short with "…"."""
    require_browser()
    page, loosest = _views_page(tmp_path)
    with Browser() as b:
        r = b.open(page, settle=30)
        assert r.errors == [] and r.counts["drawn"] == 1, r.errors[:3]
        first = b.driver.execute_script(ROWS_JS, 0)
        assert [n for n, _ in first["rows"]] == ["head 0.0"] and all(i for _, i in first["rows"])
        b.driver.execute_script("const r = document.querySelector('.vega-bindings input[type=range]'); r.value = r.max;"
                                "r.dispatchEvent(new Event('input', {bubbles: true}));")
        time.sleep(0.5)
        loose = b.driver.execute_script(ROWS_JS, 0)
        assert len(loose["rows"]) == loosest == 15 and all(inside for _, inside in loose["rows"]), loose["rows"]
        assert loose["header"] and not any(t.endswith("…") for t in loose["header"]), loose["header"]
