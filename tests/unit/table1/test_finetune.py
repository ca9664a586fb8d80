"""Unit tests of ``arithmech/table1/finetune.py``."""
from __future__ import annotations

import json
import math
import random
import time

import pytest
from factories import time_limit

from arithmech.finetune.heads import parse_heads
from arithmech.identify.result import read_ranking
from arithmech.steps.config_training import Finetune


def test_parse_heads_and_ranking(tmp_path):
    """Protects: top-k takes the k best-ranked heads of identify's key_heads.json, extended by that task's
    effects.csv ranking (most negative first), MLPs likewise; a missing file says what to run."""
    folder = tmp_path / "m"
    folder.mkdir()
    kh = {"task": "all", "threshold": -0.05, "heads": [{"rank": 1, "layer": 2, "head": 1, "effect": -0.3},
                                                       {"rank": 2, "layer": 0, "head": 3, "effect": -0.1}],
          "mlps": [{"rank": 1, "layer": 1, "effect": -0.2}]}
    (folder / "key_heads.json").write_text(json.dumps(kh))
    rows = "all,1,0,-0.01\nall,2,1,-0.3\nall,1,mlp,-0.2\nall,0,mlp,0.1\nall,1,2,-0.04\nall,0,3,-0.1\naddition,1,1,-0.9\n"
    (folder / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n"          # interval: effect ± 0.01
                                        + "".join(f"{r},{float(r.split(',')[3]) - .01},{float(r.split(',')[3]) + .01}\n"
                                                  for r in rows.splitlines()))
    heads, mlps = read_ranking(folder)
    assert heads == [(2, 1), (0, 3), (1, 2), (1, 0)] and mlps == [1, 0]
    assert parse_heads("top-3", heads) == [(2, 1), (0, 3), (1, 2)]
    assert parse_heads("12.22,13.11", None) == [(12, 22), (13, 11)]
    with pytest.raises(ValueError, match="only 4 ranked heads"):
        parse_heads("top-9", heads)
    with pytest.raises(FileNotFoundError, match="arithmech identify"):
        read_ranking(tmp_path / "other")
    (folder / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n")                 # truncated: no rows
    with pytest.raises(ValueError, match="effects.csv' has no rows"):
        read_ranking(folder)


# ------------------------------------------------------------------------------ finetune up front
def _toy_results(tmp_path, n_layers=2, n_heads=4, effects_rows=None, key_heads=None):
    """A model folder holding only config.json (geometry) and a results folder with identify's files."""
    from transformers import LlamaConfig
    LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=n_layers,
                num_attention_heads=n_heads, num_key_value_heads=n_heads).save_pretrained(tmp_path / "toy")
    res = tmp_path / "res" / "toy"
    res.mkdir(parents=True)
    kh = key_heads if key_heads is not None else {"task": "all", "heads": [{"layer": 1, "head": 2}],
                                                  "mlps": [{"layer": 0}]}
    (res / "key_heads.json").write_text(json.dumps(kh) if not isinstance(kh, str) else kh)
    if effects_rows is None:
        effects_rows = [("all", l, str(h), -0.01 * (l * n_heads + h)) for l in range(n_layers) for h in range(n_heads)]
        effects_rows += [("all", l, "mlp", 0.1 * l) for l in range(n_layers)]
    lines = ["task,layer,head,effect,effect_lo,effect_hi"] + [f"{t},{l},{h},{e},{e},{e}" for t, l, h, e in effects_rows]
    (res / "effects.csv").write_text("\n".join(lines) + "\n")
    return dict(model_name=str(tmp_path / "toy"), results=str(tmp_path / "res"), benchmarks=["generic"], max_steps=2,
                batch_size=4, micro_batch_size=4, lr=1e-3, n_train=8)


@pytest.fixture
def no_model_load(monkeypatch):
    """finetune.run must fail before any model is loaded: loading (or evaluating) one fails the test."""
    from arithmech.table1 import finetune
    def boom(*_a, **_k):
        raise AssertionError("a model was loaded before the arguments were checked")
    monkeypatch.setattr(finetune, "load_model", boom)


