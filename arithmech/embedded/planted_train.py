"""Training, scoring and the model card of the planted model (:mod:`arithmech.embedded.planted` declares its design).

``python -m arithmech train-planted`` runs :func:`run`: :func:`train` draws :func:`~arithmech.embedded.planted.
training_stream`, keeps the construction fixed after every optimizer step (gradients of the fixed entries masked,
the entries written back), saves float16 weights, then scores exactly those weights (:func:`evaluate`, the
ground-truth checks of :mod:`arithmech.embedded.planted_truth`) into ``accuracy.json`` and the model card.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch

from arithmech.core.names import PLANTED_DIR
from arithmech.core.progress import progress
from arithmech.core.stats import wilson_interval
from arithmech.embedded.planted import (
    ALPHA,
    CURRICULUM,
    HELDOUT_FRACTION,
    HELDOUT_SEED,
    OPERATIONS,
    PLANTED,
    SIZE,
    SMALL_FRACTION,
    SPLITS,
    THRESHOLDS,
    batch,
    build_tokenizer,
    impose,
    make_model,
    mask_grads,
    split_items,
    training_stream,
)
from arithmech.embedded.planted_truth import report as truth_report
from arithmech.embedded.train import check_train_out
from arithmech.evals.scoring import greedy_exact, predict


def move_files_in(tmp: Path, out: Path) -> None:
    """Move every file of the flat folder ``tmp`` into ``out``, replacing same-named files only."""
    for f in sorted(tmp.iterdir()):
        if (out / f.name).is_dir():
            raise ValueError(f"{out / f.name} is a folder; the model needs that name for a file")
        os.replace(f, out / f.name)


# ------------------------------------------------------------------------------------------- training
def train(  # noqa: PLR0913, PLR0915 (each setting a flag of train-planted; one training loop)
    out_dir: str | Path | None = None,
    steps: int = 1800,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 100,
    size: dict | None = None,
    eval_n: int = 20,
    overwrite: bool = False,
    weight_decay: float = 0.01,
    threads: int | None = 1,
    save: bool = True,
    small_only: float = CURRICULUM,
) -> tuple[Path | None, dict]:
    """Train the planted model from scratch; save it (HF folder, float16) with ``accuracy.json`` and its card.

    ``out_dir`` ``None`` is the package's ``embedded/planted_model/``. Returns ``(folder, report)``.
    """
    out = Path(out_dir) if out_dir else PLANTED_DIR
    if save and out_dir is not None:
        check_train_out(out, overwrite)
    if threads:
        torch.set_num_threads(threads)
    tok = build_tokenizer()
    model, fixed = make_model(tok, size, seed)
    size = {**SIZE, **(size or {})}
    stream = training_stream(seed, batch_size, round(small_only * steps))
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    rest = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.98),
    )
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    t0 = time.time()
    model.train()
    losses = []
    for step in progress(range(steps), "train-planted"):
        x, y = batch(tok, next(stream))
        loss = model(input_ids=x, labels=y).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        mask_grads(model, fixed)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        impose(model, fixed)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:5d}  loss {loss.item():.4f}  {time.time() - t0:6.1f}s", flush=True)
    train_s = round(time.time() - t0, 1)
    model.eval()
    model.half().float()  # ship fp16 weights; evaluate exactly those
    model.set_attn_implementation("eager")  # the checks read attention weights
    report = evaluate(model, tok, seed=seed + 1, n=eval_n)
    report["ground_truth"] = truth_report(model, tok, seed=seed + 2, n=max(1, eval_n // 2))
    report.update(
        train_seconds=train_s,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        seed=seed,
        small_only=small_only,
        threads=threads,
        size=size,
        parameters=sum(p.numel() for p in model.parameters()),
        final_loss=round(sum(losses[-20:]) / len(losses[-20:]), 4),
    )
    if not save:
        return None, report
    if out_dir is not None:
        check_train_out(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        model.set_attn_implementation("sdpa")
        model.to(torch.float16).save_pretrained(tmp)
        model.float()
        tok.save_pretrained(tmp)
        (tmp / "accuracy.json").write_text(json.dumps(report, indent=2))
        (tmp / "README.md").write_text(model_card(report))
        out.mkdir(exist_ok=True)
        move_files_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out, report


def proportion(ok) -> dict:
    """``{k, n, acc, lo, hi}``: a proportion with its Wilson 95 % interval."""
    ok = list(ok)
    k, n = sum(ok), len(ok)
    lo, hi = wilson_interval(k, n)
    return {"k": k, "n": n, "acc": round(k / n, 4), "lo": round(lo, 4), "hi": round(hi, 4)}


def first_token_correct(model, tok, items: list[dict]) -> list[bool]:
    """Top-1 next token after the prompt is the answer's first token (the paper's measure)."""
    gold = [tok(" " + it["target"], add_special_tokens=False)["input_ids"][0] for it in items]
    pred = predict(model, tok, [it["prompt"] for it in items])[:, 0].tolist()
    return [p == g for p, g in zip(pred, gold)]


def majority_share(items: list[dict], tok) -> float:
    """Share of the most frequent answer-first-token within each template: the accuracy of the best answer that
    ignores the operands (chance level)."""
    by: dict[str, list[str]] = {}
    for it in items:
        by.setdefault(it["template"], []).append(it["target"][0])
    return round(sum(max(v.count(c) for c in set(v)) for v in by.values()) / len(items), 4)


@torch.no_grad()
def evaluate(model, tok, seed: int = 1, n: int = 20) -> dict:
    """First-answer-token accuracy and exact match (greedy) with Wilson intervals, per split and operation."""
    report: dict = {"eval_seed": seed, "n_per_template": n, "splits": {}}
    for split in SPLITS:
        items = split_items(split, seed, n)
        first = first_token_correct(model, tok, items)
        exact = greedy_exact(model, tok, [(it["prompt"], it["target"]) for it in items], batch_size=64)
        ops = [op for op in OPERATIONS if any(it["op"] == op for it in items)]
        report["splits"][split] = {
            "answer_token": proportion(first),
            "exact_match": proportion(exact),
            "majority_share": majority_share(items, tok),
            "by_operation": {
                op: {
                    "answer_token": proportion(f for f, it in zip(first, items) if it["op"] == op),
                    "exact_match": proportion(e for e, it in zip(exact, items) if it["op"] == op),
                }
                for op in ops
            },
        }
    return report


# ----------------------------------------------------------------------------------------- model card
def _cell(p: dict) -> str:
    return f"{p['acc']:.1%} [{p['lo']:.1%}, {p['hi']:.1%}] (n={p['n']})"


def model_card(r: dict) -> str:
    s = r["size"]
    rows = []
    for split, v in r["splits"].items():
        rows.append(
            f"| {split} | all | {_cell(v['answer_token'])} | {_cell(v['exact_match'])} | {v['majority_share']:.1%} |"
        )
        for op, w in v["by_operation"].items():
            rows.append(f"| | {op} | {_cell(w['answer_token'])} | {_cell(w['exact_match'])} | |")
    table = "\n".join(rows)
    heads = ", ".join(f"{li}.{h}" for li, h in PLANTED)
    th = "\n".join(f"- `{k}`: {v}" for k, v in THRESHOLDS.items())
    truth = r.get("ground_truth")
    truth_text = "\n".join(f"- {k}: {json.dumps(v)}" for k, v in truth.items()) if truth else "(not measured)"
    seeds = r.get("other_seeds")
    seed_text = "\n".join(seed_line(k, v) for k, v in seeds.items()) if seeds else "(none recorded)"
    verdicts = "\n".join(f"- {line}" for line in bar_verdicts(r))
    return f"""# arithmech planted model: an arithmetic circuit known by construction

