"""Counts behind issue #42 ("the step as one thing"), from the source alone (``ast``, no import, no model).

* ``widest``: the functions of ``arithmech/steps/`` and ``arithmech/methods/`` with the most parameters
  (positional, keyword-only, ``*args`` and ``**kwargs`` each count one; ``self``/``cls`` do not);
* ``answer_token_checks``: the places that check an answer-token value against the choices — a call of
  ``check_answer_token(...)`` or a comparison ``... in / not in ANSWER_TOKENS`` (the config's ``choices=`` is
  the option's declaration, counted apart as ``config_choices``);
* ``silent_defaults``: below the step configs (every module but the wings' ``config.py`` and
  ``arithmech/core/config.py``, the chapters' configs in ``arithmech/report/build/chapters.py``), a default of ``answer_token`` / ``variant`` / ``example_sets`` — a parameter or
  dataclass field with a default, or ``<dict>.get("answer_token" | "example_sets", <default>)``;
* ``contextvar_uses``: the lines of ``arithmech/`` that name ``ContextVar`` (one per line);
* ``steps``: the functions named ``ensure`` or ``reuse_or_run`` (hand-written reuse; ``typing.overload`` stubs are signatures, not counted), the ``recorded`` translations,
  the ``_print_*`` printers of ``arithmech/cli.py``, and the step config class names quoted in ``arithmech/core/``
  (core looking steps up by name);
* ``chapters``: the Python lines of the book's code cells (``book/*.md``, between ```` ```{code-cell} ```` and
  ```` ``` ````, blank lines and cell options left out), and the modules of ``arithmech/report/`` by folder.

Run: ``python benchmarks/architecture_counts.py`` (writes ``benchmarks/results/architecture_counts.json``
and prints it); ``--top N`` lists the N widest functions; ``--root DIR`` counts another checkout (e.g. a
``git worktree`` of an earlier commit, for the counts before a change).
"""
from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "arithmech"
WIDTH_DIRS = ("steps", "methods")
SETTINGS = ("answer_token", "variant", "example_sets")
CONFIG_MODULES = ("arithmech/identify/config.py", "arithmech/analyze/config.py", "arithmech/circuits/config.py",
                  "arithmech/prompts/config.py", "arithmech/core/config.py", "arithmech/report/build/chapters.py")  # the configs


def n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of ``fn`` (``self`` and ``cls`` left out; ``*args`` and ``**kwargs`` count one each)."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names = [n for n in names if n not in ("self", "cls")]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def _modules(under: Path):
    for path in sorted(under.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path))


def widest(top: int) -> list[dict]:
    """The ``top`` functions of steps/ and methods/ with the most parameters, widest first."""
    rows = []
    for d in WIDTH_DIRS:
        for rel, tree in _modules(PACKAGE / d):
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    rows.append({"function": f"{rel}::{node.name}", "line": node.lineno, "parameters": n_params(node)})
    return sorted(rows, key=lambda r: (-r["parameters"], r["function"]))[:top]


