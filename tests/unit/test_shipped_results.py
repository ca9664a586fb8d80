"""The SmolLM2 results shipped in ``results/smollm2-135m/`` are what the book would compute: every file reads
through the results contract at its current format version, each step was made with the parameters the SmolLM2
appendix asks for (so the book reuses them instead of silently showing another run), and no file holds a path of
the machine that made it. The peer benchmark's shipped result (``benchmarks/results/peer.json``, on SmolLM2
prompts whose sha256 it records) holds its parity and ratio."""
from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

import pytest

from arithmech.core import results
from arithmech.identify import run as identify_step
from arithmech.identify.config import BOOK_SCALE, Stability
from arithmech.prompts.config import Shots
from arithmech.steps import accuracy as accuracy_step
from arithmech.steps import shots as shots_step
from arithmech.steps import stability as stability_step
from arithmech.table1.frontier import curves_of
from arithmech.table1.result import Table1Result

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "results" / "smollm2-135m"
STEPS = ("identify", "analyze", "accuracy", "stability", "beyond", "shots")


def appendix_parameters(name: str = "appendix_smollm2") -> dict:
    """A chapter's ``parameters`` cell, evaluated as literals (no code runs)."""
    from arithmech.report.build.plan import read_notebook
    nb = read_notebook(REPO / "book" / f"{name}.md")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_every_shipped_step_reads_at_the_current_format():
    """Protects the shipped files against a schema change: each step's files are present and pass the
    results contract's checked reads (format version, columns, inputs' hashes)."""
    steps = results.read_run(FOLDER)["steps"]
    for step in STEPS:
        assert step in steps, f"results/smollm2-135m has no {step} run: make it with the chapter"
        got = results.read_step(FOLDER, step)
        assert set(got) == {n.rsplit(".", 1)[0] for n in results.step_files(step) if results.exists(FOLDER, n)} and got


def test_shipped_steps_were_made_with_the_appendix_parameters():
    """Protects the book from showing a stale run or silently recomputing one: the appendix reuses identify,
    analyze and accuracy, and the Beyond chapter its SmolLM2 run, only when made with their parameters from
    the identify files now there (``results.made_with``, with each step's own record of them: the accuracy table's
    answer-token rule included); these files pass that check, so a change of those
    parameters without re-running the step fails here, not in the book."""
    p = appendix_parameters()
    sc = Shots(model_name="smollm2-135m", seed=p["seed"], device=p["device"], dtype=p["dtype"],
               example_sets=p["example_sets"])
    assert results.made_with(FOLDER, "shots", shots_step.recorded(sc))
    k = shots_step.choose(results.read(FOLDER, "shots.csv"))["shots"] if p["shots"] < 0 else p["shots"]
    config = identify_step.Config(model_name="smollm2-135m", seed=p["seed"], device=p["device"], dtype=p["dtype"],
                                  n_samples=p["n_samples"], shots=k, example_sets=p["example_sets"],
                                  knockout_split=p["knockout_split"], bootstrap=p["bootstrap"],
                                  **{**BOOK_SCALE, "knockout_samples": p["knockout_samples"]}, n_random=p["n_random"])
    assert results.made_with(FOLDER, "identify", identify_step.recorded(config))
    zero = config.replace(shots=0, out=str(FOLDER / "zero-shot"))   # the side-by-side's zero-shot run: like with like
    assert results.made_with(FOLDER / "zero-shot", "identify", identify_step.recorded(zero))
    alone = config.replace(task="addition", knockout_samples=256, knockout_positions="end", transfer=False,
                           out=str(FOLDER / "addition"))          # "Addition alone": the README's command
    assert results.made_with(FOLDER / "addition", "identify", identify_step.recorded(alone))
    st = Stability(model_name="smollm2-135m", seed=p["seed"], device=p["device"], dtype=p["dtype"], task="addition",
                   seeds=p["stability_seeds"], sizes=tuple(p["stability_sizes"]), shots=k,
                   example_sets=p["example_sets"], bootstrap=p["bootstrap"])
    assert results.made_with(FOLDER, "stability", stability_step.recorded(st))
    assert results.made_with(FOLDER, "analyze", {"n_samples": p["n_samples"], "seed": p["seed"], "device": p["device"],
                                           "dtype": p["dtype"], "prompt": "4 + 3 = "})
    acc = accuracy_step.Config(model_name="smollm2-135m", seed=p["seed"], n_per_template=p["n_per_template"])
    assert results.made_with(FOLDER, "accuracy", accuracy_step.recorded(acc)), \
        "the shipped accuracy table was not scored with identify's answer token: re-run it (accuracy-by-template)"
    b = appendix_parameters("beyond")
    assert results.made_with(FOLDER, "beyond", {"model": "smollm2-135m", **{k: b[k] for k in (
        "receivers", "ig_steps", "n_samples", "seed", "device", "dtype")}})


@pytest.mark.parametrize("path", sorted(p for p in FOLDER.rglob("*") if p.is_file()), ids=lambda p: p.name)
def test_no_shipped_file_names_a_machine_path(path):
    """Protects the rule that this machine's paths are never printed: no shipped results file holds an
    absolute path (a home, /tmp, /work, a venv)."""
    text = path.read_text(errors="replace")
    assert not re.search(r"(?<![\w.])/(?:home|root|tmp|work|Users|opt|var)/", text), path


