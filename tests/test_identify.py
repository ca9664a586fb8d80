"""The identify step: exact path patching (fast == reference), knockout invariants, results files, errors."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
import torch

from arithmech.data import pairs as D
from arithmech.cli import main
from arithmech.embedded.train import build_tokenizer
from arithmech.methods.knockout import Ablation, accuracy, knockout_curve, knockout_topk, mean_activations, overlap
from arithmech.core.models import load_model
from arithmech.methods.patching import Patched, check_logit_o, end_cache, path_patch, path_patch_fast, path_patch_reference


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def embedded():
    model, tok, geo = load_model("embedded")
    return model, tok, geo


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def gqa_llama(vocab: int, seed: int = 0):
    """Random Llama with GQA (4 query heads on 2 kv heads), head_dim 12 != 40 / 4, and every bias on
    (o_proj bias included), so the fast path's bias and GQA handling is exercised."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=40, intermediate_size=80, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=12, max_position_embeddings=64,
                      attention_bias=True, mlp_bias=True)
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).eval().requires_grad_(False)
    with torch.no_grad():                       # non-zero biases (they are initialised to 0)
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return model


def pairs(tok, n: int, seed: int = 0):
    samples, _ = D.make_pairs(tok, "all", n=n, seed=seed)
    return samples, [s.clean for s in samples], [s.corrupt for s in samples], D.answer_ids(tok, samples)


def both(model, tok, clean, corrupt, ans):
    c, x = end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt)
    return path_patch_fast(model, c, x, ans, prob=True), path_patch_reference(model, tok, clean, c, x, ans, prob=True)


def test_fast_equals_reference_on_embedded_model(embedded):
    """Protects: the fast END-residual path patching gives the same patched logits, logsumexp (to fp32
    relative precision) and relative effects (to 1e-5) as one hooked forward per component
    (Algorithm 1) on the embedded model."""
    model, tok, _ = embedded
    samples, clean, corrupt, ans = pairs(tok, 6)
    kept, _ = D.filter_correct(model, tok, samples)
    assert len(kept) >= 4, "the embedded model should answer most Fig. 8/10 prompts"
    fast, ref = both(model, tok, clean, corrupt, ans)
    scale = ref.logit_p.abs().clamp(min=1)                          # trained logits are ~14: fp32 relative error
    assert ((fast.logit_p - ref.logit_p).abs() / scale).max() <= 1e-5
    assert ((fast.lse_p - ref.lse_p).abs() / ref.lse_p.abs().clamp(min=1)).max() <= 1e-5
    assert ((fast.logit_o - ref.logit_o).abs() / scale[..., 0]).max() <= 1e-5   # baseline chain == model logit
    rows = torch.tensor([s in kept for s in samples])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff_f, eff_r = fast.select(rows).relative_change(), ref.select(rows).relative_change()
    assert (eff_f - eff_r).abs().max() <= 1e-5
    assert eff_f.abs().max() > 1e-3                                   # something was patched at all


def test_fast_equals_reference_on_gqa_model_with_biases(tok):
    """Protects: exactness under GQA, head_dim != d_model / n_heads and an o_proj (and MLP) bias."""
    model = gqa_llama(len(tok))
    _, clean, corrupt, ans = pairs(tok, 5, seed=1)
    fast, ref = both(model, tok, clean, corrupt, ans)
    assert fast.logit_p.shape == (5, 3, 5)
    assert (fast.logit_p - ref.logit_p).abs().max() <= 1e-5
    assert (fast.lse_p - ref.lse_p).abs().max() <= 1e-5
    assert (fast.logit_p - fast.logit_o[..., None]).abs().max() > 1e-4


def test_clean_to_clean_patching_is_exactly_zero(tok):
    """Protects: patching X_r with itself changes nothing, bit for bit, in both implementations."""
    model = gqa_llama(len(tok), seed=2)
    _, clean, _, ans = pairs(tok, 4, seed=2)
    for method in ("fast", "reference"):
        p = path_patch(model, tok, clean, clean, ans, method=method, prob=True)
        assert torch.equal(p.logit_diff(), torch.zeros_like(p.logit_diff())), method
        assert torch.equal(p.prob(), p.prob_o()[..., None].expand_as(p.prob())), method


