"""The commands of the book's Reproduce page (book/reproduce.md), run as written on a fresh folder (marked slow: about
3 minutes on 2 cores); the README's chapter command and its package example too."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from arithmech.core import records, results
from arithmech.core.atomic import sha256

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "book" / "reproduce.md"
README = REPO / "README.md"


def bash_blocks(page: Path) -> list[str]:
    """The page's bash blocks, each command on one line (a line ending in ``\\`` joined with the next)."""
    return [re.sub(r"\\\n\s*", " ", b) for b in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S)]


def readme_commands(page: Path = PAGE) -> list[list[str]]:
    """Every `.venv/bin/python -m arithmech …` command of the page's bash blocks, in order."""
    lines = []
    for block in bash_blocks(page):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith(".venv/bin/python -m arithmech"):
                lines.append(shlex.split(line.split("  #")[0]))
    return lines


def readme_pipelines(page: Path = PAGE) -> list[str]:
    """Every ``.venv/bin/jupytext … | .venv/bin/papermill …`` line of the page's bash blocks (a chapter run alone)."""
    return [line.strip() for block in bash_blocks(page) for line in block.splitlines()
            if line.strip().startswith(".venv/bin/jupytext ") and "| .venv/bin/papermill" in line]


def test_readme_chapter_commands_convert_and_parameterise(tmp_path):
    """Protects the Reproduce page's and the README's way to run one chapter alone: each ``jupytext … | papermill - out.ipynb -p …`` line,
    run as written by bash (``.venv/bin/`` being this interpreter's folder) from a folder that has the
    repository's ``book/``, gives papermill the chapter converted from its text source, with every ``-p`` value
    injected after its parameters cell. ``--prepare-only`` is appended: the runs themselves (identify on
    Llama-2-7B on a GPU, on SmolLM2 for 3 minutes) are what the book tier executes through the runner."""
    import nbformat
    lines = readme_pipelines()
    assert len(lines) == 2 and len(readme_pipelines(README)) == 1
    lines += readme_pipelines(README)
    (tmp_path / "book").symlink_to(REPO / "book")
    bin_dir = shlex.quote(str(Path(sys.executable).parent)) + "/"
    for line in lines:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", line.replace(".venv/bin/", bin_dir) + " --prepare-only"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (line, r.stderr[-2000:])
        nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
        tags = [c.metadata.get("tags", []) for c in nb.cells]
        k = next(i for i, t in enumerate(tags) if "injected-parameters" in t)
        assert "parameters" in tags[k - 1] and not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
        words = shlex.split(line.split("|", 1)[1])
        for i, w in enumerate(words):
            if w == "-p":
                name, value = words[i + 1], words[i + 2]
                assert f"{name} = " in nb.cells[k].source and value in nb.cells[k].source, (line, name)
        (tmp_path / "out.ipynb").unlink()


def test_readme_chain_identify_analyze_finetune_shares_one_folder(tmp_path):
    """Protects the Reproduce page's promise: its identify → analyze → finetune → beyond commands, run as written in a
    fresh folder, write one results folder for the model with every file beside the others (no
    runs/embedded/embedded), and each step reuses the one before (analyze records identify's key
    heads as its input; finetune tunes identify's ranked heads). `train-embedded` (12 minutes) is run
    with --help only, and `book --only identify` is planned (its chapter and parameters resolved), not
    executed; every other command runs as written."""
    cmds = readme_commands()
    assert [c[3] for c in cmds] == ["--help", "accuracy", "identify", "analyze", "finetune", "beyond", "faithfulness",
                                    "stability", "shots", "table1", "train-embedded", "book"]
    book = cmds.pop()                       # re-executes a chapter in place: planned here, executed by tests/book
    from arithmech.report.build.plan import load_config, plan
    root = REPO
    (ch,) = plan(root, load_config(root), [book[i + 1] for i, a in enumerate(book) if a == "--set"],
                 only=book[book.index("--only") + 1])
    assert ch.name == "identify" and ch.parameters["model_name"] == "smollm2-135m"
    for c in cmds:
        argv = [sys.executable, *c[1:]] + (["--help"] if c[3] == "train-embedded" else [])
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (c, r.stderr[-2000:])
    folder = tmp_path / "runs" / "embedded"
    assert not (folder / "embedded").exists()
    for name in ("effects.csv", "key_heads.json", "prompts.jsonl", "knockout.csv", "attention_roles.csv", "attention_baseline.csv",
                 "mlp_projection.csv", "analyze.json", "run.json"):
        results.read(folder, name) if name != "run.json" else None
        assert (folder / name).exists(), name
    run = results.read_run(folder)
    assert set(run["steps"]) == {"identify", "analyze", "beyond", "faithfulness", "stability", "shots", "table1"}
    assert results.read(folder, "faithfulness.csv").query("order == 'top'").n.max() == 6 and run["steps"]["faithfulness"]["inputs"]["effects.csv"] == \
        sha256(folder / "effects.csv")
    assert run["steps"]["shots"]["choice"]["shots"] in (0, 2, 4, 8) and len(results.read(folder, "shots.csv")) == 16
    assert results.read(folder, "finetune/table1.json")["suite"] == "toy" and len(results.read(folder, "stability.csv")) > 0
    assert run["steps"]["beyond"]["inputs"]["effects.csv"] == sha256(folder / "effects.csv")
    assert len(results.read(folder, "eap.csv")) == 6 * 9 and len(results.read(folder, "upstream.csv")) > 0
    assert run["steps"]["analyze"]["inputs"]["key_heads.json"] == sha256(folder / "key_heads.json")
    rec = records.read_finetune(folder, "precise")
    ranked = [h["layer"] * 100 + h["head"] for h in json.loads((folder / "key_heads.json").read_text())["heads"]]
    tuned = [l * 100 + h for l, h in rec["heads"]]
    assert set(ranked) <= set(tuned) and len(tuned) == 8          # the key heads first, then by effect rank
    assert not (tmp_path / "retrained-embedded").exists()


def test_readme_package_example_runs_as_written(tmp_path):
    """Protects the README's ten-line package example: its ``python`` block, run as written in a fresh interpreter
    on the embedded model, finds heads whose patch lowers the answer logit, prints an accuracy in [0, 1] and a role
    table naming each of those heads, and trains a copy (the loaded model is left as it was)."""
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert 8 <= len(block.strip().splitlines()) <= 14
    check = ("\nassert (top.effect < 0).all() and len(heads) == 3"
             "\nassert not any(p.requires_grad for p in tuned.parameters()) and tuned is not model"
             "\nimport torch; assert any(not torch.equal(a, b) for a, b in zip(model.parameters(), tuned.parameters()))\n")
    (tmp_path / "example.py").write_text(block + check)
    r = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert 0.0 <= float(lines[0]) <= 1.0
    assert sum(bool(re.search(r"head \d+\.\d+", line)) for line in lines[1:]) == 3
