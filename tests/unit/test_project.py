"""The project's own bookkeeping: the dependency lists agree and are pinned, every test says what it protects
and sits beside the module it tests, no tracked file holds a path of the machine that made it, and the README's
set-up is two commands."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def requirements_txt() -> dict[str, Requirement]:
    """requirements.txt as ``{canonical name: Requirement}`` (comments and blank lines skipped)."""
    lines = [l.split("#")[0].strip() for l in (REPO / "requirements.txt").read_text().splitlines()]
    reqs = [Requirement(l) for l in lines if l]
    return {canonicalize_name(r.name): r for r in reqs}


def pyproject_requirements() -> dict[str, Requirement]:
    """pyproject.toml's dependencies and every extra, as ``{canonical name: Requirement}``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return {canonicalize_name(r.name): r for r in reqs}


def test_requirements_txt_and_pyproject_agree():
    """Protects: ``pip install -r requirements.txt`` and ``pip install arithmech[book,gguf,test]`` install
    the same packages: every requirement of one file is in the other, with the same version
    specifier, or requirements.txt pins an exact version (``==``) that pyproject's range allows
    (torch: the pin keeps the resolver from pulling a CUDA build)."""
    txt, toml = requirements_txt(), pyproject_requirements()
    assert sorted(set(txt) - set(toml)) == [], "in requirements.txt only"
    assert sorted(set(toml) - set(txt)) == [], "in pyproject.toml only"
    for name, r in txt.items():
        spec, wide = r.specifier, toml[name].specifier
        if str(spec) != str(wide):
            pins = [s.version for s in spec if s.operator == "=="]
            assert len(pins) == 1 and wide.contains(pins[0], prereleases=True), \
                f"{name}: requirements.txt says '{spec}', pyproject.toml '{wide}'"


def test_requirement_check_is_not_vacuous():
    """Protects the check above from passing vacuously: both parsers read real entries (torch, selenium)
    and a pyproject range that excludes the pin is caught."""
    txt, toml = requirements_txt(), pyproject_requirements()
    assert {"torch", "selenium", "pytest", "pyyaml"} <= set(txt) & set(toml)
    pin = next(s.version for s in txt["torch"].specifier if s.operator == "==")
    assert not Requirement(f"torch<{pin}").specifier.contains(pin)


def constraints_txt() -> dict[str, str]:
    """constraints.txt as ``{canonical name: pinned version}``."""
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            out[canonicalize_name(name)] = version
    return out


def test_constraints_pin_every_requirement_within_its_range():
    """Protects reproducible set-ups: ``make setup`` installs under constraints.txt, which pins (``==``) every
    package of requirements.txt but torch (pinned there, installed first) and arithmech itself, each at a
    version its requirement allows; the Makefile passes it to every pip install of the requirements."""
    pins, txt = constraints_txt(), requirements_txt()
    assert "arithmech" not in pins and "torch" not in pins
    for name, r in txt.items():
        if name == "torch":
            continue
        assert name in pins, f"constraints.txt lacks {name}"
        assert r.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} outside '{r.specifier}'"
    make = (REPO / "Makefile").read_text()
    assert "pip install -r requirements.txt -c constraints.txt" in make


