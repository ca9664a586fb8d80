"""One citation style for the book: author–year in the text *and* in the bibliography.

sphinxcontrib-bibtex cites author–year in the text (``bibtex_reference_style: author_year`` in
``_config.yml``: ``{cite}`` gives "[Zhang et al., 2024]", ``{cite:t}`` "Zhang et al. [2024]"), but its
bibliography styles label the entries by number ("[1]") or by letters ("[ZWZ+24]"). A reader who sees
"Zhang et al., 2024" in the text should find the same words in front of the entry, so this Sphinx
extension registers a pybtex label style ``author_year`` and the formatting style ``plain_author_year``
(pybtex's ``plain`` — entries sorted by author, year, title — labelled by it); ``_config.yml`` lists the
extension and sets ``bibtex_default_style: plain_author_year``.

Labels follow the in-text rule: one author "Nanda, 2023", two "Heimersheim and Nanda, 2024", three or more
"Zhang et al., 2024"; a label two entries would share gets a letter ("2023a", "2023b").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


def surname(person) -> str:
    """A person's surname as printed: von part and last names, LaTeX markup resolved ("de Jong", "Ben Allal")."""
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def authors_label(persons) -> str:
    """ "Nanda", "Heimersheim and Nanda" or "Zhang et al." for an entry's author (or editor) list."""
    names = [surname(p) for p in persons]
    if len(names) >= 3:
        return f"{names[0]} et al."
    return " and ".join(names) or "Anonymous"


def entry_label(entry) -> str:
    """An entry's label before disambiguation: "Zhang et al., 2024"."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    return f"{authors_label(persons)}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """pybtex label style: :func:`entry_label`, with a, b, ... after the year where labels repeat."""

    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterator[str]:
        entries = list(sorted_entries)
        labels = [entry_label(e) for e in entries]
        repeated = {l for l, n in Counter(labels).items() if n > 1}
        seen: Counter = Counter()
        for label in labels:
            if label in repeated:
                seen[label] += 1
                label += "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            yield label


class PlainAuthorYearStyle(PlainStyle):
    """pybtex's ``plain`` style labelled author–year (see the module docstring)."""

    default_label_style = "author_year"


register_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "plain_author_year", PlainAuthorYearStyle)


def setup(app) -> dict:
    """Sphinx entry point: the styles are registered on import; nothing else to set up."""
    return {"parallel_read_safe": True, "parallel_write_safe": True}
