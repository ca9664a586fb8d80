"""The key-head stability experiment (arithmech.steps.stability): nested sizes, Jaccard table, verdicts,
byte-identical files."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from factories import make_tiny_llama

from arithmech.identify.result import STABILITY_FILES as FILENAMES
from arithmech.steps import stability


@pytest.fixture(scope="module")
def word_llama(embedded_tokenizer):
    """A random 3-layer Llama (4 heads) over the embedded model's word-level tokenizer."""
    return make_tiny_llama(n_layers=3, vocab=len(embedded_tokenizer), seed=2), embedded_tokenizer


def _small(model, tok, families=True, **kw):
    """Seeds 0 and 1, sizes 4 and 8, every drawn pair kept (the random model answers nothing right)."""
    config = stability.Config(**{**dict(task="addition", seed=0, seeds=2, sizes=(4, 8), top=3, n_boot=200), **kw})
    return stability.stability(model, tok, config, families=families, keep_correct=False)


def test_same_seed_gives_byte_identical_stability_files(word_llama, tmp_path):
    """Protects determinism: two runs with the same arguments write byte-identical stability.csv,
    stability_runs.csv and stability_heads.csv (a random tiny model, every drawn pair kept), and the files
    read back through the results contract."""
    model, tok = word_llama
    for name in ("a", "b"):
        res = _small(model, tok)
        stability.write_results(res, tmp_path / name)
    for f in FILENAMES:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    config = stability.Config(task="addition", seeds=2, sizes=(4, 8), top=3, n_boot=200)
    back = stability.read(tmp_path / "a", config)
    assert isinstance(back, stability.Result) and back.config == config
    assert set(back.table.comparison) == {"size_vs_largest", "between_seeds", "between_kinds", "between_families"}
    assert len(back.heads) == 2 * 3 * 4                       # both kinds × every head
    assert back.heads["name"].str.fullmatch(r"\d+\.\d+").all()   # "2.0" stays head 0 of layer 2, not 2.0
    assert back.record["parameters"]["sizes"] == [4, 8]
    for name in ("table", "runs", "heads"):                  # the Result holds what the run wrote
        wrote = getattr(res, name)
        empty = {c: "" for c in wrote if not pd.api.types.is_numeric_dtype(wrote[c])}  # empty set: empty csv cell
        pd.testing.assert_frame_equal(getattr(back, name).fillna(empty), wrote, obj=name)


def test_a_smaller_size_is_the_prefix_of_the_largest_draw(word_llama):
    """Protects the cheap design (patch the largest size once, take nested prefixes): the size-4 runs of a
    (4, 8) experiment equal the runs of an experiment that draws and patches only 4 pairs (same key and top
    sets, same number of prompts), for both counterfactuals and both seeds."""
    model, tok = word_llama
    nested = _small(model, tok, families=False).runs
    alone = _small(model, tok, sizes=(4,), families=False).runs
    cols = ["kind", "seed", "size", "n", "key", "top"]
    pd.testing.assert_frame_equal(nested[nested["size"] == 4][cols].reset_index(drop=True), alone[cols])
    assert all(list(g) == [4, 8] for _, g in nested.groupby(["kind", "seed"])["size"])


def test_jaccard_table_against_hand_computed_overlaps():
    """Protects the comparisons: Jaccard |A∩B|/|A∪B| against the stated reference (largest size of the same
    seed; every pair of seeds; operator vs operand; family pairs), NaN when both sets are empty, and the
    counts beside it (hand-computed from the sets below)."""
    runs = pd.DataFrame([
        dict(kind="operator", seed=0, size=4, family="all", n=4, key="0.1 1.2", top="0.1 1.2 2.0"),
        dict(kind="operator", seed=0, size=8, family="all", n=8, key="0.1", top="0.1 1.2 2.3"),
        dict(kind="operator", seed=1, size=4, family="all", n=3, key="", top="0.1 0.2 2.0"),
        dict(kind="operator", seed=1, size=8, family="all", n=7, key="", top="0.1 1.2 2.0"),
        dict(kind="operator", seed=0, size=8, family="qa", n=3, key="", top="0.1 1.2 2.0"),
        dict(kind="operator", seed=0, size=8, family="equation", n=5, key="", top="3.3 1.2 2.0")])
    t = stability.compare(runs, [0, 1], [4, 8], ["operator"], top=3)
    row = lambda **k: t.loc[(t[list(k)] == pd.Series(k)).all(axis=1)].iloc[0]
    r = row(comparison="size_vs_largest", set="key", seed=0)
    assert r.jaccard == 0.5 and (r.n_a, r.n_b, r.n_shared) == (2, 1, 1) and r.ref_size == 8
    assert row(comparison="size_vs_largest", set="top3", seed=0).jaccard == 0.5
    assert math.isnan(row(comparison="size_vs_largest", set="key", seed=1).jaccard)
    assert row(comparison="between_seeds", set="top3", size=4).jaccard == pytest.approx(2 / 4)
    assert row(comparison="between_seeds", set="key", size=8).jaccard == 0.0
    assert row(comparison="between_families", set="top3").jaccard == pytest.approx(2 / 4)
    assert "between_kinds" not in set(t.comparison)                  # one kind: nothing to compare
    assert stability.jaccard(set(), set()) != stability.jaccard(set(), set())       # NaN


def test_verdicts_follow_the_stated_rule():
    """Protects the findings' rule: holds when the mean Jaccard is >= 0.8 and none is below 0.5, does not
    hold when the mean is below 0.5, inconclusive in between or when every pair's sets are empty."""
    base = dict(set="key", kind="operator", size=8, family="all", prompts_a=8)
    t = pd.DataFrame([{**base, "comparison": "between_seeds", "jaccard": j} for j in (1.0, 0.8, 0.7)]
                     + [{**base, "comparison": "between_kinds", "jaccard": j} for j in (0.2, 0.6)]
                     + [{**base, "comparison": "between_families", "jaccard": j} for j in (1.0, 0.4)]
                     + [{**base, "comparison": "size_vs_largest", "size": 4, "jaccard": float("nan")}])
    c = stability.claims(t, pd.DataFrame({"size": [4, 8]})).set_index("claim").holds      # one kind: one row per claim
    assert c.filter(like="seeds").item() is True and c.filter(like="counterfactuals").item() is False
    assert c.filter(like="family").item() is None and c.filter(like="smallest").item() is None
