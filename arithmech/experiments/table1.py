"""A real Table 1 on a CPU (paper §5.3, Table 1): base vs full SFT vs precise SFT, with confidence intervals.

The paper fine-tunes LLaMA2-7B on the four math sets' training data for 2 epochs on 8 A100s. This
module makes the same comparison small enough for a laptop CPU, on any model ``load_model`` reads
(SmolLM2-135M by default; see ``book/appendix_smollm2.ipynb``):

* **same data, steps and settings** for both fine-tuned rows (AdamW, cosine schedule, warmup 2%,
  weight decay 0.1, batch 16, 40 steps); full SFT trains every parameter, precise SFT only the
  top-``k`` heads' W_Q/W_K/W_V rows and W_O columns with the H/h gradient rescaling
  (:class:`arithmech.finetune.runner.HeadMaskedTrainer`). The learning rate is each mode's own, chosen on
  validation data by :func:`lr_grid` (0.6M parameters need a larger rate than 135M in 40 steps);
* **training data**: Fig. 8 sentences in the *training phrasings* (7 of the 9 forms of each
  operation), half with single-digit operands (App. A rules), half two-digit addition/subtraction
  from the training side of :func:`arithmech.embedded.train.two_digit_split`; completion ``" {C}"``;
* **measured on what training did not see**: ``heldout_phrasings`` (Fig. 8 forms
  :data:`HELDOUT_FORMS` of every operation and all of Fig. 10; answer-token accuracy), ``two_digit``
  (:func:`arithmech.embedded.train.two_digit_items`, exact greedy answer), ``addsub``/``singleeq``/``svamp`` (test sides of
  :func:`arithmech.evals.benchmarks.math_splits`, few-shot, direct answer "The answer is N"), ``mmlu``/``csqa``
  (answer-letter likelihood) and ``lm_loss``: mean next-token loss on a generic text that Python
  itself ships, sections :data:`GENERIC_TOPICS` of the Language Reference in ``pydoc_data/topics.py``
  (its sha256 is stored with the results, since it can change between Python versions);
* **uncertainty**: every accuracy comes with a Wilson 95% interval (:func:`wilson_interval`), every
  change against the base model with a paired bootstrap interval over the same items
  (:func:`paired_bootstrap`), the loss with mean ± 1.96 standard errors over 256-token chunks.

``python -m arithmech lrgrid --model smollm2-135m`` picks the learning rates (writes
``finetune/lr_grid.json``); ``python -m arithmech table1 --model smollm2-135m`` runs the three rows and writes
``finetune/{base,full,precise}.json`` (the command is stored in each). Defaults (``scale=1``) keep
each row within about 10 minutes on 2 cores; ``--scale 10 --device cuda`` is the GPU-sized run.
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from arithmech.core import results as R
from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.core.stats import mean_interval, paired_bootstrap, wilson_interval
from arithmech.experiments.paper import SFT

HELDOUT_FORMS = (3, 7)          # Fig. 8 forms (1-based, templates.py order) never used in training
GENERIC_TOPICS = ("naming", "execmodel", "exceptions", "truth", "comparisons", "compound")
VALIDATION_TOPICS = ("import", "for", "with", "try")   # model selection only; disjoint from GENERIC_TOPICS
LR_GRID = {"full": (3e-5, 1e-4, 3e-4), "precise": (3e-4, 1e-3, 3e-3)}
DEFAULT_LR = {"full": 1e-4, "precise": 3e-3}          # what lr_grid chose for SmolLM2 (finetune/lr_grid.json)


# ------------------------------------------------------------------------------- answer tokens
@torch.no_grad()
def answer_scores(model, tok, samples: Sequence[D.Sample], batch_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """``(correct (n,) bool, p (n,))``: top-1 = answer token {C}, and the softmax probability of {C} at END."""
    gold = D.answer_ids(tok, samples)
    correct, prob = torch.zeros(len(samples), dtype=torch.bool), torch.zeros(len(samples))
    dev = model.get_input_embeddings().weight.device
    for idx, ids in D.group_by_length(tok, [s.clean for s in samples], batch_size):
        logits = model(ids.to(dev), logits_to_keep=1).logits[:, -1].float().cpu()
        correct[idx] = logits.argmax(-1) == gold[idx]
        prob[idx] = logits.softmax(-1).gather(1, gold[idx, None])[:, 0]
    return correct, prob


# ----------------------------------------------------------------------------- Table 1: the data
def phrasings() -> tuple[list[T.Template], list[T.Template]]:
    """``(train, heldout)`` templates: Fig. 8 minus forms :data:`HELDOUT_FORMS` / those forms plus Fig. 10."""
    form = lambda t: int(t.id.rsplit("-", 1)[1])
    return ([t for t in T.FIG8 if form(t) not in HELDOUT_FORMS],
            [t for t in T.FIG8 if form(t) in HELDOUT_FORMS] + list(T.FIG10))


def _sentence(t: T.Template, rng: random.Random, ab: tuple[int, int] | None = None) -> tuple[str, str]:
    v = D.draw_values(t, rng)
    if ab is not None:
        a, b = ab
        v.update(A=a, B=b, C=a + b if t.op == "addition" else a - b)
    return D.render(t.clean, v)[0], t.joiner + str(v["C"])


def train_sentences(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` SFT pairs ``(prompt, " {C}")`` in the training phrasings: even rows single-digit (all four
    operations), odd rows two-digit addition/subtraction from the training operand pairs (minus any pair
    that is a test pair of either operation)."""
    from arithmech.embedded.train import two_digit_split
    train_t, _ = phrasings()
    pairs, test = two_digit_split(seed)
    seen = {(a, b) for a, b, _ in test}
    pairs = [p for p in pairs if p[:2] not in seen]         # no test operand pair, under either operation
    rng = random.Random(seed + 1)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(_sentence(rng.choice(train_t), rng))
        else:
            a, b, op = rng.choice(pairs)
            out.append(_sentence(rng.choice([t for t in train_t if t.op == op]), rng, (a, b)))
    return out


