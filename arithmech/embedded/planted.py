"""The planted model: a small Llama whose arithmetic circuit is known by construction.

Every chapter runs on the embedded model (:mod:`arithmech.embedded.train`), but nobody knows which of its heads
*should* matter, so a method's verdict on it checks consistency, not correctness. This model is built so that the
answer to "which heads carry the operands to the last position?" is fixed before training, written into the
weights, and holds in the plain ``LlamaForCausalLM`` forward that every loader and hook of the package runs
(``python -m arithmech ... --model planted``). Rerun with::

    python -m arithmech train-planted          # deterministic; about 15 minutes on one CPU core

Design (declared before training; the model card repeats it)
------------------------------------------------------------

**Slot tokens.** The tokens that fill a Fig. 8 template's fields: the digits ``0``-``9`` (operands, and any digit
of a carried or solved answer), the operator symbols and words of :data:`arithmech.data.templates.OPS`
(``+ plus addition sum``, ...), and the neutral stand-ins of the counterfactuals (``nothing``, ``@``, ...;
:data:`SLOT_WORDS`). A Fig. 8 reference prompt X_r and its counterfactual X_c, or two prompts of one template
with other operands of the same digit counts, differ in slot tokens only.

**Four reserved residual dimensions** (:data:`RESERVED`): ``CONST`` is 1 on every token, ``SLOT`` is 1 on slot
tokens and ``WORD`` on every other token, ``START`` is 1 on ``<s>``; otherwise 0. They are fixed columns of the
embedding, and no attention output (``o_proj``) or MLP (``down_proj``) ever writes to them (those rows are fixed at
0), so at every layer the residual stream still holds exactly these values; their RMSNorm gains are fixed at 1.

**Four head roles**, fixed per ``(layer, head)`` (:func:`role`), written into ``q_proj``/``k_proj`` rows of the
lowest RoPE frequency (row ``dh/2 - 1`` of the head, its rotation partner ``dh - 1`` fixed at 0: over 64 positions
that pair turns by less than 0.01 rad, so the score term is position-independent to 1e-4):

* **blind** (every head not named below): the fixed score term ``-ALPHA**2 * CONST(query) * SLOT(key) / sqrt(dh)``
  (each factor after the RMSNorm) drives the attention weight of every slot key to 0 at every query; the head's
  other q/k rows may not read the reserved dimensions. A blind head never reads a slot token.
* **composer** (:data:`COMPOSERS`, layer 0): the term ``+ALPHA**2 * WORD(query) * START(key)``: from a
  non-slot query it attends to ``<s>`` only (its output there is a constant); from a slot query the term is 0 and
  the head is free. It builds numbers at the slot positions ("7" of "47" reads the "4").
* **mover** (:data:`MOVERS`, layer 2): free. The only heads that read slot tokens from a non-slot position.
* **off** (every head of :data:`OFF_LAYERS`, the last layer): all q/k rows fixed so it attends to ``<s>`` only;
  its output is the same constant for every prompt. Layer 3 is an MLP-only layer, so the movers' output is
  computed on by two MLPs (layers 2 and 3) and nothing after the movers moves information between positions.

The ground truth (:data:`PLANTED` = composers + movers), and why it holds on the shipped weights
---------------------------------------------------------------------------------------------------

*By construction* (a property of the weights, checked numerically on the shipped file by
``tests/unit/embedded/test_planted_truth.py``; ``<s>`` must start the prompt, as the tokenizer writes it):

1. no blind head puts attention weight on a slot key, from any query; no off head attends to anything but ``<s>``;
   no composer attends to anything but ``<s>`` from a non-slot query. So, by induction over layers, the residual
   stream at every non-slot position is a function of the non-slot tokens alone until the movers' layer, and
2. **the output of every head outside :data:`PLANTED`, at every non-slot position, is the same for two prompts
   that differ only in slot tokens** (operands of the same digit counts, operator <-> neutral word). At a slot
   position a blind head's *query* is the slot token, so its output there may differ, but only planted heads ever
   read a slot position. A Fig. 8 path-patching counterfactual is such a pair, so with the last token not a slot
   every non-planted head has exactly zero effect at the last position, alone or all together.
3. when the last token is not a slot (the paper's first answer token, ``"3 + 9 ="``), the operands and the operator
   reach the last position only through the movers' output there: the path is slot tokens (and the composer at slot
   positions) -> movers (layer 2) -> last position -> MLP 2, MLP 3 -> logits. MLPs 0 and 1 at the last position never
   see an operand. Mean-ablating the movers at the last position (means over prompts of one template whose non-slot
   tokens stand at the same positions) makes the prediction constant within each such group, so accuracy cannot exceed
   the most frequent answer's share of each group. When the last token is a digit (``"3 + 9 = 1"``, identify's
   ``last-digit``), the last position is a slot position: the composer reads there too, and the blind heads' queries
   there carry what the composer wrote, so blind heads in layers 1-2 may have (indirect, query-side) effects at the last
   position. The planted heads are then still the only route from the operands to the last position (a cut), but not the
   only heads with a path-patching effect: use ``--answer-token first`` for the exact ground truth.

How exact "zero" is: the fixed term is a score of size about ``ALPHA**2 / (sqrt(dh) * rms_q * rms_k)`` (the
reserved values are 1 before the RMSNorm), i.e. millions at the residual sizes a trained model has, against learned
scores of order 10; a float32 softmax then gives the forbidden keys weights that underflow to exactly 0. It is not
a bound that holds for *any* weights: a residual stream thousands of times larger would shrink the term. So the
shipped weights are checked, not assumed: ``forbidden_attention`` must be at most 1e-12 and the non-planted heads'
outputs across slot-only pairs equal to 1e-5 (they are exactly 0 and 0). In float16 arithmetic the term overflows:
load the model in float32 (the package's default) or bfloat16.

What is *not* by construction: that the model uses all movers, that it computes in MLPs 2-3 rather than at the
slot positions (the composer lets a slot position read other slots, so part of the computation may happen there),
and how well it does arithmetic. Those are measured (model card).

Data (seeded, :func:`training_stream`)
--------------------------------------

The 36 Fig. 8 templates (four operations x equation, statement and question forms), operands 0..99 by the rule of
:func:`answer` (subtraction ``A >= B``, exact division), drawn per sentence either from App. A's 1..9
(:data:`SMALL_FRACTION` of sentences, the operands the chapters' methods draw) or uniformly over all valid pairs in
0..99 (a multiplication there has one one-digit operand); the first :data:`CURRICULUM` of the steps draw 1..9 only;
the full answer, then ``</s>``; the loss is on the answer and ``</s>`` only. Held out: a seeded
:data:`HELDOUT_FRACTION` of each operation's pairs (mirrors together for + and x; :func:`heldout_pairs`), and
the 12 Fig. 8-like phrasings of :data:`arithmech.data.heldout.HELDOUT_TEMPLATES` (trained words, new forms).
**The skill it lacks**: the Fig. 10 accumulation word problems (:data:`LACKING`), never trained (their names,
objects and verbs have untrained embeddings); a fine-tune can teach them.
"""

