"""The project's own bookkeeping: the two dependency lists agree, and every test says what it protects."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:                       # Python 3.10
    tomllib = pytest.importorskip("tomli")

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
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods and m.endswith("cli"):
                graph[m].add(node.value)                              # the CLI's lazily imported subcommands
    return graph


def test_the_package_has_no_import_cycles():
    """Protects the layering: no module reaches itself through imports (top-level, lazy, or the CLI's
    plugin table), so every step imports on its own and the pipeline reads top to bottom."""
    graph = _package_imports()
    assert graph["arithmech.cli"] >= {"arithmech.steps.identify", "arithmech.report.book"}   # the check sees lazy ones
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
        alias = f.name == "smollm.py" and "no logic lives here" in f.read_text()    # the recorded command's alias
        assert alias or not any(w in f.stem.lower() for w in ("smollm", "llama", "qwen")), f
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arithmech"):
                assert not [a.name for a in node.names if a.name.startswith("_")], (f, node.module)
