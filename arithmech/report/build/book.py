"""The executable book: chapters kept as text, executed with papermill into ``_build/``, then rendered.

``python -m arithmech book`` is the one command that produces the book. It writes only ignored paths
(``_build/``, ``book/_generated/``, ``results/<model>/``): the chapter sources in ``book/`` are never
rewritten, so ``git status`` stays clean after a build.

1. **Execute.** Each chapter listed in ``_toc.yml`` is a MyST-Markdown notebook ``book/<name>.md``
   (jupytext's ``md:myst``, no outputs; :func:`arithmech.report.build.plan.is_notebook`). In toc order it is
   converted with jupytext and executed with papermill from the repository root (so ``results/`` and
   ``../shared/data`` mean the same thing in every chapter and on the command line). Parameters come
   from one file, ``book/book.yml``: ``global`` values go to every chapter whose ``parameters`` cell
   declares them, ``chapters.<name>`` values to one chapter; ``--set key=value`` /
   ``--set chapter.key=value`` override both. A chapter runs into ``_build/.papermill/<name>.ipynb`` and
   replaces its executed copy ``_build/executed/<name>.ipynb`` only when every cell succeeded. A failure
   stops the build with the chapter, the cell and the error, and leaves the previous executed copy
   untouched (the failed run is kept in ``_build/failed/`` to look at). Chapters hand artifacts to each
   other through ``results/<model>/``.
2. **Generate.** The text the build computes goes to ``book/_generated/`` (git-ignored), which the
   hand-written pages pull in with MyST ``{include}``: the introduction's findings box per model
   (``findings.md``), its sentence on the Explorer with the prompt count the build gives that page
   (``explorer.md``) and the parameters table of the appendix (``parameters.md``).
3. **Render.** A render tree ``_build/render/`` is assembled: ``_config.yml``, ``_toc.yml``, the plain
   pages, the generated includes, the static files and, under the chapters' own names
   (``book/<name>.ipynb``), the executed copies. ``jupyter-book build`` (execution off) renders it into
   ``_build/html``, after :func:`arithmech.report.build.offline.vendor_assets` has put vega and MathJax where
   the pages load them. ``--skip-execute`` renders the executed copies that exist and names the chapters
   that have none (they are rendered from their source, without outputs).
4. **Check.** The build fails if a page still loads anything over ``http(s)``
   (:func:`arithmech.report.build.offline.external_references`).

Every chapter calls :func:`setup` in its check cell (one altair theme, the offline renderer).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from arithmech.core.atomic import atomic_write
from arithmech.core.inputs import quoted, thread_env
from arithmech.core.progress import OFF, Progress
from arithmech.report.build import offline
from arithmech.report.build.plan import (  # noqa: F401 (API)
    CONFIG,
    BookArgumentError,
    BookError,
    Chapter,
    chapter_values,
    chapters,
    declared_parameters,
    is_notebook,
    load_config,
    parse_sets,
    plan,
    read_notebook,
    toc_files,
)
from arithmech.report.charts import pipeline
from arithmech.report.charts.plots import use_theme
from arithmech.report.views import counts, pages
from arithmech.report.views.scope import scope_box


def setup() -> None:
    """Call once at the top of a chapter (its check cell): ``from arithmech.report.build.book import setup; setup()``.

    * enables the arithmech altair theme (:func:`arithmech.report.charts.plots.use_theme`) and the offline
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


def chapter_env(environ=None) -> dict:
    """The environment a chapter's kernel runs with: ``environ`` (default ``os.environ``) with a valid
    ``OMP_NUM_THREADS`` (:func:`arithmech.core.inputs.thread_env`: an empty or invalid value made every
    chapter print ``libgomp: Invalid value ...``), no progress bars (``TQDM_DISABLE``) and no progress
    lines (``ARITHMECH_PROGRESS=0``, :mod:`arithmech.core.progress`). When the runner's ``arithmech`` comes from a
    source checkout, that checkout leads ``PYTHONPATH``: the chapters import the code the runner runs, even
    from a book root elsewhere (a test's temporary book) with another checkout installed in the venv."""
    env = thread_env(os.environ if environ is None else environ)
    env.pop("ARITHMECH_LAB", None)  # a book built from a `make lab` terminal: no lab-only outputs
    env.setdefault("TQDM_DISABLE", "1")
    env[OFF] = "0"
    src = Path(__file__).resolve().parents[3]  # the arithmech checkout this runner runs from
    if (src / "pyproject.toml").exists():
        env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


