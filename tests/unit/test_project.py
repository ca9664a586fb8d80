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