from __future__ import annotations

import functools
import random

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from arithmech.data import templates
from arithmech.data.heldout import HELDOUT_TEMPLATES
from arithmech.data.render import render
from arithmech.embedded.train import build_tokenizer as embedded_tokenizer

SIZE = dict(n_layers=4, n_heads=4, d_model=128, d_ff=512, max_len=64)
COMPOSERS: tuple[tuple[int, int], ...] = ((0, 0),)
MOVERS: tuple[tuple[int, int], ...] = ((2, 0), (2, 1), (2, 2))
PLANTED: tuple[tuple[int, int], ...] = COMPOSERS + MOVERS
OFF_LAYERS = (3,)
CONST, SLOT, START, WORD = 0, 1, 2, 3
RESERVED = (CONST, SLOT, START, WORD)
ALPHA = 4096.0  # a power of two: exact in the shipped float16 file
EMBED_STD = 1.0

OPERATIONS = ("addition", "subtraction", "multiplication", "division")
COMMUTATIVE = ("addition", "multiplication")
OPERAND_MAX = 99
SMALL = range(1, 10)
SMALL_FRACTION = 0.5
CURRICULUM = 0.2  # the first 20 % of the steps draw App. A operands only
HELDOUT_SEED = 29
HELDOUT_FRACTION = 0.10