A {s["n_layers"]}-layer, {s["n_heads"]}-head, d_model {s["d_model"]}, d_ff {s["d_ff"]} `LlamaForCausalLM`
({r["parameters"]:,} parameters) trained from scratch by `python -m arithmech train-planted` (seed {r["seed"]},
{r["steps"]} steps of batch {r["batch_size"]}, AdamW lr {r["lr"]}, weight decay {r["weight_decay"]}, cosine,
{r["threads"]} torch thread(s); {r["train_seconds"]} s of training on a shared 2-core CPU machine; final loss
{r["final_loss"]}). Weights are float16; load it with `arithmech.load_model("planted")` (float32 or bfloat16:
the fixed attention terms reach about 1e6 and overflow float16 arithmetic) or `--model planted`. The prompt must
start with `<s>` (the tokenizer adds it).

## Planted circuit (declared before training, fixed in the weights)

Planted heads (layer.head): **{heads}** — composer 0.0 (layer 0; attends only from slot positions, to anything),
movers 2.0, 2.1, 2.2 (layer 2; free). Every other head of layers 0-2 is *blind*: a fixed q/k term
(-{ALPHA:g}^2 x CONST(query) x SLOT(key), on the lowest-frequency RoPE pair) makes its attention weight on every
slot token zero. Every head of layer 3 is *off*: it attends to `<s>` only (a constant output), so layer 3 is an
MLP-only layer. Slot tokens are the digits, the operator symbols and words (+ - * / plus minus times over
addition sum difference product ratio) and the neutral stand-ins of the counterfactuals (none nothing null void
blank empty nil mute < > @ #). Reserved residual dimensions 0 (CONST, 1 on every token), 1 (SLOT), 2 (START = `<s>`)
and 3 (WORD, 1 on non-slot tokens) are fixed embedding columns that no layer writes to; composer 0.0 has the fixed
term +{ALPHA:g}^2 x WORD(query) x START(key), the off heads +{ALPHA:g}^2 x CONST(query) x START(key) with every other
q/k entry 0.

Ground truth, by construction:

1. only planted heads ever put attention weight on a slot token, from any position except that the composer does
   so only from slot positions;
2. the output of every non-planted head, at every non-slot position, is identical for two prompts that differ
   only in slot tokens (other operands of the same digit counts; the operator replaced by a neutral word): with
   the last token not a slot, a Fig. 8 path-patching pair gives every non-planted head exactly zero effect;
3. with the paper's first answer token (last prompt token not a slot), operands and operator reach the last position
   only through movers 2.0, 2.1, 2.2; paths: slot tokens (composer 0.0 at slot positions) -> movers -> last position ->
   MLP 2 and MLP 3. Mean-ablating the movers at the last position (means over prompts of one template with the same
   non-slot tokens at the same positions) leaves accuracy at most the groups' majority share. With identify's
   `last-digit` answer token the last token is a digit: composer 0.0 reads there too, and blind heads of layers 1-2 at
   the last position have queries that carry what it wrote, so they may show (indirect) effects; the planted heads
   remain the only route from the operands (a cut). The exact setting is `--answer-token first`.

Not by construction (measured): whether every mover is used, where the MLPs compute (slot positions may compute
part of the answer, since the composer lets them read other slots), and the accuracy.

Pre-registered thresholds (written in `arithmech/embedded/planted.py` before training; asserted by
`tests/unit/embedded/test_planted_truth.py` on these weights):

{th}

Verdicts on the shipped weights (a bar is met when the measured value, the point estimate for the accuracy, is on
its side):

{verdicts}

Measured on the shipped weights:

{truth_text}

## Data
- Training: the 36 Fig. 8 templates (addition, subtraction, multiplication, division x equation, statement and
  question forms), operands by the paper's rules (subtraction A >= B, exact division), {SMALL_FRACTION:.0%} of
  sentences from App. A's 1..9 and the rest uniform over all valid pairs in 0..99 (a multiplication there has one
  operand of one digit), after a first {r.get("small_only", CURRICULUM):.0%} of the steps on 1..9 only; answer then
  `</s>`; loss on the answer only.
