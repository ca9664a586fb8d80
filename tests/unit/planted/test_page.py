"""The Planted chapter's page (arithmech/planted/page.py): its answer sentences are read from the results."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from arithmech.planted import exploration_page, page, rules
from arithmech.planted import run as planted_run
from arithmech.planted.config import PlantedScore

SHIPPED = Path(__file__).resolve().parents[3] / "results" / "planted" / "planted_score"


def fake_result(k: int = 2, lo: float = 0.33, named: int = 3) -> planted_run.Result:
    """A Result whose numbers are none of the shipped ones."""
    part = lambda k_, n_: {"k": k_, "n": n_, "value": k_ / n_, "lo": lo, "hi": 1.0}
    method = {"clusters": 31, "n": 90, "found": [[2, 0], [2, 1], [1, 3]][:named], "recall": part(k, 3),
              "precision": part(k, named), "false_positives": [], "missed": [], "found_share": {}}
    ids = [c.id for c in rules.CRITERIA]
    scores = {"numbers": {"methods": {c.id: method for c in rules.RECOVERY}}, "verdicts": dict.fromkeys(ids, "inconclusive"),
              "command": "python -m arithmech planted-score", "rules_sha256": "0" * 64}
    ko = pd.DataFrame([
        {"condition": c, "ablated": "", "accuracy": a, "lo": a - 0.05, "hi": a + 0.05, "drop": None, "drop_lo": None,
         "drop_hi": None, "n": 432, "clusters": 77}
        for c, a in (("none", 0.81), ("planted movers", 0.23), ("random non-planted (mean of 4 draws)", 0.8),
                     ("all heads", 0.2), ("guessing floor", 0.3))])
    return planted_run.Result(PlantedScore(), scores, pd.DataFrame(), pd.DataFrame(), ko)


def test_the_pages_answer_is_read_from_the_results():
    """Protects the page's opening sentence from drifting from the files: each method's "k of n", its intervals, its
    problem clusters and verdict, and the knockout's accuracies and n are the Result's, not typed values."""
    lines = page.answer(fake_result())
    assert len(lines) == len(rules.RECOVERY) + 2
    assert lines[0].startswith(f"**0 of the {len(rules.RECOVERY)} methods recover the 3 planted movers**")
    assert "found **2 of 3** planted movers, naming 3 heads" in lines[1]
    assert "recall 0.67 [0.33, 1.00]" in lines[1] and "31 problem clusters" in lines[1] and "*inconclusive*" in lines[1]
    assert "81.0% [76.0%, 86.0%] to 23.0% [18.0%, 28.0%]" in lines[-1] and "n=432 prompts" in lines[-1]
    assert "found **1 of 3**" in page.answer(fake_result(k=1))[1]


@pytest.mark.skipif(not (SHIPPED / "scores.json").exists(), reason="no shipped planted scores")
def test_the_pages_answer_matches_the_shipped_scores():
    """Protects the chapter's first lines on the shipped files: each method's line says the k of n and the verdict
    its scores.json holds."""
    c = PlantedScore()
    r = planted_run.read(SHIPPED, c)
    scores = json.loads((SHIPPED / "scores.json").read_text())
    lines = page.answer(r)
    passed = sum(v == rules.PASS for k, v in scores["verdicts"].items() if k in {c.id for c in rules.RECOVERY})
    assert lines[0].startswith(f"**{passed} of the {len(rules.RECOVERY)} methods")
    for line, crit in zip(lines[1:], rules.RECOVERY):
        rec = scores["numbers"]["methods"][crit.id]["recall"]
        assert f"found **{rec['k']} of {rec['n']}**" in line and f"*{scores['verdicts'][crit.id]}*" in line


@pytest.mark.skipif(not (SHIPPED / "scores.json").exists(), reason="no shipped planted scores")
def test_every_cell_of_the_page_renders_the_shipped_scores():
    """Protects the chapter's cells: every table and sentence function runs on the shipped files, the tables have a
    row per method, knockout condition and head role, and a method that did not pass is named where it fails."""
    r = planted_run.read(SHIPPED, PlantedScore())
    assert len(page.table(r)) == len(rules.RECOVERY) and len(page.heads(r)) == len(rules.RECOVERY)
    assert len(page.knockout(r)) == len(r.knockout) and len(page.truth()) == 16
    assert list(page.per_task(r)["operation"]) == list(r.scores["identify"]["kept"])
    assert page.heads(r).shape[1] == 17 and sum(c.endswith("*") for c in page.heads(r).columns) == 3
    failing = [c.id for c in rules.CRITERIA if r.scores["verdicts"][c.id] != rules.PASS]
    text = "\n".join(page.failures(r))
    assert all(page.NAMES.get(f, f) in text for f in failing) and (failing or text == "Every criterion passed.")
    assert all(t in page.identify_note(r) for t in r.scores["identify"]["tasks_pooled"])
    assert r.scores["rules_sha256"][:16] in page.command(r) and rules.rules_sha256()[:16] in page.rules_text()


def test_the_seeds_table_reads_each_scored_seed_and_decides_across_them(tmp_path):
    """Protects the seeds table: a seed's cell is its own verdict with recall and precision read from its files, a
    seed without files (or scored under other rules) reads "not scored" and is left out of the verdict across seeds,
    which needs three seeds scored (the rule written before the seeds were)."""
    import shutil

    from arithmech.planted.config import Chapter

    shipped = Path(__file__).resolve().parents[3] / "results"
    (tmp_path / "planted").mkdir()
    shutil.copytree(shipped / "planted" / "planted_score", tmp_path / "planted" / "planted_score")
    P = Chapter(results=str(tmp_path))
    r = planted_run.read(tmp_path / "planted" / "planted_score", P.to_score())
    alone = page.seeds(page.seed_results(P, r)).set_index("method")
    assert set(alone["seed 1"]) == {"not scored"} and set(alone["across seeds"]) == {rules.NOT_TESTABLE}
    for n in (1, 2):  # two more seeds: here copies of seed 0's files, so every verdict repeats three times
        shutil.copytree(tmp_path / "planted", tmp_path / f"planted-seed{n}")
    table = page.seeds(page.seed_results(P, r)).set_index("method")
    paper = table.loc[page.NAMES["identify-paper"]]
    v = r.scores["verdicts"]["identify-paper"]
    assert paper["seed 2"].startswith(f"{v}: recall ") and paper["across seeds"] == rules.across_seeds([v] * 3)
    assert table.loc["EAP", "across seeds"] == rules.across_seeds([r.scores["verdicts"]["eap"]] * 3)
    line = page.seeds_line(table.reset_index())
    assert line.startswith("**Across the 3 training seeds scored** (seed 0, seed 1, seed 2;") and "EAP: **" in line
    scores = tmp_path / "planted-seed2" / "planted_score" / "scores.json"   # scored under other rules: not read
    scores.write_text(scores.read_text().replace(r.scores["rules_sha256"], "0" * 64))
    assert set(page.seeds(page.seed_results(P, r))["seed 2"]) == {"not scored"}


def _write_curve(folder: Path, name: str, curve: dict) -> None:
    """``curve`` as the sweep ships it: ``<name>.json`` and the ``run.json`` twin that hashed its bytes."""
    import hashlib

    data = json.dumps(curve).encode()
    (folder / f"{name}.json").write_bytes(data)
    run = {"steps": {"curve": {"parameters": {"lr": curve["lr"]}, "wall_s": 1.0,
                               "files": {"finetune/curve.json": hashlib.sha256(data).hexdigest()}}}}
    (folder / f"{name}_run.json").write_text(json.dumps(run))


def test_exploration_lines_are_read_from_the_shipped_files(tmp_path):
    """Protects the rule that prose states no number no file holds: the 1e-3 curve's first and last points and each
    tuned arm's forbidden attention come from the files (a copy re-hashed moves the printed number), and a curve its
    run.json did not hash is refused, not printed."""
    from arithmech.core.results import ResultsError
    from arithmech.planted.exploration import EXPLORATION, Exploration

    x = Exploration.load()
    lines = exploration_page.exploration(x)
    curve = json.loads((EXPLORATION / "curve.json").read_text())
    assert f"{curve['points'][0]['val_math']:.1%} at step 0" in lines[0] and "budget: none" in lines[0]
    assert len(lines) == 1 + sum(t["lr"] is not None for t in x.truth.values())
    shutil.copytree(EXPLORATION, tmp_path, dirs_exist_ok=True)
    curve["points"][0]["val_math"] = 0.123
    (tmp_path / "curve.json").write_text(json.dumps(curve))
    with pytest.raises(ResultsError, match="not the curve curve_run.json hashed"):
        Exploration.load(tmp_path)
    _write_curve(tmp_path, "curve", curve)
    assert "12.3% at step 0" in exploration_page.exploration(Exploration.load(tmp_path))[0]


def _synthetic(right: dict[int, int], kept: dict[int, int], lr: float, n: int = 53) -> dict:
    """A curve on ``n`` validation clusters: at each step the first ``right[step]`` are right (new skill) and
    ``kept[step]`` of ``n`` retention items are right."""
    pts = [{"step": s, "val_items": [1] * k + [0] * (n - k), "val_math": k / n, "val_fig8": kept[s] / n,
            "val_nll": 1.0, "train_loss": 0.5} for s, k in sorted(right.items())]
    return {"lr": lr, "points": pts, "knee": None, "command": "synthetic"}


def test_sweep_reads_each_curve_by_the_existing_rules(tmp_path):
    """Protects the sweep's reading (README's design): the budget is the bend rule's, the gain at the bend is the paired
    t interval over clusters (checked against a hand computation with t(0.975, 52) = 2.00665), scope is its lower end
    above +5 points, and retention is collapsed when its Wilson upper end falls under chance + 0.5 x (base - chance).
    A curve that learns and keeps retention is a candidate; the same curve with retention at 1 of 53 is not. A rate of
    the second sweep is marked as chosen after the first-step diagnosis, in the table and in the sentence."""
    import math

    from arithmech.planted.exploration import EXPLORATION, Exploration, read_curve

    for name in ("curve.json", "curve_run.json", "truth_after_tune.json"):
        shutil.copy(EXPLORATION / name, tmp_path / name)
    steps = (0, 20, 40, 80, 160, 320, 640)
    right = dict(zip(steps, (10, 30, 40, 40, 40, 40, 40)))
    _write_curve(tmp_path, "curve_lr1e-06", _synthetic(right, dict.fromkeys(steps, 40), 1e-6))
    _write_curve(tmp_path, "curve_lr3e-05", _synthetic(right, {0: 40, **dict.fromkeys(steps[1:], 1)}, 3e-5))
    x = Exploration.load(tmp_path)
    assert list(x.curves) == [1e-6, 3e-5, 1e-3]
    good, bad = read_curve(x.curves[1e-6]), read_curve(x.curves[3e-5])
    assert good.bend == bad.bend == 40                      # 20 -> 40 still gains 10 of 53 (significant); 40 on: flat
    d, n = 30 / 53, 53                                      # 30 of 53 clusters go 0 -> 1 by step 40
    half = 2.00665 * math.sqrt(d * (1 - d) * n / (n - 1)) / math.sqrt(n)
    assert good.gain == pytest.approx((d, d - half, d + half), abs=1e-4) and good.scope
    assert good.best == pytest.approx((40 / 53, *good.best[1:])) and good.best_step == 40
    assert good.kept_at_bend and good.candidate and not bad.kept_at_bend and not bad.candidate
    table = exploration_page.sweep(x).set_index("rate")
    assert table.loc["1e-06", "candidate"] == "yes" and table.loc["3e-05", "candidate"] == "no"
    assert table["chosen"].tolist() == ["after first step", "before", "before"]
    assert table.loc["1e-06", "n"] == 53 and table.loc["0.001", "last loss, val / train (step)"].endswith("not logged (1280)")
    line = exploration_page.sweep_line(x)
    assert line.startswith("At 1e-06 (budget 40 steps) of 1e-06, 3e-05, 0.001,") and "(1e-06 chosen after the" in line
    assert "fallen under the line at none of them" in line   # the candidate keeps 40 of 53 to its last point
    assert "spent on choosing rates" in line  # its one candidate was chosen after the diagnosis
    assert table.loc["0.001", ["bend (budget)", "scope", "retention kept"]].tolist() == ["none", "-", "-"]
    assert bad.kept_at_end is False and good.kept_at_end is True  # 1 of 53 kept: Wilson upper end 10 % < the line


def test_shipped_sweep_is_shown_whole():
    """Protects the sweep as shown: one row per shipped curve (the 1e-3 curve and every curve_lr<rate>.json), each
    row's best point the curve's own maximum, and the sentence naming exactly the candidate rows."""
    from arithmech.planted.exploration import EXPLORATION, Exploration

    x = Exploration.load()
    table = exploration_page.sweep(x)
    assert len(table) == 1 + len(list(EXPLORATION.glob("curve_lr*[0-9].json")))
    for c, best in zip(x.curves.values(), table["best new skill (step)"]):
        assert best.startswith(f"{max(p['val_math'] for p in c.points):.1%}")
    assert list(x.curves) == sorted(x.curves)
    yes = table.loc[table["candidate"] == "yes", "rate"].tolist()
    line = exploration_page.sweep_line(x)
    assert line.startswith(f"At {yes[0]} (budget" if yes else "No rate of")
    assert all(f"{r} (budget" in line for r in yes) and line.count("(budget") == len(yes)


def test_second_sweep_is_the_one_its_design_names():
    """Protects the disclosure that the rates below 1e-5 were chosen after the first-step diagnosis: the rates marked
    so are those the README's second design names, and each is shipped as a curve."""
    from arithmech.planted.exploration import AFTER_FIRST_STEP, EXPLORATION, Exploration

    design = (EXPLORATION / "README.md").read_text().split("## The second sweep")[1]
    assert "1e-7, 3e-7, 1e-6 and 3e-6" in design and "chosen *after* `first_step.json`" in design
    assert AFTER_FIRST_STEP == (1e-7, 3e-7, 1e-6, 3e-6)
    assert set(AFTER_FIRST_STEP) <= set(Exploration.load().curves)


def test_chance_line_is_the_per_operation_majority():
    """Protects the chance the page prints: the per-operation majority share of each side's items."""
    from arithmech.data import planted_items

    line = page.chance()
    assert f"validation {planted_items.side_chance('val', planted_items.skill_items('val')):.1%}" in line
    assert f"test {planted_items.side_chance('test', planted_items.skill_items('test')):.1%}" in line