TRAIN_TEMPLATES: list[templates.Template] = list(templates.FIG8)
HELDOUT_PHRASINGS: list[templates.Template] = [
    t for t in HELDOUT_TEMPLATES if t.op in OPERATIONS and t.id[5:8] in ("add", "sub", "mul", "div")
]
LACKING: list[templates.Template] = [t for t in templates.FIG10 if t.family == "accumulation"]

# Pre-registered thresholds (written before training; the model card and the tests read them from here).
THRESHOLDS = {
    # the model must do the task for the ground truth to be non-vacuous: first answer token, App. A operands
    "min_accuracy_small_operands": 0.90,
    # attention weight a blind/off head (or a composer from a non-slot query) may put on a forbidden key
    "max_forbidden_attention": 1e-12,
    # largest change of any non-planted head's output between prompts differing only in slot tokens
    "max_nonplanted_output_change": 1e-5,
    # mover mean-ablation at the last position: accuracy may not exceed the groups' majority share (exact bound)
    "mover_ablation_slack": 0.0,
    # and must fall by at least this much on App. A operands (non-vacuous)
    "min_mover_ablation_drop": 0.5,
}


def role(layer: int, head: int) -> str:
    """``"composer"``, ``"mover"``, ``"off"`` or ``"blind"``: the fixed role of head ``(layer, head)``."""
    if (layer, head) in COMPOSERS:
        return "composer"
    if (layer, head) in MOVERS:
        return "mover"
    if layer in OFF_LAYERS:
        return "off"
    return "blind"


SLOT_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [str(d) for d in range(10)]
        + [w for ws in templates.OPS.values() for w in ws]
        + list(templates.NEUTRAL_WORDS)
        + list(templates.NEUTRAL_SYMBOLS)
    )
)


# ----------------------------------------------------------------------------------------------- data
def answer(op: str, a: int, b: int) -> int | None:
    """The answer of ``a op b`` under the paper's rules (subtraction ``a >= b``, exact division), else ``None``."""
    if op == "addition":
        return a + b
    if op == "subtraction":
        return a - b if a >= b else None
    if op == "multiplication":
        return a * b
    if op == "division":
        return a // b if b and a % b == 0 else None
    raise ValueError(f"unknown operation {op!r}")


@functools.cache
def valid_pairs(op: str, small: bool = False) -> tuple[tuple[int, int], ...]:
    """Every ``(A, B)`` with an answer: in 1..9 (``small``) or in 0..99; a multiplication in 0..99 has one operand
    of one digit (A x B with A or B <= 9: a table of 1,900 facts a 1M-parameter model can learn in minutes)."""
    rng = SMALL if small else range(OPERAND_MAX + 1)
    ok = lambda a, b: answer(op, a, b) is not None and (small or op != "multiplication" or min(a, b) <= 9)
    return tuple((a, b) for a in rng for b in rng if ok(a, b))


@functools.cache
def heldout_pairs(op: str) -> frozenset[tuple[int, int]]:
    """A seeded ``HELDOUT_FRACTION`` of ``op``'s pairs in 0..99, never trained; mirrors together for + and x."""
    pairs = valid_pairs(op)
    units = sorted({tuple(sorted(p)) for p in pairs}) if op in COMMUTATIVE else list(pairs)
    rng = random.Random(f"{HELDOUT_SEED}-{op}")
    rng.shuffle(units)
    held: set[tuple[int, int]] = set()
    goal = round(HELDOUT_FRACTION * len(pairs))
    for a, b in units:
        if len(held) >= goal:
            break
        held |= {(a, b), (b, a)} if op in COMMUTATIVE else {(a, b)}
    return frozenset(held)


def draw_pair(op: str, rng: random.Random, small: bool, heldout: bool | None = False) -> tuple[int, int]:
    """Operands of ``op``: from 1..9 or 0..99; ``heldout`` False: trained pairs only, True: held-out only,
    None: any."""
    pool = valid_pairs(op, small)
    if heldout is True:
        pool = tuple(p for p in pool if p in heldout_pairs(op))
    while True:
        p = rng.choice(pool)
        if heldout is None or (p in heldout_pairs(op)) == heldout:
            return p


