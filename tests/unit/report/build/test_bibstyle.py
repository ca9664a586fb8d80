"""Unit tests of ``arithmech/report/build/bibstyle.py`` and of the book's citations."""
from __future__ import annotations

import re
from pathlib import Path

import yaml
from pybtex.database import parse_file
from pybtex.plugin import find_plugin

from arithmech.report.build import bibstyle  # noqa: F401 (registers the styles)

REPO = Path(__file__).resolve().parents[4]
BIB = REPO / "book" / "references.bib"


def _labels() -> dict[str, str]:
    style = find_plugin("pybtex.style.formatting", "plain_author_year")()
    return {e.key: e.label for e in style.format_bibliography(parse_file(BIB))}


def test_bibliography_labels_are_author_year_like_the_text():
    """Protects one citation style (the text once cited "Zhang et al. [2024]" over a numbered
    bibliography): every entry is labelled surname(s), year — one, two ("and") or "et al." as
    sphinxcontrib-bibtex's author_year style writes them in the text — and no two labels are equal."""
    labels = _labels()
    assert labels["zhang2024arithmetic"] == "Zhang et al., 2024"
    assert labels["heimersheim2024patching"] == "Heimersheim and Nanda, 2024"
    assert labels["nanda2023attribution"] == "Nanda, 2023"
    assert labels["ainslie2023gqa"] == "Ainslie et al., 2023"
    assert all(re.fullmatch(r"[^\d\[\]]+, \d{4}[a-z]?", l) for l in labels.values()), labels
    assert len(set(labels.values())) == len(labels)


def test_repeated_labels_get_a_letter():
    """Protects the links of two works by the same authors in the same year: their labels differ (2023a, 2023b)."""
    from pybtex.database import Entry, Person
    es = [Entry("misc", fields={"year": "2023", "title": t}, persons={"author": [Person("Nanda, Neel")]}) for t in "ab"]
    assert list(bibstyle.AuthorYearLabelStyle().format_labels(es)) == ["Nanda, 2023a", "Nanda, 2023b"]


def test_config_uses_the_style_and_excludes_tool_caches():
    """Protects the build's configuration: the bibliography style is this module's (with its extension
    listed, or Sphinx would not find it), citations are author-year, and Sphinx excludes tool caches."""
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    sphinx = cfg["sphinx"]["config"]
    assert sphinx["bibtex_default_style"] == "plain_author_year" and sphinx["bibtex_reference_style"] == "author_year"
    assert "arithmech.report.build.bibstyle" in sphinx["extensions"]
    for cache in (".*", "**/.*", "**/__pycache__", "**/node_modules", "**/.pytest_cache"):
        assert cache in cfg["exclude_patterns"], cache


def test_every_cited_key_is_in_the_bibliography():
    """Protects the citations of the pages: each key a page cites ({cite}, {cite:p}, {cite:t}) is an entry of
    references.bib, the attribution-patching methods (EAP, EAP-IG, integrated gradients) included."""
    keys = set(parse_file(BIB).entries)
    cited = set()
    for page in (REPO / "book").glob("*.md"):
        for group in re.findall(r"\{cite(?::[pt])?\}`([^`]+)`", page.read_text()):
            cited |= {k.strip() for k in group.split(",")}
    assert cited <= keys, cited - keys
    assert {"nanda2023attribution", "syed2023attribution", "hanna2024faith", "sundararajan2017axiomatic"} <= cited