BUILD = Path("_build")
EXECUTED = BUILD / "executed"  # the executed chapters, <name>.ipynb
RENDER = BUILD / "render"  # the tree jupyter-book renders (see render_tree)
GENERATED = Path("book") / "_generated"
FINDINGS = GENERATED / "findings.md"  # {include}d by book/intro.md
PARAMETERS = GENERATED / "parameters.md"  # {include}d by book/appendix_parameters.md
RULES = GENERATED / "rules.md"  # {include}d by book/claims_rules.md
PROVENANCE = GENERATED / "provenance.md"  # {include}d by book/intro.md: were the rules fixed before the results?
EXPLORER = GENERATED / "explorer.md"  # {include}d by book/intro.md: the Explorer page and its prompt count
MODELS = [("embedded", "The embedded model"), ("smollm2-135m", "SmolLM2-135M")]
NO_RESULTS = "*No results yet: `python -m arithmech book` (or `make book`) computes them and writes this box.*"


def executed(root: Path, chapter: str | Path) -> Path:
    """Where the executed copy of a chapter (a name or its source path) lives: ``_build/executed/<name>.ipynb``."""
    return Path(root) / EXECUTED / f"{Path(chapter).stem}.ipynb"


def parameters_table(root: Path) -> str:
    """Markdown: for every chapter, a table of its parameters read from its source's parameters cell.

    Columns: parameter, default, type, help (papermill reads the help from the comment after the
    default: ``n_samples = 256  # pairs per task``).
    """
    cell = lambda x: str(x).replace("|", "\\|").strip()
    text = lambda x: cell(x).replace("<", "&lt;").replace(">", "&gt;")
    out = []
    for p in chapters(root):
        out += [
            f"**[{p.stem}]({p.stem}.ipynb)**",
            "",
            "| parameter | default | type | help |",
            "| --- | --- | --- | --- |",
        ]
        for name, info in declared_parameters(root / p).items():
            typ = info["inferred_type_name"]
            if typ in (None, "None"):
                try:
                    typ = type(ast.literal_eval(info["default"])).__name__
                except (ValueError, SyntaxError):
                    typ = ""
            out.append(f"| `{name}` | `{cell(info['default'])}` | {text(typ)} | {text(info['help'])} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def explorer_intro(root: Path, sets: list[str] = ()) -> str:
    """The introduction's sentence on the Explorer (:func:`arithmech.report.views.counts.explorer_sentence`) with the
    models and ``n_prompts`` the build gives that chapter (``sets``: the build's ``--set`` values); "" in a book
    without the chapter."""
    if not (root / "book" / "explorer.md").exists():
        return ""
    values = chapter_values(root, "explorer", sets)
    labels = dict(MODELS)
    lower = lambda x: x[0].lower() + x[1:] if x.startswith("The ") else x  # "the embedded model", "SmolLM2-135M"
    named = [lower(labels.get(m, m)) for m in values["models"]]
    return counts.explorer_sentence(int(values["n_prompts"]), named)


def write_generated(root: Path, sets: list[str] = ()) -> list[Path]:
    """Before rendering: the parameters table (``book/_generated/parameters.md``), the rules page's tables and
    changelog (``rules.md``), the rules' provenance sentence (``provenance.md``), the Explorer's sentence with its
    prompt count (``explorer.md``, :func:`explorer_intro`; ``sets``: the build's ``--set`` values) and the results box per
    model (``book/_generated/findings.md``: every model's answer sentence, then Fig. 1, the pipeline
    (:func:`arithmech.report.charts.pipeline.pipeline_markdown`), then the boxes; a note when no model has results, a
    warning box for a model whose results folder does not read as one run). Returns the files that changed."""
    boxes, sentences = [], []
    for name, label in MODELS:
        try:
            sentences += [s for s in [pages.results_box(root, [(name, label)], part="sentence")] if s]
            box = pages.results_box(root, [(name, label)], part="box")
        except ValueError as e:  # a results folder half re-made (e.g. identify re-run, analyze not yet)
            e = str(e).replace(f"{root}{os.sep}", "")  # paths relative to the root, as on the page
            print(f"  warning: no findings box for {name}: {e}", flush=True)
            box = (
                f":::{{admonition}} {label}: results out of step\n:class: warning\n\n`results/{name}/` does not "
                f"read as one run: {e}\n:::"
            )
        boxes += [box] if box else []
    try:
        rules = pages.rules_page(root, MODELS)
    except ValueError as e:
        rules = (
            f"*The rules cannot be decided on results that are out of step: {str(e).replace(f'{root}{os.sep}', '')}*"
        )
    fig1 = pipeline.pipeline_markdown(root / "book")  # "" in a book without the chapters
    scope = [s for s in [scope_box(root)] if s]  # the first screen (issue #41)
    texts = {
        PARAMETERS: parameters_table(root),
        FINDINGS: "\n\n".join(x for x in ([*scope, *sentences, fig1, *boxes] if boxes else [fig1, NO_RESULTS]) if x),
        RULES: rules,
        PROVENANCE: pages.provenance_sentence(),
        EXPLORER: explorer_intro(root, sets),
    }
    changed = []
    for rel, body in texts.items():
        path = root / rel
        body = "<!-- generated by `python -m arithmech book`; do not edit -->\n" + body + "\n"
        if not path.exists() or path.read_text() != body:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, body)
            changed.append(rel)
    return changed