BAD_FINETUNE = [
    (dict(heads="top-0"), r"--heads top-0: K in top-K must be a whole number >= 1"),
    (dict(heads="top-x"), r"--heads top-x"),
    (dict(heads="1.2.3"), r"--heads '1.2.3': '1.2.3' is not layer.head"),
    (dict(heads="99.0"), r"--heads: head 99.0 is not in the model \(2 layers"),
    (dict(heads="0.4"), r"head 0.4 is not in the model"),
    (dict(heads="1.-2"), r"is not layer.head"),
    (dict(heads=""), r"--heads ''"),
    (dict(heads="top-99"), r"only 8 ranked heads"),      # the 8 heads of a 2 x 4 model, key head 1.2 first
    (dict(mlps=-1), r"--mlps -1 is below 0"),
    (dict(mlps=3), r"--mlps 3: only 2 ranked MLP layers"),
    (dict(batch_size=0), r"--batch-size 0"),
    (dict(batch_size=-4), r"--batch-size -4"),
    (dict(micro_batch_size=0), r"--micro-batch-size 0"),
    (dict(batch_size=6, micro_batch_size=4), r"--batch-size 6 must be a multiple of --micro-batch-size 4"),
    (dict(lr=0.0), r"--lr 0.0"),
    (dict(lr=float("nan")), r"--lr nan"),
    (dict(max_steps=0), r"--max-steps 0"),
    (dict(max_steps=-1, epochs=0), r"--epochs 0"),
    (dict(limit=0), r"--limit 0"),
    (dict(n_train=-5), r"--n-train -5"),
    (dict(threads=-1), r"--threads -1"),
    (dict(mode="partial"), r"--mode 'partial'"),
    (dict(kv_policy="some"), r"--kv-policy 'some'"),
    (dict(dtype="fp8"), r"--dtype 'fp8'"),
    (dict(benchmarks=["gsm9k"]), r"--benchmarks: unknown \['gsm9k'\]"),
    (dict(fsdp=True), r"--fsdp is for full SFT only"),
    (dict(device="tpu9"), r"--device 'tpu9'"),
]


@pytest.mark.parametrize("bad,match", BAD_FINETUNE, ids=[m for _, m in BAD_FINETUNE])
def test_finetune_bad_argument_refused_before_model_load(tmp_path, no_model_load, bad, match):
    """Protects: each bad fine-tune argument is one ValueError naming the value and what is allowed, raised
    before the base model is loaded or evaluated (load_model is booby-trapped)."""
    from arithmech.table1 import finetune
    kw = {**_toy_results(tmp_path), "heads": "1.2", **bad}
    with time_limit(20), pytest.raises(ValueError, match=match):
        finetune.run(Finetune(**kw))


def test_finetune_missing_inputs_refused_before_model_load(tmp_path, no_model_load):
    """Protects: a missing --train-data file, a missing model folder, CUDA on a machine without it."""
    import torch

    from arithmech.table1 import finetune
    kw = {**_toy_results(tmp_path), "heads": "1.2"}
    with pytest.raises(FileNotFoundError, match="--train-data 'nope.jsonl'"):
        finetune.run(Finetune(**{**kw, "train_data": "nope.jsonl"}))
    with pytest.raises((FileNotFoundError, OSError, ValueError)):
        finetune.run(Finetune(**{**kw, "model_name": str(tmp_path / "nothing.gguf")}))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            finetune.run(Finetune(**{**kw, "device": "cuda"}))


KEY_HEADS_BAD = [
    ("[1, 2]", "must be a JSON object"),
    ('{"heads": []}', "needs a 'task'"),
    ('{"task": "all", "heads": {"layer": 1}}', "'heads' must be a list"),
    ('{"task": "all", "heads": [{"layer": "1", "head": 2}]}', r"heads\[0\] must be an object with whole numbers"),
    ('{"task": "all", "heads": [{"layer": 1}]}', r"heads\[0\]"),
    ('{"task": "all", "heads": [{"layer": 7, "head": 0}]}', r"head 7.0 is not in the model"),
    ('{"task": "all", "heads": [], "mlps": [{"layer": 9}]}', r"MLP layer is beyond"),
    ('{"task": "all", "heads": [', "is not valid JSON"),
]


@pytest.mark.parametrize("text,match", KEY_HEADS_BAD)
def test_key_heads_of_the_wrong_shape_refused_before_model_load(tmp_path, no_model_load, text, match):
    """Protects: a key_heads.json of the wrong shape is a ValueError naming the file, not a KeyError deep
    inside the run (and not after the base evaluation)."""
    from arithmech.table1 import finetune
    kw = {**_toy_results(tmp_path, key_heads=text), "heads": "top-2"}
    with time_limit(20), pytest.raises(ValueError, match=r"key_heads\.json.*" + match):
        finetune.run(Finetune(**kw))


def test_truncated_effects_csv_refused_and_full_one_ranks(tmp_path, no_model_load):
    """Protects: a truncated effects.csv (missing heads, a row cut mid-line) is refused, naming the file,
    instead of silently tuning other heads; a complete one gives key heads first, then the rest by effect
    (reference: sorted here by hand)."""
    from arithmech.table1.finetune import validate_finetune_args
    full = [("all", l, str(h), round(-0.01 * ((5 * (l * 4 + h)) % 8), 3)) for l in range(2) for h in range(4)]
    full += [("all", l, "mlp", 0.1 * l) for l in range(2)]
    kw = {**_toy_results(tmp_path, effects_rows=full), "heads": "top-4", "mlps": 1}
    spec = validate_finetune_args(Finetune(**kw))
    rest = sorted(((e, l, int(h)) for _, l, h, e in full if h != "mlp" and (l, int(h)) != (1, 2)))
    want = [(1, 2)] + [(l, h) for _, l, h in rest][:3]
    assert spec.heads == tuple(sorted(want)) and spec.mlps == (0,)
    csv = tmp_path / "res" / "toy" / "effects.csv"
    lines = csv.read_text().splitlines()
    for text in ["\n".join(lines[:6]) + "\n", "\n".join(lines[:-3] + [lines[-3][:6]]) + "\n"]:
        csv.write_text(text)
        with time_limit(20), pytest.raises(ValueError, match=r"effects\.csv.*truncated"):
            validate_finetune_args(Finetune(**kw))


