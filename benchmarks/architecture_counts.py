"""Counts of the package's architecture, from the source alone (``ast``, no import, no model).

The counts of the step as one thing (the widest function, the answer-token checks, ...):

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

The counts of one folder per paper step (a "wing": config, run, typed Result, rules and page together). *Above the
floors* means every module of ``arithmech/`` outside the library floors ``core/``, ``data/``, ``evals/``,
``methods/``, ``finetune/`` and ``embedded/``; *rules and pages* means ``arithmech/claims/``,
``arithmech/report/views/`` and every module named ``page.py`` or ``*_page.py``:

* ``table1_modules``: the modules above the floors holding Table 1 code: those whose path under ``arithmech/``
  contains ``table1``, ``finetune``, ``curves``, ``frontier`` or ``tradeoff`` (``named``), and those importing a
  named one directly (``importing``; one step, not transitive), the shared machinery that imports every step left
  out (``pipeline/``, ``report/build/``, ``cli.py``, ``api.py``, ``__init__.py``, ``__main__.py``); with their lines;
* ``results_read_ways``: how many of three ways of reading a results folder are in use: a step's typed Result
  (``result``: calls of ``ensure(...)`` above the floors outside ``pipeline/ensure.py``, of a wing's ``result.read``
  imported by name or through its ``result`` module, and of a Result class's own readers imported from a wing's
  ``result`` module: ``<Class>.read`` / ``.load`` / ``.made`` / ``.of``, and the construction of a config-free
  reader, a class named ``*Files``), the deciders' ``claims.evidence.Context`` (``context``: its constructions,
  ``Context(folder)`` and ``Context.of(result)``, outside ``claims/evidence.py``, where ``Context`` reads files itself: a call of ``claims/evidence.py`` that is a
  direct read, below, and not one of those Result readers; a ``Context`` that reads only through the steps' Results
  is a view over them, and its constructions count as ``result``), and direct reads (``direct``, below);
* ``folder_functions``: the functions above the floors with a parameter named ``folder``, ``out``, ``path`` or
  ``results_dir``, or annotated with a type that names ``Path``;
* ``direct_reads``: in rules and pages (``claims/evidence.py``, ``Context`` itself, left out), the calls that read a
  result file themselves: ``read_csv`` / ``read_json`` / ``read_parquet`` / ``read_table``, ``json.load``,
  ``results.read*`` (:mod:`arithmech.core.results`), ``.read_text()`` / ``.open()`` / ``open()`` on a path into a
  folder (a ``/`` join not rooted at an UPPER_CASE package constant, or a folder-like name), and a reader handed a
  folder (a function named ``read`` / ``load`` / ``plan`` / ``read_*`` / ``load_*`` whose first argument is
  ``folder`` / ``out`` / ``path`` / ``results_dir`` / ``f`` or an attribute ``.folder`` / ``.results`` /
  ``.results_dir``: ``frontier.load(folder)``, ``verdicts.plan(folder)``); one per call site;
* ``r_dict_page_functions``: the functions of page modules (``report/views/``, ``page.py``, ``*_page.py``) with a
  parameter ``r`` annotated ``dict`` (or ``dict[...]``);
* ``claims_python_lines`` / ``claims_python_modules``: the lines and modules of ``arithmech/claims/**/*.py``, and
  ``claims_data_lines``: the lines of its data files (``.toml`` / ``.json`` / ``.yaml``);
* ``long_functions``: the functions (methods and nested functions each one) of ``arithmech/`` over 60 lines, from
  ``def`` to the last line of the body, decorators left out;
* ``package_lines`` / ``package_modules``: the lines and ``.py`` modules of ``arithmech/``. Lines are
  ``str.splitlines()`` of the file (blank lines and comments included, as ``wc -l`` counts them).

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


def config_modules() -> list[Path]:
    """The modules holding the step configs: ``arithmech/steps/config*.py`` (before the wings) and every wing's
    ``arithmech/<wing>/config.py`` (``core/`` and ``report/`` hold base and chapter configs, not steps')."""
    found = sorted((PACKAGE / "steps").glob("config*.py")) + sorted(PACKAGE.glob("*/config.py"))
    return [p for p in found if p.parent.name not in ("core", "report")]


def steps_and_chapters() -> dict:  # noqa: C901 (one walk, one branch per thing it counts)
    """The step functions, the core's step names, the chapters' Python and the report's rooms (module docstring)."""
    ensure, recorded, printers, named = [], [], [], []
    configs: set[str] = set()
    for cfg in config_modules():
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

# ---- the counts of the wing reorganisation ("Must show"): one folder per paper step, meeting at typed Results ----

FLOORS = ("core", "data", "evals", "methods", "finetune", "embedded")
TABLE1_WORDS = ("table1", "finetune", "curves", "frontier", "tradeoff")
FOLDER_PARAMS = ("folder", "out", "path", "results_dir")
FILE_READERS = ("read_csv", "read_json", "read_parquet", "read_table")
LONG = 60
EVIDENCE = "arithmech/claims/evidence.py"  # Context: its own reads decide whether it is a way of its own


def _above_floors(rel: str) -> bool:
    """``rel`` (``arithmech/...``) is a module above the library floors: not under ``core/``, ``data/``,
    ``evals/``, ``methods/``, ``finetune/`` or ``embedded/``."""
    parts = rel.split("/")
    return not (len(parts) > 2 and parts[1] in FLOORS)


def _dotted(rel: str) -> str:
    """``arithmech/steps/table1.py`` -> ``arithmech.steps.table1`` (a package's ``__init__`` -> the package)."""
    return rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _imported(rel: str, tree: ast.Module) -> set[str]:
    """Every dotted name an import statement of the module names: ``import a.b`` -> a.b; ``from a import b`` ->
    a and a.b (b may be a module); relative imports resolved against ``rel``."""
    here = _dotted(rel).split(".")
    if not rel.endswith("__init__.py"):
        here = here[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _page(rel: str) -> bool:
    """A page module: under ``arithmech/report/views/``, or named ``page.py`` / ``*_page.py`` anywhere."""
    name = rel.rsplit("/", 1)[-1]
    return rel.startswith("arithmech/report/views/") or name == "page.py" or name.endswith("_page.py")


def _rule_or_page(rel: str) -> bool:
    """Where rules and pages live: ``arithmech/claims/`` and the page modules (:func:`_page`)."""
    return rel.startswith("arithmech/claims/") or _page(rel)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def table1_modules(trees: dict[str, ast.Module]) -> dict:
    """The modules holding Table 1 code, above the floors (``finetune/`` is the fine-tuning library, a floor): a
    module whose path under ``arithmech/`` contains ``table1``, ``finetune``, ``curves``, ``frontier`` or
    ``tradeoff`` (the *named* ones), and a module that imports a named one (one step, not transitively), the
    shared machinery that imports every step left out (``arithmech/pipeline/``, ``arithmech/report/build/``,
    ``arithmech/cli.py``, ``arithmech/api.py``, ``arithmech/__init__.py``, ``arithmech/__main__.py``)."""
    shared = ("arithmech/pipeline/", "arithmech/report/build/")
    top = ("arithmech/cli.py", "arithmech/api.py", "arithmech/__init__.py", "arithmech/__main__.py")
    above = {rel: t for rel, t in trees.items() if _above_floors(rel)}
    named = {rel for rel in above if any(w in rel.removeprefix("arithmech/") for w in TABLE1_WORDS)}
    dotted = {_dotted(rel) for rel in named}
    importing = {rel for rel, t in above.items() if rel not in named and not rel.startswith(shared)
                 and rel not in top and _imported(rel, t) & dotted}
    where = sorted(named | importing)
    return {"count": len(where), "lines": sum(_lines(ROOT / rel) for rel in where),
            "named": sorted(named), "importing": sorted(importing), "where": where}


def _folder_like(node: ast.AST) -> bool:
    """An expression naming a results folder: a name in :data:`FOLDER_PARAMS` or ``f``, or an attribute
    ``.folder`` / ``.results`` / ``.results_dir``."""
    return ((isinstance(node, ast.Name) and node.id in (*FOLDER_PARAMS, "f"))
            or (isinstance(node, ast.Attribute) and node.attr in ("folder", "results", "results_dir")))


def _path_like(node: ast.AST) -> bool:
    """A path into a results folder: a ``/`` join (``folder / "x.csv"``) whose leftmost operand is not a package
    constant (an UPPER_CASE name such as ``EMBEDDED_DIR``: shipped data, not results), or a name ``folder`` / ``out``
    / ``results_dir`` / ``f`` or an attribute ``.folder`` / ``.results`` / ``.results_dir`` (``path`` is left out
    here: the changelog reader's ``path`` is its data file)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = node.left
        while isinstance(left, ast.BinOp):
            left = left.left
        return not (isinstance(left, ast.Name) and left.id.isupper())
    return _folder_like(node) and not (isinstance(node, ast.Name) and node.id == "path")


def direct_read(node: ast.Call) -> str | None:
    """What kind of direct result-file read the call is, else None: ``read_csv`` / ``read_json`` / ``read_parquet``
    / ``read_table`` (any receiver), ``json.load``, ``results.<read*>`` (:mod:`arithmech.core.results`' readers),
    ``<path>.read_text()`` / ``<path>.open()`` / ``open(<path>)`` on a path (:func:`_path_like`), and a reader
    handed a folder: a function named ``read``, ``load``, ``plan`` or ``read_*`` / ``load_*`` whose first argument
    is folder-like (:func:`_folder_like`; ``frontier.load(folder)``, ``verdicts.plan(folder)``)."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
    if name in FILE_READERS:
        return name
    if owner == "json" and name == "load":
        return "json.load"
    if owner == "results" and name.startswith("read"):
        return f"results.{name}"
    if isinstance(f, ast.Attribute) and name in ("read_text", "open") and _path_like(f.value):
        return f".{name}()"
    if isinstance(f, ast.Name) and name == "open" and node.args and _path_like(node.args[0]):
        return "open()"
    if (name in ("read", "load", "plan") or name.startswith(("read_", "load_"))) and node.args \
            and _folder_like(node.args[0]):
        return f"{name}(folder)"
    return None


def _annotation(node: ast.AST | None) -> str:
    return ast.unparse(node) if node is not None else ""


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]


RESULT_CLASS_READERS = ("read", "load", "made", "of")


def _result_readers(rel: str, tree: ast.Module) -> set[str]:
    """The local names under which the module imports a wing's Result reader: ``from arithmech.<wing>.result
    import read`` (``read`` or its alias), ``result`` modules imported whole (``<alias>.read``), a Result class's own
    readers (``<Class>.read`` / ``.load`` / ``.made`` / ``.of``: ``Table1Result.load``, ``Ranking.read``) and a
    config-free reader's construction (a class named ``*Files``: ``IdentifyFiles(folder)``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(".result"):
            names.update(f"{a.asname or a.name}()" for a in node.names if a.name == "read")
            for a in node.names:
                local = a.asname or a.name
                if local[:1].isupper():
                    names.update(f"{local}.{m}()" for m in RESULT_CLASS_READERS)
                    names.update([f"{local}()"] if a.name.endswith("Files") else [])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arithmech."):
            names.update(f"{a.asname or a.name}.read()" for a in node.names if a.name == "result")
    return names


def wings(trees: dict[str, ast.Module]) -> dict:  # noqa: C901 (one walk, one branch per thing it counts)
    """The counts of the wing reorganisation, each with its places (module docstring)."""
    folder_fns, reads, r_dict, long_fns, own = [], [], [], [], []
    ways: dict[str, list[str]] = {"result": [], "context": [], "direct": []}
    for rel, tree in trees.items():
        readers = _result_readers(rel, tree)
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > LONG:
                    long_fns.append(f"{rel}::{node.name} {size}")
                params = [x for x in _params(node) if x.arg not in ("self", "cls")]
                if _above_floors(rel) and any(x.arg in FOLDER_PARAMS or "Path" in _annotation(x.annotation)
                                              for x in params):
                    folder_fns.append(f"{rel}::{node.name}")
                if _page(rel) and any(x.arg == "r" and _annotation(x.annotation).split("[")[0] in ("dict", "Dict")
                                      for x in params):
                    r_dict.append(f"{rel}::{node.name}")
            elif isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                called = (f"{f.value.id}.{name}()" if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                          else f"{name}()")
                kind = direct_read(node) if _rule_or_page(rel) and rel != EVIDENCE else None
                if kind:
                    reads.append(f"{where} {kind}")
                if rel == EVIDENCE and called not in readers and (kind := direct_read(node)):
                    own.append(f"{where} {kind}")  # Context reading a file itself, not through a step's Result
                if _above_floors(rel) and rel != "arithmech/pipeline/ensure.py" and (name == "ensure"
                                                                                      or called in readers):
                    ways["result"].append(f"{where} {called}")
                if (name == "Context" or called == "Context.of()") and rel != EVIDENCE:  # a view built
                    ways["context"].append(where)
    if not own:  # Context reads only through the steps' Results: a view over them, the Result way
        ways["result"] += [f"{w} Context() (over the step Results)" for w in ways["context"]]
        ways["context"] = []
    ways["direct"] = reads
    claims = sorted((PACKAGE / "claims").rglob("*.py")) if (PACKAGE / "claims").is_dir() else []
    data = sorted(p for p in (PACKAGE / "claims").rglob("*") if p.suffix in (".toml", ".json", ".yaml")) \
        if (PACKAGE / "claims").is_dir() else []
    modules = sorted(PACKAGE.rglob("*.py"))
    return {
        "table1_modules": table1_modules(trees),
        "results_read_ways": {"count": sum(bool(v) for v in ways.values()),
                              "by_way": {k: len(v) for k, v in ways.items()},
                              "where": {k: v for k, v in ways.items() if k != "direct"},
                              "context_own_reads": own},
        "folder_functions": {"count": len(folder_fns), "where": folder_fns},
        "direct_reads": {"count": len(reads), "where": reads},
        "r_dict_page_functions": {"count": len(r_dict), "where": r_dict},
        "claims_python_lines": sum(_lines(p) for p in claims),
        "claims_python_modules": len(claims),
        "claims_data_lines": {p.relative_to(ROOT).as_posix(): _lines(p) for p in data},
        "long_functions": {"count": len(long_fns), "over": LONG, "where": long_fns},
        "package_lines": sum(_lines(p) for p in modules),
        "package_modules": len(modules),
    }


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
    trees = dict(_modules(PACKAGE))
    got = {"widest": rows, "widest_parameters": rows[0]["parameters"] if rows else 0, **scan(), **steps_and_chapters(),
           **wings(trees)}
    Path(a.out).write_text(json.dumps(got, indent=1) + "\n")
    print(json.dumps({k: (v["count"] if isinstance(v, dict) and "count" in v else v) for k, v in got.items()},
                     indent=1))
    return got


if __name__ == "__main__":
    main()
