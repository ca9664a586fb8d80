"""The executable book: chapters kept as text, executed with papermill into ``_build/``, then rendered.

``python -m arithmech book`` is the one command that produces the book. It writes only ignored paths
(``_build/``, ``book/_generated/``, ``results/<model>/``): the chapter sources in ``book/`` are never
rewritten, so ``git status`` stays clean after a build.

1. **Execute** (:mod:`arithmech.report.build.execute`). Each chapter listed in ``_toc.yml`` is a MyST-Markdown notebook
   ``book/<name>.md`` (jupytext's ``md:myst``, no outputs; :func:`arithmech.report.build.plan.is_notebook`). In toc
   order it is converted with jupytext and executed with papermill from the repository root (so ``results/`` and
   ``../shared/data`` mean the same thing in every chapter and on the command line). Parameters come
   from one file, ``book/book.yml``: ``global`` values go to every chapter whose ``parameters`` cell
   declares them, ``chapters.<name>`` values to one chapter; ``--set key=value`` /
   ``--set chapter.key=value`` override both. A chapter runs into ``_build/.papermill/<name>.ipynb`` and
   replaces its executed copy ``_build/executed/<name>.ipynb`` only when every cell succeeded. A failure
   stops the build with the chapter, the cell and the error, and leaves the previous executed copy
   untouched (the failed run is kept in ``_build/failed/`` to look at). Chapters hand artifacts to each
   other through ``results/<model>/``.
2. **Generate** (:mod:`arithmech.report.build.generate`). The text the build computes goes to ``book/_generated/``
   (git-ignored), which the hand-written pages pull in with MyST ``{include}``: the introduction's findings box per
   model (``findings.md``), its sentence on the Explorer with the prompt count the build gives that page
   (``explorer.md``) and the parameters table of the appendix (``parameters.md``).
3. **Render** (:mod:`arithmech.report.build.render`). A render tree ``_build/render/`` is assembled: ``_config.yml``,
   ``_toc.yml``, the plain pages, the generated includes, the static files and, under the chapters' own names
   (``book/<name>.ipynb``), the executed copies. ``jupyter-book build`` (execution off) renders it into
   ``_build/html``, after :func:`arithmech.report.build.offline.vendor_assets` has put vega and MathJax where
   the pages load them. ``--skip-execute`` renders the executed copies that exist and names the chapters
   that have none (they are rendered from their source, without outputs).
4. **Check.** The build fails if a page still loads anything over ``http(s)``
   (:func:`arithmech.report.build.offline.external_references`).

This module is the runner (:func:`build`, :func:`run`) and :func:`setup`, which every chapter calls in its check
cell (one altair theme, the offline renderer).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from arithmech.core.progress import Progress
from arithmech.report.build import offline
from arithmech.report.build.execute import EXECUTED, execute_chapter
from arithmech.report.build.generate import write_generated
from arithmech.report.build.plan import BookArgumentError, BookError, load_config, plan
from arithmech.report.build.render import jupyter_book, render_tree
from arithmech.report.charts.theme import use_theme


def setup() -> None:
    """Call once at the top of a chapter (its check cell): ``from arithmech.report.build.book import setup; setup()``.

    * enables the arithmech altair theme (:func:`arithmech.report.charts.theme.use_theme`) and the offline
      renderer (charts draw from ``file://`` without network, see :mod:`arithmech.report.build.offline`);
    * turns progress bars off (tqdm, transformers' "Loading weights"): in a static page they are
      dead widgets that print as ``0%|          |``;
    * when the notebook is opened in Jupyter from ``book/``, moves to the repository root, so
      relative paths (``results/``, ``../shared/data``) mean what they mean for papermill and
      for ``python -m arithmech``;
    * in a kernel of ``make lab`` (``ARITHMECH_LAB=1``), shows the vega bundle once, so the charts draw in
      JupyterLab (:func:`arithmech.report.build.offline.jupyter_vega`).
    """
    use_theme()
    offline.enable_renderer()
    os.environ["TQDM_DISABLE"] = "1"  # read by tqdm when it is first imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    here = Path.cwd()
    if here.name == "book" and (here.parent / "_toc.yml").exists() and (here / "book.yml").exists():
        os.chdir(here.parent)
    if os.environ.get("ARITHMECH_LAB") == "1":  # a kernel of `make lab`: charts need the vega bundle there
        offline.jupyter_vega()


def build(
    root: str | Path = ".",
    only: str | None = None,
    sets: Sequence[str] = (),
    skip_execute: bool = False,
    config: str | Path | None = None,
    html: bool = True,
) -> dict[str, float]:
    """Execute the chapters (all, or ``only`` one) into ``_build/executed/``, build ``_build/html``, check it
    is self-contained.

    Returns seconds per step (``chapter names``, ``html``, ``total``), also written to
    ``_build/book-times.json``.
    """
    root = Path(root).resolve()
    cfg = load_config(root, Path(config) if config else None)
    times: dict[str, float] = {}
    t_all = time.perf_counter()
    chapters = plan(root, cfg, sets, only)  # every --set checked, whether or not the chapters execute
    if not skip_execute:
        ex = cfg["execution"]
        with Progress("book", len(chapters)) as bar:
            for k, c in enumerate(chapters, 1):
                shown = ", ".join(f"{a}={b!r}" for a, b in c.parameters.items())
                print(f"[{k}/{len(chapters)}] {c.name}  ({shown})", flush=True)
                bar.note = f"running {c.name}"
                times[c.name] = execute_chapter(root, c, ex.get("timeout"), ex.get("kernel"))
                print(f"      {c.name}: {times[c.name]:.1f} s", flush=True)
                bar.advance(note=f"{c.name} done")
    if html:
        t0 = time.perf_counter()
        print("rendering the book (jupyter-book build) ...", flush=True)
        for rel in write_generated(root, sets):
            print(f"  wrote {rel}")
        offline.vendor_assets(root)
        unexecuted = render_tree(root)
        if unexecuted:
            print(
                f"  not executed yet, rendered without outputs: {', '.join(unexecuted)} "
                f"(no {EXECUTED}/<name>.ipynb; run `python -m arithmech book`)",
                flush=True,
            )
        jupyter_book(root)
        bad = offline.external_references(root / "_build" / "html")
        if bad:
            raise BookError("the built book loads resources from outside itself:\n  " + "\n  ".join(bad[:20]))
        times["html"] = time.perf_counter() - t0
        print(f"      html: {times['html']:.1f} s -> {root / '_build' / 'html' / 'index.html'}")
    times["total"] = time.perf_counter() - t_all
    where = root / "_build" / "html" / "index.html" if html else root / EXECUTED
    print(f"book built in {times['total']:.1f} s: {where}")
    (root / "_build").mkdir(exist_ok=True)
    (root / "_build" / "book-times.json").write_text(
        json.dumps(
            {
                "seconds": {k: round(v, 1) for k, v in times.items()},
                "cpus": os.cpu_count(),
                "only": only,
                "skip_execute": skip_execute,
                "sets": list(sets),
            },
            indent=2,
        )
    )
    return times


def run(config) -> dict[str, float]:
    """``python -m arithmech book``: :func:`build` with a :class:`arithmech.report.build.config.Book`. A bad ``--set``
    is a :class:`BookArgumentError` (one line, exit 2); a chapter that fails is one message and exit 1."""
    try:
        return build(
            config.root,
            only=config.only,
            sets=list(config.set or ()),
            skip_execute=config.skip_execute,
            config=config.config,
            html=config.html,
        )
    except BookArgumentError:
        raise  # one line, exit 2 (arithmech.cli.main)
    except BookError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
