"""Unit tests of ``arithmech/core/records.py``."""
from __future__ import annotations

import pytest

from arithmech.core import records
from arithmech.core.atomic import sha256
from arithmech.core.safe_read import ResultsError


def test_shipped_smollm2_arms_records():
    """Protects the committed SmolLM2 Table 1: its learning curve's knee is the pre-stated rule
    applied to its points; every run record present reads through the contract and was made by the arms runner
    with that knee as its step budget; the plan (rewritten after each run, complete or not) lists only records
    that exist, its arms are the runner's, three seeds, ten draws per random arm, and no random draw reads a
    key/value group of the key or share heads (no shared tuned parameter); what every run cost is recorded."""
    from pathlib import Path

    from arithmech.core import results
    from arithmech.finetune.heads import model_geometry
    from arithmech.table1.plan import ARMS, groups
    from arithmech.table1.train import knee
    folder = Path(__file__).resolve().parents[3] / "results" / "smollm2-135m"
    curve = results.read(folder, "finetune/curve.json")
    assert curve["knee"] == knee(curve["points"]) and curve["suite"] == "cpu"
    recs = records.finetune_records(folder)
    assert "base" in recs
    for r in recs.values():
        assert r["command"].startswith("python -m arithmech table1 --model smollm2-135m")
        assert r["parameters"]["steps"] == curve["knee"] and r["wall_s"] > 0
    if results.exists(folder, "finetune/table1.json"):
        plan = results.read(folder, "finetune/table1.json")
        assert set(plan["arms"]) <= set(ARMS) and plan["seeds"] == [0, 1, 2] and plan["draws"] == 10
        assert isinstance(plan["complete"], bool)
        tags = [r["tag"] for a in plan["arms"].values() for r in a["grid_rows"]]
        assert tags and set(tags) <= set(recs)
        geo, h = model_geometry("smollm2-135m"), plan["heads"]
        key = groups([tuple(x) for x in h["tuned"] + h["share"]], geo)
        for d in h["random_draws"] + h["random_any_draws"]:
            assert len(d) == len(h["tuned"]) and not groups([tuple(x) for x in d], geo) & key
        assert plan["cost"]["total_s"] > 0 and set(plan["cost"]["run_s"]) <= set(recs)


def test_a_record_naming_an_input_outside_the_folder_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    """Protects fine-tune records against an edited ``inputs``: a record naming an absolute path
    (table1-arms once opened and hashed it before refusing) is refused naming the record, and nothing outside the
    folder is opened or hashed; a record whose inputs are the folder's own files reads as before."""
    import json

    from arithmech.core import safe_read
    folder = tmp_path / "m"
    (folder / "finetune").mkdir(parents=True)
    (folder / "effects.csv").write_text("x\n")
    rec = records.finetune_record(model="m", mode="precise", tag="t", results={"x": records.measure(0.5)})
    records.write_finetune(folder, rec, inputs=("effects.csv",))
    assert records.read_finetune(folder, "precise", "t")["inputs"]["effects.csv"] == sha256(folder / "effects.csv")
    path = records.finetune_path(folder, "precise", "t")
    path.write_text(json.dumps({**json.loads(path.read_text()), "inputs": {"/etc/passwd": "0" * 64}}))
    hashed = []
    monkeypatch.setattr(safe_read, "sha256", lambda p, *a, **k: hashed.append(p))
    with pytest.raises(ResultsError, match=r"precise-t.json' records the input '/etc/passwd', a path outside"):
        records.read_tag(folder, "precise-t")
    assert hashed == []


@pytest.mark.parametrize("bad", [
    {"value": 0.5, "n": 3, "items": [1, 0]},                  # n is not the items' number
    {"value": 0.5, "n": 2, "ci": [0.7, 0.2]},                 # an interval upside down
    {"value": 0.5, "ci": [0.1]},                              # half an interval
    {"value": "0.5"},                                         # not a number
])
def test_a_measure_a_page_would_show_wrong_is_refused(tmp_path, bad):
    """Protects the pages that print a record's stored interval and n as they are (a hostile review: only
    ``value`` was checked): a measure, in ``results`` or ``base``, whose n disagrees with its items or whose
    interval is not two ordered numbers makes the record malformed; a measure of :func:`records.measure` reads."""
    import json
    folder = tmp_path / "m"
    (folder / "finetune").mkdir(parents=True)
    good = records.measure(0.5, 2, [0.1, 0.9], [1, 0])
    rec = records.finetune_record(model="m", mode="full", tag="t", results={"x": good}, base={"x": good})
    records.write_finetune(folder, rec)
    path = records.finetune_path(folder, "full", "t")
    saved = json.loads(path.read_text())
    assert records.check_record_file(path, folder / "finetune")["results"]["x"] == good
    for side in ("results", "base"):
        path.write_text(json.dumps({**saved, side: {"x": bad}}))
        with pytest.raises(ResultsError, match="malformed fine-tune record"):
            records.check_record_file(path, folder / "finetune")