def test_component_without_output_weights_has_zero_effect(tok):
    """Protects: the sender's change reaches the logits only through its own W_O block (a head whose
    W_O block is zero) or its own output (an MLP whose down_proj is zero): effect exactly 0."""
    model = gqa_llama(len(tok), seed=3)
    with torch.no_grad():
        model.model.layers[1].self_attn.o_proj.weight[:, 2 * 12:3 * 12] = 0
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.model.layers[0].mlp.down_proj.bias.zero_()
    _, clean, corrupt, ans = pairs(tok, 4, seed=3)
    for method in ("fast", "reference"):
        d = path_patch(model, tok, clean, corrupt, ans, method=method).logit_diff()
        assert torch.equal(d[:, 1, 2], torch.zeros(4)) and torch.equal(d[:, 0, 4], torch.zeros(4)), method
        assert d[:, 1, [0, 1, 3]].abs().max() > 0, method


def test_unstable_relative_change_warns_with_count():
    """Protects: samples with logit_o near 0 or negative are detected and counted in the warning."""
    o = torch.tensor([5.0, 0.001, -2.0, 4.0])
    with pytest.warns(UserWarning, match="unstable for 2 of 4 samples: 1 .* and 1 have logit_o <= 0"):
        assert check_logit_o(o, torch.ones(4)) == 2
    p = Patched(torch.ones(4, 1, 2), o[:, None], o, torch.ones(4))
    with pytest.warns(UserWarning):
        p.relative_change()


def test_knockout_with_k0_equals_plain_accuracy(embedded):
    """Protects: the batched knockout forward with nothing ablated reproduces the model's own top-1
    accuracy (data.predict, an independent path) on unfiltered prompts."""
    model, tok, _ = embedded
    samples, _, _, ans = pairs(tok, 24, seed=4)
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    base = (D.predict(model, tok, [s.clean for s in samples])[:, 0] == ans).float().mean()
    curve = knockout_curve(model, tok, samples, means, [(5, 0), (4, 1)], [0, 1, 2],
                           [(l, h) for l in range(6) for h in range(8)], n_random=2)
    assert (curve.loc[curve.k == 0, "accuracy"] == float(base)).all()
    assert set(curve.order) == {"effect-rank", "random-rank"} and len(curve) == 9


def end_ablation_reference(model, tok, samples, means, ab: Ablation) -> torch.Tensor:
    """Independent reference for ``positions="end"``: one full forward per prompt, hooks that overwrite
    only the last position's ablated head slices / MLP outputs with the X_c means. ``(n, V)`` probs."""
    from arithmech.core.trace import TraceDict
    H, L = model.config.num_attention_heads, model.config.num_hidden_layers
    out = []
    for s in samples:
        ids = torch.tensor([tok(s.clean)["input_ids"]])
        z, m = means.lookup(s.template, ids.shape[1])                   # (L, seq, H*dh), (L, seq, d)

        def edit_z(x, name):
            l = int(name.split(".")[2])
            x = x.clone()
            for (ll, h) in ab.heads:
                if ll == l:
                    dh = x.shape[-1] // H
                    x[:, -1, h * dh:(h + 1) * dh] = z[l, -1, h * dh:(h + 1) * dh]
            return x

        def edit_m(y, name):
            l = int(name.split(".")[2])
            if l in ab.mlps:
                y = y.clone()
                y[:, -1] = m[l, -1]
            return y

        with torch.no_grad(), \
                TraceDict(model, [f"model.layers.{l}.self_attn.o_proj" for l in range(L)], edit_input=edit_z), \
                TraceDict(model, [f"model.layers.{l}.mlp" for l in range(L)], edit_output=edit_m):
            out.append(model(ids).logits[0, -1].softmax(-1))
    return torch.stack(out)


