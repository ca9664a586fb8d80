"""Small models and prompt sets built in the tests (no files, no network), shared by every tier, and the few
helpers that tests of several modules share (``time_limit``, the pair files ``GOOD``/``BAD_FILES``, the
hand-written forward ``manual_forward``, the scaled GQA model and END caches of the upstream/attribution parity).

Fixtures in ``conftest.py`` wrap these; tests that need a model of another size call them directly.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager

import pandas as pd
import torch


def make_tiny_llama(attn: str = "eager", n_layers: int = 3, n_heads: int = 4, n_kv_heads: int = 2,
                    head_dim: int = 12, d_model: int = 40, vocab: int = 50, seed: int = 0):
    """A random LlamaForCausalLM with GQA and head_dim != d_model / n_heads, fp32, eval mode.

    Defaults: 3 layers, 4 query heads on 2 kv heads, head_dim 12, d_model 40, vocabulary 50.
    """
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d_model, intermediate_size=2 * d_model,
                      num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=n_kv_heads, head_dim=head_dim, max_position_embeddings=64)
    cfg._attn_implementation = attn
    return LlamaForCausalLM(cfg).eval()


def make_biased_gqa_llama(vocab: int, seed: int = 0):
    """Random Llama with GQA (4 query heads on 2 kv heads), head_dim 12 != 40 / 4, and every bias on
    (o_proj bias included) and non-zero, so the fast paths' bias and GQA handling is exercised."""
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


def prompt_pairs(tok, n: int, seed: int = 0):
    """``n`` Fig. 8/10 operator-counterfactual samples: ``(samples, clean, corrupt, answer_ids (n,))``."""
    from arithmech.data import pairs
    from arithmech.data.batches import answer_ids
    samples, _ = pairs.make_pairs(tok, "all", n=n, seed=seed, draw=pairs.Draw("first", 0, 1))
    return samples, [s.clean for s in samples], [s.corrupt for s in samples], answer_ids(tok, samples)


def save_word_llama(folder) -> str:
    """A random 2-layer Llama (4 heads, d_model 32) over the embedded model's word-level tokenizer, saved
    as a model folder that ``load_model`` reads; returns the folder as a string."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from arithmech.embedded.train import build_tokenizer
    tok = build_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def random_sft_rows(n: int = 32, vocab: int = 50, seed: int = 0) -> list[dict]:
    """``n`` tokenized SFT rows of random lengths 5–11 over ``vocab``: ``{input_ids, labels}`` with the
    first two positions masked (-100), as a prompt would be."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randint(1, vocab, (int(torch.randint(5, 12, (1,), generator=g)),), generator=g).tolist()
        out.append({"input_ids": x, "labels": [-100, -100] + x[2:]})
    return out


BYTELEVEL_WORDS = ("plus", "equals", "to", "The", "sum", "of", "and", "is", "+", "-", "*", "/", "=", "<", ">", "@", "#", "none",
                   "nothing", "null", "void", "blank", "empty", "nil", "mute")


def make_bytelevel_tokenizer(words: tuple[str, ...] = BYTELEVEL_WORDS):
    """A tiny tokenizer with SmolLM2's rules for numbers: GPT-2 byte-level pre-tokenization (``" 12"`` is one
    piece), a BPE over the 256 byte symbols with merges for a few ``words`` only — none for digits — so the
    space before a number is a token of its own and every digit is one token (``"= 12"`` → ``=``, ``Ġ``,
    ``1``, ``2``); no BOS, as SmolLM2 adds none. Vocabulary: 256 bytes plus the merged words' pieces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab, merges = {c: i for i, c in enumerate(alphabet)}, []
    for w in words:                                   # merge each word left to right: "p"+"l", "pl"+"u", ...
        for piece in ("Ġ" + w, w):                   # "Ġplus" before "plus": SmolLM2 has the spaced word
            cur = piece[0]
            for ch in piece[1:]:
                if cur + ch not in vocab:
                    merges.append((cur, ch))
                    vocab[cur + ch] = len(vocab)
                cur += ch
    tk = Tokenizer(models.BPE(vocab, merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tk)


@contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``."""
    def boom(*_):
        raise TimeoutError(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


GOOD = {"clean": "{A} plus {B} is", "corrupt": "{A} nothing {B} is"}

BAD_FILES = [
    ("[]", r"the file must hold at least 1"),
    ('"just text"', r"pair 0 must be a JSON object"),
    ("[1, 2]", r"pair 0 must be a JSON object, not number"),
    ('{"clean": "{A} + {B} ="}', r"pair 0, field 'corrupt' is required"),
    ('[{"clean": 5, "corrupt": "{A} x {B}"}]', r"pair 0, field 'clean' must be a JSON string, not number"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "answr": "A+B"}]', r"field 'answr' is not a known key"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} {FOO} {B} ="}]', r"pair 0 \('pair-0'\), field 'corrupt'.*\{FOO\}"),
    ('[{"clean": "{A} + {B} = {C}", "corrupt": "{A} @ {B} ="}]', r"field 'clean'.*unknown field.*\{C\}"),
    ('[{"clean": "{B} + {B} =", "corrupt": "{A} @ {B} ="}]', r"field 'clean': needs an \{A\}"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "op": "custom"}]', r"field 'answer'.*custom"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "op_word": "{COLOR}"}]', r"field 'op_word'.*pool"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "answer": ""}]', r"field 'answer' must not be empty"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} =", "id": "x"},'
     ' {"clean": "{A} - {B} =", "corrupt": "{A} @ {B} =", "id": "x"}]', r"pair 1, field 'id'.*'x'.*pair 0"),
    ('[{"clean": "{A} + {B} =", "corrupt": "{A} @ {B} ="}, {"clean": "{A} =", "corrupt": null}]',
     r"pair 1, field 'corrupt' must be a JSON string, not null"),
    ('[{"clean": "{A} + {B} =", ', r"not valid JSON at line 1"),
    ('{"clean": "a"}\nnot json\n', r"line 2 is not a JSON object"),
]