def test_peer_benchmark_shows_parity_and_the_ratio():
    """Protects the peer benchmark's shipped claim (``benchmarks/bench_peer.py``): for nnsight and TransformerLens,
    Algorithm 1 written in the library's idiom gives effects equal to ours within 1e-4 on the shipped SmolLM2 run's
    prompts (the file's sha256 of ``prompts.jsonl`` is the shipped file's: a new run needs the benchmark again),
    and the file holds both wall times of that one run with their ratio."""
    r = json.loads((REPO / "benchmarks" / "results" / "peer.json").read_text())
    shipped = hashlib.sha256((REPO / "results" / "smollm2-135m" / "prompts.jsonl").read_bytes()).hexdigest()
    assert r["prompts_sha256"] == shipped and r["mean_tokens"] > 0
    assert r["model"] == "smollm2-135m" and r["tolerance"] == 1e-4 and r["n_pairs"] >= 8 and r["parity"]
    assert {x["peer"] for x in r["runs"]} == {"nnsight", "transformerlens"}
    for x in r["runs"]:
        assert x["parity"] and x["max_abs_effect_diff"] <= r["tolerance"] and x["effect_samples_compared"] > 0
        assert x["ours_s"] == r["ours_end_to_end_s"] and x["ratio_peer_over_ours"] == pytest.approx(
            x["peer_s"] / x["ours_s"], abs=0.1)


def test_the_smollm2_page_counts_the_table1_runs_shipped():
    """Protects the account of Table 1's state on the book's *Making SmolLM2's results* page (book/smollm2_runs.md) from going stale as batches of records land (it is a sentence
    a reader trusts to know how far the design is): its "**N fine-tuning runs**" equals the runs listed in the
    shipped ``table1.json`` (base and base-shots apart), each random arm's draws clause names that arm's highest
    draw, and the runs it says are left are the planned runs not yet made (the page's progress line), or, none left, that
    the design is complete."""
    from arithmech.table1.views import progress_line
    plan = json.loads((FOLDER / "finetune" / "table1.json").read_text())
    runs = sum(len(a.get("grid_rows") or []) for a in plan["arms"].values())
    text = " ".join((REPO / "book" / "smollm2_runs.md").read_text().split())
    listed = re.search(r"\*\*What is shipped: (\d+) fine-tuning runs\*\* besides base and base-shots", text)
    assert listed and int(listed.group(1)) == runs, (listed and listed.group(0), runs)
    for arm in ("precise-random", "precise-random-any"):
        top = max(r.get("draw", 0) for r in plan["arms"][arm]["grid_rows"])
        assert re.search(rf"\b0 to {top} \({arm}\)", text), arm
    made, planned = map(int, re.match(r"\*\*(\d+) of (\d+) planned runs made", progress_line(Table1Result.load(FOLDER))).groups())
    if made < planned:
        assert f"({planned - made} runs left of the {planned} planned" in text
    else:  # the design done: the page says so, and table1.json was written by the runner's last step
        assert plan["complete"] and f"The design is complete: all {planned} planned runs made" in text


def test_dropping_any_one_grid_points_records_never_turns_a_shipped_verdict_into_its_opposite(tmp_path):
    """Protects Table 1's verdicts against any one grid point, on the shipped records themselves, not on the rules'
    own loop (a hostile reading: the synthetic leave-one-rate-out test re-runs ``verdict_rows``' check, which cannot
    fail): for every point a decided SmolLM2 verdict reads, a copy of the results folder with that point's record
    files deleted and its runs struck from ``table1.json`` (its grid rows and the chosen runs) is read back from disk
    and the rule re-decided at the whole grid's level — the same verdict or an undecided one, never the opposite; and
    what the page's check says without that point (``Curves.without``) is what the records without it say. Decided
    verdicts must exist, or the test is vacuous."""
    import shutil

    from arithmech.table1 import curves, frontier

    c = curves_of(Table1Result.load(FOLDER))
    rows, rules = curves.verdict_rows(c), curves.rules(c)
    decided = [(i, r) for i, r in rows.iterrows() if r["verdict"] in frontier.OPPOSITE]
    assert decided, "no decided verdict: nothing to check"
    arms = sorted({a for i, _ in decided for a in rules[i][2]})
    checked = 0
    for arm in arms:
        for p in frontier.grid(c, arm):
            copy = tmp_path / f"{arm}-{p.lr:.0e}"
            shutil.copytree(FOLDER, copy)
            plan = json.loads((copy / "finetune" / "table1.json").read_text())
            rows_of = plan["arms"][arm]["grid_rows"]
            gone = [r for r in rows_of if r["lr"] == p.lr]
            assert {r["tag"] for r in gone} == set(p.tags), (arm, p.lr)
            plan["arms"][arm]["grid_rows"] = [r for r in rows_of if r["lr"] != p.lr]
            plan["arms"][arm]["runs"] = [t for t in plan["arms"][arm].get("runs") or [] if t not in p.tags]
            data = json.dumps(plan).encode()
            (copy / "finetune" / "table1.json").write_bytes(data)
            run = json.loads((copy / "run.json").read_text())  # the edit is this test's: its checksum follows it
            run["steps"]["table1"]["files"]["finetune/table1.json"] = hashlib.sha256(data).hexdigest()
            (copy / "run.json").write_text(json.dumps(run))
            for t in p.tags:
                (copy / "finetune" / f"{t}.json").unlink()
            d = curves_of(Table1Result.load(copy))
            for i, r in decided:
                claim, _, read, _, decide, size = rules[i]
                if arm not in read:
                    continue
                again = curves.whole_verdict(d, read, decide, size(c), claim)
                assert again != frontier.OPPOSITE[r["verdict"]], (r["claim"], r["measure"], arm, p.lr, again)
                assert again == dict(((a, lr), w) for a, lr, w in r["loro"])[(arm, p.lr)], (r["claim"], arm, p.lr)
                checked += 1
            shutil.rmtree(copy)
    assert checked >= len(decided) * 4, checked
