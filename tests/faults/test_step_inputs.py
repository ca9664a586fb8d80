"""Every step checks every results file it reads, the ones it reads only sometimes too, before it writes anything:
a truncated or edited input is refused in one line naming the file, exit 2, before the model
loads, and nothing under the test's folder changes (analyze's and beyond's cases: test_hostile_folder.py).

What each step reads from a results folder (the audit these cases follow):

================  ==========================================================================================
stability, shots, ``run.json`` only (through ``model_folder`` / ``check_writable``; their own files only when a
accuracy-by-      chapter's ``ensure`` reuses them)
template,
counterfactuals
faithfulness      ``effects.csv``, ``key_heads.json`` and identify's record in ``run.json`` (its parameters)
finetune          ``key_heads.json`` and ``effects.csv`` (``--mode precise`` with ``--heads top-K``)
table1            ``key_heads.json``, ``effects.csv``, every record of its runs (``finetune/<run>.json``,
                  read back when it resumes), ``finetune/curve.json`` (only without ``--steps``)
generalize,       nothing from a results folder
accuracy
================  ==========================================================================================
"""
from __future__ import annotations

import json

import pytest

from .tools import cli, refused, snapshot


def _truncate(path):
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


@pytest.mark.parametrize("command", ["stability", "shots", "accuracy-by-template", "counterfactuals"])
def test_a_truncated_run_json_is_refused_by_every_step_that_writes_beside_it(identify_set, tmp_path, command):
    """Protects the manifest every step reads before it writes (to find the model's folder and its own files):
    run.json cut in half is refused naming run.json, before the model loads, and nothing is written."""
    _truncate(identify_set / "run.json")
    before = snapshot(tmp_path)
    refused(cli(command, "--model", "embedded", "--results", str(identify_set), timeout=60), "run.json' is not valid JSON")
    assert snapshot(tmp_path) == before


def test_faithfulness_refuses_a_truncated_effects_csv(identify_set, tmp_path):
    """Protects faithfulness's first input: effects.csv cut in half is refused naming it; nothing is written."""
    _truncate(identify_set / "effects.csv")
    before = snapshot(tmp_path)
    refused(cli("faithfulness", "--model", "embedded", "--results", str(identify_set), timeout=60), "effects.csv'")
    assert snapshot(tmp_path) == before


def test_faithfulness_refuses_an_identify_record_without_its_parameters(identify_set, tmp_path):
    """Protects the input faithfulness reads from run.json (identify's parameters: its tasks, seed, pool): a record
    that lacks them (this set records only a seed) is refused naming run.json and the missing keys, before the
    model loads (it used to be a KeyError traceback after it)."""
    before = snapshot(tmp_path)
    refused(cli("faithfulness", "--model", "embedded", "--results", str(identify_set), timeout=60),
            "run.json' records no identify run with tasks, pool_size, heldout")
    assert snapshot(tmp_path) == before


def test_finetune_precise_refuses_a_truncated_key_heads_json(identify_set, tmp_path):
    """Protects finetune's ranking inputs: key_heads.json cut in half is refused naming it; nothing is written."""
    _truncate(identify_set / "key_heads.json")
    before = snapshot(tmp_path)
    refused(cli("finetune", "--model", "embedded", "--mode", "precise", "--heads", "top-1", "--results",
                str(identify_set), timeout=60), "key_heads.json' is not valid JSON")
    assert snapshot(tmp_path) == before


def test_arms_refuses_a_truncated_key_heads_json_before_it_trains_the_curve(identify_set, tmp_path):
    """Protects the order of table1 (without --steps it first trains a learning curve and writes
    finetune/curve.json): key_heads.json cut in half is refused naming it before the curve is made or anything
    is written."""
    _truncate(identify_set / "key_heads.json")
    before = snapshot(tmp_path)
    refused(cli("table1", "--model", "embedded", "--suite", "toy", "--results", str(identify_set), timeout=60),
            "key_heads.json'")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("stem", ["base", "precise-key-s0-lr1e-03"])
def test_arms_refuses_a_truncated_record_of_its_runs_before_any_work(identify_set, tmp_path, stem):
    """Protects the records table1 reads back when it resumes: a truncated finetune/<run>.json is refused naming it
    before the curve, the base run or any other record is made (it used to be found only when that run came)."""
    from arithmech.core import records
    rec = records.finetune_record(model="embedded", mode=stem.split("-")[0], results={"x": records.measure(0.5)})
    path = identify_set / "finetune" / f"{stem}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rec)[:40])
    before = snapshot(tmp_path)
    refused(cli("table1", "--model", "embedded", "--suite", "toy", "--top-k", "1", "--results", str(identify_set),
                timeout=60), f"{stem}.json' is not valid JSON")
    assert snapshot(tmp_path) == before
