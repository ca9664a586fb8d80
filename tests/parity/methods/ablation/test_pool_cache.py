"""Parity tests of ``arithmech/methods/ablation/pool_cache.py``: a cached reference pool is the built one, bit for bit."""
from __future__ import annotations

import torch

from arithmech.data import pairs
from arithmech.methods.ablation import pool_cache
from arithmech.methods.ablation.pool import build_pool, pool_key, pool_prompts


def _pools(tok, tpls):
    """The pool of the tests: 24 X_c per family, seed 0, first answer token."""
    return pool_prompts(tok, tpls, 24, 0, draw=pairs.Draw("first", 0, 1))


KW = dict(min_group=4)


def _same(a, b) -> bool:
    """Every sum, count and size of two pools equal (``torch.equal``: bit for bit)."""
    if a.sizes != b.sizes or a.group.keys() != b.group.keys() or a.family.keys() != b.family.keys():
        return False
    return all(torch.equal(x, y) for k in a.group for x, y in zip(a.group[k], b.group[k])) and \
        all(torch.equal(x, y) for k in a.family for x, y in zip(a.family[k], b.family[k]))


def test_cached_pool_equals_built_pool_and_its_lookups(embedded_model, tmp_path, monkeypatch):
    """Protects the cache's exactness: a miss stores and a hit loads the very sums build_pool computes, so
    every prompt's mean (and so knockout.csv) is the same with or without the cache."""
    model, tok, _ = embedded_model
    monkeypatch.setattr(pool_cache, "CACHE_DIR", tmp_path)
    tpls = pairs.select_templates("addition")
    built = build_pool(model, tok, _pools(tok, tpls), **KW)
    miss = pool_cache.cached_pool(model, tok, _pools(tok, tpls), **KW)
    files = list((tmp_path / "pool").glob("*.pt"))
    assert len(files) == 1 and files[0].stem == miss.digest
    hit = pool_cache.cached_pool(model, tok, _pools(tok, tpls), **KW)
    assert _same(built, miss) and _same(built, hit) and hit.digest == miss.digest
    samples, _ = pairs.make_pairs(tok, "addition", n=12, seed=3, draw=pairs.Draw("first", 0, 1))
    for s in samples:
        seq = len(tok(s.clean)["input_ids"])
        for x, y in zip(built.lookup(pool_key(s), seq), hit.lookup(pool_key(s), seq)):
            assert torch.equal(x, y)
    assert built.describe() == hit.describe()


def test_cache_key_follows_every_input(embedded_model, tmp_path, monkeypatch):
    """Protects against a stale hit: another pool size, batch size, seed or one changed weight is another key;
    the same inputs are the same key."""
    model, tok, _ = embedded_model
    monkeypatch.setattr(pool_cache, "CACHE_DIR", tmp_path)
    tpls = pairs.select_templates("addition")
    pools = lambda **kw: pool_prompts(tok, tpls, kw.get("pool_size", 24), kw.get("seed", 0),
                                      draw=pairs.Draw("first", 0, 1))
    key = lambda bs=64, **kw: pool_cache.pool_digest(model, tok, pools(**kw), 4, 4, bs)
    base = key()
    assert key() == base
    assert len({base, key(pool_size=25), key(seed=1), key(bs=8)}) == 4
    w = model.get_input_embeddings().weight
    old = w[0, 0].item()
    try:
        with torch.no_grad():
            w[0, 0] += 1e-3
        assert key() != base
    finally:
        with torch.no_grad():
            w[0, 0] = old
    assert key() == base


def test_damaged_file_is_rebuilt_and_off_switch_writes_nothing(embedded_model, tmp_path, monkeypatch):
    """Protects the fallbacks: a cache file that does not load is rebuilt (same sums) and replaced;
    ARITHMECH_POOL_CACHE=0 neither reads nor writes the cache."""
    model, tok, _ = embedded_model
    monkeypatch.setattr(pool_cache, "CACHE_DIR", tmp_path)
    tpls = pairs.select_templates("addition")
    monkeypatch.setenv("ARITHMECH_POOL_CACHE", "0")
    off = pool_cache.cached_pool(model, tok, _pools(tok, tpls), **KW)
    assert not (tmp_path / "pool").exists()
    monkeypatch.delenv("ARITHMECH_POOL_CACHE")
    path = tmp_path / "pool" / f"{off.digest}.pt"
    path.parent.mkdir()
    path.write_bytes(b"not a torch file")
    again = pool_cache.cached_pool(model, tok, _pools(tok, tpls), **KW)
    assert _same(off, again) and torch.load(path, weights_only=True)["folds"] == 4
