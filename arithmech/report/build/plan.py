"""Planning a book build: which chapters run, with which parameters, all checked before any runs.

The chapter order is ``_toc.yml``'s. A chapter is a notebook kept as text: a MyST-Markdown notebook
``book/<name>.md`` (jupytext's ``md:myst`` format, a ``jupytext:``/``kernelspec:`` front matter, no outputs;
:func:`is_notebook`); the other ``.md`` files of the toc are plain pages. Parameters come from
``book/book.yml`` (``global`` and per chapter) and ``--set``. Each chapter declares its parameters in its
``parameters`` cell (read by papermill without executing anything, :func:`declared_parameters`) and their
rules in its config (:mod:`arithmech.report.build.chapters`, which its check cell builds); :func:`plan` checks the
names against the first and the values by building the second, so a misspelt key or a wrong value is
refused up front and no notebook source is evaluated.
"""

from __future__ import annotations

import ast
import functools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arithmech.core.inputs import quoted
from arithmech.report.build.chapters import CHAPTERS

CONFIG = Path("book") / "book.yml"


class BookError(RuntimeError):
    """A chapter failed, or the book's configuration or build is wrong; the message says what to do."""


class BookArgumentError(BookError, ValueError):
    """A ``--set`` key or value, ``--only`` or a ``book.yml`` value is wrong: refused before any chapter runs
    (``python -m arithmech book`` prints the one line and exits with code 2)."""


@dataclass
class Chapter:
    name: str  # file stem, e.g. "identify"
    path: Path  # book/identify.md (the text source), relative to the root
    parameters: dict[str, Any] = field(default_factory=dict)


def toc_files(root: Path, missing_ok: bool = False) -> list[Path]:
    """Every file of ``_toc.yml`` in order (root page first), resolved to an existing path.

    A listed file that does not exist is an error, or skipped with ``missing_ok``."""
    import yaml  # lazy: the book extra

    toc_path = root / "_toc.yml"
    if not toc_path.exists():
        raise BookArgumentError(f"no _toc.yml in {quoted(root)}: run from the repository root or pass --root")
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
        found = [root / p] if p.suffix else [root / p.with_suffix(s) for s in (".md", ".ipynb")]
        found = [f for f in found if f.exists()]
        if not found and missing_ok:
            continue
        if not found:
            raise BookError(
                f"_toc.yml lists {e!r} but neither {quoted(str(e) + '.md')} nor {quoted(str(e) + '.ipynb')} "
                f"exists in {quoted(root)}"
            )
        out.append(found[0].relative_to(root))
    return out


def is_notebook(path: Path) -> bool:
    """True for a chapter: an ``.ipynb``, or a ``.md`` whose front matter has jupytext's header
    (``jupytext:`` or ``kernelspec:``); a plain Markdown page is False."""
    path = Path(path)
    if path.suffix == ".ipynb":
        return True
    if path.suffix != ".md" or not path.exists():
        return False
    text = path.read_text()
    if not text.startswith("---"):
        return False
    head = text[3:].split("\n---", 1)[0]
    return any(line.startswith(("jupytext:", "kernelspec:")) for line in head.splitlines())


def chapters(root: Path, missing_ok: bool = False) -> list[Path]:
    """The chapters of ``_toc.yml`` (:func:`is_notebook`), in toc order, relative to ``root``."""
    return [p for p in toc_files(root, missing_ok=missing_ok) if is_notebook(root / p)]


def read_notebook(path: Path):
    """A chapter as an ``nbformat`` notebook: a ``.md`` source converted by jupytext (no outputs), an
    ``.ipynb`` read as it is."""
    path = Path(path)
    if path.suffix == ".ipynb":
        import nbformat  # lazy: the book extra

        return nbformat.read(path, as_version=4)
    import jupytext  # lazy: the book extra

    return jupytext.read(path, fmt="md:myst")


