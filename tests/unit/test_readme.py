"""The README as a front door: short, its answer sentences the claims' own, its figure the book's Fig. 1 (local
and small), its commands and links real. What moved out of it is tested where it went (book/reproduce.md:
``tests/integration/test_reproduce.py``; book/smollm2_runs.md: ``tests/unit/test_shipped_results.py``)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.report.build import plan
from arithmech.report.build.generate import pipeline_stages
from arithmech.report.charts.pipeline import pipeline_svg
from arithmech.report.views.findings import answer_sentence

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MODELS = {"embedded": "The embedded model", "smollm2-135m": "SmolLM2-135M"}   # folder → the label the book uses


def shipped() -> list[str]:
    """The models whose pipeline results the repository tracks (``results/<model>/analyze.json`` in ``git
    ls-files``: identify's and analyze's files, which the claims table reads): the README answers for these only,
    since only their sentences can be checked on a fresh clone (the embedded model's results are made by ``make
    book``; its sentence opens the introduction; the planted model ships identify's ranking and its Table 1 only,
    which its own chapter's rules read)."""
    out = subprocess.run(["git", "ls-files", "results/*/analyze.json"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git work tree")
    return sorted({Path(p).parts[1] for p in out.stdout.split()})


def answer_lines(text: str) -> dict[str, str]:
    """label → the sentence of each model between the README's ``answers`` markers."""
    block = text.split("<!-- answers:start -->", 1)[1].split("<!-- answers:end -->", 1)[0]
    out = {}
    for line in (x for x in block.splitlines() if x.strip()):
        m = re.match(r"\*\*(.+?)\*\*: ", line)
        assert m, f"not an answer sentence: {line[:80]!r}"
        out[m.group(1)] = line
    return out


def stale_answers(text: str, models: list[str], root: Path = REPO) -> list[str]:
    """What is wrong with the README's answers for ``models`` (folder names): a sentence missing, one for a model
    not among them, or one that is not ``answer_sentence`` of the claims decided now on ``results/<model>/``."""
    given = answer_lines(text)
    wrong = [f"a sentence for {label!r}, whose results are not shipped" for label in
             sorted(set(given) - {MODELS[m] for m in models})]
    for folder in models:
        want = answer_sentence(MODELS[folder], claims(Context(root / "results" / folder)))
        if given.get(MODELS[folder]) != want:
            wrong.append(f"{MODELS[folder]}: README says {given.get(MODELS[folder])!r}\n  the claims say {want!r}")
    return wrong


def test_readme_answer_sentences_are_the_claims():
    """Protects the README's answer from going stale: for each model whose results the repository ships (SmolLM2's),
    the sentence between the ``answers`` markers is exactly ``answer_sentence`` of its claims table decided now on
    ``results/<model>/`` (the introduction's sentence, without its addition-alone note), and there is no other.
    Fix: paste the sentence the failure prints."""
    models = shipped()
    assert "smollm2-135m" in models
    wrong = stale_answers(README.read_text(), models)
    assert not wrong, "\n".join(wrong)


def test_the_answer_check_sees_a_stale_sentence():
    """Protects the check above from passing vacuously (negative control): the README with SmolLM2's count of
    holding claims changed by one is reported stale, a missing sentence is reported, and a sentence for a model
    whose results are not shipped (the embedded model's) is refused."""
    text, models = README.read_text(), shipped()
    line = answer_lines(text)[MODELS["smollm2-135m"]]
    n = int(re.search(r"(\d+) of the paper's", line).group(1))
    changed = text.replace(line, line.replace(f"{n} of the paper's", f"{n + 1} of the paper's", 1))
    assert len(stale_answers(changed, models)) == 1
    assert len(stale_answers(text.replace(line, ""), models)) == 1
    extra = text.replace("<!-- answers:end -->", "**The embedded model**: all hold.\n<!-- answers:end -->")
    assert len(stale_answers(extra, models)) == 1


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
    assert (REPO / paths[0]).read_text() == pipeline_svg(pipeline_stages(REPO)) + "\n"


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