def generic_text(topics: Sequence[str] = GENERIC_TOPICS) -> str:
    """The held-out generic text: sections ``topics`` of the Python Language Reference as the standard
    library ships them (``pydoc_data.topics``)."""
    from pydoc_data.topics import topics as pages
    return "\n\n".join(pages[k] for k in topics)


# ------------------------------------------------------------------------- Table 1: measurements
def math_direct(model, tok, rows, shots, batch_size: int = 8) -> list[int]:
    """Few-shot word problems answered directly ("Answer: The answer is N."); 1 per right first number."""
    from arithmech.evals.benchmarks import format_number
    from arithmech.evals.scoring import extract_answer, greedy_decode, is_correct
    head = "".join(f"Question: {s.question}\nAnswer: The answer is {format_number(s.answer)}.\n\n" for s in shots)
    outs = greedy_decode(model, tok, [f"{head}Question: {p.question}\nAnswer: The answer is" for p in rows],
                         max_new_tokens=10, batch_size=batch_size, stop="\n")
    return [int(is_correct(extract_answer("The answer is" + o), p.answer)) for o, p in zip(outs, rows)]


def choice_items(model, tok, name: str, n: int, n_shot: int, seed: int = 0, data_dir=None,
                 batch_size: int = 8) -> list[int]:
    """MMLU (``n_shot`` dev rows of the subject) or CSQA (``n_shot`` train rows): 1 where the most likely
    answer letter after ``Answer:`` is right, for a seeded sample of ``n`` test (dev for CSQA) rows."""
    from arithmech.evals import benchmarks as E
    from arithmech.evals.scoring import choice_logits
    if name == "mmlu":
        dev: dict = {}
        for c in E.read_mmlu("dev", data_dir):
            dev.setdefault(c.subject, []).append(c)
        rows = random.Random(seed).sample(E.read_mmlu("test", data_dir), n)
        prompts, letters = [E.choice_prompt(c, dev[c.subject][:n_shot]) for c in rows], "ABCD"
    else:
        shots = random.Random(seed).sample(E.read_csqa("train", data_dir), n_shot)
        rows = random.Random(seed).sample(E.read_csqa("dev", data_dir), n)
        prompts, letters = [E.choice_prompt(c, shots) for c in rows], "ABCDE"
    pred = choice_logits(model, tok, prompts, letters, batch_size).argmax(1).tolist()
    return [int(letters[i] == c.answer) for i, c in zip(pred, rows)]