def test_readme_set_up_is_make_book_and_make_test():
    """Protects the two-command set-up: the README's quick start holds exactly ``make book`` and ``make test``,
    and CI (.ci/run) runs exactly those two make commands, with CI=true kept (browser tests fail, never skip)."""
    readme = (REPO / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert [l.split("#")[0].strip() for l in quick.splitlines() if l.strip()] == ["make book", "make test"]
    ci = (REPO / ".ci" / "run").read_text()
    assert [l.strip() for l in ci.splitlines() if l.strip().startswith("make")] == ["make book", "make test"]
    assert 'export CI="${CI:-true}"' in ci


# Absolute paths of the machine that built or tested the repository: its root, the venv, the home folder,
# and the temporary folders a notebook or a test records (ipykernel's cell files, pytest's and tempfile's dirs).
_MACHINE_TMP = re.compile(r"/tmp/(?:ipykernel_\d+|pytest-of-|tmp[a-z0-9_]{6,})")


def machine_paths() -> list[str]:
    """The absolute paths of this machine that no tracked file may hold."""
    home = os.path.expanduser("~")
    paths = {str(REPO), str(REPO.resolve()), sys.prefix, os.path.realpath(sys.prefix)}
    if home not in ("", "/"):
        paths |= {home, os.path.realpath(home)}
    return sorted(p.rstrip("/") for p in paths if len(p.strip("/")) >= 3)


def _holds(text: str, path: str) -> bool:
    """``path`` occurs in ``text`` as a path (followed by ``/``, a quote, a space or the end; not as a prefix
    of a longer name)."""
    return re.search(re.escape(path) + r"(?=[/\s\"'`:,)\]]|$)", text, flags=re.M) is not None


def test_no_tracked_file_holds_a_path_of_this_machine():
    """Protects the repository from this machine: no tracked text file (``git ls-files``; recorded outputs,
    results, configs, docs) holds the repository's absolute path, the venv's, the home folder, or a
    temporary folder a kernel or a test made under /tmp (ipykernel's cell files, pytest's folders)."""
    r = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if r.returncode != 0:
        pytest.skip("not a git work tree")
    paths, hits = machine_paths(), []
    for name in r.stdout.decode().split("\0"):
        f = REPO / name
        if not name or not f.is_file() or f.stat().st_size > 50_000_000:
            continue
        data = f.read_bytes()
        if b"\0" in data[:8192]:
            continue                                          # binary (weights, images)
        text = data.decode("utf-8", errors="replace")
        hits += [f"{name}: {p}" for p in paths if _holds(text, p)]
        hits += [f"{name}: {m.group(0)}" for m in _MACHINE_TMP.finditer(text)][:3]
    assert hits == [], "absolute paths of this machine in tracked files:\n" + "\n".join(hits[:20])


def test_the_path_check_sees_a_machine_path():
    """Protects the check above from passing vacuously: it knows the repository's root and the home folder,
    finds them (and a kernel's temporary file) in a recorded output, and lets a longer name or a relative path
    pass."""
    paths = machine_paths()
    assert str(REPO) in paths
    home = os.path.expanduser("~")
    assert home in ("", "/") or home in paths
    output = f'File "{REPO}/arithmech/evals/scoring.py", line 3'
    assert _holds(output, str(REPO)) and not _holds(f"{REPO}-old/x", str(REPO))
    assert not _holds("results/smollm2-135m/run.json", str(REPO))
    assert _MACHINE_TMP.search("/tmp/" + "ipykernel_4242/123.py:3: FutureWarning")      # split: not a hit here


def test_every_test_says_what_it_protects():
    """Protects the suite's convention: every test function's docstring starts with "Protects" and
    says what it guards, so a failure names what broke."""
    missing = []
    for f in sorted((REPO / "tests").rglob("test_*.py")):
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node) or ""
                if not doc.startswith("Protects") or len(doc) < 30:
                    missing.append(f"{f.relative_to(REPO)}::{node.name}")
    assert missing == []


# Project-wide checks: the only test modules at the unit tier's root that mirror no package module.
PROJECT_WIDE = {"test_project.py", "test_prose.py", "test_shipped_results.py", "test_book_sources.py", "test_readme.py",
                "test_architecture_counts.py"}


def unmirrored_tests(root: Path = REPO) -> list[str]:
    """The test modules of ``tests/unit/`` and ``tests/parity/`` whose path names no package module:
    ``tests/<tier>/<folder>/test_<name>.py`` must sit beside ``arithmech/<folder>/<name>.py``, or the package
    ``arithmech/<folder>/<name>/`` (its ``__init__.py``), the project-wide checks at the unit tier's root excepted."""
    out = []
    for tier in ("unit", "parity"):
        for f in sorted((root / "tests" / tier).rglob("test_*.py")):
            rel = f.relative_to(root / "tests" / tier)
            if tier == "unit" and len(rel.parts) == 1 and rel.name in PROJECT_WIDE:
                continue
            module = root / "arithmech" / rel.parent / rel.name.removeprefix("test_")
            if not (module.is_file() or (module.with_suffix("") / "__init__.py").is_file()):
                out.append(f.relative_to(root).as_posix())
    return out


def test_unit_and_parity_tests_mirror_the_package(tmp_path):
    """Protects the test layout: inside tests/unit/ and tests/parity/ every test module sits where the module it
    tests sits in the package (tests/unit/methods/test_patching.py tests arithmech/methods/patching.py), the
    project-wide checks at the unit tier's root excepted; a test module at a path with no module is caught."""
    assert unmirrored_tests() == []
    assert len(list((REPO / "tests" / "parity").rglob("test_*.py"))) > 10          # the walk sees the tiers
    (tmp_path / "arithmech" / "methods").mkdir(parents=True)
    (tmp_path / "arithmech" / "methods" / "patching.py").write_text("")
    for rel in ("unit/methods/test_patching.py", "parity/test_patching.py", "unit/test_project.py",
                "parity/methods/test_patch.py"):
        (tmp_path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / rel).write_text("")
    assert unmirrored_tests(tmp_path) == ["tests/parity/methods/test_patch.py", "tests/parity/test_patching.py"]


