"""Training the planted model (arithmech.embedded.planted_train): determinism, the construction kept through training
and the float16 file, the model card and the record of other seeds (tiny sizes)."""

from __future__ import annotations

import torch

from arithmech.embedded import planted_train, planted_truth

TINY = dict(d_model=32, d_ff=32, max_len=64)


def test_training_is_deterministic_and_keeps_the_construction(tmp_path):
    """Protects the command: one seed gives byte-identical weights, the fixed entries survive training and the
    float16 file, and another seed's run can be recorded in the card."""
    from safetensors.torch import load_file

    kw = dict(steps=2, batch_size=4, seed=5, log_every=0, size=TINY, eval_n=1, threads=1)
    a, _ = planted_train.train(tmp_path / "a", **kw)
    b, _ = planted_train.train(tmp_path / "b", **kw)
    assert a is not None and b is not None
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    from arithmech.core.models import load_model

    model, tok, _ = load_model(str(a))
    assert planted_truth.fixed_deviation(model, tok) == 0.0
    assert (a / "README.md").read_text().startswith("# arithmech planted model")
    planted_train.add_seeds(a, [b])  # another seed's run recorded in the card (here the same seed: the numbers are equal)
    assert "- seed 5 (" in (a / "README.md").read_text()
