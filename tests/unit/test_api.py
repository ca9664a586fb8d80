"""The public API (arithmech/api.py, exported by arithmech/__init__.py) against the library functions it wraps and
against literal references written here, on the embedded model."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import arithmech
from arithmech import api
from arithmech.data.batches import answer_ids as sample_answer_ids
from arithmech.data.draw import Draw
from arithmech.data.pairs import make_pairs, select_templates
from arithmech.evals.scoring import predict
from arithmech.finetune.data import tokenize_pairs
from arithmech.methods import patching
from arithmech.methods.ablation import knockout
from arithmech.methods.effects import effects_frame

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kept(embedded_model):
    """X_r / X_c pairs of the addition templates that the embedded model answers right."""
    model, tok, _ = embedded_model
    return api.keep_correct(model, tok, api.pairs(tok, "addition", n=48, seed=0))


def test_the_package_exports_the_api_lazily():
    """Protects the front door: every name of ``arithmech.__all__`` resolves to a documented object, and importing
    the package (and naming ``__all__``) imports no torch, so ``python -m arithmech`` checks its arguments first."""
    for name in arithmech.__all__:
        obj = getattr(arithmech, name)
        assert (obj.__doc__ or "").strip(), name
    code = "import sys, arithmech; arithmech.__all__; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    with pytest.raises(AttributeError):
        arithmech.no_such_name  # noqa: B018


def test_pairs_and_keep_correct_give_right_answered_pairs(embedded_model, kept):
    """Protects ``pairs`` / ``keep_correct``: X_r and X_c have one token length, the model's top-1 after each kept
    X_r is its answer token and after its X_c another token, and the text answers give the ids the library's
    ``answer_ids`` gives the samples."""
    model, tok, _ = embedded_model
    assert len(kept) >= 10
    assert all(len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"]) for s in kept)
    gold = sample_answer_ids(tok, kept)
    assert torch.equal(api.answer_ids(tok, [s.clean for s in kept], [s.answer for s in kept]), gold)
    assert torch.equal(predict(model, tok, [s.clean for s in kept])[:, 0], gold)
    assert not (predict(model, tok, [s.corrupt for s in kept])[:, 0] == gold).any()
    with pytest.raises(ValueError, match="answer_token"):
        api.pairs(tok, answer_token="last")


def test_path_patch_is_the_library_effect_and_the_literal_reference(embedded_model, kept):
    """Protects ``path_patch``: its effects are the mean relative changes the library's patching gives (the
    ``effect`` column identify writes), the literal hooked reference (``method="reference"``) gives the same within
    1e-4, and patching X_r with itself changes nothing (every effect 0 within 1e-6)."""
    model, tok, geo = embedded_model
    clean, corrupt, ans = [s.clean for s in kept], [s.corrupt for s in kept], [s.answer for s in kept]
    fx = api.path_patch(model, tok, clean, corrupt, ans)
    assert len(fx) == geo.n_layers * (geo.n_heads + 1) and set(fx.kind) == {"head", "mlp"}
    lib = effects_frame(patching.path_patch(model, tok, clean, corrupt, sample_answer_ids(tok, kept)), "addition",
                        n_boot=10)
    assert fx.effect.tolist() == pytest.approx(lib.effect.tolist(), abs=1e-7)
    assert fx.share.tolist() == pytest.approx(lib.share.tolist(), abs=1e-7)
    assert fx.effect.min() < -0.05                       # something to find: a real effect, not a flat zero
    ref = api.path_patch(model, tok, clean[:8], corrupt[:8], ans[:8], method="reference")
    fast = api.path_patch(model, tok, clean[:8], corrupt[:8], ans[:8])
    assert ref.effect.tolist() == pytest.approx(fast.effect.tolist(), abs=1e-4)
    same = api.path_patch(model, tok, clean[:8], clean[:8], ans[:8])
    assert same.effect.abs().max() < 1e-6
    row = fx.iloc[geo.n_heads]                            # layer 0's MLP follows its heads
    assert (row["component"], row["kind"], row["head"]) == ("MLP 0", "mlp", -1)


def _literal_knockout(model, tok, prompts, heads, gold, means_from) -> float:
    """Accuracy with each head's o_proj input at END replaced by its mean over the ``means_from`` prompts of the
    same token length at their END: plain forward pre-hooks, one prompt at a time."""
    dh, n_layers = model.config.hidden_size // model.config.num_attention_heads, model.config.num_hidden_layers
    grab: dict = {}
    hooks = [model.model.layers[l].self_attn.o_proj.register_forward_pre_hook(
        lambda m, a, l=l: grab.__setitem__(l, a[0][0, -1].clone())) for l in range(n_layers)]
    ends: dict = {}
    with torch.no_grad():
        for p in means_from:
            ids = tok(p, return_tensors="pt")["input_ids"]
            model(ids)
            ends.setdefault(ids.shape[1], []).append(torch.stack([grab[l] for l in range(n_layers)]))
    for h in hooks:
        h.remove()
    mean = {n: torch.stack(v).mean(0) for n, v in ends.items()}
    right = 0
    for p, g in zip(prompts, gold):
        ids = tok(p, return_tensors="pt")["input_ids"]

        def edit(m, a, l, mu=mean[ids.shape[1]]):
            x = a[0].clone()
            for hl, hh in heads:
                if hl == l:
                    x[0, -1, hh * dh:(hh + 1) * dh] = mu[l, hh * dh:(hh + 1) * dh]
            return (x,)

        hooks = [model.model.layers[l].self_attn.o_proj.register_forward_pre_hook(
            lambda m, a, l=l, e=edit: e(m, a, l)) for l in range(n_layers)]
        with torch.no_grad():
            right += int(model(ids).logits[0, -1].argmax() == g)
        for h in hooks:
            h.remove()
    return right / len(prompts)


def test_knockout_is_the_literal_mean_ablation_and_the_library_accuracy(embedded_model, kept):
    """Protects ``knockout``: with no head it is the intact model's accuracy (1 on pairs it answers right); with the
    three heads of largest effect it is the accuracy of a literal mean ablation written here with plain hooks, and
    the library's ``knockout.accuracy`` with per-template means gives the same on one template's prompts; the heads
    matter (the accuracy drops)."""
    model, tok, _ = embedded_model
    template = select_templates("addition")[0]
    one = api.keep_correct(model, tok, make_pairs(tok, [template], 16, 0, draw=Draw("last-digit", 0, 1))[0])
    assert len(one) >= 4
    clean, corrupt, ans = [s.clean for s in one], [s.corrupt for s in one], [s.answer for s in one]
    assert api.knockout(model, tok, clean, [], answers=ans, means_from=corrupt) == 1.0
    fx = api.path_patch(model, tok, [s.clean for s in kept], [s.corrupt for s in kept], [s.answer for s in kept])
    top = fx[fx.kind == "head"].nsmallest(3, "effect")
    heads = list(zip(top["layer"].tolist(), top["head"].tolist()))
    got = api.knockout(model, tok, clean, heads, answers=ans, means_from=corrupt)
    gold = sample_answer_ids(tok, one)
    assert got == pytest.approx(_literal_knockout(model, tok, clean, heads, gold, corrupt), abs=1e-9)
    means = knockout.mean_activations(model, tok, corrupt, [knockout.group_key(s) for s in one])
    lib = knockout.accuracy(model, tok, one, means, [knockout.Ablation.of(heads)])
    assert got == pytest.approx(float(lib[0]), abs=1e-6)      # the library averages in float32
    assert got < 1.0
    pooled = api.knockout(model, tok, clean, heads, answers=ans, means_from=corrupt[:1] + ["7 plus"])
    assert 0.0 <= pooled <= 1.0                            # lengths the means lack: the position-pooled means


def test_attention_roles_sum_the_literal_attention_row(embedded_model, kept):
    """Protects ``attention_roles``: each head's mass on A, B and the operator is the mean over samples of the
    attention weights (eager, ``output_attentions``) the last position puts on those tokens, the five roles sum
    to 1, and ``heads`` selects exactly those rows."""
    model, tok, geo = embedded_model
    xs = kept[:12]
    heads = [(2, 3), (4, 0)]
    roles = api.attention_roles(model, tok, xs, heads)
    assert list(zip(roles["layer"], roles["head"])) == heads
    assert (roles[["A", "B", "operator", "bos", "other"]].sum(axis=1) - 1).abs().max() < 1e-5
    want = {(l, h): {"A": 0.0, "B": 0.0, "operator": 0.0} for l, h in heads}
    with torch.no_grad():
        for s in xs:
            att = model(**tok(s.clean, return_tensors="pt"), output_attentions=True).attentions
            for l, h in heads:
                row = att[l][0, h, -1]
                for role in want[(l, h)]:
                    pos = s.positions[role]
                    want[(l, h)][role] += float(row[pos if isinstance(pos, list) else [pos]].sum()) / len(xs)
    for _, r in roles.iterrows():
        for role, v in want[(r["layer"], r["head"])].items():
            assert r[role] == pytest.approx(v, abs=1e-5), (r["component"], role)
    assert set(roles.reads) <= {"operand", "operator", "rest"}
    assert len(api.attention_roles(model, tok, xs[:2])) == geo.n_layers * geo.n_heads


def test_precise_sft_trains_only_the_heads_slices_and_lowers_the_loss(embedded_model, kept):
    """Protects ``precise_sft``: after a few steps on the pairs' whole answers, the rows of W_Q/W_K/W_V and the
    columns of W_O of the selected heads changed and every other weight is byte for byte the loaded one; the
    completion loss on those pairs went down; the returned model is the one given, merged (plain Linear modules)
    and in eval mode."""
    model0, tok, geo = embedded_model
    model = copy.deepcopy(model0)
    data = api.sft_pairs(kept[:16])
    assert all((p + c).startswith(s.clean) and (p + c).endswith(s.target) for (p, c), s in zip(data, kept))
    heads = [(3, 1), (4, 6)]
    before = api.completion_loss(model, tok, data, batch_size=5)
    out = api.precise_sft(model, tok, data, heads, lr=3e-3, steps=8, batch_size=8)
    assert out is model and not out.training
    assert api.completion_loss(out, tok, data) < before
    dh = geo.head_dim
    b0, a0 = dict(model0.named_parameters()), dict(out.named_parameters())
    assert set(b0) == set(a0)                             # merged: the same parameter names as loaded
    changed = {k for k in b0 if not torch.equal(b0[k], a0[k])}
    for l, _ in heads:
        for proj in ("q_proj", "o_proj"):
            assert f"model.layers.{l}.self_attn.{proj}.weight" in changed
    assert changed <= {f"model.layers.{l}.self_attn.{p}.weight" for l, _ in heads
                       for p in ("q_proj", "k_proj", "v_proj", "o_proj")}
    for l, h in heads:                                    # inside a changed tensor, only the head's slice moved
        q0, q1 = b0[f"model.layers.{l}.self_attn.q_proj.weight"], a0[f"model.layers.{l}.self_attn.q_proj.weight"]
        keep = torch.ones(q0.shape[0], dtype=torch.bool)
        keep[h * dh:(h + 1) * dh] = False
        assert torch.equal(q0[keep], q1[keep]) and not torch.equal(q0[~keep], q1[~keep])
        o0, o1 = b0[f"model.layers.{l}.self_attn.o_proj.weight"], a0[f"model.layers.{l}.self_attn.o_proj.weight"]
        assert torch.equal(o0[:, keep], o1[:, keep])
    with pytest.raises(ValueError, match="outside the model"):
        api.precise_sft(copy.deepcopy(model0), tok, data, [(geo.n_layers, 0)], steps=1)


def test_completion_loss_is_the_mean_over_completion_tokens(embedded_model, kept):
    """Protects ``completion_loss``: it is the mean of −log p(token) over every completion token (and EOS) of every
    pair, computed here one pair at a time with a log-softmax, whatever the batch size (rows of unequal length
    padded together); the prompt's tokens are not scored."""
    model, tok, _ = embedded_model
    data = api.sft_pairs(kept[:7])
    nll, n = 0.0, 0
    with torch.no_grad():
        for row in tokenize_pairs(tok, data):
            ids, labels = torch.tensor([row["input_ids"]]), torch.tensor(row["labels"])
            logp = model(ids).logits[0, :-1].log_softmax(-1)
            scored = labels[1:] != -100
            nll -= float(logp[scored].gather(-1, labels[1:][scored, None]).sum())
            n += int(scored.sum())
            assert 0 < int(scored.sum()) < len(row["input_ids"]) - 1
    for b in (1, 3, 16):
        assert api.completion_loss(model, tok, data, batch_size=b) == pytest.approx(nll / n, rel=1e-5)
