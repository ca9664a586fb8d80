"""Messages that cannot be forged (issue #28, item 5): a user-supplied path holding a newline is shown quoted,
escaped, on the one error line; it never prints a second ``error:`` line."""
from __future__ import annotations

from .tools import cli, refused


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