def fill(t: templates.Template, a: int, b: int, rng: random.Random, corrupt: bool = False) -> str:
    """The prompt of template ``t`` with operands ``a``, ``b`` (pool words drawn from ``rng``); ``corrupt``: its
    counterfactual text, the operator replaced by a neutral word or symbol."""
    v: dict = {"A": a, "B": b}
    for k, pool in templates.POOLS.items():
        v[k] = rng.choice(pool)
    v["NAME2"] = rng.choice([n for n in templates.NAMES if n != v["NAME"]])
    v["NAME_C"], v["OBJECT_C"], v["OBJECT_C2"], v["YYY"] = v["NAME2"], v["OBJECT"], v["OBJECT"], 1
    v["OP"] = v[t.op_word[1:-1]] if t.op_word.startswith("{") else t.op_word
    v["N2"] = v["N3"] = v["N"]
    return render(t.corrupt if corrupt else t.clean, v)[0]


def item(t: templates.Template, a: int, b: int, rng: random.Random) -> dict:
    return {
        "prompt": fill(t, a, b, rng),
        "target": str(answer(t.op, a, b)),
        "op": t.op,
        "template": t.id,
        "a": a,
        "b": b,
        "joiner": t.joiner,
    }


def sentence(rng: random.Random, small_fraction: float = SMALL_FRACTION) -> tuple[str, str]:
    """One training sentence ``(prompt, answer)``: a Fig. 8 template, operands from 1..9 (``small_fraction`` of
    sentences) or 0..99, trained pairs only."""
    t = rng.choice(TRAIN_TEMPLATES)
    a, b = draw_pair(t.op, rng, small=rng.random() < small_fraction)
    return fill(t, a, b, rng), str(answer(t.op, a, b))


def training_stream(seed: int = 0, batch_size: int = 128, small_only: int = 0):
    """The ``(prompt, answer)`` sentences of every training batch, in order (a generator; never ends); the first
    ``small_only`` batches draw App. A operands only (a curriculum), the rest :data:`SMALL_FRACTION` of them."""
    rng = random.Random(f"planted-{seed}")
    k = 0
    while True:
        yield [sentence(rng, 1.0 if k < small_only else SMALL_FRACTION) for _ in range(batch_size)]
        k += 1


def build_tokenizer():
    """The embedded model's word-level tokenizer (digits split, ``<s>`` first): same vocabulary and rules."""
    return embedded_tokenizer()


