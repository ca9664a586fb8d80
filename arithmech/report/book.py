"""The executable book: run every chapter with papermill, atomically, then build the HTML.

``python -m arithmech book`` is the one command that produces the book:

1. **Execute.** Each chapter notebook listed in ``_toc.yml`` is executed with papermill, in toc
   order, from the repository root (so ``results/`` and ``../shared/data`` mean the same thing
   in every chapter and on the command line). Parameters come from one file, ``book/book.yml``:
   ``global`` values go to every chapter whose ``parameters`` cell declares them, ``chapters.<name>``
   values to one chapter; ``--set key=value`` / ``--set chapter.key=value`` override both.
   A chapter runs into ``_build/.papermill/<name>.ipynb`` and replaces ``book/<name>.ipynb``
   only when every cell succeeded. A failure stops the build with the chapter, the cell and
   the error, and leaves the previous notebook untouched (the failed run is kept in
   ``_build/failed/`` to look at). Chapters hand artifacts to each other through
   ``results/<model>/``.
2. **Render.** ``jupyter-book build`` (execution off) into ``_build/html``, after
   :func:`arithmech.report.offline.vendor_assets` has put vega and MathJax where the pages load them.
3. **Check.** The build fails if a page still loads anything over ``http(s)``
   (:func:`arithmech.report.offline.external_references`).

Every chapter calls :func:`setup` in its check cell (one altair theme, the offline renderer).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from arithmech.core.progress import Progress
from arithmech.report import offline
from arithmech.report.plan import (CONFIG, BookArgumentError, BookError, Chapter, load_config,  # noqa: F401 (API)
                                   parse_sets, plan, toc_files)

def setup() -> None:
    """Call once at the top of a chapter (its check cell): ``from arithmech.report.book import setup; setup()``.

    * enables the arithmech altair theme (:func:`arithmech.report.plots.use_theme`) and the offline
      renderer (charts draw from ``file://`` without network, see :mod:`arithmech.report.offline`);
    * turns progress bars off (tqdm, transformers' "Loading weights"): in a static page they are
      dead widgets that print as ``0%|          |``;
    * when the notebook is opened in Jupyter from ``book/``, moves to the repository root, so
      relative paths (``results/``, ``../shared/data``) mean what they mean for papermill and
      for ``python -m arithmech``.
    """
    from arithmech.report.plots import use_theme
    use_theme()
    offline.enable_renderer()
    os.environ["TQDM_DISABLE"] = "1"                  # read by tqdm when it is first imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    here = Path.cwd()
    if here.name == "book" and (here.parent / "_toc.yml").exists() and (here / "book.yml").exists():
        os.chdir(here.parent)


def chapter_env(environ=None) -> dict:
    """The environment a chapter's kernel runs with: ``environ`` (default ``os.environ``) with a valid
    ``OMP_NUM_THREADS`` (:func:`arithmech.core.inputs.thread_env`: an empty or invalid value made every
    chapter print ``libgomp: Invalid value ...``), no progress bars (``TQDM_DISABLE``) and no progress
    lines (``ARITHMECH_PROGRESS=0``, :mod:`arithmech.core.progress`)."""
    from arithmech.core.inputs import thread_env
    from arithmech.core.progress import OFF
    env = thread_env(os.environ if environ is None else environ)
    env.setdefault("TQDM_DISABLE", "1")
    env[OFF] = "0"
    return env


INTRO = Path("book") / "intro.md"
APPENDIX = Path("book") / "appendix_parameters.md"
_TABLE_START, _TABLE_END = "<!-- parameters:start -->", "<!-- parameters:end -->"
_BOX_START, _BOX_END = "<!-- findings:start -->", "<!-- findings:end -->"


def parameters_table(root: Path) -> str:
    """Markdown: for every executed chapter, a table of its parameters read from its parameters cell.

    Columns: parameter, default, type, help (papermill reads the help from the comment after the
    default: ``n_samples = 256  # pairs per task``).
    """
    import papermill as pm
    cell = lambda x: str(x).replace("|", "\\|").strip()
    text = lambda x: cell(x).replace("<", "&lt;").replace(">", "&gt;")
    out = []
    for p in toc_files(root):
        if p.suffix != ".ipynb":
            continue
        out += [f"**[{p.stem}]({p.name})**", "", "| parameter | default | type | help |", "| --- | --- | --- | --- |"]
        for name, info in pm.inspect_notebook(str(root / p)).items():
            typ = info["inferred_type_name"]
            if typ in (None, "None"):
                try:
                    typ = type(ast.literal_eval(info["default"])).__name__
                except (ValueError, SyntaxError):
                    typ = ""
            out.append(f"| `{name}` | `{cell(info['default'])}` | {text(typ)} | {text(info['help'])} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def update_intro(root: Path) -> bool:
    """Before rendering: the parameters table into ``book/appendix_parameters.md``, the results box
    per model into ``book/intro.md`` (kept as it is when no results exist), papermill's injected
    cells hidden (:mod:`arithmech.report.pages`); True if a file changed."""
    from arithmech.report import pages
    changed = False
    appendix = root / APPENDIX
    if appendix.exists():
        try:
            changed |= pages.update_markdown(appendix, _TABLE_START, _TABLE_END, parameters_table(root))
            if (root / INTRO).exists():
                changed |= pages.update_markdown(root / INTRO, _BOX_START, _BOX_END, pages.results_box(
                    root, [("embedded", "The embedded model"), ("smollm2-135m", "SmolLM2-135M")]))
        except ValueError as e:
            raise BookError(str(e)) from None
    for p in toc_files(root, missing_ok=True):
        if p.suffix == ".ipynb":
            changed |= pages.hide_injected(root / p)
    return changed


def execute_chapter(root: Path, chapter: Chapter, timeout: int | None = None, kernel: str | None = None) -> float:
    """Run one chapter with papermill into a temporary file; move it over ``chapter.path`` on success.

    Returns the wall time in seconds. On failure raises :class:`BookError` naming the chapter,
    the cell and the error; ``chapter.path`` is not touched.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    src = root / chapter.path
    work = root / "_build" / ".papermill"
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / f"{chapter.name}.ipynb"
    t0 = time.perf_counter()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(chapter_env(saved))             # the kernel inherits it (see chapter_env)
    try:
        pm.execute_notebook(str(src), str(tmp), parameters=chapter.parameters, cwd=str(root),
                            kernel_name=kernel, execution_timeout=timeout, progress_bar=False,
                            log_output=False, request_save_on_cell_execute=False,
                            # the kernel's own log is noise here (transport warnings, the interrupt
                            # at shutdown); cell errors are in the notebook and in our message
                            extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    except PapermillExecutionError as e:
        failed = root / "_build" / "failed" / f"{chapter.name}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.move(str(tmp), failed)
        first = next((l for l in (e.source or "").splitlines() if l.strip()), "")
        raise BookError(
            f"chapter {chapter.name!r} ({chapter.path}) failed in cell {e.cell_index + 1} "
            f"(counting the injected-parameters cell), whose code starts with:\n    {first}\n"
            f"  {e.ename}: {e.evalue}\n"
            f"{chapter.path} was left as it was; the failed run is in {failed.relative_to(root)}") from None
    except Exception as e:          # kernel died, timeout, unreadable notebook, ...
        if tmp.exists():
            tmp.unlink()
        raise BookError(f"chapter {chapter.name!r} ({chapter.path}) could not be executed: "
                        f"{type(e).__name__}: {e}\n{chapter.path} was left as it was") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    os.replace(tmp, src)
    return time.perf_counter() - t0


def jupyter_book(root: Path) -> None:
    """``jupyter-book build`` with the venv's own executable; raise with its output's tail on failure."""
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(root), "--builder", "html"]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    log = root / "_build" / "jupyter-book.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(r.stdout + "\n" + r.stderr)
    warnings = [l for l in (r.stdout + r.stderr).splitlines() if "WARNING" in l]
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-30:])
        raise BookError(f"jupyter-book build failed (exit {r.returncode}); full log in {log}:\n{tail}")
    if warnings:
        print(f"  jupyter-book: {len(warnings)} warnings (see {log.relative_to(root)}), e.g. {warnings[0][:200]}")


def build(root: str | Path = ".", only: str | None = None, sets: list[str] = (), skip_execute: bool = False,
          config: str | Path | None = None, html: bool = True) -> dict[str, float]:
    """Execute the chapters (all, or ``only`` one), build ``_build/html``, check it is self-contained.

    Returns seconds per step (``chapter names``, ``html``, ``total``), also written to
    ``_build/book-times.json``.
    """
    root = Path(root).resolve()
    cfg = load_config(root, Path(config) if config else None)
    times: dict[str, float] = {}
    t_all = time.perf_counter()
    if not skip_execute:
        chapters = plan(root, cfg, sets, only)
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
        if update_intro(root):
            print(f"  updated {INTRO} / {APPENDIX} (results box, parameters table) or hid injected cells")
        offline.vendor_assets(root)
        jupyter_book(root)
        bad = offline.external_references(root / "_build" / "html")
        if bad:
            raise BookError("the built book loads resources from outside itself:\n  " + "\n  ".join(bad[:20]))
        times["html"] = time.perf_counter() - t0
        print(f"      html: {times['html']:.1f} s -> {root / '_build' / 'html' / 'index.html'}")
    times["total"] = time.perf_counter() - t_all
    where = root / "_build" / "html" / "index.html" if html else root / "book"
    print(f"book built in {times['total']:.1f} s: {where}")
    (root / "_build").mkdir(exist_ok=True)
    (root / "_build" / "book-times.json").write_text(json.dumps(
        {"seconds": {k: round(v, 1) for k, v in times.items()}, "cpus": os.cpu_count(),
         "only": only, "skip_execute": skip_execute, "sets": list(sets)}, indent=2))
    return times


def _cli(a: argparse.Namespace) -> None:
    try:
        build(a.root, only=a.only, sets=a.set, skip_execute=a.skip_execute, config=a.config, html=not a.no_html)
    except BookArgumentError:
        raise                                   # one line, exit 2 (arithmech.cli.main)
    except BookError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


def add_cli(sub, name: str = "book") -> None:
    s = sub.add_parser("book", help="execute every chapter with papermill (atomically) and build the HTML book",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--only", metavar="CHAPTER", help="execute only this chapter (file stem, e.g. identify)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter for every chapter that has it (model=...) or for one "
                        "(identify.n_samples=32); repeatable")
    s.add_argument("--skip-execute", action="store_true", help="build the HTML from the notebooks as they are")
    s.add_argument("--no-html", action="store_true", help="execute only; do not run jupyter-book")
    s.add_argument("--root", default=".", help="the book's root (holds _config.yml, _toc.yml; default: .)")
    s.add_argument("--config", default=None, help=f"parameter file relative to the root (default: {CONFIG})")
    s.set_defaults(func=_cli)