def _rms(x, w, eps):
    return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)

def _rope(x, pos, theta):
    """x: (s, n, dh), rotate-half RoPE as in Llama."""
    dh = x.shape[-1]
    ang = pos[:, None].float() * (1.0 / theta ** (torch.arange(0, dh, 2).float() / dh))[None]   # (s, dh/2)
    cos, sin = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin

@torch.no_grad()
def manual_forward(model, ids: list[int]):
    """One prompt by hand: per layer the attention probs ``(H, s, s)``, resid before the MLP and
    MLP output ``(s, d)``; plus the logits ``(s, V)``."""
    cfg = model.config
    H, KV, dh, eps = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.rms_norm_eps
    theta = cfg.rope_parameters["rope_theta"]
    W = lambda n: model.get_submodule(n).weight
    s = len(ids)
    pos = torch.arange(s)
    x = W("model.embed_tokens")[torch.tensor(ids)]
    probs, mids, mlps = [], [], []
    for l in range(cfg.num_hidden_layers):
        p = f"model.layers.{l}."
        hn = _rms(x, W(p + "input_layernorm"), eps)
        q = _rope((hn @ W(p + "self_attn.q_proj").T).view(s, H, dh), pos, theta)
        k = _rope((hn @ W(p + "self_attn.k_proj").T).view(s, KV, dh), pos, theta)
        v = (hn @ W(p + "self_attn.v_proj").T).view(s, KV, dh)
        kv = torch.arange(H) // (H // KV)                         # GQA: query head h reads kv head h // group
        scores = torch.einsum("ihd,jhd->hij", q, k[:, kv]) / dh ** 0.5
        scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        pr = scores.softmax(-1)
        z = torch.einsum("hij,jhd->ihd", pr, v[:, kv]).reshape(s, H * dh)
        x = x + z @ W(p + "self_attn.o_proj").T
        mids.append(x)
        hn = _rms(x, W(p + "post_attention_layernorm"), eps)
        m = (torch.nn.functional.silu(hn @ W(p + "mlp.gate_proj").T) * (hn @ W(p + "mlp.up_proj").T)) @ W(p + "mlp.down_proj").T
        mlps.append(m)
        x = x + m
        probs.append(pr)
    logits = _rms(x, W("model.norm"), eps) @ W("lm_head").T
    return probs, torch.stack(mids), torch.stack(mlps), logits


def scaled_biased_llama(tok, seed=0, gain=6.0):
    """The biased GQA Llama with every non-norm weight × ``gain``, so that patching moves logits by ~1e-3
    rather than ~1e-6 (differences of the two methods are then meaningful against the effects)."""
    model = make_biased_gqa_llama(len(tok), seed=seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.mul_(gain)
    return model

def end_caches(model, tok, n=6, seed=1):
    from arithmech.methods.patching import end_cache
    _, clean, corrupt, ans = prompt_pairs(tok, n, seed=seed)
    return clean, end_cache(model, tok, clean, ans), end_cache(model, tok, corrupt), ans


def fake_roles(values: dict[tuple[int, int], float], role: str = "operand") -> pd.DataFrame:
    """An attention table with one role, value ``values[(l, h)]`` in both views, se 0.01, n 100."""
    rows = [dict(layer=l, head=h, role=role, mean_score=v, kv_head=0, task="all", n=100, se=0.01, tokens=2.0,
                 density=v / 2, mass_nofirst=v, se_nofirst=0.01, tokens_nofirst=2.0, density_nofirst=v / 2)
            for (l, h), v in values.items()]
    return pd.DataFrame(rows)


# Declarative answer expressions the pair-file reader must accept (tests/unit/data/).
SAFE = ["A + B", "A - B", "A * B", "A / B", "A // B", "A % B", "A ** B", "-(A - B)", "(A + B) % 10",
        "2 * A + 3", "A ** 2 - B", "A / 2", "+A", "1.5 * A", "A ** -1", "(A * B) // (A + B)"]


def write_file(tmp_path, text: str, name: str = "pairs.json"):
    """``text`` written to ``tmp_path / name``; the path."""
    f = tmp_path / name
    f.write_text(text)
    return f


def one_preamble(samples):
    """``samples`` rewritten to share the first one's solved examples, as a pair file's preamble would: the
    case :mod:`arithmech.core.prefix` is for (an identify run draws one set of examples per prompt, so its
    prompts share none). Token positions are left as drawn: for END-only work."""
    import dataclasses
    p = samples[0].prefix
    return [dataclasses.replace(s, clean=p + s.clean[len(s.prefix):], corrupt=p + s.corrupt[len(s.prefix):], prefix=p)
            for s in samples]
