"""The README as a front door: short, its answer sentences the claims' own, its figure the book's Fig. 1 (local
and small), its commands and links real. What moved out of it is tested where it went (book/reproduce.md:
``tests/integration/test_reproduce.py``; book/smollm2_runs.md: ``tests/unit/test_shipped_results.py``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from arithmech.claims.decide import claims
from arithmech.core import results as R
from arithmech.report.build import plan
from arithmech.report.charts.pipeline import pipeline_svg
from arithmech.report.views.findings import answer_sentence

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MODELS = {"embedded": "The embedded model", "smollm2-135m": "SmolLM2-135M"}   # folder → the label the book uses
SHIPPED = "smollm2-135m"                                                       # the one whose results are tracked


def answer_lines(text: str) -> dict[str, str]:
    """label → the sentence of each model between the README's ``answers`` markers."""
    block = text.split("<!-- answers:start -->", 1)[1].split("<!-- answers:end -->", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    out = {}
    for line in lines:
        m = re.match(r"\*\*(.+?)\*\*: ", line)
        assert m, f"not an answer sentence: {line[:80]!r}"
        out[m.group(1)] = line
    return out


def stale_answers(text: str, root: Path = REPO) -> list[str]:
    """The models whose README sentence is not the one their claims give now (``answer_sentence`` on
    ``results/<model>/``), for every model whose results are present; the shipped model must be present."""
    given, stale = answer_lines(text), []
    assert set(given) <= set(MODELS.values()), sorted(given)
    for folder, label in MODELS.items():
        path = root / "results" / folder
        if not R.exists(path, "effects.csv"):
            assert folder != SHIPPED, f"results/{SHIPPED}/ is shipped and missing"
            continue
        want = answer_sentence(label, claims(path))
        if given.get(label) != want:
            stale.append(f"{label}: README says {given.get(label)!r}\n  the claims say {want!r}")
    return stale


def test_readme_answer_sentences_are_the_claims():
    """Protects the README's answer from going stale: each model's sentence between the ``answers`` markers is
    exactly ``answer_sentence`` of its claims table decided now on ``results/<model>/`` (the introduction's
    sentence, without its addition-alone note), for every model whose results are here (SmolLM2's always: they
    are shipped; the embedded model's after ``make book``). Fix: paste the sentence the failure prints."""
    assert MODELS[SHIPPED] in answer_lines(README.read_text())
    stale = stale_answers(README.read_text())
    assert not stale, "\n".join(stale)


def test_the_answer_check_sees_a_stale_sentence():
    """Protects the check above from passing vacuously (negative control): the README with SmolLM2's count of
    holding claims changed by one is reported stale, and a sentence for a model the book does not run is refused."""
    text = README.read_text()
    line = answer_lines(text)[MODELS[SHIPPED]]
    n = int(re.search(r"(\d+) of the paper's", line).group(1))
    changed = text.replace(line, line.replace(f"{n} of the paper's", f"{n + 1} of the paper's", 1))
    assert len(stale_answers(changed)) == 1
    with pytest.raises(AssertionError):
        stale_answers(text.replace("<!-- answers:end -->", "**Llama**: all hold.\n<!-- answers:end -->"))


def test_readme_is_short_and_its_figure_is_the_books_fig1():
    """Protects the front door's size and its one figure: at most 150 lines; every image it shows is a file of the
    repository (no address to fetch), under 20 kB; the figure is the book's Fig. 1, ``pipeline_svg`` of the
    chapters as they are now (a renamed chapter renames it: regenerate the file)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)|<img[^>]+src=\"([^\"]+)\"", text)
    paths = [a or b for a, b in images]
    assert paths == ["book/_static/pipeline.svg"]
    for p in paths:
        assert "://" not in p and (REPO / p).is_file() and (REPO / p).stat().st_size < 20_000, p
    assert (REPO / paths[0]).read_text() == pipeline_svg(REPO / "book") + "\n"


def test_readme_names_the_commands_and_links_pages_of_the_book():
    """Protects what a newcomer reads first: the README names ``make help``, ``make test-fast``, ``make lab``, the
    progress of a long ``make book``, a chapter run through papermill, and every book page it links is a page of
    ``_toc.yml`` (the part "Reproduce and extend" among them)."""
    text = README.read_text()
    for words in ("make help", "make test-fast", "make lab", "time left", "| .venv/bin/papermill - out.ipynb"):
        assert words in text, words
    linked = re.findall(r"\]\((book/[a-z_0-9]+\.md)\)", text)
    toc = {p.as_posix() for p in plan.toc_files(REPO)}
    assert len(linked) >= 7 and set(linked) <= toc, sorted(set(linked) - toc)
    assert "Reproduce and extend" in (REPO / "_toc.yml").read_text()