def _package_imports() -> dict[str, set[str]]:
    """module → the arithmech modules it imports, at top level or inside functions."""
    pkg = REPO / "arithmech"
    mods = {".".join(f.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): f
            for f in pkg.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arithmech"):
                for a in node.names:
                    target = f"{node.module}.{a.name}"
                    graph[m].add(target if target in mods else node.module)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods and m.endswith(("cli", "registry")):
                graph[m].add(node.value)              # the CLI's and the step registry's lazily imported modules
    return graph


# The package's layers, lowest first: a module imports only from its own layer or a lower one. A key is a top-level
# package or module, or one module of a package (``pipeline.registry``) where that module sits higher than its package:
# the step registry and ``ensure`` name every step's config above the wings' computing modules; a wing's page sits
# above the claims its sentences come from.
LAYERS = {"paper": 0, "core": 0, "data": 1, "evals": 2, "methods": 3, "finetune": 4, "embedded": 4,
          "pipeline": 5, "api": 5, "identify": 6, "analyze": 6, "circuits": 6, "prompts": 6, "steps": 6, "table1": 6, "accounts": 6, "planted": 6,
          "pipeline.registry": 7, "pipeline.ensure": 7,
          "claims": 8, "table1.claims": 8, "identify.claims": 8, "identify.knockout_claims": 8, "analyze.claims": 8,
          "circuits.claims": 8, "report": 10,
          "identify.page": 10, "identify.knockout_page": 10, "identify.charts": 10, "identify.transfer_chart": 10,
          "identify.stability_charts": 10, "analyze.page": 10, "circuits.page": 10, "circuits.views": 10,
          "circuits.graph": 10, "circuits.charts": 10, "accounts.page": 10, "accounts.charts": 10, "planted.page": 10,
          "table1.views": 10, "table1.curve_views": 10, "table1.charts": 10, "table1.page": 10, "table1.real_llm_page": 10,
          "cli": 13, "lab": 13, "__init__": 13, "__main__": 13}


def _imports_with_place() -> list[tuple[str, str, int, bool, str]]:
    """``(module, imported module, line, inside a function, the line's text)`` for every arithmech import."""
    out = []
    for f in (REPO / "arithmech").rglob("*.py"):
        mod = ".".join(f.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        text = f.read_text()
        tree, lines = ast.parse(text), text.splitlines()
        inside = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(fn)}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("arithmech"):
                targets = [n.module] if n.module != "arithmech" else [f"arithmech.{a.name}" for a in n.names]
                out += [(mod, t, n.lineno, id(n) in inside, lines[n.lineno - 1]) for t in targets]
            elif isinstance(n, ast.Import):                   # `import arithmech…` is an import too
                out += [(mod, a.name, n.lineno, id(n) in inside, lines[n.lineno - 1]) for a in n.names
                        if a.name.split(".")[0] == "arithmech"]
    return out


def _layer(module: str) -> int:
    """``module``'s layer: its own entry in :data:`LAYERS` (``pipeline.registry``) where it has one, else its
    package's."""
    parts = module.split(".")[1:] or ["__init__"]
    return LAYERS.get(".".join(parts[:2]), LAYERS[parts[0]])


def test_layers_only_go_down():
    """Protects the layering core/paper ← data ← evals ← methods ← finetune, embedded ← steps ← claims ← report
    ← cli: no import (at module top or inside a function) reaches a higher layer, and an arithmech import
    inside a function is rare (at most 10, in cli.py only, each saying why on its line)."""
    found = _imports_with_place()
    assert len(found) > 200                                              # the walk sees the package
    upward = [f"{m}:{line} → {t}" for m, t, line, _, _ in found if _layer(t) > _layer(m)]
    assert upward == [], upward
    inner = [(m, line, text) for m, t, line, inside, text in found if inside]
    assert len(inner) <= 10, inner
    assert all(m == "arithmech.cli" and "#" in text for m, _, text in inner), inner


WINGS = ("identify", "analyze", "circuits", "prompts", "table1")
"""The paper steps' wings, lowest first: each holds one step's config, run, Result, page and charts."""

WING_FACES = ("result", "config")
"""What a wing shows another wing: its Result (the one reader of its files) and its config (a field written once and
reused, :func:`arithmech.pipeline.config_base.same_as`); its computing modules, pages and charts stay its own."""


def wing_crossings(root: Path = REPO) -> tuple[list[str], int]:
    """The imports from one wing into another wing's module other than its :data:`WING_FACES`, as ``module:line →
    target``, and how many imports cross between wings in all."""
    bad, crossing = [], 0
    for f in sorted((root / "arithmech").rglob("*.py")):
        mod = ".".join(f.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        wing = mod.split(".")[1] if mod.count(".") else ""
        if wing not in WINGS:
            continue
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("arithmech."):
                targets = [f"{n.module}.{a.name}" if n.module.count(".") == 1 else n.module for a in n.names]
            elif isinstance(n, ast.Import):
                targets = [a.name for a in n.names if a.name.startswith("arithmech.")]
            else:
                continue
            for t in targets:
                parts = t.split(".")
                if parts[1] in WINGS and parts[1] != wing:
                    crossing += 1
                    if len(parts) < 3 or parts[2] not in WING_FACES:
                        bad.append(f"{mod}:{n.lineno} → {t}")
    return bad, crossing


def test_a_wing_imports_of_another_wing_only_its_result_and_config(tmp_path):
    """Protects the wings' one meeting place: a paper step's wing (:data:`WINGS`) imports of another wing only its
    ``result`` module (its typed Result, the one reader of its files) and its ``config``, never a computing module, a
    page or a chart; ``from arithmech.identify import run`` into another wing is caught."""
    bad, crossing = wing_crossings()
    assert bad == [], bad
    assert crossing > 0                                                   # the walk sees the wings meet
    for rel, text in (("arithmech/identify/run.py", ""), ("arithmech/identify/result.py", ""),
                      ("arithmech/analyze/run.py", "from arithmech.identify import run\nfrom arithmech.identify import result\n"
                                                   "from arithmech.identify.result import Result\n")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert wing_crossings(tmp_path) == (["arithmech.analyze.run:1 → arithmech.identify.run"], 3)


def test_the_package_has_no_import_cycles():
    """Protects the layering: no module reaches itself through imports (top-level, lazy, or the CLI's
    plugin table), so every step imports on its own and the pipeline reads top to bottom."""
    graph = _package_imports()
    assert graph["arithmech.cli"] >= {"arithmech.pipeline.registry", "arithmech.report.build.book"}   # the check sees lazy ones
    assert graph["arithmech.pipeline.registry"] >= {"arithmech.identify.run", "arithmech.table1.run"}
    seen: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for n in graph.get(m, ()):
            assert seen.get(n) != 1, " → ".join(path[path.index(n):] + [m, n]) if n in path else f"{m} → {n}"
            if n not in seen:
                visit(n, path + [m])
        seen[m] = 2

    for m in graph:
        if m not in seen:
            visit(m, [])


def test_modules_read_in_one_sitting_and_no_private_names_cross_modules():
    """Protects the house style: no module of the package over 420 lines, no model-named module, and no
    `from arithmech… import _private` across modules."""
    for f in (REPO / "arithmech").rglob("*.py"):
        assert len(f.read_text().splitlines()) <= 420, f
        assert not any(w in f.stem.lower() for w in ("smollm", "llama", "qwen")), f
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arithmech"):
                assert not [a.name for a in node.names if a.name.startswith("_")], (f, node.module)


def test_ruff_lint_is_clean():
    """Protects the lint habit: `ruff check` (pyflakes, syntax errors, import order; the rules in
    pyproject.toml) finds nothing in the package, the tests and the benchmarks; an unused import or a name used
    before it is defined fails here, in the fast tier, not in review."""
    import shutil
    import subprocess
    import sys
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is missing: make setup installs it (requirements.txt)"
    out = subprocess.run([ruff, "check", "arithmech", "tests", "benchmarks"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]



FORMATTED = ["arithmech/__init__.py", "arithmech/__main__.py", "arithmech/api.py", "arithmech/cli.py", "arithmech/lab",
             "arithmech/paper.py", "arithmech/accounts", "arithmech/analyze", "arithmech/circuits", "arithmech/claims", "arithmech/identify",
             "arithmech/prompts", "arithmech/planted", "arithmech/core", "arithmech/data", "arithmech/embedded",
             "arithmech/evals", "arithmech/finetune", "arithmech/methods", "arithmech/pipeline", "arithmech/report", "arithmech/steps", "arithmech/table1"]
"""What `ruff format` keeps formatted: the whole package, every folder and top-level module (the
tests and benchmarks are linted, not formatted)."""


def test_ruff_format_is_clean():
    """Protects the formatting habit: `ruff format --check` (pyproject.toml's settings) would change
    nothing in the package's formatted folders (:data:`FORMATTED`), so a hand-formatted line fails here, in the
    fast tier, and every module's length is its formatted length (the one-sitting bound above)."""
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is missing: make setup installs it (requirements.txt)"
    package = {p.name for p in (REPO / "arithmech").iterdir()
               if p.suffix == ".py" or (p.is_dir() and not p.name.startswith("__"))}
    assert package - {Path(f).name for f in FORMATTED} == set(), "a new package folder or module: add it to FORMATTED"
    out = subprocess.run([ruff, "format", "--check", *FORMATTED], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]

def test_type_check_is_clean():
    """Protects the typing habit: mypy finds nothing in the packages `[tool.mypy] files` lists in
    pyproject.toml (the whole package: core, evals, data, methods, steps, claims, report, embedded, finetune and the
    top-level modules __init__, __main__, cli, lab and paper), so a wrong argument type,
    a missing attribute or a None called as a function in them fails here, in the fast tier."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "Success: no issues found" in out.stdout
