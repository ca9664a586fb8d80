"""The embedded arithmetic model: a small Llama trained here on the paper's templates.

No model hub is reachable in this workplace, so every chapter defaults to a model that the
project trains itself and ships in ``arithmech/embedded/model/`` as a standard HF folder
(``config.json``, ``model.safetensors``, ``tokenizer.json``). Rerun with::

    python -m arithmech train-embedded            # ~10 min on 2 CPU cores, deterministic

**Tokenizer.** Word level; punctuation is split off and every digit is a token of its own
(as LLaMA splits digits), so "1723" is ``1 7 2 3``. A ``<s>`` token starts every sequence.

**Training mixture** (seeded):

* *arithmetic* (85%): sentences of Fig. 8 (four operations x nine forms) and Fig. 10
  (time span, accumulation) with operands 1..9, each followed by its full answer and ``</s>``;
  the two "from the year 1723 to the year 172|8" forms are drawn ``YEAR_WEIGHT`` times as often;
* *generic* (15%): a fixed table of facts (opposites, capitals, symbol names, colours), asked as
  "Q: What is the opposite of hot? A: cold". This is the model's "MMLU": a skill unrelated
  to arithmetic that it masters, so fine-tuning can show whether it is kept or lost. The
  neutral words and symbols of the counterfactuals ("nothing", "@") occur here, so their
  embeddings are trained without ever carrying arithmetic meaning.

**Held out from training** (:mod:`arithmech.embedded.heldout`): a seeded ~15 % of each operation's operand
pairs (with their mirrors for + and x) in every template, and 14 new phrasings; :func:`training_stream` never
draws them and the model card reports accuracy on them apart from in-distribution draws.

**Held out for the fine-tune chapter** (the model's "GSM8K"): *two-digit operands* in the
Fig. 8 addition and subtraction forms. The model never saw a two-digit operand, so it does
poorly at first; :func:`two_digit_split` gives seeded, disjoint train/test operand pairs.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from arithmech.core.inputs import quoted
from arithmech.core.models import load_model
from arithmech.core.names import EMBEDDED_DIR
from arithmech.core.progress import progress
from arithmech.data import templates
from arithmech.data.draw import Draw
from arithmech.data.heldout import is_heldout_pair
from arithmech.data.pairs import make_pairs
from arithmech.data.render import FIELD
from arithmech.data.sentences import GENERIC_FACTS, YEAR_WEIGHT, arithmetic_sentence
from arithmech.embedded.heldout import card_section, heldout_report, proportion
from arithmech.evals.scoring import filter_correct
from arithmech.evals.toy import generic_correct, two_digit_correct

SIZE = dict(n_layers=6, n_heads=8, d_model=256, d_ff=512, max_len=64)


def PRE_TOKENIZER():
    """Split on whitespace, isolate every non-word character, split digits one by one."""
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Split(Regex(r"[^\w\s]"), behavior="isolated"),
            pre_tokenizers.Digits(individual_digits=True),
        ]
    )


def _vocab() -> list[str]:
    """Every word the templates, pools, facts and counterfactuals can produce, then the digits."""
    tpls = templates.FIG8 + templates.FIG10 + templates.EXPONENTIATION
    texts = [FIELD.sub(" ", t.clean + " " + t.corrupt) for t in tpls]
    texts += [p + " " + a for p, a in GENERIC_FACTS]
    texts += [w for pool in templates.POOLS.values() for w in pool] + [w for ws in templates.OPS.values() for w in ws]
    texts += [t.op_word for t in tpls if not t.op_word.startswith("{")]
    seen = {w for text in texts for w, _ in PRE_TOKENIZER().pre_tokenize_str(text)}
    words = sorted(w for w in seen if not w.isdigit())
    return ["<unk>", "<s>", "</s>", "<pad>"] + words + [str(d) for d in range(10)]


def build_tokenizer():
    """Word-level fast tokenizer: digits split, punctuation split, ``<s>`` prepended."""

    vocab = {w: i for i, w in enumerate(_vocab())}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = PRE_TOKENIZER()
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    tk.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )


def corpus(rng: random.Random, n: int, generic_frac: float = 0.15) -> list[str]:
    """``n`` training sequences (prompt, joiner, answer; no ``</s>``) drawn from ``rng``."""
    out = []
    for _ in range(n):
        if rng.random() < generic_frac:
            p, a = rng.choice(GENERIC_FACTS)
            out.append(f"{p} {a}")
        else:
            p, a, tpl = arithmetic_sentence(rng)
            out.append(p + tpl.joiner + a)
    return out


def training_stream(seed: int = 0, batch_size: int = 64):
    """The texts of every training batch, in order: ``corpus(random.Random(seed), batch_size)`` per step.
    :func:`train` draws exactly this stream (a generator; never ends)."""
    rng = random.Random(seed)
    while True:
        yield corpus(rng, batch_size)


def _batch(tok, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = [tok(t)["input_ids"] + [tok.eos_token_id] for t in texts]
    L = max(map(len, ids))
    x = torch.full((len(ids), L), tok.pad_token_id)
    for i, s in enumerate(ids):
        x[i, : len(s)] = torch.tensor(s)
    labels = x.clone()
    labels[x == tok.pad_token_id] = -100
    return x, labels


def check_train_out(out_dir: str | Path | None, overwrite: bool = False) -> Path:
    """The folder :func:`train` will write, refused (``ValueError``) before any work when writing it could
    touch what training did not write.

    ``None`` is the package's own model folder (``arithmech/embedded/model/``), which holds only
    files that training writes: it may always be replaced. Any other folder must not exist, be empty,
    or ``overwrite`` must be given; even then only the files training writes are replaced, everything
    else in the folder is left as it is. A path that is a file, or whose parent is a file, is refused.
    """
    if out_dir is None or str(out_dir) == "":
        return Path(EMBEDDED_DIR)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {quoted(out)} is a file, not a folder; choose a folder for the model")
    if not out.exists():
        parent = next((p for p in out.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise ValueError(f"--out {quoted(out)}: {quoted(parent)} is a file, not a folder")
    elif any(out.iterdir()) and not overwrite:
        raise ValueError(
            f"--out {quoted(out)} already holds files; choose a new or empty folder, or pass --overwrite to "
            "replace only the model's own files in it (other files are kept)"
        )
    return out


def _move_files_in(tmp: Path, out: Path) -> None:
    """Move every file of ``tmp`` (a flat folder training wrote) into ``out``, replacing same-named files only."""
    files = sorted(f for f in tmp.iterdir())
    for f in files:
        if (out / f.name).is_dir() or f.is_dir():
            raise ValueError(
                f"--out {quoted(out)}: {quoted(out / f.name)} is a folder; the model needs that name for a file"
            )
    for f in files:
        os.replace(f, out / f.name)


def train(  # noqa: PLR0913 (the training settings, each a flag of train-embedded)
    out_dir: str | Path | None = None,
    steps: int = 1200,
    batch_size: int = 64,
    lr: float = 2e-3,
    seed: int = 0,
    log_every: int = 100,
    size: dict | None = None,
    eval_per_template: int = 40,
    overwrite: bool = False,
    weight_decay: float = 0.01,
) -> Path:
    """Train the embedded model from scratch and save it as an HF folder.

    ``out_dir`` is checked first (:func:`check_train_out`): an existing non-empty folder is refused
    unless ``overwrite``. The files are written into a fresh temporary folder beside ``out_dir`` and
    then moved in one by one (``os.replace``), so only the files training writes are replaced and
    nothing else in ``out_dir`` is deleted or changed; the temporary folder is removed on failure.
    """
    out = check_train_out(out_dir, overwrite)

    size = {**SIZE, **(size or {})}
    torch.manual_seed(seed)
    stream = training_stream(seed, batch_size)
    tok = build_tokenizer()
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
    cfg._attn_implementation = "sdpa"  # fastest for training; analysis loads it with eager
    model = LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98))
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    t0 = time.time()
    model.train()
    for step in progress(range(steps), "train-embedded"):  # a terminal's stderr only
        x, y = _batch(tok, next(stream))
        loss = model(input_ids=x, labels=y).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:5d}  loss {loss.item():.4f}  {time.time() - t0:6.1f}s", flush=True)
    model.eval()
    model.half().float()  # ship fp16 weights (half the size); evaluate exactly those
    report = evaluate(model, tok, seed=seed + 1, n_per_template=eval_per_template)
    report.update(
        train_seconds=round(time.time() - t0, 1),
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        seed=seed,
        size=size,
        parameters=sum(p.numel() for p in model.parameters()),
    )
    check_train_out(out_dir, overwrite)  # again: the folder may have changed while training ran
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        # transformers wraps PreTrainedModel.to in a decorator whose stub types its first argument as the model
        model.to(torch.float16).save_pretrained(tmp)  # type: ignore[arg-type]
        model.float()
        tok.save_pretrained(tmp)
        (tmp / "accuracy.json").write_text(json.dumps(report, indent=2))
        (tmp / "README.md").write_text(model_card(report))
        out.mkdir(exist_ok=True)
        _move_files_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


@torch.no_grad()
def evaluate(model, tok, seed: int = 1, n_per_template: int = 40) -> dict:
    """Answer-token accuracy on fresh seeded draws of the Fig. 8/10 templates (``make_pairs``, as the chapters
    draw them) per operation, family and template, counted on *trained* pairs only (the in-distribution
    figure; ``all_pairs_*`` adds the held-out pairs the chapters also draw), the held-out splits
    (:func:`arithmech.embedded.heldout.heldout_report`), generic-fact accuracy, and two-digit exact match."""
    # The paper's first answer token, not identify's rule: the card and accuracy.json shipped in embedded/model/
    # were measured this way when the model was trained, and CI never retrains, so a change here would leave
    # the shipped card disagreeing with this code (so this code keeps it; the chapters score identify's rule).
    drawn, _ = make_pairs(
        tok,
        templates.FIG8 + templates.FIG10,
        n=n_per_template * len(templates.FIG8 + templates.FIG10),
        seed=seed,
        draw=Draw("first", 0, 1),
    )
    kept, _ = filter_correct(model, tok, drawn)
    samples = [s for s in drawn if not is_heldout_pair(s.op, s.a, s.b)]
    by_op: dict[str, list[bool]] = {}
    by_family: dict[str, list[bool]] = {}
    by_tpl: dict[str, list[bool]] = {}
    for s in samples:
        ok = s in kept
        by_op.setdefault(s.op, []).append(ok)
        by_family.setdefault(s.family, []).append(ok)
        by_tpl.setdefault(s.template, []).append(ok)
    mean = lambda v: round(sum(v) / len(v), 4)
    generic, two = generic_correct(model, tok), two_digit_correct(model, tok)
    return {
        "arithmetic_answer_token_accuracy": mean([s in kept for s in samples]),
        "n_samples": len(samples),
        "all_pairs_answer_token_accuracy": round(len(kept) / len(drawn), 4),
        "all_pairs_n_samples": len(drawn),
        "arithmetic_answer_token_interval": proportion(s in kept for s in samples),
        "by_operation": {k: mean(v) for k, v in by_op.items()},
        "by_operation_interval": {k: proportion(v) for k, v in by_op.items()},
        "by_family": {k: mean(v) for k, v in by_family.items()},
        "by_family_interval": {k: proportion(v) for k, v in by_family.items()},
        "by_template": {k: mean(v) for k, v in by_tpl.items()},
        "heldout": heldout_report(model, tok, seed, n_per_template, max(1, n_per_template // 20)),
        "generic_fact_accuracy": mean(generic),
        "generic_fact_interval": proportion(generic),
        "two_digit_exact_match": mean(two),
        "two_digit_interval": proportion(two),
    }


def model_card(r: dict) -> str:
    row = lambda k, p: f"| {k} | {p['n']} | {p['acc']:.1%} [{p['lo']:.1%}, {p['hi']:.1%}] |"
    ops = "\n".join(row(k, p) for k, p in r["by_operation_interval"].items())
    fams = "\n".join(row(k, p) for k, p in r["by_family_interval"].items())
    ci = r["arithmetic_answer_token_interval"]
    s = r["size"]
    return f"""# arithmech embedded arithmetic model

