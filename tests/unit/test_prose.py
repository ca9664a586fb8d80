"""The book's typed prose states no finding: findings come from the claims table.

The words "key head" are held to the rule that decides them: a chapter says "key heads" through what identify
wrote (``key_heads.json``) and what analyze studied (``analyze.json``'s ``heads_from``), the introduction through
the ``key-heads-exist`` rule; left to each page they drifted apart ("3 of 10 key heads" for SmolLM2's top 10, the
Explorer's "1 key head at −1 %"). The tests at the end tie the files to the rule on every results folder
present, the chapters' findings to rule ids, and forbid typed key-head counts.

A finding typed into a markdown cell goes stale the moment a rerun changes the numbers, and
several typed findings overstated the run. Typed prose may describe the method and quote the
paper; verdicts and "as in the paper" comparisons are generated (``arithmech.claims.decide``,
shown by ``arithmech.report.views.pages``). Generated blocks (between ``findings:start`` / ``findings:end``
markers) are exempt.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from arithmech.claims import decide
from arithmech.claims.decide import BY_ID
from arithmech.claims.evidence import Context
from arithmech.core import results
from arithmech.core.names import components
from arithmech.identify.claims import THRESHOLD

REPO = Path(__file__).resolve().parents[2]

# Phrases that state or compare a finding; each was once typed and wrong.
TYPED_FINDING = [
    r"\bas in the paper\b",
    r"\bhardly any head\b",
    r"\bsame ranking\b",
    r"\bhelps more than tuning everything\b",
    r"\*\*(holds|does not hold|inconclusive|not testable)\*\*",  # a verdict in bold is the claims table's format
    r"held-out\s*(accuracy)?\s*(≥|>=)\s*99",
]
GENERATED = re.compile(r"<!-- findings:start -->.*?<!-- findings:end -->", re.S)


def _prose() -> list[tuple[str, str]]:
    out = []
    from arithmech.report.build.plan import is_notebook, read_notebook
    pages = sorted((REPO / "book").glob("*.md"))
    for p in [q for q in pages if is_notebook(q)]:                 # chapters: their markdown cells
        for i, c in enumerate(read_notebook(p).cells):
            if c.cell_type == "markdown":
                out.append((f"{p.name} cell {i}", c.source))
    for p in [*(q for q in pages if not is_notebook(q)), REPO / "README.md"]:
        out.append((p.name, GENERATED.sub("", p.read_text())))
    return out


@pytest.mark.parametrize("pattern", TYPED_FINDING)
def test_no_typed_findings_in_prose(pattern):
    """Protects: no markdown cell, book page or README paragraph types a finding; findings
    reach the reader only through the claims table and the lines generated from it."""
    hits = [f"{where}: …{m.group(0)}…" for where, text in _prose()
            for m in re.finditer(pattern, text, flags=re.I)]
    assert not hits, "typed finding(s); generate them from arithmech.claims.decide instead:\n" + "\n".join(hits)


def test_the_lint_sees_a_typed_finding():
    """Protects the test above from passing vacuously: a planted typed verdict is found."""
    planted = "As in the paper, few heads pass: **holds**."
    assert all(re.search(p, planted, flags=re.I) for p in TYPED_FINDING[:1] + TYPED_FINDING[4:5])
    assert _prose(), "no prose found: the paths above are wrong"


FOLDERS = sorted(p for p in (REPO / "results").glob("*") if (p / "key_heads.json").exists()
                 and (p / "effects.csv").exists())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_key_heads_in_the_files_are_the_rules_key_heads(folder):
    """Protects "key heads" wherever a page takes it from the files: the heads identify lists as key are the
    ones the `key-heads-exist` rule names, none where the rule finds none; analyze studies "key heads" only
    where there are some (otherwise the top heads by effect rank, and the pages must not call them key)."""
    kh = results.read(folder, "key_heads.json")
    if kh.get("threshold") != THRESHOLD:
        pytest.skip(f"{folder.name} was run with threshold {kh.get('threshold')}, not the rule's {THRESHOLD}")
    row = decide.claims(Context(folder), ["key-heads-exist"]).iloc[0]
    names = components((h["layer"], h["head"]) for h in kh["heads"])
    assert f"({names})" in row.here, (names, row.here)                  # the same heads, in the same order
    if row.holds is not None:                                            # None: the task fails its control
        assert bool(kh["heads"]) == row.holds, (kh["heads"], row.here)
    if results.exists(folder, "analyze.json"):
        heads_from = results.read(folder, "analyze.json")["heads_from"]
        assert (heads_from == "key heads") == bool(kh["heads"]), heads_from


def _chapters() -> list[tuple[str, str]]:
    """Every chapter's code cells, and the page modules its cells call (``arithmech/report/views/*_page.py`` it
    imports, or the one named after it): a thin chapter's claim lists live there."""
    from arithmech.report.build.plan import is_notebook, read_notebook
    out = []
    for p in sorted((REPO / "book").glob("*.md")):
        if is_notebook(p):
            cells = [c.source for c in read_notebook(p).cells if c.cell_type == "code"]
            pages = {f"{p.stem}_page"} | {m for c in cells for m in re.findall(r"import (\w+_page)\b", c)}
            files = [REPO / "arithmech" / "report" / "views" / f"{m}.py" for m in sorted(pages)]
            out += [(p.name, c) for c in cells] + [(f.name, f.read_text()) for f in files if f.exists()]
    return out


def test_every_claim_a_chapter_shows_is_a_rule_of_the_claims_table():
    """Protects each chapter's findings box and verdict list from drifting from the claims table: every claim id
    a chapter passes to ``claims`` / ``claim_lines`` / ``rules_markdown`` (as a literal list, or through a list
    named in the chapter) is a rule of ``arithmech.claims.decide``, whose verdict the introduction's table shows."""
    ids = re.compile(r"""["']([a-z0-9]+(?:-[a-z0-9]+)+)["']""")
    calls = re.compile(r"\b(?:claim_lines|claims|rules_markdown)\(([^)]*)\)")
    seen, unknown = 0, []
    for name, src in _chapters():
        lists = dict(re.findall(r"^(\w+)\s*=\s*(\[[^\]]*\])", src, flags=re.M))
        for args in calls.findall(src):
            text = args + "".join(v for k, v in lists.items() if re.search(rf"\b{k}\b", args))
            for i in ids.findall(text):
                seen += 1
                if i not in BY_ID:
                    unknown.append(f"{name}: {i}")
    assert seen, "no claim id found in any chapter: the patterns above are wrong"
    assert not unknown, "chapters show claims the rules do not have:\n" + "\n".join(unknown)


def test_chapters_type_no_count_of_key_heads():
    """Protects "key head" in typed prose: no markdown cell types a count of key heads ("3 of 10 key heads"):
    how many there are is the `key-heads-exist` rule's to say, computed on the run (the paper's "top-10 key heads",
    quoted, is not a count of ours)."""
    from arithmech.report.build.plan import is_notebook, read_notebook
    pattern = re.compile(r"(?<![-\w])\d+\s+(?:of\s+(?:the\s+)?\d+\s+)?key heads?\b", re.I)
    hits = []
    for p in sorted((REPO / "book").glob("*.md")):
        cells = [c.source for c in read_notebook(p).cells if c.cell_type == "markdown"] if is_notebook(p) \
            else [p.read_text()]
        hits += [f"{p.name}: {m.group(0)}" for text in cells for m in pattern.finditer(text)]
    assert not hits, "typed key-head counts:\n" + "\n".join(hits)
    assert pattern.search("3 of 10 key heads") and pattern.search("1 key head") and not pattern.search("top-10 key heads")