@torch.no_grad()
def lm_losses(model, tok, text: str, window: int = 256, max_tokens: int = 4096) -> list[float]:
    """Mean next-token loss (nats) of each ``window``-token chunk of ``text`` (first ``max_tokens`` tokens)."""
    ids = tok(text, add_special_tokens=False)["input_ids"][:max_tokens]
    dev = model.get_input_embeddings().weight.device
    chunks = [ids[i:i + window] for i in range(0, len(ids) - 1, window) if len(ids[i:i + window]) > 1]
    return [float(model(torch.tensor([c], device=dev), labels=torch.tensor([c], device=dev)).loss) for c in chunks]


def table1_sizes(scale: float = 1.0) -> dict:
    """Evaluation sizes and training steps; ``scale`` multiplies them (1: within ~10 min a row on 2 cores).

    At ``scale >= 2`` the multiple-choice prompts get the usual 5 shots (MMLU from the subject's dev
    rows); at ``scale 1`` MMLU is zero-shot and CSQA one-shot, to keep the prompts short on a CPU.
    """
    s = lambda x: max(1, int(round(x * scale)))
    big = scale >= 2
    return {"heldout_per_template": s(8), "two_digit": s(150), "math_per_set": s(30), "math_shots": 2,
            "mmlu": s(150), "mmlu_shots": 5 if big else 0, "csqa": s(150), "csqa_shots": 5 if big else 1,
            "lm_tokens": s(4096), "steps": s(40), "batch_size": 16}


def evaluate_table1(model, tok, sizes: dict, seed: int = 0, data_dir=None) -> dict:
    """Every Table 1 measurement: ``{name: {"value", "n", "ci", "items", "metric"}}`` (items for paired CIs)."""
    from arithmech.embedded.train import two_digit_items
    from arithmech.evals import benchmarks as E
    from arithmech.evals.scoring import greedy_exact
    _, held = phrasings()
    samples, _ = D.make_pairs(tok, held, n=sizes["heldout_per_template"] * len(held), seed=seed + 3)
    items = {"heldout_phrasings": answer_scores(model, tok, samples)[0].int().tolist(),
             "two_digit": [int(ok) for ok in greedy_exact(model, tok, two_digit_items(sizes["two_digit"], seed))]}
    splits = E.math_splits(data_dir, seed)
    for name in ("addsub", "singleeq", "svamp"):
        rng = random.Random(seed)
        test = rng.sample(splits[name]["test"], min(sizes["math_per_set"], len(splits[name]["test"])))
        items[name] = math_direct(model, tok, test, rng.sample(splits[name]["train"], sizes["math_shots"]))
    for name in ("mmlu", "csqa"):
        items[name] = choice_items(model, tok, name, sizes[name], sizes[f"{name}_shots"], seed, data_dir)
    out = {}
    for name, it in items.items():
        lo, hi = wilson_interval(sum(it), len(it))
        out[name] = {"metric": "accuracy", "value": sum(it) / len(it), "n": len(it), "ci": [lo, hi], "items": it}
    losses = lm_losses(model, tok, generic_text(), max_tokens=sizes["lm_tokens"])
    mean, lo, hi = mean_interval(losses)
    out["lm_loss"] = {"metric": "nats/token (mean over chunks)", "value": mean, "n": len(losses),
                      "ci": [lo, hi], "items": losses}
    return out


# --------------------------------------------------------------------------- Table 1: the runner
def precise_heads(folder: str | Path, k: int) -> list[tuple[int, int]]:
    """The ``k`` best-ranked heads of a model's results ``folder`` (key_heads.json, then effects.csv)."""
    from arithmech.finetune.runner import ranked_components
    heads, _ = ranked_components(folder)
    if len(heads) < k:
        raise ValueError(f"precise SFT needs {k} ranked heads but {folder} has {len(heads)}: run "
                         f"`python -m arithmech identify --results {folder}` first")
    return heads[:k]