@pytest.mark.parametrize("which", ["embedded", "gqa"])
def test_end_knockout_on_prefix_cache_equals_full_forward_reference(which, embedded, tok):
    """Protects the fast END knockout: replaying only the END token on the clean prefix's key/value
    cache (many ablations batched, duplicates run once) gives the probabilities of a full forward that
    ablates heads and MLPs at the last position, on the embedded model and on a random GQA Llama with
    biases; on the embedded model ``positions="all"`` differs from it."""
    model, tok_ = (embedded[0], embedded[1]) if which == "embedded" else (gqa_llama(len(tok)), tok)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    samples = pairs(tok_, 10, seed=6)[0]
    means = mean_activations(model, tok_, [s.corrupt for s in samples], [s.template for s in samples])
    abls = [Ablation(), Ablation.of(heads=[(L - 1, 0), (0, H - 1)]), Ablation.of(mlps=[0]),
            Ablation.of(heads=[(l, 1) for l in range(L)], mlps=[L - 1]), Ablation()]
    ids, p = knockout_topk(model, tok_, [s.clean for s in samples], [s.template for s in samples], means, abls,
                           k=3, max_rows=16)                                  # several chunks per length group
    for a, ab in enumerate(abls):
        ref = end_ablation_reference(model, tok_, samples, means, ab)
        torch.testing.assert_close(p[a], ref.topk(3, -1).values, atol=1e-5, rtol=1e-4)
        assert torch.equal(ids[a, :, 0], ref.argmax(-1))
    assert torch.equal(p[0], p[-1])
    if which == "gqa":
        return                                     # (a random model's near-uniform probabilities barely move)
    _, p_all = knockout_topk(model, tok_, [s.clean for s in samples], [s.template for s in samples], means,
                             abls[1:2], k=3, positions="all")
    assert (p_all[0] - p[1]).abs().max() > 1e-4