def declared_parameters(path: Path) -> dict:
    """papermill's view of a chapter's ``parameters`` cell (``papermill.inspect_notebook``: name →
    ``{name, inferred_type_name, default, help}``), read from a jupytext-converted copy of a ``.md`` source."""
    path = Path(path).resolve()
    return dict(_declared(str(path), path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _declared(path: str, mtime_ns: int) -> tuple:
    import nbformat  # lazy: the book extra
    import papermill as pm  # lazy: the book extra

    if path.endswith(".ipynb"):
        return tuple(pm.inspect_notebook(path).items())
    with tempfile.TemporaryDirectory(prefix="arithmech-params-") as d:
        copy = Path(d) / (Path(path).stem + ".ipynb")
        nbformat.write(read_notebook(Path(path)), copy)
        return tuple(pm.inspect_notebook(str(copy)).items())


def load_config(root: Path, config: Path | None = None) -> dict:
    """``book/book.yml`` as a dict with ``global``, ``chapters`` and ``execution`` keys."""
    import yaml  # lazy: the book extra

    path = root / (config or CONFIG)
    if not path.exists():
        raise BookArgumentError(
            f"book configuration {quoted(path)} does not exist: run from the repository root or pass --root"
        )
    cfg = yaml.safe_load(path.read_text()) or {}
    unknown = set(cfg) - {"global", "chapters", "execution"}
    if unknown:
        raise BookArgumentError(
            f"{quoted(path)}: unknown top-level keys {sorted(unknown)}; expected global, chapters, execution"
        )
    return {
        "global": cfg.get("global") or {},
        "chapters": cfg.get("chapters") or {},
        "execution": cfg.get("execution") or {},
    }


def parse_sets(sets: list[str]) -> tuple[dict, dict]:
    """``["seed=1", "identify.n_samples=32"]`` → ``({"seed": 1}, {"identify": {"n_samples": 32}})``.

    Values are read as YAML (``32`` is an int, ``[a, b]`` a list, ``cuda`` a string; quote
    ``'off'``-like words to keep them strings).
    """
    import yaml  # lazy: the book extra

    glob: dict = {}
    per: dict = {}
    for s in sets:
        if "=" not in s:
            raise BookArgumentError(f"--set {s!r}: expected key=value or chapter.key=value")
        key, raw = s.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            raise BookArgumentError(
                f"--set {s!r}: the value is not YAML (a list is [64, 128], a string may be quoted)"
            ) from None
        if "." in key:
            chap, key = key.split(".", 1)
            per.setdefault(chap, {})[key] = value
        else:
            glob[key] = value
    return glob, per


def plan(root: Path, cfg: dict, sets: Sequence[str] = (), only: str | None = None) -> list[Chapter]:
    """The chapters to execute (all, or ``only`` one), in toc order, each with its parameters, checked.

    A global value reaches a chapter only if its parameters cell declares the name; a global ``--set``
    key that no chapter to run declares and a per-chapter value its chapter does not declare are
    errors (a typo is never a silent no-op). Every
    chapter's values (defaults of its parameters cell + the given ones) are checked by building its config
    (:func:`check_chapter_values`) here, before any chapter runs.
    With ``only``, the other chapters need not exist yet.
    """
    set_glob, set_per = parse_sets(list(sets))
    nbs = chapters(root, missing_ok=only is not None)
    names = [p.stem for p in nbs]
    if only is not None and only not in names:
        raise BookArgumentError(f"--only {only!r}: not a chapter of _toc.yml; chapters: {', '.join(names)}")
    for chap in ([only] if only else list(cfg["chapters"])) + list(set_per):
        if chap not in names:
            raise BookArgumentError(
                f"parameters given for chapter {chap!r}, which is not an executed chapter of "
                f"_toc.yml; chapters: {', '.join(names)}"
            )
    declared = {p.stem: declared_parameters(root / p) for p in nbs}
    for p in nbs:
        if not declared[p.stem]:
            raise BookError(
                f"chapter {p.stem!r} ({quoted(p)}) has no cell tagged 'parameters' (papermill needs one, "
                "first in the notebook)"
            )
    run = [p for p in nbs if only is None or p.stem == only]
    _check_global_keys(set_glob, {k for p in run for k in declared[p.stem]}, "--set", "to run")
    out = []
    for p in run:
        params = {k: v for k, v in {**cfg["global"], **set_glob}.items() if k in declared[p.stem]}
        own = {**(cfg["chapters"].get(p.stem) or {}), **set_per.get(p.stem, {})}
        undeclared = sorted(set(own) - set(declared[p.stem]))
        if undeclared:
            raise BookArgumentError(
                f"chapter {p.stem!r} has no parameter {', '.join(undeclared)}; its parameters "
                f"cell declares: {', '.join(declared[p.stem])}; fix the name "
                f"(--set {p.stem}.NAME=VALUE or book.yml chapters.{p.stem})"
            )
        params.update(own)
        check_chapter_values(root, p, declared[p.stem], params)
        out.append(Chapter(p.stem, p, params))
    return out


def chapter_values(root: Path, name: str, sets: Sequence[str] = (), cfg: dict | None = None) -> dict:
    """The values chapter ``name`` (a file stem) runs with, defaults included: its parameters cell's literal
    defaults, then the ``global`` values of ``book/book.yml`` it declares and its own ``chapters.<name>`` values,
    then ``--set`` (``sets``) — what :func:`plan` gives papermill, read by pages that quote a chapter's parameter
    before or without running it (the introduction's Explorer sentence). Unlike :func:`plan` it checks nothing."""
    cfg = load_config(root) if cfg is None else cfg
    set_glob, set_per = parse_sets(list(sets))
    declared = declared_parameters(root / "book" / f"{name}.md")
    values = {}
    for k, info in declared.items():
        try:
            values[k] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            pass  # a computed default: not known before the chapter runs
    values.update({k: v for k, v in {**cfg["global"], **set_glob}.items() if k in declared})
    values.update({**(cfg["chapters"].get(name) or {}), **set_per.get(name, {})})
    return values


def _check_global_keys(values: dict, allowed: set, where: str, which: str) -> None:
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise BookArgumentError(
            f"{where} {unknown[0]!r}: no chapter {which} has this parameter; names: "
            f"{', '.join(sorted(allowed))}; fix the name, or give CHAPTER.NAME=VALUE"
        )


def check_chapter_values(root: Path, path: Path, declared: dict, given: dict) -> None:
    """Check ``given`` values (over the parameters cell's defaults) by building the chapter's config
    (:data:`arithmech.report.build.chapters.CHAPTERS`), as its check cell will (the device must exist here)."""
    values = {}
    for name, info in declared.items():
        try:
            values[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            pass  # a computed default: the check cell judges it
    values.update(given)
    config = CHAPTERS.get(path.stem)
    try:
        if config is not None:
            config.pick(values)  # the device too: this machine must have it
    except (ValueError, FileNotFoundError) as e:
        raise BookArgumentError(
            f"chapter {path.stem!r}: {e}; fix the value (--set {path.stem}.NAME=VALUE, "
            "--set NAME=VALUE or book/book.yml)"
        ) from None