# ------------------------------------------------------------------------ fuzz: finetune arguments
def test_fuzz_finetune_arguments_accepted_or_refused(tmp_path, no_model_load):
    """Protects: 200 seeded random combinations of fine-tune arguments: each validates to a HeadSpec inside
    the model (or None for full SFT) or is refused with ValueError/FileNotFoundError, within seconds."""
    from arithmech.table1.finetune import validate_finetune_args
    base = _toy_results(tmp_path)
    rng = random.Random(5)
    choices = dict(heads=["top-1", "top-3", "top-0", "top-99", "1.2", "0.0,1.3", "2.0", "1.2.3", "x", "", "top-"],
                   mlps=[0, 1, 2, 3, -1], batch_size=[4, 8, 0, -1, 6], micro_batch_size=[1, 2, 4, 0, 3],
                   lr=[1e-3, 0.0, -1.0, math.inf], max_steps=[-1, 1, 0, -2], epochs=[1.0, 0.0, -1.0],
                   mode=["precise", "full", "lora"], kv_policy=["any", "all", "none", "bad"],
                   limit=[None, 1, 0], benchmarks=[["generic"], ["toy"], ["paper"], ["nope"], []])
    ok = refused = 0
    for _ in range(200):
        kw = {**base, **{k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.4}}
        t0 = time.perf_counter()
        try:
            spec = validate_finetune_args(Finetune(**kw))
            ok += 1
            assert (spec is None) == (kw.get("mode", "precise") == "full")
            assert spec is None or all(0 <= l < 2 and 0 <= h < 4 for l, h in spec.heads)
        except (ValueError, FileNotFoundError):
            refused += 1
        assert time.perf_counter() - t0 < 5
    assert ok >= 20 and refused >= 50, (ok, refused)


def test_a_records_measure_is_the_literal_accuracy_and_wilson_interval_rounded():
    """Protects the fine-tune record's measure, now built on ``evals.measures.accuracy_measure`` (one Wilson
    accuracy for Table 1's records and this step's): the value is the mean of the 0/1 items, the interval the
    Wilson score interval written out here (z = 1.96), both rounded to 4 decimals; n and the items are kept."""
    from arithmech.table1.finetune import scored

    items = {"a": [1, 0, 1, 1, 0, 1, 1], "b": [0] * 5}
    z = 1.96
    for k, v in items.items():
        n, p = len(v), sum(v) / len(v)
        centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        m = scored(items)[k]
        assert m["value"] == round(p, 4) and m["n"] == n and m["items"] == v
        assert m["ci"] == pytest.approx([round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)], abs=1e-4)


def _earlier(**over):
    base = {"generic": {"value": 0.5, "n": 2, "ci": [0.1, 0.9], "items": [1, 0]}}
    rec = {"model": "embedded", "seed": 0, "base": base, "parameters": {"limit": None, "benchmarks": ["generic"]}}
    for k, v in over.items():
        (rec["parameters"] if k == "limit" else rec)[k] = v
    return rec


def test_before_pairs_only_a_record_scored_the_same_way():
    """Protects the paired changes of a run given ``before=``: its base's item scores are paired with this run's by
    position, so an earlier record is taken only when scored with this run's model, seed, limit and benchmarks
    (each difference named, one line); a bare ``base`` (nothing says how its items were drawn) is refused; bare
    accuracies become measures without items (changes without an interval)."""
    from arithmech.table1.finetune import base_from

    c = Finetune(model_name="embedded", benchmarks=("generic",), seed=0)
    assert base_from(_earlier(), c) == _earlier()["base"]
    with pytest.raises(ValueError, match=r"seed 1 \(this run: 0\)"):
        base_from(_earlier(seed=1), c)
    with pytest.raises(ValueError, match=r"limit 50 \(this run: None\)"):
        base_from(_earlier(limit=50), c)
    with pytest.raises(ValueError, match="no base for negative"):
        base_from(_earlier(), c.replace(benchmarks=("generic", "negative")))
    with pytest.raises(ValueError, match="an earlier record of this step"):
        base_from(_earlier()["base"], c)
    assert base_from({"generic": 0.25}, c) == {"generic": {"value": 0.25, "n": None, "ci": None}}


def test_a_refused_before_loads_no_model(monkeypatch, tmp_path):
    """Protects the input contract on ``before=``: a record scored otherwise is refused before any model loads and
    nothing is written."""
    from arithmech.table1 import finetune

    monkeypatch.setattr(finetune, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    c = Finetune(model_name="embedded", mode="full", benchmarks=("generic",), seed=0, results=str(tmp_path / "r"))
    with pytest.raises(ValueError, match="scored otherwise"):
        finetune.run(c, before=_earlier(seed=2))
    assert not (tmp_path / "r").exists()
