"""The embedded arithmetic model's training (arithmech.embedded.train): tokenizer, corpus, determinism and the
``train-embedded --out`` folder checks (no shipped-model forward).

The shipped model's accuracy is checked in ``integration/test_embedded_model.py``."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
import torch

from arithmech.embedded import train


def test_training_is_deterministic(tmp_path):
    """Protects: the training command is seeded: the same seed gives bit-identical weights."""
    size = dict(n_layers=1, n_heads=2, d_model=16, d_ff=32, max_len=64)
    a = train.train(tmp_path / "a", steps=3, batch_size=4, seed=5, log_every=0, size=size, eval_per_template=1)
    b = train.train(tmp_path / "b", steps=3, batch_size=4, seed=5, log_every=0, size=size, eval_per_template=1)
    from safetensors.torch import load_file
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_tokenizer_splits_digits_and_knows_every_word():
    """Protects: every digit is its own token and no training sentence hits <unk>."""
    tok = train.build_tokenizer()
    assert tok.convert_ids_to_tokens(tok("1723")["input_ids"]) == ["<s>", "1", "7", "2", "3"]
    for text in train.corpus(random.Random(0), 300):
        assert tok.unk_token_id not in tok(text)["input_ids"], text


def test_embedded_training_corpus_unchanged():
    """Protects reproducible retraining: dropping ^ & | ~ from the neutral symbols leaves the embedded model's
    training corpus byte-identical to the one the shipped weights were trained on (digest of the held-out
    retraining's corpus, taken on its branch before the neutral-symbol change was merged)."""
    from arithmech.embedded import train
    blob = "\n".join(train.corpus(random.Random(0), 3000)).encode()
    assert hashlib.sha256(blob).hexdigest()[:16] == "855168a5f5c225a3"


# ---------------------------------------------------------------------------- train-embedded --out
TINY = dict(n_layers=1, n_heads=2, d_model=16, d_ff=32, max_len=64)


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_train_out_refuses_a_folder_it_did_not_write(tmp_path, monkeypatch):
    """Protects: `train-embedded --out DIR` no longer deletes DIR: a folder holding anything, a file, and the
    current folder (`--out .`) are refused before training starts, and every byte in them stays."""
    from arithmech.embedded import train
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "notes.txt").write_text("my thesis")
    (out / "sub" / "data.bin").write_bytes(b"\x00\x01")
    before = _snapshot(out)
    monkeypatch.setattr(train, "corpus", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(ValueError, match="already holds files.*--overwrite"):
        train.train(out, steps=1, batch_size=2, log_every=0, size=TINY, eval_per_template=1)
    assert _snapshot(out) == before
    with pytest.raises(ValueError, match="is a file"):
        train.check_train_out(out / "notes.txt", overwrite=True)
    with pytest.raises(ValueError, match="is a file"):
        train.check_train_out(out / "notes.txt" / "model", overwrite=True)
    monkeypatch.chdir(out)
    with pytest.raises(ValueError, match="already holds files"):
        train.check_train_out(".", overwrite=False)
    assert train.check_train_out(tmp_path / "new" / "model") == tmp_path / "new" / "model"
    (tmp_path / "empty").mkdir()
    assert train.check_train_out(tmp_path / "empty") == tmp_path / "empty"
    from arithmech.core.names import EMBEDDED_DIR
    assert train.check_train_out(None) == EMBEDDED_DIR          # the package's own folder: its files only


def test_train_overwrite_replaces_only_its_own_files(tmp_path):
    """Protects: with overwrite, training replaces the files it writes (a stale config.json) and leaves
    every other file as it was; no temporary folder is left beside the output."""
    from arithmech.embedded import train
    out = tmp_path / "model"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "config.json").write_text("stale")
    train.train(out, steps=1, batch_size=2, log_every=0, size=TINY, eval_per_template=1, overwrite=True)
    assert (out / "notes.txt").read_text() == "keep me"
    assert json.loads((out / "config.json").read_text())["model_type"] == "llama"
    assert {"model.safetensors", "tokenizer.json", "accuracy.json", "README.md"} <= {p.name for p in out.iterdir()}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