def execute_chapter(root: Path, chapter: Chapter, timeout: int | None = None, kernel: str | None = None) -> float:
    """Convert one chapter's source with jupytext, run it with papermill into a temporary file and move it
    over its executed copy (:func:`executed`) on success; its injected-parameters cell is tagged
    ``remove-cell`` (:func:`arithmech.report.views.pages.hide_injected`).

    Returns the wall time in seconds. On failure raises :class:`BookError` naming the chapter,
    the cell and the error; neither the source nor the previous executed copy is touched.
    """
    import papermill as pm  # lazy: the book extra
    from papermill.exceptions import PapermillExecutionError  # lazy: the book extra

    src = root / chapter.path
    work = root / BUILD / ".papermill"
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / f"{chapter.name}.ipynb"
    dest = executed(root, chapter.name)
    kept = f"{quoted(chapter.path)} and {quoted(dest.relative_to(root))} were left as they were"
    t0 = time.perf_counter()
    try:
        nb = read_notebook(src)
    except Exception as e:  # unreadable source
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) could not be read: {type(e).__name__}: {e}"
        ) from None
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(chapter_env(saved))  # the kernel inherits it (see chapter_env)
    try:
        pm.execute_notebook(
            nb,
            str(tmp),
            parameters=chapter.parameters,
            cwd=str(root),
            kernel_name=kernel,
            execution_timeout=timeout,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            # the kernel's own log is noise here (transport warnings, the interrupt
            # at shutdown); cell errors are in the notebook and in our message
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except PapermillExecutionError as e:
        failed = root / BUILD / "failed" / f"{chapter.name}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.move(str(tmp), failed)
        first = next((l for l in (e.source or "").splitlines() if l.strip()), "")
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) failed in cell {e.cell_index + 1} "
            f"(counting the injected-parameters cell), whose code starts with:\n    {first}\n"
            f"  {e.ename}: {e.evalue}\n"
            f"{kept}; the failed run is in {quoted(failed.relative_to(root))}"
        ) from None
    except Exception as e:  # kernel died, timeout, ...
        if tmp.exists():
            tmp.unlink()
        raise BookError(
            f"chapter {chapter.name!r} ({quoted(chapter.path)}) could not be executed: {type(e).__name__}: {e}\n{kept}"
        ) from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    pages.hide_injected(tmp)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, dest)
    return time.perf_counter() - t0