def _defaults(fn) -> list[tuple[str, ast.AST]]:
    a = fn.args
    pos = a.posonlyargs + a.args
    pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults))
    pairs += [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return [(x.arg, d) for x, d in pairs]


def _required_field(value: ast.AST) -> bool:
    """``field(kw_only=True)`` and the like: a dataclass field with neither ``default`` nor ``default_factory`` (a
    required argument, not a default)."""
    return (isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "field"
            and not {k.arg for k in value.keywords} & {"default", "default_factory"})


def _overload(fn) -> bool:
    """A ``typing.overload`` stub: a signature for the type checker, not a second function."""
    return any(getattr(d, "id", getattr(d, "attr", None)) == "overload" for d in fn.decorator_list)


def scan() -> dict:  # noqa: C901 (one walk, one branch per thing it counts)
    """The answer-token checks, the silent defaults and the ContextVar uses, each with its place."""
    checks, choices, silent, cvars = [], [], [], []
    for rel, tree in _modules(PACKAGE):
        if rel.startswith("arithmech/claims/"):
            continue
        below = rel not in CONFIG_MODULES
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name == "check_answer_token":
                    checks.append(where)
                if (name == "get" and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                        and node.args[0].value in SETTINGS and below):
                    silent.append(f"{where} .get({node.args[0].value!r}, default)")
                if any(k.arg == "choices" and isinstance(k.value, ast.Name) and k.value.id == "ANSWER_TOKENS"
                       for k in node.keywords):
                    choices.append(where)
            elif isinstance(node, ast.Compare):
                if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                        (isinstance(c, ast.Name) and c.id == "ANSWER_TOKENS")
                        or (isinstance(c, ast.Attribute) and c.attr == "ANSWER_TOKENS") for c in node.comparators):
                    checks.append(where)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and below:
                for arg, _ in _defaults(node):
                    if arg in SETTINGS:
                        silent.append(f"{rel}:{node.lineno} {node.name}({arg}=...)")
            elif isinstance(node, ast.AnnAssign) and below and isinstance(node.target, ast.Name) \
                    and node.target.id in SETTINGS and node.value is not None and not _required_field(node.value):
                silent.append(f"{where} field {node.target.id} = ...")
            if (isinstance(node, ast.Name) and node.id == "ContextVar") or (
                    isinstance(node, ast.Attribute) and node.attr == "ContextVar"):
                if where not in cvars:
                    cvars.append(where)
    return {"answer_token_checks": {"count": len(checks), "where": checks},
            "config_choices": {"count": len(choices), "where": choices},
            "silent_defaults": {"count": len(silent), "where": silent},
            "contextvar_uses": {"count": len(cvars), "where": cvars}}


def steps_and_chapters() -> dict:  # noqa: C901 (one walk, one branch per thing it counts)
    """The step functions, the core's step names, the chapters' Python and the report's rooms (module docstring)."""
    ensure, recorded, printers, named = [], [], [], []
    configs = set()
    cfg = PACKAGE / "steps" / "config.py"
    for node in ast.walk(ast.parse(cfg.read_text())):
        if isinstance(node, ast.ClassDef):
            configs.add(node.name)
    for rel, tree in _modules(PACKAGE):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{rel}::{node.name}"
                if node.name in ("ensure", "reuse_or_run") and not _overload(node):
                    ensure.append(where)
                elif node.name == "recorded":
                    recorded.append(where)
                elif node.name.startswith("_print_") and rel == "arithmech/cli.py":
                    printers.append(where)
            if rel.startswith("arithmech/core/") and isinstance(node, ast.Constant) and node.value in configs:
                named.append(f"{rel}:{node.lineno} {node.value!r}")
    lines = 0
    for md in sorted((ROOT / "book").glob("*.md")):
        inside = False
        for line in md.read_text().splitlines():
            if line.startswith("```{code-cell}"):
                inside = True
            elif inside and line.startswith("```"):
                inside = False
            elif inside and line.strip() and not line.startswith(":"):
                lines += 1
    rooms: dict[str, int] = {}
    for path in sorted((PACKAGE / "report").rglob("*.py")):
        room = path.parent.relative_to(PACKAGE).as_posix()
        rooms[room] = rooms.get(room, 0) + 1
    return {"ensure_functions": {"count": len(ensure), "where": ensure},
            "recorded_functions": {"count": len(recorded), "where": recorded},
            "cli_printers": {"count": len(printers), "where": printers},
            "core_names_steps": {"count": len(named), "where": named},
            "chapter_python_lines": lines, "report_modules_by_room": rooms}


def main(argv=None) -> dict:
    global ROOT, PACKAGE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=10, help="how many of the widest functions to list")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "architecture_counts.json"))
    ap.add_argument("--root", default=None, help="count this checkout instead of the one holding this script")
    a = ap.parse_args(argv)
    if a.root:
        ROOT = Path(a.root).resolve()
        PACKAGE = ROOT / "arithmech"
    rows = widest(a.top)
    got = {"widest": rows, "widest_parameters": rows[0]["parameters"] if rows else 0, **scan(), **steps_and_chapters()}
    Path(a.out).write_text(json.dumps(got, indent=1) + "\n")
    print(json.dumps({k: (v["count"] if isinstance(v, dict) and "count" in v else v) for k, v in got.items()},
                     indent=1))
    return got


if __name__ == "__main__":
    main()