def batch(tok, pairs: list[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and labels: the loss is on the answer's tokens and ``</s>`` only."""
    rows, labs = [], []
    for p, a in pairs:
        pi = tok(p)["input_ids"]
        ai = tok(" " + a, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        rows.append(pi + ai)
        labs.append([-100] * len(pi) + ai)
    L = max(map(len, rows))
    x = torch.full((len(rows), L), tok.pad_token_id)
    y = torch.full((len(rows), L), -100)
    for i, (r, lab) in enumerate(zip(rows, labs)):
        x[i, : len(r)] = torch.tensor(r)
        y[i, : len(lab)] = torch.tensor(lab)
    return x, y


# -------------------------------------------------------------------------------------- the construction
def slot_ids(tok) -> list[int]:
    ids = tok.convert_tokens_to_ids(list(SLOT_WORDS))
    if tok.unk_token_id in ids:
        raise ValueError("a slot word is not in the vocabulary")
    return ids


def construction(model, tok) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Parameter name -> ``(fixed, value)``: the entries the design fixes (boolean mask) and their values.
    Training keeps them (:func:`impose`); the test reads them back from the shipped file."""
    cfg = model.config
    d, H, dh, L = cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim, cfg.num_hidden_layers
    R = list(RESERVED)
    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def entry(name, shape):
        if name not in out:
            out[name] = (torch.zeros(shape, dtype=torch.bool), torch.zeros(shape))
        return out[name]

    m, v = entry("model.embed_tokens.weight", (cfg.vocab_size, d))
    m[:, R] = True
    v[:, CONST] = 1.0
    v[:, WORD] = 1.0
    v[slot_ids(tok), SLOT] = 1.0
    v[slot_ids(tok), WORD] = 0.0
    v[tok.bos_token_id, START] = 1.0
    for name in ["model.norm.weight"] + [
        f"model.layers.{i}.{n}.weight" for i in range(L) for n in ("input_layernorm", "post_attention_layernorm")
    ]:
        m, v = entry(name, (d,))
        m[R] = True
        v[R] = 1.0
    for i in range(L):
        for name, width in (
            (f"model.layers.{i}.self_attn.o_proj.weight", H * dh),
            (f"model.layers.{i}.mlp.down_proj.weight", cfg.intermediate_size),
        ):
            m, v = entry(name, (d, width))
            m[R, :] = True
        mq, vq = entry(f"model.layers.{i}.self_attn.q_proj.weight", (H * dh, d))
        mk, vk = entry(f"model.layers.{i}.self_attn.k_proj.weight", (H * dh, d))
        for h in range(H):
            base, r, r2 = h * dh, h * dh + dh // 2 - 1, h * dh + dh - 1
            kind = role(i, h)
            if kind == "mover":
                continue
            for mm in (mq, mk):
                mm[r, :] = mm[r2, :] = True
            if kind == "blind":
                mq[base : base + dh, R] = mk[base : base + dh, R] = True
                vq[r, CONST], vk[r, SLOT] = ALPHA, -ALPHA
            elif kind == "off":
                mq[base : base + dh, :] = mk[base : base + dh, :] = True
                vq[r, CONST], vk[r, START] = ALPHA, ALPHA
            elif kind == "composer":
                vq[r, WORD], vk[r, START] = ALPHA, ALPHA
    return out


@torch.no_grad()
def impose(model, fixed: dict) -> None:
    """Write the fixed entries into ``model`` (exactly; everything else untouched)."""
    params = dict(model.named_parameters())
    for name, (m, v) in fixed.items():
        p = params[name]
        p.copy_(torch.where(m, v.to(p.dtype), p))


def mask_grads(model, fixed: dict) -> None:
    params = dict(model.named_parameters())
    for name, (m, _) in fixed.items():
        g = params[name].grad
        if g is not None:
            g.masked_fill_(m, 0.0)


def make_model(tok, size: dict | None = None, seed: int = 0):
    """A fresh model of ``size`` (seeded) with the construction imposed; returns ``(model, fixed entries)``."""
    size = {**SIZE, **(size or {})}
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=size["d_model"],
        intermediate_size=size["d_ff"],
        num_hidden_layers=size["n_layers"],
        num_attention_heads=size["n_heads"],
        num_key_value_heads=size["n_heads"],
        head_dim=size["d_model"] // size["n_heads"],
        max_position_embeddings=size["max_len"],
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():  # unit-scale token embeddings: the reserved columns (value 1) must not dominate the norm
        model.model.embed_tokens.weight.normal_(0.0, EMBED_STD)
    fixed = construction(model, tok)
    impose(model, fixed)
    return model, fixed


# ----------------------------------------------------------------------------------------- evaluation
SPLITS = ("in_distribution_small", "in_distribution_wide", "heldout_pairs", "heldout_phrasings", "lacking_skill")


def split_items(split: str, seed: int = 1, n: int = 20) -> list[dict]:
    """The seeded prompts of one split: ``n`` per template (``in_distribution_small``: 1..9 operands, Fig. 8;
    ``in_distribution_wide``: 0..99; ``heldout_pairs``: held-out pairs in Fig. 8; ``heldout_phrasings``: the 12
    new phrasings with trained 0..99 pairs; ``lacking_skill``: the Fig. 10 accumulation forms, 0..99 (3 x n))."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    rng = random.Random(f"{seed}-{split}")
    out = []
    if split == "lacking_skill":
        for t in LACKING:
            for _ in range(3 * n):
                out.append(item(t, *draw_pair(t.op, rng, small=rng.random() < SMALL_FRACTION), rng))
        return out
    tpls = HELDOUT_PHRASINGS if split == "heldout_phrasings" else TRAIN_TEMPLATES
    for t in tpls:
        for _ in range(n):
            if split == "heldout_pairs":
                pair = draw_pair(t.op, rng, small=False, heldout=True)
            else:
                pair = draw_pair(t.op, rng, small=split == "in_distribution_small")
            out.append(item(t, *pair, rng))
    return out