def test_full_vocabulary_logits_are_bounded_per_call(tok):
    """Protects the memory bound of the fast path's P({C}): the unembedding never sees more than
    ``max_logits`` rows × vocabulary at once (whole samples: one sample's ``L * (H + 2)`` rows when
    fewer fit), and the chunked logsumexp equals the one-shot one."""
    model = gqa_llama(len(tok), seed=5)
    _, clean, corrupt, ans = pairs(tok, 5, seed=5)
    c, x = end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt)
    cols = 3 * (4 + 2)                                                 # rows per sample: L * (H + 2)
    one_shot = path_patch_fast(model, c, x, ans, prob=True, max_logits=1 << 30)
    for budget, most in ((2 * cols * len(tok), 2), (cols * len(tok) // 3, 1)):
        seen = []
        hook = model.lm_head.register_forward_hook(lambda m, a, y: seen.append(y.shape[:-1].numel()))
        try:
            chunked = path_patch_fast(model, c, x, ans, prob=True, max_logits=budget)
        finally:
            hook.remove()
        assert max(seen) == most * cols and sum(seen) == 5 * cols, (budget, seen)
        torch.testing.assert_close(chunked.lse_p, one_shot.lse_p, rtol=1e-6, atol=1e-6)
        assert torch.equal(chunked.logit_p, one_shot.logit_p)


def test_knockout_forwards_stay_within_the_token_budget(embedded):
    """Protects the knockout's memory bound: every END replay runs at most ``max_tokens`` rows × tokens
    (its repeated prefix key/value cache) unless a single ablation of the length group is already
    larger, and the results equal those of one big chunk."""
    model, tok, _ = embedded
    samples = pairs(tok, 12, seed=7)[0]
    means = mean_activations(model, tok, [s.corrupt for s in samples], [s.template for s in samples])
    abls = [Ablation.of(heads=[(l, h)]) for l in range(3) for h in range(4)] + [Ablation.of(mlps=[1])]
    args = (model, tok, [s.clean for s in samples], [s.template for s in samples], means, abls)
    big_ids, big_p = knockout_topk(*args, k=2, max_rows=10_000, max_tokens=1 << 20)
    seen = []                                                         # (rows, prefix length) per END replay
    hook = model.register_forward_pre_hook(lambda m, a, kw: seen.append(
        ((a[0] if a else kw["input_ids"]).shape[0], kw["past_key_values"].get_seq_length()))
        if kw.get("past_key_values") is not None else None, with_kwargs=True)
    try:
        ids, p = knockout_topk(*args, k=2, max_tokens=60)
    finally:
        hook.remove()
    b = {}                                                            # prompts per token length
    for s in samples:
        n = len(tok(s.clean)["input_ids"])
        b[n] = b.get(n, 0) + 1
    assert len(seen) > len(b)                                         # the budget split the groups
    assert all(rows * (prefix + 1) <= 60 or rows == b[prefix + 1] for rows, prefix in seen), seen
    assert any(rows > b[prefix + 1] for rows, prefix in seen)        # and still batched ablations
    assert torch.equal(ids, big_ids)
    torch.testing.assert_close(p, big_p, rtol=1e-5, atol=1e-6)


def test_mean_ablation_with_own_clean_mean_is_a_no_op(embedded):
    """Protects: knockout replaces exactly the ablated activations: with means taken from the very
    prompt (one sample), knocking out every head and MLP leaves its predictions unchanged, while the
    X_c means of the same heads change them."""
    model, tok, geo = embedded
    s = pairs(tok, 3, seed=5)[0]
    every = Ablation.of(heads=[(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)],
                        mlps=range(geo.n_layers))
    own = mean_activations(model, tok, [s[0].clean], [s[0].template])
    ids, p = knockout_topk(model, tok, [s[0].clean], [s[0].template], own, [Ablation(), every], k=5)
    assert torch.equal(ids[0], ids[1])
    torch.testing.assert_close(p[0], p[1], atol=1e-5, rtol=1e-4)
    cf = mean_activations(model, tok, [x.corrupt for x in s], [x.template for x in s])
    acc = accuracy(model, tok, s, cf, [Ablation(), every])
    assert acc[0] > 0 and acc[1] < acc[0]


def test_overlap_sets():
    """Protects: Table 4's shared / run-specific split of two ranked head lists (top-k cut first)."""
    ov = overlap([(1, 1), (2, 2), (3, 3), (4, 4)], [(2, 2), (5, 5), (1, 1)], top=3)
    assert ov["shared"] == [(1, 1), (2, 2)] and ov["only_a"] == [(3, 3)] and ov["only_b"] == [(5, 5)]
    assert ov["fraction_shared"] == pytest.approx(2 / 3)


def test_cli_writes_results_files(tmp_path, capsys):
    """Protects: `python -m arithmech identify` writes the documented files and columns, exactly the
    prompts used, and the same files again for the same seed."""
    args = ["identify", "--model", "embedded", "--task", "addition", "--n-samples", "12", "--seed", "3",
            "--knockout-samples", "6", "--random-seeds", "1"]
    main(args + ["--out", str(tmp_path / "a")])
    assert "wrote" in capsys.readouterr().out
    a = tmp_path / "a"
    eff = pd.read_csv(a / "effects.csv", dtype={"head": str})
    assert list(eff.columns[:6]) == ["task", "layer", "head", "effect", "logit_diff", "prob"]
    assert len(eff) == 6 * 9 and (eff["head"] == "mlp").sum() == 6 and set(eff.task) == {"addition"}
    ko = pd.read_csv(a / "knockout.csv")
    assert list(ko.columns) == ["task", "kind", "order", "seed", "k", "accuracy", "n"]
    assert ko.loc[ko.k == 0, "accuracy"].eq(1.0).all()               # X_r: the model answers all of them
    kh = json.loads((a / "key_heads.json").read_text())
    assert kh["threshold"] == -0.05 and all(h["effect"] < -0.05 for h in kh["heads"])
    assert [h["effect"] for h in kh["heads"]] == sorted(h["effect"] for h in kh["heads"])
    prompts = D.load_jsonl(a / "prompts.jsonl")
    run = json.loads((a / "run.json").read_text())
    assert len(prompts) == run["samples"]["addition"]["n_kept"] == eff["n"].iloc[0]
    assert run["parameters"]["seed"] == 3 and "torch" in run["versions"]
    main(args + ["--out", str(tmp_path / "b")])
    for f in ("effects.csv", "key_heads.json", "prompts.jsonl", "knockout.csv"):
        assert (a / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_bad_template_pair_gives_one_clear_error(tmp_path, capsys):
    """Protects: a counterfactual that changes the token length stops the command with one message
    that names the template and says what to change (no traceback)."""
    pair = tmp_path / "pairs.json"
    pair.write_text(json.dumps([{"id": "bad", "clean": "{A} plus {B} equals to", "corrupt": "{A} is nothing {B} equals to"}]))
    with pytest.raises(SystemExit) as e:
        main(["identify", "--model", "embedded", "--task", str(pair), "--n-samples", "4", "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("error")]      # (transformers may print a load bar)
    assert len(lines) == 1 and "'bad'" in lines[0] and "same token length" in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_results_name_keeps_the_whole_last_part():
    """Protects: one results folder per model, named after the alias, the hub id's or folder's last
    part (dots kept: Qwen2.5-0.5B is not Qwen2) or the .gguf file's name."""
    from arithmech.methods.identify import results_name
    assert results_name("embedded") == "embedded"
    assert results_name("Qwen/Qwen2.5-0.5B") == "Qwen2.5-0.5B"
    assert results_name("/models/Llama-2-7b-hf/") == "Llama-2-7b-hf"
    assert results_name("/tmp/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1"


def test_positions_table_end_row_reproduces_the_knockout_curve(embedded):
    """Protects the book's END-vs-every-position table: its END row is the knockout curve's own point at
    k = number of key heads (same samples, same random orders); its every-position row is computed on
    the same samples."""
    from arithmech.methods.identify import identify, knockout_summary, positions_table
    model, tok, _ = embedded
    res = identify(model, tok, "addition", n_samples=32, seed=0, knockout_samples=16, n_random=2, transfer=False)
    assert res.key_heads["heads"], "the embedded model has key heads for addition"
    phases = res.memory["peak_rss_by_phase"]                          # the process high-water mark: monotone
    assert list(phases) == ["prepare", "patching", "knockout"] and list(phases.values()) == sorted(phases.values())
    assert res.memory["peak_rss_bytes"] == phases["knockout"] > 50 << 20 and res.memory["cuda_peak_bytes"] is None
    pt = positions_table(res, model, tok).set_index("positions")
    ks = knockout_summary(res).iloc[0]
    for col in ("key_heads", "accuracy_key_heads_out", "accuracy_random_out_mean", "accuracy_random_out_std", "n"):
        assert pt.loc["end", col] == pytest.approx(ks[col]), col
    assert pt.loc["all", "accuracy_key_heads_out"] < 1 and pt.loc["all", "n"] == ks["n"]


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_peak_memory_sees_a_short_lived_allocation():
    """Protects identify's ``memory`` field: a tensor allocated and freed inside a phase raises that
    phase's peak RSS by at least its size above the resident set before it (measured from /proc)."""
    from arithmech.core.memory import PeakMemory, peak_rss_bytes
    mem = PeakMemory(torch.nn.Linear(2, 2))
    mem.mark("before")
    rss = int(open("/proc/self/statm").read().split()[1]) * __import__("os").sysconf("SC_PAGE_SIZE")
    size = max(0, mem.rss["before"] - rss) + (96 << 20)                # above the old high-water mark
    t = torch.ones(size // 4)                                          # touched: resident
    del t
    mem.mark("alloc")
    assert mem.rss["alloc"] >= rss + size - (8 << 20) and peak_rss_bytes() >= mem.rss["alloc"]
    out = mem.summary()
    assert out["peak_rss_bytes"] == mem.rss["alloc"] and out["cuda_peak_bytes"] is None