# Tool caches that are not dot-folders (those are all skipped: .pytest_cache, .ipynb_checkpoints, .venv, ...).
TOOL_CACHES = ("__pycache__", "node_modules")


def _skip(rel: Path) -> bool:
    """Tool caches and editor files never go into the render tree (nor, through it, into the HTML); _config.yml's
    ``exclude_patterns`` name them too, for Sphinx."""
    return any(part.startswith(".") or part in (*TOOL_CACHES, "_generated") for part in rel.parts)


def _sync(src: Path, dst: Path, keep: set) -> None:
    """Copy ``src`` to ``dst`` (times kept, so Sphinx rebuilds only what changed) unless it is the same."""
    keep.add(dst)
    if dst.exists() and not dst.is_symlink():
        a, b = src.stat(), dst.stat()
        if a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime):
            return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def render_tree(root: Path) -> list[str]:
    """Assemble ``_build/render/`` for jupyter-book: ``_config.yml``, ``_toc.yml``, every file of ``book/``
    that is not a page (static files, the bibliography), the plain pages, ``book/_generated/`` and each
    chapter's executed copy under the chapter's name (``book/<name>.ipynb``); files that no longer belong
    are removed. A chapter without an executed copy is rendered from its source, without outputs.
    Returns the names of those chapters."""
    import nbformat  # lazy: the book extra

    tree, keep, unexecuted = root / RENDER, set(), []
    for f in ("_config.yml", "_toc.yml"):
        _sync(root / f, tree / f, keep)
    book = root / "book"
    for f in sorted(book.rglob("*")):
        rel = f.relative_to(root)
        if (
            f.is_file()
            and not _skip(f.relative_to(book))
            and f.suffix not in (".md", ".ipynb")
            and f.name != "book.yml"
        ):
            _sync(f, tree / rel, keep)
    for f in sorted((root / GENERATED).glob("*.md")):
        _sync(f, tree / f.relative_to(root), keep)
    for p in toc_files(root):
        if not is_notebook(root / p):
            _sync(root / p, tree / p, keep)
            continue
        out = tree / p.with_suffix(".ipynb")
        if executed(root, p).exists():
            _sync(executed(root, p), out, keep)
        else:
            unexecuted.append(p.stem)
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(read_notebook(root / p), out)
            keep.add(out)
    for f in sorted(tree.rglob("*"), reverse=True):
        if f.is_file() and f not in keep:
            f.unlink()
    return unexecuted


def _renderer_env() -> dict[str, str]:
    """The environment of the jupyter-book process: ours, with this arithmech first on its path, so the Sphinx
    extension _config.yml names (:mod:`arithmech.report.build.bibstyle`) is the one of the running package."""
    here = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])}


def jupyter_book(root: Path) -> None:
    """``jupyter-book build _build/render`` into ``_build/html`` with the venv's own executable; raise with its
    output's tail on failure."""
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [
        str(exe) if exe.exists() else "jupyter-book",
        "build",
        str(root / RENDER),
        "--path-output",
        str(root),
        "--builder",
        "html",
    ]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=_renderer_env())
    log = root / BUILD / "jupyter-book.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(r.stdout + "\n" + r.stderr)
    warnings = [l for l in (r.stdout + r.stderr).splitlines() if "WARNING" in l]
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-30:])
        raise BookError(
            f"jupyter-book build failed (exit {r.returncode}); full log in {quoted(log.relative_to(root))}:\n{tail}"
        )
    if warnings:
        print(f"  jupyter-book: {len(warnings)} warnings (see {log.relative_to(root)}), e.g. {warnings[0][:200]}")


def build(
    root: str | Path = ".",
    only: str | None = None,
    sets: list[str] = (),
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
    """``python -m arithmech book``: :func:`build` with a :class:`arithmech.steps.config.Book`. A bad ``--set``
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