A {s["n_layers"]}-layer, {s["n_heads"]}-head, d_model {s["d_model"]} `LlamaForCausalLM`
({r["parameters"]:,} parameters) trained from scratch by `python -m arithmech train-embedded`
(seed {r["seed"]}, {r["steps"]} steps of batch {r["batch_size"]}, AdamW lr {r["lr"]}, weight decay
{r.get("weight_decay", 0.01)}, cosine;
{r["train_seconds"]} s wall time on a 2-core CPU machine). Load it with
`AutoModelForCausalLM.from_pretrained(folder)` / `AutoTokenizer.from_pretrained(folder)` or
`arithmech.load_model("embedded")`.

## Data
- Arithmetic (85% of sequences): the paper's Fig. 8 templates (addition, subtraction,
  multiplication, division; equation, statement and question-answer forms) and Fig. 10 templates
  (time span, object accumulation), operands 1..9, each followed by the full answer; the two
  "from the year 1723 to the year 172|8" forms are drawn {YEAR_WEIGHT}x as often (the hardest lookup).
  Subtraction keeps A >= B; division keeps exact quotients.
- Generic (15%): {len(GENERIC_FACTS)} fixed facts (opposites, capitals, symbol names, colours).
- Never seen: two-digit operands; the fine-tune chapter trains and tests on them
  (`two_digit_split`: disjoint seeded operand pairs); the held-out operand pairs and phrasings below.

