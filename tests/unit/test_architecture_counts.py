"""The architecture counts (``benchmarks/architecture_counts.py``) on a tiny package written here, against counts
made by hand: each count's definition holds on a case it must count and a case it must not."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

LONG_BODY = "".join(f"    x{i} = {i}\n" for i in range(60))  # with its def line: a 61-line function

PACKAGE = {
    # a floor: its folder parameter is not counted; its 61-line function is
    "core/util.py": "def helper(folder):\n    return folder\n\n\ndef long():\n" + LONG_BODY,
    # named Table 1 module (steps/table1_grid), a folder function (annotated Path)
    "steps/table1_grid.py": "from pathlib import Path\n\n\ndef grid(where: Path):\n    return where\n",
    # imports a named module: Table 1 code; four direct reads, one Context, one shipped file not counted
    "claims/verdicts.py": (
        "import json\n"
        "import pandas as pd\n"
        "from arithmech.steps import table1_grid\n"
        "from arithmech.claims.evidence import Context\n"
        "EMBEDDED = None\n"
        "\n"
        "\n"
        "def decide(folder):\n"
        "    a = pd.read_csv(folder / 'a.csv')\n"
        "    b = json.load(open(folder / 'b.json'))\n"
        "    c = table1_grid.plan(folder)\n"
        "    d = (EMBEDDED / 'README.md').read_text()\n"
        "    return a, b, c, d, Context(folder)\n"
    ),
    # Context's own reads are the second way, not direct reads
    "claims/evidence.py": "from arithmech.core import results\n\n\nclass Context:\n"
    "    def read(self, name):\n        return results.read(self.folder, name)\n",
    "claims/changelog.toml": "[[change]]\nversion = 1\nwhat = 'x'\n",
    # the shared machinery imports every step: not Table 1 code
    "pipeline/registry.py": "from arithmech.steps import table1_grid\n",
    # a page: two r: dict functions (one with a folder parameter), one direct read, one ensure (a Result)
    "report/views/x_page.py": (
        "from arithmech.core import results\n"
        "from arithmech.pipeline.ensure import ensure\n"
        "\n"
        "\n"
        "def show(r: dict):\n"
        "    return r\n"
        "\n"
        "\n"
        "def other(r: dict[str, int], out):\n"
        "    return results.read(out, 'a.csv'), ensure(r)\n"
        "\n"
        "\n"
        "def fine(r: list):\n"
        "    return r\n"
    ),
    # a wing's page reading its Result by folder: a Result read and a direct read
    "wing/page.py": "from arithmech.wing.result import read\n\n\ndef run(res, c):\n    return read(res.folder, c)\n",
    "wing/result.py": "def read(folder, config):\n    return folder, config\n",
}


def load_counter():
    spec = importlib.util.spec_from_file_location("architecture_counts", REPO / "benchmarks" / "architecture_counts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_on_a_tiny_package(tmp_path, capsys):
    """Protects the counts the wing reorganisation is judged by (modules holding Table 1, ways to read a results
    folder, functions taking a folder, direct result-file reads in rules and pages, ``r: dict`` page functions,
    ``claims/`` lines, functions over 60 lines, package lines and modules): each equals the count made by hand on a
    package written here, with a case of each that must not count (a floor's folder parameter, the shared
    registry's import, a shipped file's read, ``Context``'s own read, ``r: list``)."""
    for rel, text in PACKAGE.items():
        (tmp_path / "arithmech" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "arithmech" / rel).write_text(text)
    out = tmp_path / "counts.json"
    load_counter().main(["--root", str(tmp_path), "--out", str(out)])
    got = json.loads(out.read_text())
    assert got["table1_modules"]["named"] == ["arithmech/steps/table1_grid.py"]
    assert got["table1_modules"]["importing"] == ["arithmech/claims/verdicts.py"]
    assert got["table1_modules"]["count"] == 2 and got["table1_modules"]["lines"] == 5 + 13
    assert got["results_read_ways"]["by_way"] == {"result": 2, "context": 1, "direct": 6}
    assert got["results_read_ways"]["count"] == 3
    assert got["folder_functions"]["where"] == [
        "arithmech/claims/verdicts.py::decide",
        "arithmech/report/views/x_page.py::other",
        "arithmech/steps/table1_grid.py::grid",
        "arithmech/wing/result.py::read",
    ]
    assert sorted(w.split(" ", 1)[1] for w in got["direct_reads"]["where"]) == [
        "json.load", "open()", "plan(folder)", "read(folder)", "read_csv", "results.read"]
    assert got["r_dict_page_functions"]["where"] == ["arithmech/report/views/x_page.py::show",
                                                     "arithmech/report/views/x_page.py::other"]
    assert (got["claims_python_lines"], got["claims_python_modules"]) == (13 + 6, 2)
    assert got["claims_data_lines"] == {"arithmech/claims/changelog.toml": 3}
    assert got["long_functions"]["where"] == ["arithmech/core/util.py::long 61"]
    assert got["package_modules"] == 8
    assert got["package_lines"] == 65 + 5 + 13 + 6 + 1 + 14 + 5 + 2
    assert '"package_modules": 8' in capsys.readouterr().out


def test_a_context_over_the_step_results_is_the_result_way(tmp_path):
    """Protects the honest count of ``Context``: where ``claims/evidence.py`` reads only through the steps' Results
    (a ``*Files`` reader's construction, a Result class's ``load``), its constructions count as Result reads and no
    way of their own; a page calling a Result class's reader (``Ranking.read(...)``) reads through it; ``Context``'s
    own direct read (the first test's) keeps it a way apart."""
    package = {
        "claims/evidence.py": (
            "from arithmech.wing.result import WingFiles, WingResult\n\n\nclass Context:\n"
            "    def __init__(self, folder):\n        self.files = WingFiles(folder)\n"
            "        self.arms = WingResult.load(self.folder)\n"
        ),
        "claims/decide.py": "from arithmech.claims.evidence import Context\n\n\ndef claims(folder):\n"
        "    return Context(folder)\n",
        "report/views/y_page.py": "from arithmech.wing.result import Ranking\n\n\ndef show(m):\n"
        "    return Ranking.of('results', m)\n",
        "wing/result.py": "class WingFiles:\n    pass\n",
    }
    for rel, text in package.items():
        (tmp_path / "arithmech" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "arithmech" / rel).write_text(text)
    out = tmp_path / "counts.json"
    load_counter().main(["--root", str(tmp_path), "--out", str(out)])
    ways = json.loads(out.read_text())["results_read_ways"]
    assert ways["by_way"] == {"result": 4, "context": 0, "direct": 0} and ways["count"] == 1
    assert ways["context_own_reads"] == []
    assert "arithmech/claims/decide.py:5 Context() (over the step Results)" in ways["where"]["result"]
