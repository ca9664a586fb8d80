"""The book's third phase: the render tree assembled and rendered to HTML by jupyter-book.

:func:`render_tree` puts ``_config.yml``, ``_toc.yml``, the plain pages, the generated includes, the static
files and, under the chapters' own names (``book/<name>.ipynb``), the executed copies into ``_build/render/``
(tool caches and editor files never go in); :func:`jupyter_book` renders it into ``_build/html`` (execution
off) with this checkout's Sphinx extension first on the path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from arithmech.core.inputs import quoted
from arithmech.report.build.execute import BUILD, executed
from arithmech.report.build.generate import GENERATED
from arithmech.report.build.plan import BookError, is_notebook, read_notebook, toc_files

RENDER = BUILD / "render"  # the tree jupyter-book renders (see render_tree)


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

    tree, keep, unexecuted = root / RENDER, set[Path](), []
    for name in ("_config.yml", "_toc.yml"):
        _sync(root / name, tree / name, keep)
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