- Held out: {HELDOUT_FRACTION:.0%} of each operation's pairs in 0..99 (seed {HELDOUT_SEED}; mirrors together for
  + and x), and 12 new phrasings (3 per operation, trained words, new forms).
- Lacking skill (never trained): the Fig. 10 accumulation word problems (addition; names, objects and verbs have
  untrained embeddings). A fine-tune can teach it.

## Accuracy (seed {r["eval_seed"]} draws, {r["n_per_template"]} per template; Wilson 95 % intervals)

First answer token (the paper's measure) and exact match of the greedy answer; majority = share of the most
frequent first answer token per template (what an operand-blind model can reach).

| split | operation | answer token | exact match | majority |
|---|---|---|---|---|
{table}

## Other training seeds (same command, `--seed`; weights not shipped)

{seed_text}
"""


def bar_verdicts(r: dict) -> list[str]:
    """One sentence per pre-registered threshold: met or missed, with the measured value."""
    if "ground_truth" not in r:
        return ["(not measured)"]
    g, small = r["ground_truth"], r["splits"]["in_distribution_small"]["answer_token"]
    m = g["movers_ablated_small"]
    said = lambda ok: "met" if ok else "MISSED"
    bar = THRESHOLDS["min_accuracy_small_operands"]
    acc = f"{small['acc']:.1%} [{small['lo']:.1%}, {small['hi']:.1%}] (n={small['n']})"
    forbidden = max(g["forbidden_attention_max"].values())
    change = g["nonplanted_output_change_max"]
    drop = m["accuracy"] - m["ablated_accuracy"]
    return [
        f"accuracy on App. A operands >= {bar:.0%}: {said(small['acc'] >= bar)}, {acc}",
        f"forbidden attention <= {THRESHOLDS['max_forbidden_attention']:g}: {said(forbidden <= 1e-12)}, {forbidden:g}",
        f"non-planted output change <= {THRESHOLDS['max_nonplanted_output_change']:g}: "
        f"{said(change <= THRESHOLDS['max_nonplanted_output_change'])}, {change:g}",
        f"movers ablated <= majority share: {said(m['ablated_accuracy'] <= m['majority_share'])}, "
        f"{m['ablated_accuracy']:.1%} <= {m['majority_share']:.1%} (n={m['n']})",
        f"drop from ablating the movers >= {THRESHOLDS['min_mover_ablation_drop']:.0%}: "
        f"{said(drop >= THRESHOLDS['min_mover_ablation_drop'])}, {m['accuracy']:.1%} -> {m['ablated_accuracy']:.1%}",
    ]


def seed_summary(r: dict) -> dict:
    """What the card keeps of another seed's ``accuracy.json``: answer-token accuracy per split, the training time
    and the ground-truth numbers (``r`` as :func:`train` wrote it)."""
    g = r["ground_truth"]
    return {
        "answer_token": {k: v["answer_token"] for k, v in r["splits"].items()},
        "train_seconds": r["train_seconds"],
        "forbidden_attention_max": max(g["forbidden_attention_max"].values()),
        "nonplanted_output_change_max": g["nonplanted_output_change_max"],
        "movers_ablated_small": g["movers_ablated_small"],
    }


def seed_line(seed, v: dict) -> str:
    """One line of the card's "other seeds" list."""
    acc = ", ".join(f"{k} {p['acc']:.1%} [{p['lo']:.1%}, {p['hi']:.1%}]" for k, p in v["answer_token"].items())
    m = v["movers_ablated_small"]
    truth = (
        f"forbidden attention {v['forbidden_attention_max']}, non-planted change {v['nonplanted_output_change_max']}"
    )
    ablated = f"{m['accuracy']:.1%} -> {m['ablated_accuracy']:.1%} (majority {m['majority_share']:.1%})"
    return f"- seed {seed} ({v['train_seconds']} s): answer token {acc}; {truth}; movers ablated (1..9): {ablated}"


def add_seeds(folder: str | Path, others: list[str | Path]) -> dict:
    """Record other seeds' runs (folders written by ``train-planted --seed S --out DIR``) in ``folder``'s
    ``accuracy.json`` and rewrite its model card; returns the updated report."""
    folder = Path(folder)
    r = json.loads((folder / "accuracy.json").read_text())
    for o in others:
        q = json.loads((Path(o) / "accuracy.json").read_text())
        r.setdefault("other_seeds", {})[str(q["seed"])] = seed_summary(q)
    (folder / "accuracy.json").write_text(json.dumps(r, indent=2))
    (folder / "README.md").write_text(model_card(r))
    return r


def run(config) -> Path:
    """``python -m arithmech train-planted``: :func:`train` with a :class:`TrainPlanted` config."""
    out, report = train(
        config.out,
        steps=config.steps,
        batch_size=config.batch_size,
        seed=config.seed,
        overwrite=config.overwrite,
        threads=config.threads,
    )
    assert out is not None
    return out
