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
import builtins
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arithmech.core.progress import Progress
from arithmech.report import offline

CONFIG = Path("book") / "book.yml"


class BookError(RuntimeError):
    """A chapter failed, or the book's configuration or build is wrong; the message says what to do."""


class BookArgumentError(BookError, ValueError):
    """A ``--set`` key or value, ``--only`` or a ``book.yml`` value is wrong: refused before any chapter runs
    (``python -m arithmech book`` prints the one line and exits with code 2)."""


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
            raise BookArgumentError(f"--set {s!r}: expected key=value or chapter.key=value")
        key, raw = s.split("=", 1)
        value = yaml.safe_load(raw) if raw != "" else ""
        if "." in key:
            chap, key = key.split(".", 1)
            per.setdefault(chap, {})[key] = value
        else:
            glob[key] = value
    return glob, per


def plan(root: Path, cfg: dict, sets: list[str] = (), only: str | None = None) -> list[Chapter]:
    """The chapters to execute (all, or ``only`` one), in toc order, each with its parameters, checked.

    A global value reaches a chapter only if its parameters cell declares the name; a global ``--set``
    key that no chapter to run declares and a per-chapter value its chapter does not declare are
    errors (a typo is never a silent no-op). Every
    chapter's values (defaults of its parameters cell + the given ones) are checked against the rules of
    its check cell (:func:`chapter_rules`) here, before any chapter runs.
    With ``only``, the other chapters need not exist yet.
    """
    import papermill as pm
    set_glob, set_per = parse_sets(list(sets))
    nbs = [p for p in toc_files(root, missing_ok=only is not None) if p.suffix == ".ipynb"]
    names = [p.stem for p in nbs]
    if only is not None and only not in names:
        raise BookArgumentError(f"--only {only!r}: not a chapter of _toc.yml; chapters: {', '.join(names)}")
    for chap in ([only] if only else list(cfg["chapters"])) + list(set_per):
        if chap not in names:
            raise BookArgumentError(f"parameters given for chapter {chap!r}, which is not an executed chapter of "
                                    f"_toc.yml; chapters: {', '.join(names)}")
    declared = {p.stem: pm.inspect_notebook(str(root / p)) for p in nbs}
    for p in nbs:
        if not declared[p.stem]:
            raise BookError(f"chapter {p.stem!r} ({p}) has no cell tagged 'parameters' (papermill needs one, "
                            "first in the notebook)")
    run = [p for p in nbs if only is None or p.stem == only]
    _check_global_keys(set_glob, {k for p in run for k in declared[p.stem]}, "--set", "to run")
    out = []
    for p in run:
        params = {k: v for k, v in {**cfg["global"], **set_glob}.items() if k in declared[p.stem]}
        own = {**(cfg["chapters"].get(p.stem) or {}), **set_per.get(p.stem, {})}
        undeclared = sorted(set(own) - set(declared[p.stem]))
        if undeclared:
            raise BookArgumentError(f"chapter {p.stem!r} has no parameter {', '.join(undeclared)}; its parameters "
                                    f"cell declares: {', '.join(declared[p.stem])}; fix the name "
                                    f"(--set {p.stem}.NAME=VALUE or book.yml chapters.{p.stem})")
        params.update(own)
        check_chapter_values(root, p, declared[p.stem], params)
        out.append(Chapter(p.stem, p, params))
    return out


def _check_global_keys(values: dict, allowed: set, where: str, which: str) -> None:
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise BookArgumentError(f"{where} {unknown[0]!r}: no chapter {which} has this parameter; names: "
                                f"{', '.join(sorted(allowed))}; fix the name, or give CHAPTER.NAME=VALUE")


# Names a check cell's rules may use (type names and the predicates' helpers); nothing else is reachable.
_RULE_NAMES = {n: getattr(builtins, n) for n in ("int", "float", "str", "bool", "list", "dict", "tuple", "len", "all", "any", "isinstance",
                         "min", "max", "abs", "set", "sorted")}


def chapter_rules(root: Path, path: Path) -> dict:
    """The parameter rules of a chapter, as its check cell passes them to
    :func:`arithmech.report.params.check_params` (``check_params(globals(), {...})``): the dict literal is
    read from the notebook's source and evaluated alone with only type names and ``len``/``all``/
    ``isinstance``-like helpers in scope; the notebook is not executed. ``{}`` when the chapter has no
    such call."""
    import nbformat
    nb = nbformat.read(root / path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or "check_params" not in cell.source:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) ==
                    "check_params" and len(node.args) >= 2 and isinstance(node.args[1], ast.Dict)):
                code = compile(ast.Expression(node.args[1]), f"{path} (check cell)", "eval")
                return eval(code, {"__builtins__": _RULE_NAMES})     # noqa: S307 (the book's own rule literal)
    return {}


def check_chapter_values(root: Path, path: Path, declared: dict, given: dict) -> None:
    """Check ``given`` values (over the parameters cell's defaults) against :func:`chapter_rules`."""
    from arithmech.report.params import check_params
    values = {}
    for name, info in declared.items():
        try:
            values[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            pass                                         # a computed default: the check cell judges it
    values.update(given)
    rules = {k: r for k, r in chapter_rules(root, path).items() if k in values}
    try:
        check_params(values, rules)
    except ValueError as e:
        raise BookArgumentError(f"chapter {path.stem!r}: {e}; fix the value (--set {path.stem}.NAME=VALUE, "
                                "--set NAME=VALUE or book/book.yml)") from None


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
_TABLE_START, _TABLE_END = "<!-- parameters:start -->", "<!-- parameters:end -->"


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
    """Rewrite the parameters table between the markers of ``book/intro.md``; True if it changed."""
    intro = root / INTRO
    if not intro.exists():
        return False
    text = intro.read_text()
    if _TABLE_START not in text or _TABLE_END not in text:
        raise BookError(f"{intro} lacks the markers {_TABLE_START} ... {_TABLE_END} for the parameters table")
    head, rest = text.split(_TABLE_START, 1)
    _, tail = rest.split(_TABLE_END, 1)
    new = f"{head}{_TABLE_START}\n{parameters_table(root)}\n{_TABLE_END}{tail}"
    if new == text:
        return False
    tmp = intro.with_suffix(".md.tmp")
    tmp.write_text(new)
    os.replace(tmp, intro)
    return True


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
            print(f"  updated the parameters table in {INTRO}")
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
