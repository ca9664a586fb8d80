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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arithmech.report import offline

CONFIG = Path("book") / "book.yml"


class BookError(RuntimeError):
    """A chapter failed, or the book's configuration or build is wrong; the message says what to do."""


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


# ------------------------------------------------------------------------------------ chapters
@dataclass
class Chapter:
    name: str                   # file stem, e.g. "identify"
    path: Path                  # book/identify.ipynb, relative to the root
    parameters: dict[str, Any] = field(default_factory=dict)


def toc_files(root: Path, missing_ok: bool = False) -> list[Path]:
    """Every file of ``_toc.yml`` in order (root page first), resolved to an existing path.

    A listed file that does not exist is an error, or skipped with ``missing_ok``."""
    import yaml
    toc_path = root / "_toc.yml"
    if not toc_path.exists():
        raise BookError(f"no _toc.yml in {root}: run from the repository root or pass --root")
    toc = yaml.safe_load(toc_path.read_text())
    entries: list[str] = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                entries.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk({k: v for k, v in toc.items() if k in ("parts", "chapters")})
    out = []
    for e in entries:
        p = Path(e)
        found = [root / p] if p.suffix else [root / p.with_suffix(s) for s in (".ipynb", ".md")]
        found = [f for f in found if f.exists()]
        if not found and missing_ok:
            continue
        if not found:
            raise BookError(f"_toc.yml lists {e!r} but neither {e}.ipynb nor {e}.md exists in {root}")
        out.append(found[0].relative_to(root))
    return out


def load_config(root: Path, config: Path | None = None) -> dict:
    """``book/book.yml`` as a dict with ``global``, ``chapters`` and ``execution`` keys."""
    import yaml
    path = root / (config or CONFIG)
    if not path.exists():
        raise BookError(f"book configuration {path} does not exist")
    cfg = yaml.safe_load(path.read_text()) or {}
    unknown = set(cfg) - {"global", "chapters", "execution"}
    if unknown:
        raise BookError(f"{path}: unknown top-level keys {sorted(unknown)}; expected global, chapters, execution")
    return {"global": cfg.get("global") or {}, "chapters": cfg.get("chapters") or {},
            "execution": cfg.get("execution") or {}}


def parse_sets(sets: list[str]) -> tuple[dict, dict]:
    """``["seed=1", "identify.n_samples=32"]`` → ``({"seed": 1}, {"identify": {"n_samples": 32}})``.

    Values are read as YAML (``32`` is an int, ``[a, b]`` a list, ``cuda`` a string; quote
    ``'off'``-like words to keep them strings).
    """
    import yaml
    glob: dict = {}
    per: dict = {}
    for s in sets:
        if "=" not in s:
            raise BookError(f"--set {s!r}: expected key=value or chapter.key=value")
        key, raw = s.split("=", 1)
        value = yaml.safe_load(raw) if raw != "" else ""
        if "." in key:
            chap, key = key.split(".", 1)
            per.setdefault(chap, {})[key] = value
        else:
            glob[key] = value
    return glob, per


def plan(root: Path, cfg: dict, sets: list[str] = (), only: str | None = None) -> list[Chapter]:
    """The chapters to execute (all, or ``only`` one), in toc order, each with its parameters.

    A global value reaches a chapter only if its parameters cell declares the name; a
    per-chapter value must be declared there (a typo is an error, not a silent no-op).
    With ``only``, the other chapters need not exist yet.
    """
    import papermill as pm
    set_glob, set_per = parse_sets(list(sets))
    nbs = [p for p in toc_files(root, missing_ok=only is not None) if p.suffix == ".ipynb"]
    names = [p.stem for p in nbs]
    if only is not None and only not in names:
        raise BookError(f"--only {only!r}: not a chapter of _toc.yml; chapters: {', '.join(names)}")
    for chap in ([only] if only else list(cfg["chapters"])) + list(set_per):
        if chap not in names:
            raise BookError(f"parameters given for chapter {chap!r}, which is not an executed chapter of "
                            f"_toc.yml; chapters: {', '.join(names)}")
    out = []
    for p in nbs:
        if only is not None and p.stem != only:
            continue
        declared = pm.inspect_notebook(str(root / p))
        if not declared:
            raise BookError(f"chapter {p.stem!r} ({p}) has no cell tagged 'parameters' (papermill needs one, "
                            "first in the notebook)")
        params = {k: v for k, v in {**cfg["global"], **set_glob}.items() if k in declared}
        own = {**(cfg["chapters"].get(p.stem) or {}), **set_per.get(p.stem, {})}
        undeclared = sorted(set(own) - set(declared))
        if undeclared:
            raise BookError(f"chapter {p.stem!r} has no parameter {', '.join(undeclared)}; its parameters "
                            f"cell declares: {', '.join(declared)}")
        params.update(own)
        out.append(Chapter(p.stem, p, params))
    return out


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
    os.environ.setdefault("TQDM_DISABLE", "1")        # the kernel inherits it: no dead progress widgets
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
        for k, c in enumerate(chapters, 1):
            shown = ", ".join(f"{a}={b!r}" for a, b in c.parameters.items())
            print(f"[{k}/{len(chapters)}] {c.name}  ({shown})", flush=True)
            times[c.name] = execute_chapter(root, c, ex.get("timeout"), ex.get("kernel"))
            print(f"      {c.name}: {times[c.name]:.1f} s", flush=True)
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
    print(f"book built in {times['total']:.1f} s")
    (root / "_build").mkdir(exist_ok=True)
    (root / "_build" / "book-times.json").write_text(json.dumps(
        {"seconds": {k: round(v, 1) for k, v in times.items()}, "cpus": os.cpu_count(),
         "only": only, "skip_execute": skip_execute, "sets": list(sets)}, indent=2))
    return times


def _cli(a: argparse.Namespace) -> None:
    try:
        build(a.root, only=a.only, sets=a.set, skip_execute=a.skip_execute, config=a.config, html=not a.no_html)
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