def train_mode(mode: str, model: str, sizes: dict, heads: Sequence[tuple[int, int]] = (), lr: float = 1e-4,
               seed: int = 0, device: str = "cpu", dtype: str = "float32") -> tuple[object, object, dict]:
    """Fine-tune a fresh copy of ``model`` (``full``: every parameter; ``precise``: ``heads`` with H/h
    rescaling, kv_policy ``any``) on :func:`train_sentences`; same settings for both modes.

    Returns ``(model, tokenizer, record)`` with samples/s, peak memory and tuned parameter count.
    """
    from arithmech.finetune import adapter as A
    from arithmech.finetune import runner as F
    from arithmech.core.models import load_model
    torch.manual_seed(seed)
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
    steps, bs = sizes["steps"], sizes["batch_size"]
    rows = F.tokenize_pairs(tok, train_sentences(steps * bs, seed))
    spec = A.HeadSpec(heads=tuple(heads), rescale=True) if mode == "precise" else None
    with tempfile.TemporaryDirectory() as tmp:
        args = F.training_args(tmp, lr=lr, batch_size=bs, micro_batch_size=bs, max_steps=steps, warmup=SFT["warmup"],
                               weight_decay=SFT["weight_decay"], seed=seed, device=device, logging_steps=max(1, steps // 10))
        net.train()
        trainer = F.make_trainer(net, mode, args, rows, tok, spec)
        tuned = sum(p.numel() for p in net.parameters() if p.requires_grad)
        rec = F.train_measured(trainer, device)
    if mode == "precise":
        net = trainer.merged_model()
    net.eval().requires_grad_(False)
    rec.update(tuned_parameters=tuned, total_parameters=sum(p.numel() for p in net.parameters()), n_train=len(rows),
               heads=[list(h) for h in heads] if mode == "precise" else "all", lr=lr, warmup_ratio=SFT["warmup"],
               weight_decay=SFT["weight_decay"], scheduler="cosine", optimizer="adamw_torch")
    return net, tok, rec


def validation_scores(model, tok, seed: int = 0) -> dict:
    """Model selection only, never a Table 1 result: held-out-phrasing accuracy on other draws
    (seed + 100; the test draws use seed + 3) and the loss on :data:`VALIDATION_TOPICS`."""
    _, held = phrasings()
    samples, _ = D.make_pairs(tok, held, n=8 * len(held), seed=seed + 100)
    losses = lm_losses(model, tok, generic_text(VALIDATION_TOPICS))
    return {"math": float(answer_scores(model, tok, samples)[0].float().mean()), "loss": sum(losses) / len(losses)}


def lr_grid(model: str, results: str | Path = "results", grid: dict = LR_GRID, scale: float = 1.0,
            top_k: int = 8, seed: int = 0, device: str = "cpu", dtype: str = "float32",
            command: str | None = None) -> dict:
    """Choose each mode's learning rate on validation data; writes ``<out>/finetune/lr_grid.json``.

    Full SFT moves 135M parameters, precise SFT 0.6M: one learning rate cannot suit both in 40 steps
    (the paper's single rate comes with 2 epochs on 8 GPUs), so each mode gets the best rate of its
    ``grid``: highest validation accuracy, and among rates within 0.01 of it the lowest validation loss.
    """
    out = R.model_folder(results, model)
    sizes, rows = table1_sizes(scale), []
    heads = precise_heads(out, top_k)
    for mode, lrs in grid.items():
        for lr in lrs:
            net, tok, rec = train_mode(mode, model, sizes, heads if mode == "precise" else (), lr, seed, device, dtype)
            rows.append({"mode": mode, "lr": lr, **validation_scores(net, tok, seed),
                         "samples_per_second": rec["samples_per_second"]})
            print(f"[lr grid] {rows[-1]}", flush=True)
    chosen = {}
    for mode in grid:
        r = [x for x in rows if x["mode"] == mode]
        best = max(x["math"] for x in r)
        chosen[mode] = min((x for x in r if x["math"] >= best - 0.01), key=lambda x: x["loss"])["lr"]
    obj = {"rule": "highest validation accuracy; within 0.01 of it, lowest validation loss", "chosen": chosen,
           "rows": rows, "sizes": sizes, "heads": [list(h) for h in heads], "seed": seed,
           "command": command or f"python -m arithmech lrgrid --model {model} --results {out}"}
    R.atomic_json(out / "finetune" / "lr_grid.json", obj)
    return obj


def _summary(res: dict) -> dict:
    return {k: {kk: vv for kk, vv in v.items() if kk != "items"} for k, v in res.items()}


def run_table1(model: str, results: str | Path = "results", modes: Sequence[str] = ("base", "full", "precise"),
               scale: float = 1.0, top_k: int = 8, lr: dict | None = None, seed: int = 0,
               device: str = "cpu", dtype: str = "float32", data_dir=None, command: str | None = None,
               overwrite: bool = False) -> dict:
    """Base, full-SFT and precise-SFT rows of Table 1; writes ``<out>/finetune/<mode>.json`` each.

    ``base`` is evaluated once; ``full`` and ``precise`` load it from ``base.json`` for the paired
    deltas (run ``base`` first, or together). ``top_k``: heads tuned by precise SFT, default 8 = the
    paper's 32 of LLaMA2-7B's 1024 heads (3.1%) of SmolLM2's 270. ``results``: the results root or the
    model's folder (ranked heads in, records out; existing records replaced only with ``overwrite``).
    ``command`` is stored in every file. ``lr``: ``{mode: rate}``;
    missing modes take ``finetune/lr_grid.json``'s choice (:func:`lr_grid`) or :data:`DEFAULT_LR`.
    """
    import transformers
    out = R.model_folder(results, model)
    for mode in modes:
        if mode not in R.MODES:
            raise ValueError(f"mode {mode!r}: use base, full or precise")
        R.check_finetune_writable(R.finetune_path(out, mode), overwrite)
    sizes = table1_sizes(scale)
    command = command or f"python -m arithmech table1 --model {model} --results {out}"
    base_path = R.finetune_path(out, "base")
    grid_path = out / "finetune" / "lr_grid.json"
    chosen = json.loads(grid_path.read_text())["chosen"] if grid_path.exists() else {}
    lrs = {m: (lr or {}).get(m, chosen.get(m, DEFAULT_LR[m])) for m in ("full", "precise")}
    source = {m: "given" if m in (lr or {}) else ("finetune/lr_grid.json" if m in chosen else "DEFAULT_LR")
              for m in lrs}
    written = {}
    for mode in modes:
        t0 = time.time()
        rec: dict = {"model": model, "mode": mode, "command": command, "sizes": sizes, "seed": seed,
                     "device": device, "dtype": dtype, "versions": {"torch": torch.__version__,
                     "transformers": transformers.__version__, "python": sys.version.split()[0]},
                     "data": {"train": "Fig. 8 sentences, training phrasings (forms other than "
                              f"{HELDOUT_FORMS}), single-digit + two-digit train pairs",
                              "generic_text": f"pydoc_data.topics {list(GENERIC_TOPICS)}",
                              "generic_text_sha256": hashlib.sha256(generic_text().encode()).hexdigest()}}
        if mode == "base":
            from arithmech.core.models import load_model
            net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
        else:
            if not base_path.exists():
                raise FileNotFoundError(f"{base_path} is missing: run the base mode first (--modes base,{mode})")
            heads = precise_heads(out, top_k) if mode == "precise" else ()
            net, tok, rec["train"] = train_mode(mode, model, sizes, heads, lrs[mode], seed, device, dtype)
            rec["train"]["lr_source"] = source[mode]
        res = evaluate_table1(net, tok, sizes, seed, data_dir)
        rec["results"] = res
        if mode != "base":
            base = R.read_finetune(out, "base")["results"]
            rec["delta"] = {}
            for k, v in res.items():
                d, lo, hi = paired_bootstrap(base[k]["items"], v["items"], seed=seed)
                rec["delta"][k] = {"delta": d, "ci": [lo, hi]}
        rec["wall_s"] = round(time.time() - t0, 1)
        tr = rec.get("train") or {}
        rec = R.finetune_record(
            model=R.folder_name(model), mode=mode, command=command, seed=seed, device=device, dtype=dtype,
            heads=tr.get("heads") if mode != "base" else None,
            mlps=[] if mode == "precise" else ("all" if mode == "full" else None),
            tuned_parameters=tr.get("tuned_parameters", 0), total_parameters=tr.get("total_parameters"),
            parameters={"sizes": sizes}, train=tr or None, results=rec["results"], delta=rec.get("delta"),
            data=rec["data"], versions=rec["versions"], wall_s=rec["wall_s"])
        R.write_finetune(out, rec)
        written[mode] = rec
        print(f"[table1] {mode}: {rec['wall_s']} s  " + json.dumps({k: round(v['value'], 4) for k, v in res.items()}),
              flush=True)
        del net
    return written


def table1_frame(folder: str | Path) -> pd.DataFrame:
    """``finetune/{base,full,precise}.json`` of ``folder`` as one row per (mode, measurement)."""
    rows = []
    for mode in R.MODES:
        if not R.finetune_path(folder, mode).exists():
            continue
        r = R.read_finetune(folder, mode)
        tr = r.get("train") or {}
        for k, v in r["results"].items():
            d = (r.get("delta") or {}).get(k, {})
            rows.append({"mode": mode, "measure": k, "value": v["value"], "ci_low": (v.get("ci") or [None])[0],
                         "ci_high": (v.get("ci") or [None, None])[1],
                         "n": v["n"], "delta": d.get("delta"), "delta_ci_low": (d.get("ci") or [None])[0],
                         "delta_ci_high": (d.get("ci") or [None, None])[1],
                         "samples_per_second": tr.get("samples_per_second"),
                         "tuned_parameters": tr.get("tuned_parameters"),
                         "peak_memory_mib": (tr.get("peak_memory", {}).get("peak_bytes") or 0) / 2**20 if tr else None})
    return pd.DataFrame(rows, columns=["mode", "measure", "value", "ci_low", "ci_high", "n", "delta", "delta_ci_low",
                                       "delta_ci_high", "samples_per_second", "tuned_parameters", "peak_memory_mib"])

# ------------------------------------------------------------------------------------------ CLI
def _cli(a) -> None:
    import shlex
    command = "python -m arithmech " + " ".join(shlex.quote(x) for x in a.argv)
    if a.command == "lrgrid":
        print(json.dumps(lr_grid(a.model, a.results, scale=a.scale, top_k=a.top_k, seed=a.seed, device=a.device,
                                 dtype=a.dtype, command=command)["chosen"]))
        return
    lr = {m: v for m, v in (("full", a.lr_full), ("precise", a.lr_precise)) if v is not None}
    run_table1(a.model, a.results, a.modes.split(","), a.scale, a.top_k, lr, a.seed, a.device, a.dtype,
               data_dir=a.data_dir, command=command, overwrite=a.overwrite)
    print(f"wrote finetune/<mode>.json to {R.model_folder(a.results, a.model)}")


def add_cli(subparsers, name: str = "table1") -> None:
    """``table1`` (the rows) or ``lrgrid`` (each mode's learning rate on validation data)."""
    from arithmech.core.inputs import POSITIVE, common_arguments
    help_ = {"table1": "Table 1: base, full SFT and precise SFT with intervals (§5.3)",
             "lrgrid": "each fine-tune mode's learning rate, chosen on validation data"}[name]
    s = subparsers.add_parser(name, help=help_)
    common_arguments(s, model="smollm2-135m")
    s.add_argument("--scale", type=float, default=1.0, help="multiply steps and evaluation sizes (GPU: e.g. 10)")
    s.add_argument("--top-k", type=POSITIVE, default=8, help="heads tuned by precise SFT (ranked in the results folder)")
    if name == "table1":
        s.add_argument("--modes", default="base,full,precise", help="rows to run, in order (base first)")
        s.add_argument("--lr-full", type=float, default=None, help="default: finetune/lr_grid.json's choice, else 1e-4")
        s.add_argument("--lr-precise", type=float, default=None, help="default: finetune/lr_grid.json's choice, else 3e-3")
        s.add_argument("--data-dir", default=None, help="benchmark folder (default $ARITHMECH_DATA or ../shared/data)")
    s.set_defaults(func=_cli)
