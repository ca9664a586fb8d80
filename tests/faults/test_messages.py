"""Messages that cannot be forged: a user-supplied path holding a newline is shown quoted,
escaped, on the one error line; it never prints a second ``error:`` line. The book's modules (report/, claims/)
are checked statically: every path their error messages interpolate goes through ``inputs.quoted``."""
from __future__ import annotations

import ast
import re

import pytest

from .tools import REPO, cli, refused


def test_a_results_path_with_a_newline_prints_one_quoted_line(tmp_path):
    """Protects the message format: `analyze --results '<tmp>/x\\nerror: forged'` is refused in one line that
    shows the path repr-style (the newline as \\n), with no second line."""
    bad = str(tmp_path / "x\nerror: all is well")
    err = refused(cli("analyze", "--model", "embedded", "--results", bad, timeout=60), "does not exist")
    assert "x\\nerror: all is well" in err


def test_a_task_file_with_a_newline_prints_one_quoted_line(tmp_path):
    """Protects the early checks and argparse's messages too: a --task path or an unknown argument holding a
    newline is refused in one line with the newline escaped."""
    err = refused(cli("identify", "--task", str(tmp_path / "p\nerror: forged.json"), timeout=60), "template-pair file")
    assert "p\\nerror: forged.json" in err
    err = refused(cli("identify", "--out", str(tmp_path), "extra\nerror: forged", timeout=60), "unrecognized")
    assert "extra\\nerror: forged" in err


PATHLIKE = re.compile(r"^(p|path|\w+_path|folder|\w+_folder|root|\w*dir|file|\w+_file|dest|log|failed|src|tmp|out)$")


def _unquoted_paths(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, expression) of every value interpolated into an f-string of a ``raise`` that names a path (a name or
    attribute like ``path``, ``folder``, ``root``, ``p``, or a method called on one: ``log.relative_to(root)``)
    and is neither ``quoted(...)`` nor ``!r``."""
    def root_name(node):
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value                  # log.relative_to(root) -> log
        if isinstance(node, ast.Attribute):
            return node.attr                        # chapter.path -> path
        return node.id if isinstance(node, ast.Name) else None

    bad = []
    for r in (n for n in ast.walk(tree) if isinstance(n, ast.Raise) and n.exc is not None):
        for v in (n for n in ast.walk(r.exc) if isinstance(n, ast.FormattedValue)):
            if v.conversion == ord("r"):
                continue
            if isinstance(v.value, ast.Call) and isinstance(v.value.func, ast.Name) and v.value.func.id == "quoted":
                continue
            name = root_name(v.value)
            if name and PATHLIKE.match(name):
                bad.append((v.lineno, ast.unparse(v.value)))
    return bad


def test_the_rule_finds_a_raw_path():
    """Protects the check below from passing vacuously: it flags a raw path and a raw method call on one, and
    lets a quoted path, a repr and a count through."""
    tree = ast.parse('raise ValueError(f"{path} {log.relative_to(root)} {quoted(path)} {folder!r} {len(files)}")')
    assert [e for _, e in _unquoted_paths(tree)] == ["path", "log.relative_to(root)"]


@pytest.mark.parametrize("module", sorted(str(p.relative_to(REPO)) for pkg in ("report", "claims")
                                          for p in (REPO / "arithmech" / pkg).rglob("*.py")))
def test_report_and_claims_quote_every_path_they_raise_with(module):
    """Protects the message format in the book's modules: every path an error message of
    arithmech/report/ or arithmech/claims/ interpolates is shown through inputs.quoted (or !r), so a path holding
    a newline cannot print a second, forged line."""
    bad = _unquoted_paths(ast.parse((REPO / module).read_text()))
    assert not bad, f"{module}: interpolate these through arithmech.core.inputs.quoted: {bad}"
