"""What the chapters' page modules (``*_page.py``) share: the display objects a cell shows.

IPython is the book extra (a kernel), so it is imported when a page builds its first display object, never when
the package loads.
"""

from __future__ import annotations

from typing import Any


def markdown(text: str) -> Any:
    """``text`` as IPython's ``Markdown`` display object: the cell shows it rendered."""
    from IPython.display import Markdown  # lazy: the book extra (a kernel)

    return Markdown(text)


def html(text: str) -> Any:
    """``text`` as IPython's ``HTML`` display object."""
    from IPython.display import HTML  # lazy: the book extra (a kernel)

    return HTML(text)


def bullets(lines: list[str]) -> Any:
    """``lines`` as a Markdown bullet list."""
    return markdown("\n".join(f"* {line}" for line in lines))