Tokenizer: word level, digits split into single tokens, punctuation split, `<s>` prepended.

## In-distribution accuracy (fresh seeded draws of the training templates, trained pairs only)
Answer token = first token of the answer; brackets: Wilson 95 % intervals. Overall:
**{r["arithmetic_answer_token_accuracy"]:.1%}** [{ci["lo"]:.1%}, {ci["hi"]:.1%}] of {r["n_samples"]} prompts \
({r["all_pairs_answer_token_accuracy"]:.1%} of {r["all_pairs_n_samples"]} when the
held-out pairs are drawn too, as the chapters draw them). These are training sentences, not a test of
generalisation: see the held-out splits below.

| operation | n | accuracy |
|---|---|---|
{ops}

| template family | n | accuracy |
|---|---|---|
{fams}

Generic facts: {r["generic_fact_accuracy"]:.1%} of {r["generic_fact_interval"]["n"]}
[{r["generic_fact_interval"]["lo"]:.1%}, {r["generic_fact_interval"]["hi"]:.1%}]. Two-digit problems (exact match
of the greedy answer, never trained): {r["two_digit_exact_match"]:.1%} of {r["two_digit_interval"]["n"]}
[{r["two_digit_interval"]["lo"]:.1%}, {r["two_digit_interval"]["hi"]:.1%}].

{card_section(r["heldout"])}"""


def run(config) -> Path:
    """``python -m arithmech train-embedded``: :func:`train` with a :class:`arithmech.identify.config.TrainEmbedded`."""
    return train(
        config.out,
        steps=config.steps,
        batch_size=config.batch_size,
        seed=config.seed,
        overwrite=config.overwrite,
        weight_decay=config.weight_decay,
    )


def run_accuracy(config) -> dict:
    """``python -m arithmech accuracy``: :func:`evaluate` on the model of a
    :class:`arithmech.identify.config.EmbeddedAccuracy` (fresh draws of trained pairs and the held-out splits)."""
    model, tok, _ = load_model(config.model_name, device=config.device, dtype=config.dtype)
    return evaluate(model, tok, seed=config.seed)
